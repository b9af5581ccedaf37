"""The ``vm`` runtime against the private libvirtd, without a pool: start, watch, power-off,
pause and resume, stop, reclaim and sweep."""

from __future__ import annotations

import logging
import re
import select
import signal
import time
from pathlib import Path

import pytest
from epcore_vm.domain import CONSOLE_FILE
from epcore_vm.running import SAVE_FILE, RunningVm
from epcore_vm.runtime import VmRuntime
from vm_guest import DONE_LINE, TICK_LINE, Guest
from vm_pool import INPUT, domains, vm_config

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.types import ContainerJob

LOG = logging.getLogger("test_vm_runtime")
#: Boot to power-off under TCG on a shared machine.
DEADLINE = 60.0


def _runtime(uri: str, guest: Guest, extra: str = "") -> VmRuntime:
    return VmRuntime(Config.from_text(vm_config(uri, guest, extra)))


def _request(sandbox: Path, key: str, data: bytes = INPUT) -> ContainerJob:
    (sandbox / "in.img").write_bytes(data.ljust(1 << 20, b"\0"))
    (sandbox / "out.img").write_bytes(b"\0" * (1 << 20))
    job = ClassAd()
    job["JobUniverse"] = 13
    job["JobVMType"] = "kvm"
    job["JobVMMemory"] = 96
    job["JobVM_VCPUS"] = 1
    job["VMPARAM_vm_Disk"] = "in.img:vda:r,out.img:vdb:w"
    return ContainerJob(
        job_key=key,
        slot_name="slot1",
        job=job,
        machine=ClassAd(),
        argv=(),
        environment=(),
        sandbox=str(sandbox),
        stdin="/dev/null",
        stdout="/dev/null",
        stderr="/dev/null",
        uid=0,
        gid=0,
        cpus=1.0,
        memory_mb=128,
        kill_signal=int(signal.SIGTERM),
        vacate_seconds=5.0,
    )


def _wait_end(vm: RunningVm, timeout: float = DEADLINE) -> None:
    ready, _, _ = select.select([vm.fileno()], [], [], timeout)
    console = Path(vm.request.sandbox, CONSOLE_FILE)
    text = console.read_text(errors="replace")[-1500:] if console.exists() else "(none)"
    assert ready, f"the domain did not stop in {timeout:.0f} s: {vm.domain.info()} {text}"


def _ticks(sandbox: Path) -> list[int]:
    text = (sandbox / CONSOLE_FILE).read_text(errors="replace")
    return [int(n) for n in re.findall(re.escape(TICK_LINE) + r" (\d+)", text)]


def _wait_ticks(sandbox: Path, count: int, timeout: float = DEADLINE) -> None:
    deadline = time.monotonic() + timeout
    while len(_ticks(sandbox)) < count:
        assert time.monotonic() < deadline, "the guest's counter did not start"
        time.sleep(0.5)


@pytest.mark.xdist_group("libvirtd")
def test_a_guest_that_powers_off_ends_the_job(
    libvirt_uri: str, vm_guest: Guest, tmp_path: Path
) -> None:
    """The domain runs until the guest powers off: fileno becomes readable, the exit is
    (0, None), the output disk holds the result, and release leaves no domain."""
    runtime = _runtime(libvirt_uri, vm_guest)
    vm = runtime.start(_request(tmp_path, f"{tmp_path}/key-ok"), LOG)
    try:
        assert vm.exit_status() is None
        assert vm.pids(), "the guest's qemu process is tracked"
        _wait_end(vm)
        assert vm.exit_status() == (0, None)
    finally:
        vm.release()
    assert (tmp_path / "out.img").read_bytes()[:26] == b"HELLO FROM THE INPUT DISK\n"
    assert DONE_LINE in (tmp_path / CONSOLE_FILE).read_text(errors="replace")
    assert domains(libvirt_uri, tmp_path.name) == []


@pytest.mark.xdist_group("libvirtd")
@pytest.mark.parametrize("soft", [True, False])
def test_freeze_suspends_the_guest_and_thaw_resumes_it(
    libvirt_uri: str, vm_guest: Guest, tmp_path: Path, soft: bool
) -> None:
    """While frozen the guest's clock-driven counter stops (VM_SOFT_SUSPEND: paused; else
    its memory saved to the sandbox and the domain gone); thawed, it goes on; stop asks for
    a shutdown the guest ignores, then destroys it after the grace time."""
    runtime = _runtime(libvirt_uri, vm_guest, f"VM_SOFT_SUSPEND = {soft}\n")
    vm = runtime.start(_request(tmp_path, f"{tmp_path}/key-pause", b"count"), LOG)
    try:
        _wait_ticks(tmp_path, 2)
        assert vm.freeze()
        time.sleep(1.5)  # a tick already on its way may still land
        frozen = len(_ticks(tmp_path))
        if not soft:
            assert (tmp_path / SAVE_FILE).exists()
            assert domains(libvirt_uri, tmp_path.name) == [], "a saved guest is not running"
            assert vm.exit_status() is None, "a saved guest has not ended"
        time.sleep(4)
        assert len(_ticks(tmp_path)) == frozen, "the counter went on while suspended"
        assert vm.thaw()
        assert not (tmp_path / SAVE_FILE).exists()
        _wait_ticks(tmp_path, frozen + 2, 60)
        started = time.monotonic()
        vm.stop(int(signal.SIGTERM), 3.0)
        _wait_end(vm, 60)
        assert time.monotonic() - started >= 2.5
        assert vm.exit_status() == (None, int(signal.SIGKILL))
    finally:
        vm.release()
    assert domains(libvirt_uri, tmp_path.name) == []


@pytest.mark.xdist_group("libvirtd")
def test_reclaim_and_sweep_remove_a_dead_starters_domain(
    libvirt_uri: str, vm_guest: Guest, tmp_path: Path
) -> None:
    """A domain whose starter is gone is destroyed by reclaim (by its key) and by sweep
    (by its description), but sweep keeps the keys it is told to keep and other prefixes."""
    runtime = _runtime(libvirt_uri, vm_guest)
    first = runtime.start(_request(tmp_path, f"{tmp_path}/keep-a", b"count"), LOG)
    (tmp_path / "b").mkdir()
    second = runtime.start(_request(tmp_path / "b", f"{tmp_path}/gone-b", b"count"), LOG)
    try:
        assert len(domains(libvirt_uri, tmp_path.name)) == 2
        assert runtime.sweep({f"{tmp_path}/keep-a"}, ["/elsewhere/"]) == ()
        assert runtime.sweep({f"{tmp_path}/keep-a"}, [str(tmp_path)]) == (f"{tmp_path}/gone-b",)
        assert len(domains(libvirt_uri, tmp_path.name)) == 1
        assert runtime.reclaim(f"{tmp_path}/keep-a") is True
        assert runtime.reclaim(f"{tmp_path}/keep-a") is False
        assert domains(libvirt_uri, tmp_path.name) == []
    finally:
        first.release()
        second.release()
