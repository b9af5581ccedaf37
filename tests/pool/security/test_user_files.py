"""Issue 18, finding 14: a job's files that would block the starter hold the job instead.

The review named a FIFO as a job's user log: the starter blocked in open() for 10.5 minutes.
Here a real user swaps each of the job's files (log, input, output, error) for a FIFO after
submitting, against a real ``ep run``: the job is held at once with HTCondor's hold code for
that file (22 for the user log, 8 for input, 7 for output and error) and a reason naming it,
no starter is left waiting, and another user is served.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from pool_harness import PoolProcess, submit_as
from security_support import assert_pool_serves

pytestmark = pytest.mark.system

#: Held within this many seconds of its release (the review's starter waited 10.5 minutes).
HELD_WITHIN_SECONDS = 30.0


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
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    os.chown(fifo, user.uid, user.gid)
    released = time.monotonic()
    assert pool.ep("release", "1", user=user).status == 0
    pool.wait_for(lambda: _held(pool), HELD_WITHIN_SECONDS, "the job to be held")
    job = pool.jobs("ClusterId == 1")[0]
    assert job.evaluate("HoldReasonCode") == code
    reason = str(job.evaluate("HoldReason"))
    assert needle in reason and str(fifo) in reason, reason
    assert time.monotonic() - released < HELD_WITHIN_SECONDS
    pool.wait_for(lambda: len(pool.processes()) == 1, 30, "the job's starter to exit")
    assert_pool_serves(pool, slot_users[3], shared_dir)
