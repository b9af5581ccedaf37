"""What every attack test of the security suite checks afterwards (issue 18, must-show 2):
the pool still answers another user within 2 s, and a job of that user still runs.

The attacks themselves live in the test modules beside this one, one module per finding;
each starts a real ``ep run`` (epcore.testing.pool) and attacks it as a real unprivileged user.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from epcore.testing.pool import PoolProcess, user_home
from epcore.testing.system import SlotUser

#: How long another user may wait for an answer after an attack (must-show 2).
ANSWER_WITHIN_SECONDS = 2.0
#: How long the bystander's job may take to be matched, run and leave the queue.
JOB_WITHIN_SECONDS = 60.0


def submitted_cluster(stdout: str) -> int:
    """The cluster number ``ep submit`` printed."""
    found = re.search(r"submitted to cluster (\d+)", stdout)
    assert found, f"ep submit printed no cluster: {stdout!r}"
    return int(found.group(1))


def assert_pool_serves(pool: PoolProcess, bystander: SlotUser, root: Path) -> None:
    """``bystander`` (a user who took no part in the attack) gets an answer from ``ep q``
    within 2 s, and a job it submits runs to completion with its output in place."""
    pool.check_alive()
    started = time.monotonic()
    answer = pool.ep("q", user=bystander)
    waited = time.monotonic() - started
    assert answer.status == 0, f"ep q failed for the bystander: {answer.stderr}"
    assert waited <= ANSWER_WITHIN_SECONDS, (
        f"the pool took {waited:.2f} s to answer another user (at most "
        f"{ANSWER_WITHIN_SECONDS} s){pool.hint()}"
    )
    home = user_home(root, bystander)
    marker = f"bystander-{os.getpid()}-{time.monotonic_ns()}"
    output = home / f"{marker}.out"
    submit = home / f"{marker}.sub"
    submit.write_text(
        f"executable = /bin/echo\narguments = {marker}\noutput = {output.name}\n"
        f"error = {marker}.err\nqueue\n"
    )
    os.chown(submit, bystander.uid, bystander.gid)
    result = pool.ep("submit", submit.name, user=bystander, cwd=str(home))
    assert result.status == 0, f"the bystander could not submit: {result.stderr}"
    cluster = submitted_cluster(result.stdout)

    def finished() -> bool:
        pool.check_alive()
        done = pool.jobs(f"ClusterId == {cluster}", history=True)
        return bool(done) and done[0].evaluate("JobStatus") == 4

    pool.wait_for(finished, JOB_WITHIN_SECONDS, f"the bystander's job {cluster}.0 to complete")
    assert output.read_text().strip() == marker


def start_as_user(user: SlotUser, action: Callable[[], int]) -> int:
    """Fork a process that becomes ``user`` (no supplementary groups, its gid, its uid) and
    runs ``action``, as the user's own shell would; the child's pid. Its exit status is what
    ``action`` returns (70 when it raises)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the user's process
        code = 70
        try:
            os.setgroups([])
            os.setgid(user.gid)
            os.setuid(user.uid)
            code = action()
        finally:
            os._exit(code)
    return pid
