"""Issue 18, finding 14: a job's files that would block the starter hold the job instead.

The review named a FIFO as a job's user log: the starter blocked in open() for 10.5 minutes.
Here a real user swaps each of the job's files (log, input, output, error) for a FIFO after
submitting, against a real ``ep run``: the job is held at once with HTCondor's hold code for
that file (22 for the user log, 8 for input, 7 for output and error) and a reason naming it,
no starter is left waiting, and another user is served. A starter killed with SIGKILL while
its job runs leaves neither its job nor the job's root supervisor behind.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from security_support import assert_pool_serves, start_as_user

from epcore.testing.pool import PoolProcess, submit_as
from epcore.testing.system import SlotUser, user_processes

pytestmark = pytest.mark.system

#: Held within this many seconds of its release (the review's starter waited 10.5 minutes).
HELD_WITHIN_SECONDS = 30.0


def _as_user(user: SlotUser, action: Callable[[], int]) -> int:
    """Run ``action`` in a forked process that has become ``user``; its exit status."""
    return os.waitstatus_to_exitcode(os.waitpid(start_as_user(user, action), 0)[1])


def _make_fifo(path: Path) -> int:
    """Replace ``path`` with a FIFO (run as its owner); exit status 0."""
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return 0


def _held(pool: PoolProcess) -> bool:
    pool.check_alive()
    jobs = pool.jobs("ClusterId == 1")
    return bool(jobs) and jobs[0].evaluate("JobStatus") == 5


@pytest.mark.parametrize(
    ("command", "name", "code", "needle"),
    [
        ("log", "job.log", 22, "Failed to initialize user log"),
        ("input", "job.in", 8, "as standard input: it is not a regular file"),
        ("output", "job.out", 7, "as standard output: it is not a regular file"),
        ("error", "job.err", 7, "as standard error: it is not a regular file"),
    ],
)
def test_a_fifo_named_by_a_job_holds_it_at_once(
    pool_factory, slot_users, shared_dir: Path, command: str, name: str, code: int, needle: str
) -> None:
    """A job whose ``command`` file is swapped for a FIFO by its user after submission is
    held within 30 s with hold code ``code`` and a reason naming the file; no starter of it
    is left, and the pool serves another user."""
    pool = pool_factory()
    user = slot_users[0]
    text = f"executable = /bin/cat\n{command} = {name}\nhold = true\nqueue\n"
    if command != "input":
        text = text.replace("queue", "input = /dev/null\nqueue")
    home = submit_as(pool, user, shared_dir, text)
    fifo = home / name
    assert _as_user(user, lambda: _make_fifo(fifo)) == 0
    released = time.monotonic()
    assert pool.ep("release", "1", user=user).status == 0
    pool.wait_for(lambda: _held(pool), HELD_WITHIN_SECONDS, "the job to be held")
    job = pool.jobs("ClusterId == 1")[0]
    assert job.evaluate("HoldReasonCode") == code
    reason = str(job.evaluate("HoldReason"))
    assert needle in reason and str(fifo) in reason, reason
    assert time.monotonic() - released < HELD_WITHIN_SECONDS
    pool.wait_for(lambda: pool.starters_left() == [], 30, "the job's starter to exit")
    assert_pool_serves(pool, slot_users[3], shared_dir)


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_killed_starter_leaves_no_supervisor_and_no_job(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """When a running job's starter is killed with SIGKILL, the job (a daemon it left
    included) and its root supervisor are gone within seconds, and the pool serves."""
    pool = pool_factory()
    user = slot_users[1]
    submit_as(
        pool,
        user,
        shared_dir,
        "executable = /bin/sh\narguments = \"-c 'sleep 1000 & sleep 1000'\"\nqueue\n",
    )
    pool.wait_for(lambda: len(user_processes(user.name)) >= 3, 60, "the job to run")
    found = re.findall(r"started starter (\d+) for job 1\.0", pool.log("StartLog"))
    assert found, "the StartLog names no starter of job 1.0"
    starter = int(found[-1])
    job = [psutil.Process(pid) for pid in user_processes(user.name)]
    supervisors = {p.ppid() for p in job} - {p.pid for p in job}
    assert supervisors, "no supervisor above the job"
    os.kill(starter, signal.SIGKILL)
    # The job goes back to idle and may soon run again in a new starter: what must end are
    # the processes of this run, the daemon it left included.
    pool.wait_for(
        lambda: all(_gone(pid) for pid in supervisors | {p.pid for p in job}),
        15,
        "the job and its supervisor to end with their starter",
    )
    assert_pool_serves(pool, slot_users[3], shared_dir)
