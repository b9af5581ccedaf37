"""The cgroup backend on a real cgroup v2 with its controllers (memory, pids, cpu): the guest's
(this host keeps them on v1). On the host, one test runs this module and
test_cgroup_v2_pool.py (the same through ``ep run``) in the guest (epcore.testing.guest), in
one boot; the others run only where /sys/fs/cgroup has the controllers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.config import Config
from epcore.starter.cgroups import CgroupBackend, CgroupTracking
from epcore.testing.guest import Guest
from epcore.types import TrackingRequest

ROOT = Path("/sys/fs/cgroup")
BASE = "ep_guest_test"
MB = 1024 * 1024


def _controllers() -> set[str]:
    path = ROOT / "cgroup.controllers"
    return set(path.read_text().split()) if path.exists() else set()


real_v2 = pytest.mark.skipif(
    not {"memory", "pids", "cpu"} <= _controllers(),
    reason="no cgroup v2 with memory, pids and cpu here (run in the guest)",
)


@pytest.fixture
def backend() -> Iterator[CgroupBackend]:
    """A backend under BASE_CGROUP ep_guest_test with a pids limit of 8."""
    yield CgroupBackend(Config.from_text(f"BASE_CGROUP = {BASE}\nCGROUP_PIDS_LIMIT = 8\n"))


def _track(backend: CgroupBackend, name: str, memory_mb: int = 64) -> CgroupTracking:
    request = TrackingRequest(
        job_key=f"/execute/{name}",
        slot_name="slot1@guest",
        slot_id=1,
        cpus=1.0,
        memory_mb=memory_mb,
        memory_policy="hard",
        startd_memory_mb=1024,
        swap_limit_mb=0,
    )
    return backend.track(request)


def _start(tracking: CgroupTracking, argv: list[str]) -> subprocess.Popen[bytes]:
    join = tracking.child_setup().join_files

    def join_cgroups() -> None:
        for path in join:
            with open(path, "w") as handle:
                handle.write(str(os.getpid()))

    proc = subprocess.Popen(argv, preexec_fn=join_cgroups)
    tracking.attach(proc.pid)
    return proc


@real_v2
def test_the_groups_are_on_v2_with_the_memory_limit(backend: CgroupBackend) -> None:
    """The job's group is a v2 group whose memory.max is the slot's memory."""
    tracking = _track(backend, "limits")
    try:
        assert tracking.v2_group is not None
        assert (tracking.v2_group.path / "memory.max").read_text().strip() == str(64 * MB)
        assert (tracking.v2_group.path / "pids.max").read_text().strip() == "8"
    finally:
        tracking.release()


@real_v2
def test_a_job_over_its_memory_is_oom_killed_and_seen(backend: CgroupBackend) -> None:
    """A process allocating past memory.max is killed by the kernel and out_of_memory says so."""
    tracking = _track(backend, "oom", memory_mb=32)
    try:
        proc = _start(
            tracking,
            [
                sys.executable,
                "-c",
                "b = bytearray(200 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096])",
            ],
        )
        assert proc.wait(timeout=60) == -signal.SIGKILL
        assert tracking.out_of_memory() is True
        usage = tracking.usage()
        assert usage.memory_peak is None or usage.memory_peak >= 16 * MB
    finally:
        tracking.release()


@real_v2
def test_the_pids_limit_stops_forks(backend: CgroupBackend) -> None:
    """Past pids.max a fork fails inside the job."""
    tracking = _track(backend, "pids")
    try:
        proc = _start(
            tracking, ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 5 & done; wait"]
        )
        proc.wait(timeout=30)
        assert tracking.v2_group is not None
        # Kernel 6.1 counts a refused fork in the forking process's group: the job's leaf.
        events_file = tracking.v2_group.leaf / "pids.events"
        events = dict(line.split() for line in events_file.read_text().splitlines())
        assert int(events["max"]) > 0, "forks past pids.max were refused"
    finally:
        tracking.signal_all(signal.SIGKILL)
        time.sleep(0.2)
        tracking.release()


@real_v2
def test_freeze_thaw_kill_and_usage(backend: CgroupBackend) -> None:
    """A busy job frozen uses no CPU, runs again thawed, is killed whole, and its CPU shows."""
    tracking = _track(backend, "freeze")
    proc = _start(tracking, ["sh", "-c", "while :; do :; done"])
    try:
        time.sleep(0.5)
        assert tracking.freeze() is True
        before = tracking.usage().user_cpu
        time.sleep(0.5)
        assert tracking.usage().user_cpu == before
        assert tracking.thaw() is True
        time.sleep(0.5)
        after = tracking.usage().user_cpu
        assert after is not None and before is not None and after > before
        tracking.signal_all(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        assert tracking.pids() == frozenset()
    finally:
        proc.kill()
        proc.wait()
        tracking.release()
    assert not (ROOT / BASE / "_execute_freeze").exists()


@pytest.mark.system
def test_these_tests_pass_in_the_guest(guest: Guest) -> None:
    """This module's real-v2 tests and test_cgroup_v2_pool.py's (a real startd and starter
    under ``ep run``) all run and pass under the guest's cgroup v2, in one boot."""
    result = guest.run(
        "python -m pytest -q -p no:cacheprovider -o addopts='' -o testpaths='' "
        "--rootdir=/checkout /checkout/tests/starter/test_cgroup_v2_real.py "
        "/checkout/tests/starter/test_cgroup_v2_pool.py -k 'not in_the_guest' -rA --durations=5",
        timeout=600,
    )
    assert result.status == 0, result.output[-4000:] + result.console[-2000:]
    assert "5 passed" in result.output, result.output[-4000:]
