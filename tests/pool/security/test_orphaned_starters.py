"""Issue 18, finding 16: starters whose startd never comes back give up within the lease.

The review ended ``ep run`` pools with SIGKILL and found their starters alive 1.5 hours
later. Here a real ``ep run`` with a short claim lease runs a user's jobs (one of which
leaves a daemon behind); ``ep run`` is killed with SIGKILL, and within the lease (plus the
soft kill's grace and some slack for a loaded machine) every starter, supervisor (prepared
ones included) and job process is gone. A new ``ep run`` then serves another user.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from security_support import assert_pool_serves

from epcore.starter.lifecycle import LEASE_KILL_GRACE
from epcore.testing.pool import PoolProcess, submit_as
from epcore.testing.system import user_processes

pytestmark = pytest.mark.system

#: The claim lease of the test's jobs (JobLeaseDuration), in seconds.
LEASE = 8
#: Keep-alives often enough for such a lease while the pool runs.
LEASE_CONFIG = f"ALIVE_INTERVAL = 3\nJOB_DEFAULT_LEASE_DURATION = {LEASE}\n"
#: What a loaded machine may add to the lease and the grace before everything is gone.
SLACK_SECONDS = 10.0


def _running(pool: PoolProcess, count: int) -> bool:
    pool.check_alive()
    return len(pool.jobs("JobStatus == 2")) == count


def test_starters_end_their_jobs_and_exit_when_ep_run_does_not_come_back(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """After a SIGKILL of ``ep run``, its starters end their jobs (daemons included) and
    exit saying why, and no supervisor is left, within the claim's lease; ``ep run``
    restarts and serves another user."""
    pool = pool_factory(LEASE_CONFIG)
    user = slot_users[0]
    submit_as(
        pool,
        user,
        shared_dir,
        "executable = /bin/sh\narguments = \"-c 'sleep 1000 & sleep 1000'\"\nqueue 2\n",
    )
    pool.wait_for(lambda: _running(pool, 2), 60, "both jobs to run")
    pool.wait_for(lambda: len(user_processes(user.name)) >= 4, 30, "the jobs sleeping")
    assert pool.process is not None
    forked = [pid for pid in pool.processes() if pid != pool.process.pid]
    assert len(forked) >= 4, "no starters and supervisors to watch"
    pool.process.kill()
    pool.process.wait(10)
    killed = time.monotonic()
    within = LEASE + LEASE_KILL_GRACE + SLACK_SECONDS
    pool.wait_for(
        lambda: not pool.processes() and not user_processes(user.name),
        within,
        f"every starter, supervisor and job to be gone within {within} s",
    )
    assert time.monotonic() - killed >= LEASE - 1, "the starters did not wait for the lease"
    said = [p.read_text() for p in (pool.directory / "log").glob("StarterLog*")]
    assert sum(f"no reconnect from the startd for {LEASE} s" in text for text in said) == 2
    pool.start()
    assert_pool_serves(pool, slot_users[3], shared_dir)
