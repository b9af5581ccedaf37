"""RunningVm's own logic against a stand-in domain (no libvirt): the end of the guest,
stop's shutdown then destroy (or the save of a vm_checkpoint guest), and what goes back with
vm_no_output_vm."""

from __future__ import annotations

import logging
import select
import signal
import threading
from pathlib import Path

import pytest
from epcore_vm.domain import CONSOLE_FILE, VmInfrastructureError
from epcore_vm.running import RunningVm
from epcore_vm.status import STATUS_FAILED, StatusErrors
from test_vm_runtime import _request
from test_vm_status import LibvirtFailure


class FakeDomain:
    """A domain that runs until shut down (when it honours the power button) or destroyed."""

    def __init__(self, honours_shutdown: bool) -> None:
        self.honours_shutdown = honours_shutdown
        self.active = True
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def isActive(self) -> bool:
        return self.active

    def shutdown(self) -> None:
        self.calls.append("shutdown")
        if self.honours_shutdown:
            self.active = False

    def destroy(self) -> None:
        self.calls.append("destroy")
        self.active = False

    def info(self) -> list[int]:
        return [1, 0, 0, 1, 2_500_000_000]


class FakeConnection:
    def close(self) -> None:
        pass


def _vm(tmp_path: Path, domain: FakeDomain, **job: object) -> RunningVm:
    request = _request(tmp_path, "key")
    for name, value in job.items():
        request.job[name] = value
    return RunningVm(FakeConnection(), domain, "epcore-key", request, logging.getLogger("t"))


def _ended(vm: RunningVm, timeout: float) -> bool:
    return bool(select.select([vm.fileno()], [], [], timeout)[0])


def test_a_guest_that_powers_off_exits_0(tmp_path: Path) -> None:
    """The watcher sees the domain stop: fileno is readable and the exit is (0, None)."""
    domain = FakeDomain(honours_shutdown=True)
    vm = _vm(tmp_path, domain)
    try:
        assert not _ended(vm, 0.5) and vm.exit_status() is None
        domain.active = False
        assert _ended(vm, 5)
        assert vm.exit_status() == (0, None)
        assert vm.usage().user_cpu == 2.5
    finally:
        vm.release()


def test_stop_destroys_a_guest_that_ignores_shutdown_after_the_grace(tmp_path: Path) -> None:
    """stop asks for a shutdown at once and destroys after grace_seconds: the exit then
    reads as SIGKILL."""
    domain = FakeDomain(honours_shutdown=False)
    vm = _vm(tmp_path, domain)
    try:
        vm.stop(int(signal.SIGTERM), 0.5)
        assert domain.calls == ["shutdown"]
        assert _ended(vm, 5)
        assert domain.calls == ["shutdown", "destroy"]
        assert vm.exit_status() == (None, int(signal.SIGKILL))
    finally:
        vm.release()


def test_a_guest_that_honours_shutdown_is_not_destroyed(tmp_path: Path) -> None:
    """A guest that powers off on the shutdown request ends with (0, None), no destroy."""
    domain = FakeDomain(honours_shutdown=True)
    vm = _vm(tmp_path, domain)
    try:
        vm.stop(int(signal.SIGTERM), 30)
        assert _ended(vm, 5)
        assert domain.calls == ["shutdown"] and vm.exit_status() == (0, None)
    finally:
        vm.release()


def test_release_destroys_a_running_guest(tmp_path: Path) -> None:
    """Releasing the job while its guest runs destroys the domain."""
    domain = FakeDomain(honours_shutdown=False)
    vm = _vm(tmp_path, domain)
    vm.release()
    assert domain.calls == ["destroy"]
    vm.release()  # a second release does nothing
    assert domain.calls == ["destroy"]


def test_no_output_vm_leaves_nothing_to_send_back(tmp_path: Path) -> None:
    """With VMPARAM_No_Output_VM the disks and the console leave the sandbox before the
    output transfer; without it they stay."""
    (tmp_path / CONSOLE_FILE).write_text("up\n")
    vm = _vm(tmp_path, FakeDomain(True), VMPARAM_No_Output_VM=True)
    try:
        assert vm.collect_output() is None
    finally:
        vm.release()
    assert not [p for p in ("in.img", "out.img", CONSOLE_FILE) if (tmp_path / p).exists()]
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / CONSOLE_FILE).write_text("up\n")
    vm = _vm(kept, FakeDomain(True))
    try:
        assert vm.collect_output() is None
    finally:
        vm.release()
    assert all((kept / p).exists() for p in ("in.img", "out.img", CONSOLE_FILE))


