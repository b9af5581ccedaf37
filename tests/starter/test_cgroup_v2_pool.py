"""Issue 26's must-show 2 through a real startd and starter: ``ep run`` on the guest's cgroup
v2 (this host keeps its controllers on v1). A job allocating past its slot's memory is killed
by the kernel in its v2 group and held with code 34; a job forking past CGROUP_PIDS_LIMIT is
refused forks in its group (memory.max and pids.max are the slot's); a busy job shows its
group's CPU in its slot's CondorLoadAvg, is suspended by freezing its group and vacated by
killing it, which leaves no process and no group. ``test_cgroup_v2_real.py`` runs
this module in the guest, in the same boot as its own tests.

The jobs ask for 1 MB of disk: the guest's EXECUTE is on a 480 MB tmpfs, and HTCondor's
default request_disk (JOB_DEFAULT_REQUESTDISK, at least 1.25 GB) never matches it."""

from __future__ import annotations

import contextlib
import os
import pwd
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from epcore.classad import ClassAd
from epcore.pool.personal import personal_config_text
from epcore.testing.pool import PoolProcess, run_ep
from epcore.testing.system import open_up

ROOT = Path("/sys/fs/cgroup")
BASE = "ep_v2_pool"
PIDS_LIMIT = 16
MB = 1024 * 1024


def _controllers() -> set[str]:
    path = ROOT / "cgroup.controllers"
    return set(path.read_text().split()) if path.exists() else set()


pytestmark = pytest.mark.skipif(
    not {"memory", "pids", "cpu"} <= _controllers() or os.geteuid() != 0,
    reason="no cgroup v2 with memory, pids and cpu here, or not root (run in the guest)",
)

#: Four cores for three jobs at once (the guest has one: slots need not be real cores). A job
#: asking for SuspendMe is suspended once its slot's CondorLoadAvg shows its CPU, and stays
#: suspended until it is vacated.
POOL_CONFIG = f"""
NUM_CPUS = 4
MEMORY = 512
BASE_CGROUP = {BASE}
CGROUP_PIDS_LIMIT = {PIDS_LIMIT}
CGROUP_MEMORY_LIMIT_POLICY = hard
RUNBENCHMARKS = False
POLLING_INTERVAL = 1
UPDATE_INTERVAL = 2
NEGOTIATOR_INTERVAL = 2
NEGOTIATOR_MIN_INTERVAL = 0
STARTER_INITIAL_UPDATE_INTERVAL = 1
STARTER_UPDATE_INTERVAL = 2
WANT_SUSPEND = TARGET.SuspendMe =?= true
SUSPEND = TARGET.SuspendMe =?= true && CondorLoadAvg > 0.01
CONTINUE = False
PREEMPT = False
"""
#: One cluster (a submit is slow in the guest): process 0 the hog, 1 the forks, 2 the busy
#: job, each running its part of the script.
SUBMIT = """\
executable = {script}
arguments = $(Process)
transfer_executable = false
output = job$(Process).out
error = job$(Process).err
request_cpus = 1
request_memory = 64
request_disk = 1024
+SuspendMe = ($(Process) == 2)
queue 3
"""
#: Process 0: 300 MB touched page by page, far past the slot's 128 MB (64 rounded up to a
#: multiple of 128 by MODIFY_REQUEST_EXPR_REQUESTMEMORY).
HOG = (
    'exec python3 -c \'b = bytearray(300 * 1024 * 1024); b[::4096] = b"x" * len(b[::4096]);'
    " import time; time.sleep(60)'\n"
)
#: Process 1: the job's own v2 leaf from /proc/self/cgroup, its group's limits, then 24
#: sleeps forked: those past pids.max fail, and pids.events of the leaf counts them. The
#: forks are a subshell's (dash exits at a failed fork) and the job reads with its own
#: ``read`` (at the limit, it could not fork a ``cat``).
FORKS = """\
leaf=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)
echo "leaf=$leaf"
read memory < "$leaf/../memory.max"
read pids < "$leaf/../pids.max"
echo "memory.max=$memory"
echo "pids.max=$pids"
(i=0; while [ $i -lt 24 ]; do sleep 5 & i=$((i + 1)); done) 2>/dev/null
read current < "$leaf/pids.current"
read _ refused < "$leaf/pids.events"
echo "pids.current=$current"
echo "refused=$refused"
wait
"""
#: Process 2: writes its leaf where the test finds it, then spins, niced: the pool's daemons
#: share the guest's one core with it.
BUSY = """\
cut -d: -f3 /proc/self/cgroup > "$(dirname "$0")/busy.leaf"
exec nice -n 19 sh -c 'while :; do :; done'
"""


def _pool(local: Path) -> PoolProcess:
    local.mkdir()
    local.chmod(0o755)
    pool = PoolProcess(local, personal_config_text(str(local)) + POOL_CONFIG)
    pool.start(wait=120)
    return pool


