"""The real BOINC client as the backfill of a startd embedded in the test: it computes the
test project's work in its loopback-only network namespace on the slots no job wants, gives
a CPU back when a claim takes a slot, is gone with its processes and cgroups when every slot
is claimed, and a client that cannot start leaves its reason in the StartLog."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from boinc_fixtures import FIRST_TASK_SECONDS, BoincHome, boinc_processes, running_tasks

from epcore.classad import ClassAd, parse_ad
from epcore.testing.startd import InProcessStartd

pytestmark = pytest.mark.system


@pytest.fixture
def startd(
    shared_dir: Path, boinc_home: BoincHome, base_cgroup: str
) -> Iterator[Callable[[str], InProcessStartd]]:
    """``startd(extra_config)``: an opened two-slot startd with the installed plugins (the
    boinc plugin among them), in the test's process."""
    loops: list[InProcessStartd] = []

    def make(extra: str = "") -> InProcessStartd:
        local = shared_dir / "local"
        local.mkdir()
        config = shared_dir / "condor_config"
        config.write_text(
            f"LOCAL_DIR = {local}\nRUNBENCHMARKS = False\nIS_OWNER = False\nNUM_CPUS = 2\n"
            f"MEMORY = 1024\nNUM_SLOTS = 2\nPOLLING_INTERVAL = 1\nKILLING_TIMEOUT = 10\n"
            f"BASE_CGROUP = {base_cgroup}/{os.getpid()}_{time.monotonic_ns()}\n"
            + boinc_home.config(extra)
        )
        loop = InProcessStartd.open(str(config))
        assert loop.startd.backfill.backend is not None, "the boinc plugin is not installed"
        loops.append(loop)
        return loop

    yield make
    for loop in loops:
        loop.close(timeout=60)


def _turn_until(
    loop: InProcessStartd, check: Callable[[], bool], timeout: float, what: str
) -> None:
    loop.turn_until(check, timeout, what)


def _places(loop: InProcessStartd) -> dict[str, str]:
    return {r.name: str(r.place) for r in loop.startd.state.slots}


def _cpu_group(process: psutil.Process) -> str:
    """The cgroup (v1 cpu controller) ``process`` is in, as /proc shows it."""
    for line in Path(f"/proc/{process.pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            return path
    return ""


def _job(number: int, iwd: Path) -> ClassAd:
    """A job for a claim (the claim is what counts; it never runs)."""
    return parse_ad(
        f'[ ClusterId = 1; ProcId = {number}; Owner = "nobody"; Cmd = "/bin/sleep";'
        f' Arguments = "600"; Iwd = "{iwd}"; RequestCpus = 1; RequestMemory = 64;'
        " RequestDisk = 1024 ]"
    )


def test_idle_slots_compute_real_work_and_claims_take_it_back(
    startd, boinc_home: BoincHome, shared_dir: Path
) -> None:
    """Both slots go to Backfill/Busy, the client runs two tasks of the project whose CPU time
    grows; a claim on slot1 leaves one task running; claiming slot2 too ends the client, its
    tasks, the project and their cgroups."""
    loop = startd()
    both = {"slot1": "Backfill/Busy", "slot2": "Backfill/Busy"}
    _turn_until(loop, lambda: _places(loop) == both, 20, "both slots in Backfill/Busy")
    _turn_until(
        loop, lambda: len(running_tasks(boinc_home)) == 2, FIRST_TASK_SECONDS, "two running tasks"
    )
    before = sum(task.cpu_seconds for task in running_tasks(boinc_home))
    _turn_until(
        loop,
        lambda: sum(t.cpu_seconds for t in running_tasks(boinc_home)) > before + 1.0,
        60,
        "the tasks' CPU time to grow",
    )
    assert "download /download/burn_1.in" in boinc_home.project_log()

    loop.startd.claim("slot1", _job(0, shared_dir))
    assert _places(loop)["slot1"] == "Claimed/Idle"
    _turn_until(loop, lambda: len(running_tasks(boinc_home)) == 1, 30, "one running task")
    processes = boinc_processes(boinc_home)
    assert len(processes) >= 2  # the client and its task, at least
    groups = {_cpu_group(process).lstrip("/") for process in processes}
    base = (loop.startd.config.get("BASE_CGROUP") or "").lstrip("/")
    assert all(group.startswith(base + "/") for group in groups), groups

    loop.startd.claim("slot2", _job(1, shared_dir))
    _turn_until(loop, lambda: _places(loop)["slot2"] == "Claimed/Idle", 30, "slot2 claimed")
    _turn_until(loop, lambda: boinc_processes(boinc_home) == [], 10, "no BOINC process")
    log = Path(loop.startd.paths.startd_log).read_text()
    assert "slot2: Changing state and activity: Backfill/Busy -> Backfill/Killing" in log
    assert "the backfill client is gone" in log
    assert [g for g in groups if (Path("/sys/fs/cgroup/cpu") / g).exists()] == []


def test_a_client_that_crashes_is_logged_and_the_slots_stay_usable(
    startd, boinc_home: BoincHome, shared_dir: Path
) -> None:
    """A BOINC_Executable that exits at once gives the exit in the StartLog with the back-off,
    and a claim still takes a slot."""
    crashing = shared_dir / "crashing_boinc"
    crashing.write_text("#!/bin/sh\necho 'boinc: cannot lock the data directory' >&2\nexit 108\n")
    crashing.chmod(0o755)
    loop = startd(f"BOINC_Executable = {crashing}\n")
    log = Path(loop.startd.paths.startd_log)
    _turn_until(loop, lambda: "restarting it in 10 s" in log.read_text(), 30, "the crash")
    assert "the backfill client exited by itself (ended: exited normally with status 108" in (
        log.read_text()
    )
    assert (boinc_home.data / "boinc.err").read_text() == "boinc: cannot lock the data directory\n"
    loop.startd.claim("slot1", _job(0, shared_dir))
    _turn_until(loop, lambda: _places(loop)["slot1"] == "Claimed/Idle", 20, "slot1 claimed")