class SavingDomain(FakeDomain):
    """A domain that virDomainSave stops, having written its memory to the file."""

    def save(self, path: str) -> None:
        self.calls.append("save")
        Path(path).write_bytes(b"guest memory")
        self.active = False


def _checkpointing(tmp_path: Path, domain: FakeDomain) -> tuple[RunningVm, Path]:
    request = _request(tmp_path, "key")
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    request.job["Iwd"] = str(iwd)
    request.job["ClusterId"] = 1
    request.job["ProcId"] = 0
    (iwd / "vm_checkpoint.1.0.mem").write_bytes(b"an earlier run's guest")
    target = str(tmp_path / "vm_checkpoint.1.0.mem")
    vm = RunningVm(
        FakeConnection(), domain, "epcore-key", request, logging.getLogger("t"), checkpoint=target
    )
    return vm, iwd


def test_stop_saves_a_checkpointing_guest_instead_of_shutting_it_down(tmp_path: Path) -> None:
    """A vm_checkpoint job's stop saves the guest to the sandbox (no shutdown, no destroy),
    and the earlier checkpoint in the Iwd stays until the new one replaces it."""
    domain = SavingDomain(honours_shutdown=True)
    vm, iwd = _checkpointing(tmp_path, domain)
    try:
        vm.stop(int(signal.SIGTERM), 30)
        assert _ended(vm, 5)
        assert domain.calls == ["save"]
        assert vm.collect_output() is None
    finally:
        vm.release()
    assert (tmp_path / "vm_checkpoint.1.0.mem").read_bytes() == b"guest memory"
    assert (iwd / "vm_checkpoint.1.0.mem").exists()


def test_a_checkpointing_guest_that_powers_off_forgets_its_checkpoint(tmp_path: Path) -> None:
    """A vm_checkpoint guest that powers off by itself completed the job: its checkpoint
    leaves the Iwd."""
    domain = SavingDomain(honours_shutdown=True)
    vm, iwd = _checkpointing(tmp_path, domain)
    try:
        domain.active = False
        assert _ended(vm, 5)
        assert vm.collect_output() is None
    finally:
        vm.release()
    assert not (iwd / "vm_checkpoint.1.0.mem").exists()


def test_a_removed_checkpointing_guest_is_shut_down_not_saved(tmp_path: Path) -> None:
    """``removing`` before the stop (ep rm): the guest is shut down instead of saved, no
    checkpoint is left in the sandbox, and the one an earlier vacate left in the Iwd goes."""
    domain = SavingDomain(honours_shutdown=True)
    vm, iwd = _checkpointing(tmp_path, domain)
    try:
        vm.removing()
        vm.stop(int(signal.SIGTERM), 30)
        assert _ended(vm, 5)
        assert domain.calls == ["shutdown"]
        assert vm.collect_output() is None
    finally:
        vm.release()
    assert not (tmp_path / "vm_checkpoint.1.0.mem").exists()
    assert not (iwd / "vm_checkpoint.1.0.mem").exists()


def test_a_removal_during_a_vacate_s_save_keeps_no_checkpoint(tmp_path: Path) -> None:
    """A removal that comes after the vacate began saving: the saved file is not kept in the
    sandbox (so it cannot go back) and the Iwd's goes too."""
    domain = SavingDomain(honours_shutdown=True)
    vm, iwd = _checkpointing(tmp_path, domain)
    try:
        vm.stop(int(signal.SIGTERM), 30)
        assert _ended(vm, 5)
        vm.removing()
        assert vm.collect_output() is None
    finally:
        vm.release()
    assert domain.calls == ["save"]
    assert not (tmp_path / "vm_checkpoint.1.0.mem").exists()
    assert not (iwd / "vm_checkpoint.1.0.mem").exists()


class FailingDomain(FakeDomain):
    """A domain libvirt cannot say anything about (libvirtd gone, say)."""

    def isActive(self) -> bool:
        raise LibvirtFailure(1)


def test_status_failures_in_a_row_end_the_job_as_the_machine_s_fault(tmp_path: Path) -> None:
    """VM_STATUS_MAX_ERROR failed checks in a row end the job: the domain is destroyed and
    collect_output raises the VMError that requeues it and marks the universe offline."""
    domain = FailingDomain(honours_shutdown=True)
    request = _request(tmp_path, "key")
    vm = RunningVm(
        FakeConnection(),
        domain,
        "epcore-key",
        request,
        logging.getLogger("t"),
        status=StatusErrors(3, 0.0),
    )
    try:
        assert _ended(vm, 5)
        assert domain.calls == ["destroy"]
        with pytest.raises(VmInfrastructureError, match=STATUS_FAILED) as raised:
            vm.collect_output()
        assert (raised.value.hold_code, raised.value.universe) == (1020, "VM")
    finally:
        vm.release()