def _submit(pool: PoolProcess, home: Path) -> None:
    """Submit the three jobs from ``home``, as nobody."""
    script = home / "job.sh"
    parts = "".join(f"{n})\n{part};;\n" for n, part in enumerate((HOG, FORKS, BUSY)))
    script.write_text(f'#!/bin/sh\ncase "$1" in\n{parts}esac\n')
    script.chmod(0o755)
    (home / "job.sub").write_text(SUBMIT.format(script=script))
    nobody = pwd.getpwnam("nobody")
    result = run_ep(
        ["submit", "job.sub", "--config", str(pool.config_path)],
        uid=nobody.pw_uid,
        gid=nobody.pw_gid,
        cwd=str(home),
    )
    assert result.status == 0, result.stderr


def _until(pool: PoolProcess, check: Callable[[], object], timeout: float, what: str) -> None:
    """``pool.wait_for`` looking twice a second (TCG is slow, and every look is a query)."""

    def look() -> bool:
        if check():
            return True
        time.sleep(0.5)
        return False

    pool.wait_for(look, timeout, what)


def _job(pool: PoolProcess, proc: int, *, history: bool = False) -> ClassAd | None:
    found = pool.jobs(f"ProcId == {proc}", history=history)
    return found[0] if found else None


def _status(pool: PoolProcess, proc: int) -> object:
    job = _job(pool, proc)
    return None if job is None else job.evaluate("JobStatus")


def _slot_of(pool: PoolProcess, state: str) -> ClassAd | None:
    for ad in pool.client.query_ads("Machine"):
        if f"{ad.evaluate('State')}/{ad.evaluate('Activity')}" == state:
            return ad
    return None


def _keyed(path: Path) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in path.read_text().splitlines())}


def _alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
    return alive


def _job_groups() -> list[str]:
    base = ROOT / BASE
    return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def test_oom_hold_pids_limit_suspend_vacate_and_usage_through_ep_run(tmp_path: Path) -> None:
    """Through ``ep run`` on cgroup v2: the memory hog is held with 34/102 and HTCondor's reason
    naming the slot's 128 MB; the forking job completes with memory.max and pids.max of its
    slot on its group and forks refused past the limit; the busy job's CPU reaches its slot's
    CondorLoadAvg, its group is frozen while suspended (its CPU stands still), and a vacate
    kills every process of it and removes its group."""
    open_up(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o777)
    pool = _pool(tmp_path / "pool")
    try:
        _submit(pool, home)

        # The memory limit: the kernel kills the hog in its group, the starter holds it.
        _until(pool, lambda: _status(pool, 0) == 5, 180, "the hog to be held")
        held = _job(pool, 0)
        assert held is not None
        assert held.evaluate("HoldReasonCode") == 34, held
        assert held.evaluate("HoldReasonSubCode") == 102, held
        reason = str(held.evaluate("HoldReason"))
        assert reason.startswith("Job has gone over cgroup memory limit of 128 megabytes. "), reason
        assert reason.endswith("Consider resubmitting with a higher request_memory."), reason

        # The pids limit and the slot's memory on the job's group.
        _until(pool, lambda: _job(pool, 1, history=True) is not None, 120, "the forks job")
        done = _job(pool, 1, history=True)
        assert done is not None and done.evaluate("ExitCode") == 0, done
        seen = dict(line.split("=", 1) for line in (home / "job1.out").read_text().splitlines())
        assert seen["leaf"].startswith(f"{ROOT}/{BASE}/") and seen["leaf"].endswith("/job")
        assert seen["memory.max"] == str(128 * MB), seen
        assert seen["pids.max"] == str(PIDS_LIMIT), seen
        assert int(seen["pids.current"]) <= PIDS_LIMIT, seen
        assert int(seen["refused"]) > 0, seen

        # Usage, then suspension: SUSPEND waits for CondorLoadAvg, which the startd reads
        # from the job's cpu.stat.
        suspended = "Claimed/Suspended"
        _until(pool, lambda: _slot_of(pool, suspended) is not None, 180, "the suspension")
        slot = _slot_of(pool, suspended)
        assert slot is not None
        load = slot.evaluate("CondorLoadAvg")
        assert isinstance(load, float) and load > 0.01, slot
        group = (ROOT / (home / "busy.leaf").read_text().strip().lstrip("/")).parent
        assert group.parent == ROOT / BASE
        # The slot's state is published when the startd decides; the starter freezes after.
        frozen = group / "cgroup.events"
        _until(pool, lambda: _keyed(frozen)["frozen"] == 1, 30, f"{group} to freeze")
        before = _keyed(group / "cpu.stat")["usage_usec"]
        assert before > 0
        time.sleep(1.0)
        assert _keyed(group / "cpu.stat")["usage_usec"] == before
        pids = [int(p) for p in (group / "job" / "cgroup.procs").read_text().split()]
        assert _alive(pids), "the frozen job has processes"

        # The vacate kills the frozen job whole and removes its group.
        name = str(slot.evaluate("Name")).split("@", 1)[0]
        assert pool.ep("vacate", "-fast", name).status == 0
        _until(pool, lambda: not group.exists(), 60, f"{group} to go")
        assert _alive(pids) == []
    finally:
        pool.ep("rm", "-all")
        pool.terminate()
    assert _job_groups() == []
