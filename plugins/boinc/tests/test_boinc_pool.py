"""End to end, issue 27's must-show with ``ep run``: an idle pool fills its slots with the real
BOINC client computing the test project's work (``ep status`` shows Backfill/Busy), a job a
user submits takes a slot within a negotiation cycle through Backfill/Killing, backfill
resumes after it, every slot claimed leaves no BOINC process, and a backfill system that
cannot run leaves its reason in the StartLog and the slots to the jobs."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from boinc_fixtures import FIRST_TASK_SECONDS, BoincHome, boinc_processes, running_tasks

from epcore.testing.pool import PoolProcess, submit_as

pytestmark = pytest.mark.system

SLEEP_JOB = """\
executable = /bin/sleep
arguments = {seconds}
log = job.log
request_cpus = 1
request_memory = 64
queue {count}
"""


def _rows(pool: PoolProcess) -> dict[str, tuple[str, str]]:
    """Each slot's State and Activity as ``ep status`` prints them."""
    status = pool.ep("status")
    assert status.status == 0, status.stderr
    rows = {}
    for line in status.stdout.splitlines():
        fields = line.split()
        if fields and re.match(r"slot\d+@", fields[0]):
            rows[fields[0].split("@")[0]] = (fields[3], fields[4])
    return rows


#: Two static slots instead of the personal pool's partitionable one (which never enters
#: Backfill: its claims carve dynamic slots only while it is Unclaimed).
STATIC_SLOTS = """\
NUM_SLOTS = 2
NUM_SLOTS_TYPE_1 = 2
SLOT_TYPE_1 = cpus=1, memory=50%
SLOT_TYPE_1_PARTITIONABLE = False
SLOT_TYPE_1_CONSUMPTION_POLICY = False
KILLING_TIMEOUT = 10
"""


def _boinc_pool(pool_factory, home: BoincHome, extra: str = "") -> PoolProcess:
    return pool_factory(home.config(STATIC_SLOTS + extra), cpus=2, memory=1024)


def test_an_idle_pool_computes_backfill_until_jobs_take_its_slots(
    pool_factory, boinc_home: BoincHome, slot_users, shared_dir: Path
) -> None:
    """Idle slots compute two of the project's tasks; a submitted job takes a slot within a
    negotiation cycle (Backfill/Killing, the client down to one task), backfill resumes when
    it is done, and two long jobs leave no BOINC process at all."""
    pool = _boinc_pool(pool_factory, boinc_home)
    busy = {"slot1": ("Backfill", "Busy"), "slot2": ("Backfill", "Busy")}
    pool.wait_for(lambda: _rows(pool) == busy, 30, "ep status to show Backfill/Busy")
    pool.wait_for(lambda: len(running_tasks(boinc_home)) == 2, FIRST_TASK_SECONDS, "two tasks")
    before = sum(task.cpu_seconds for task in running_tasks(boinc_home))
    pool.wait_for(
        lambda: sum(t.cpu_seconds for t in running_tasks(boinc_home)) > before + 1.0, 60, "CPU time"
    )

    user = slot_users[0]
    submitted = time.monotonic()
    submit_as(pool, user, shared_dir, SLEEP_JOB.format(seconds=8, count=1))
    pool.wait_for(lambda: "Backfill/Killing" in pool.log("StartLog"), 30, "Backfill/Killing")
    pool.wait_for(lambda: "started starter" in pool.log("StartLog"), 30, "the job to start")
    # NEGOTIATOR_INTERVAL is 2 s: one cycle, and the time to claim and start.
    assert time.monotonic() - submitted < 15
    pool.wait_for(lambda: len(running_tasks(boinc_home)) == 1, 30, "one task left")
    log = pool.log("StartLog")
    assert re.search(r"slot\d: Changing state and activity: Backfill/Busy -> Backfill/Killing", log)
    assert re.search(
        r"slot\d: Changing state and activity: Backfill/Idle -> (Matched|Claimed)", log
    )

    pool.wait_for(lambda: not pool.jobs(), 60, "the job to finish")
    pool.wait_for(lambda: _rows(pool) == busy, 60, "backfill to resume on both slots")
    pool.wait_for(lambda: len(running_tasks(boinc_home)) == 2, 60, "two tasks again")

    submit_as(pool, user, shared_dir, SLEEP_JOB.format(seconds=60, count=2))
    claimed = {"slot1": ("Claimed", "Busy"), "slot2": ("Claimed", "Busy")}
    pool.wait_for(lambda: _rows(pool) == claimed, 60, "both slots running jobs")
    pool.wait_for(lambda: boinc_processes(boinc_home) == [], 20, "no BOINC process left")
    assert "the backfill client is gone" in pool.log("StartLog")


def test_a_missing_client_is_in_the_start_log_and_jobs_still_run(
    pool_factory, boinc_home: BoincHome, slot_users, shared_dir: Path
) -> None:
    """BOINC_Executable naming no program: the StartLog says so, no slot enters Backfill, and
    a submitted job runs to completion."""
    pool = _boinc_pool(pool_factory, boinc_home, "BOINC_Executable = /opt/boinc/missing_client\n")
    pool.wait_for(
        lambda: "BOINC_Executable = /opt/boinc/missing_client" in pool.log("StartLog"),
        30,
        "the reason in the StartLog",
    )
    assert "backfill disabled: backfill system BOINC cannot run" in pool.log("StartLog")
    submit_as(pool, slot_users[0], shared_dir, SLEEP_JOB.format(seconds=1, count=1))
    pool.wait_for(lambda: not pool.jobs(), 60, "the job to finish")
    assert "Backfill" not in pool.log("StartLog").split("backfill disabled")[1]
    assert pool.jobs(history=True)[0].evaluate("ExitCode") == 0
