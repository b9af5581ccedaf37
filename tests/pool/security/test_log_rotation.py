"""Finding 6 of issue 18: the daemons' logs never rotated (MAX_DEFAULT_LOG was in the defaults
but unused), so one user's activity could fill the disk through them.

A real ``ep run`` with tiny MAX_SCHEDD_LOG and MAX_STARTD_LOG rotates both logs as HTCondor
does: MAX_NUM_SCHEDD_LOG = 2 keeps two timestamped SchedLogs, the StartLog (MAX_NUM 1 by
default) keeps one ``StartLog.old``, and no file grows much beyond its limit.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from security_support import assert_pool_serves

from epcore.testing.pool import submit_as

pytestmark = pytest.mark.system

LIMIT = 1024
CONFIG = f"""
MAX_SCHEDD_LOG = {LIMIT} B
MAX_NUM_SCHEDD_LOG = 2
MAX_STARTD_LOG = 1 Kb
"""
#: A log line is written whole, so a file may pass its limit by one line.
LONGEST_LINE = 2048


def test_a_tiny_log_limit_rotates_and_keeps_max_num_files(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """Jobs that run rotate the StartLog into StartLog.old; submissions over several seconds
    rotate the SchedLog into exactly MAX_NUM_SCHEDD_LOG timestamped files, the newest; every
    log stays near its limit and mode 0600."""
    pool = pool_factory(CONFIG)
    log_dir = pool.directory / "log"
    stamped = re.compile(r"SchedLog\.\d{8}T\d{6}")

    def rotations() -> list[Path]:
        return sorted(p for p in log_dir.iterdir() if stamped.fullmatch(p.name))

    submit_as(pool, slot_users[0], shared_dir, "executable = /bin/true\nqueue 3\n")
    pool.wait_for(lambda: not pool.jobs(), 60, "the jobs to complete")
    # Each submission writes a line to the SchedLog: a user's ordinary activity.
    seen: set[str] = set()
    deadline = time.monotonic() + 120
    while len(seen) < 4:
        assert time.monotonic() < deadline, f"the SchedLog rotated only into {sorted(seen)}"
        submit_as(pool, slot_users[0], shared_dir, "executable = /bin/true\nhold = true\nqueue\n")
        seen.update(p.name for p in rotations())
    kept = rotations()
    assert len(kept) == 2, kept
    assert {p.name for p in kept} == set(sorted(seen)[-2:])
    assert (log_dir / "StartLog.old").exists()
    for path in (*kept, log_dir / "SchedLog", log_dir / "StartLog", log_dir / "StartLog.old"):
        assert path.stat().st_size < LIMIT + LONGEST_LINE, path
        assert path.stat().st_mode & 0o777 == 0o600, path
    assert_pool_serves(pool, slot_users[3], shared_dir)
