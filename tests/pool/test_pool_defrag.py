"""End to end: the defrag daemon makes room for a whole-machine job (issue 28, must-show 4).

A real ``ep run`` with DEFRAG in DAEMON_LIST and a high draining rate. Four small jobs fill
the 4-cpu partitionable slot and would run for ten minutes; a whole-machine job (4 cpus, a
higher JobPrio) waits behind them. The defrag daemon drains the machine (quick: the small
jobs are vacated and wait again), the startd resumes service once drained, and the
whole-machine job runs on the machine; the Defrag ad (``ep status -defrag``) records the
drain.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from epcore.testing.pool import PoolProcess, submit_as

pytestmark = pytest.mark.system

# DEFRAG_REQUIREMENTS leaves alone a machine whose jobs hold 1 GB or more (the whole-machine
# job's): otherwise the next poll would drain the machine under the job it was made for.
DEFRAG = """\
DAEMON_LIST = $(DAEMON_LIST), DEFRAG
DEFRAG_INTERVAL = 2
DEFRAG_UPDATE_INTERVAL = 2
DEFRAG_DRAINING_MACHINES_PER_HOUR = 7200
DEFRAG_DRAINING_SCHEDULE = quick
DEFRAG_WHOLE_MACHINE_EXPR = Cpus == TotalSlotCpus
DEFRAG_REQUIREMENTS = TotalSlotMemory - Memory < 1024
DEFRAG_NAME = defrag
UPDATE_INTERVAL = 2
"""

SMALL = """\
executable = /bin/sleep
arguments = 600
request_cpus = 1
request_memory = 64
log = small.log
queue 4
"""

WHOLE = """\
executable = /bin/sh
arguments = "-c 'echo whole machine'"
output = whole.out
request_cpus = 4
request_memory = 2048
priority = 10
log = whole.log
queue
"""


def _wait(what: str, check: object, pool: PoolProcess, timeout: float = 40.0) -> None:
    assert callable(check)
    try:
        pool.wait_for(check, timeout, what)
    except AssertionError:
        # The daemons' view, for whoever reads the failure.
        print("DefragLog:", pool.log("DefragLog")[-2000:])
        print("StartLog:", pool.log("StartLog")[-4000:])
        raise


def _running(pool: PoolProcess, cpus: int) -> int:
    jobs = pool.jobs(f"JobStatus == 2 && RequestCpus == {cpus}")
    return len(jobs)


def _defrag_ads(pool: PoolProcess) -> list[dict[str, object]]:
    result = pool.ep("status", "-defrag", "-json")
    assert result.status == 0, result.stderr
    ads = json.loads(result.stdout or "[]")
    assert isinstance(ads, list)
    return ads


def test_defrag_drains_a_fragmented_machine_for_a_whole_machine_job(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """The busy partitionable slot is drained by the defrag daemon, the waiting
    whole-machine job runs on it, and the Defrag ad shows the drain."""
    started = time.monotonic()
    pool = pool_factory(DEFRAG, cpus=4, memory=4096)
    user = slot_users[0]
    submit_as(pool, user, shared_dir, SMALL)
    _wait("four small jobs running", lambda: _running(pool, 1) == 4, pool)
    home = submit_as(pool, user, shared_dir, WHOLE)
    _wait(
        "the whole-machine job to finish",
        lambda: bool(pool.jobs("RequestCpus == 4 && JobStatus == 4", history=True)),
        pool,
    )
    assert (home / "whole.out").read_text() == "whole machine\n"
    (whole,) = pool.jobs("RequestCpus == 4", history=True)
    host = str(whole.evaluate("LastRemoteHost") or whole.evaluate("RemoteHost"))
    assert host.startswith("slot1_"), host

    def drain_shown() -> bool:
        ads = _defrag_ads(pool)
        return bool(ads) and int(str(ads[0].get("DrainSuccesses", 0))) >= 1

    _wait("the Defrag ad to show the drain", drain_shown, pool, timeout=10)
    (ad,) = _defrag_ads(pool)
    assert ad["MyType"] == "Defrag" and str(ad["Name"]).startswith("defrag@")
    drains = ad["RecentDrainsList"]
    assert isinstance(drains, list) and drains
    assert drains[-1]["what"] == "quick" and str(drains[-1]["who"]).startswith("slot1@")
    defrag_log = pool.log("DefragLog")
    assert "Initiating quick draining of slot1@" in defrag_log
    table = pool.ep("status", "-defrag")
    assert table.status == 0 and "defrag@" in table.stdout
    assert time.monotonic() - started < 60
