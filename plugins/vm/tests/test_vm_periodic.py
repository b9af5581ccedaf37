"""Periodic checkpoints without libvirt: VM_PERIODIC_CHECKPOINT and PERIODIC_CHECKPOINT, the
files a checkpoint sends to the Iwd as the job's user, and RunningVm's save, send, restore."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import attrs
import epcore_vm.running
import pytest
from epcore_vm.domain import CONSOLE_FILE, VmInfrastructureError
from epcore_vm.periodic import checkpoint_files, due, periodic_expression, send_to_iwd
from epcore_vm.running import RunningVm
from test_vm_running import SavingDomain
from test_vm_runtime import _request

from epcore.classad import parse_ad, parse_expr
from epcore.config import Config

ON = "VM_PERIODIC_CHECKPOINT = true\n"
EVERY_10 = "PERIODIC_CHECKPOINT = (time() - LastPeriodicCheckpoint) > 10\n"


def test_the_knob_turns_periodic_checkpoints_on() -> None:
    """Off by default (HTCondor's KVM starter declines them), whatever PERIODIC_CHECKPOINT
    says; on, the expression; an expression that does not parse is none."""
    assert periodic_expression(Config.from_text(EVERY_10)) is None
    assert periodic_expression(Config.from_text(ON + EVERY_10)) is not None
    assert periodic_expression(Config.from_text(ON + "PERIODIC_CHECKPOINT = (((\n")) is None


def test_the_expression_sees_the_last_checkpoint_the_slot_and_the_job() -> None:
    """PERIODIC_CHECKPOINT is evaluated with LastPeriodicCheckpoint in the slot (MY) and the
    job as TARGET, at the given clock."""
    expression = parse_expr("(time() - LastPeriodicCheckpoint) > MY.Every && TARGET.Big")
    machine, job = parse_ad("[ Every = 10 ]"), parse_ad("[ Big = true ]")
    assert not due(expression, machine, job, last=100.0, now=105.0)
    assert due(expression, machine, job, last=100.0, now=111.0)
    assert not due(expression, machine, parse_ad("[ Big = false ]"), last=100.0, now=111.0)
    assert "LastPeriodicCheckpoint" not in machine  # the slot ad is not changed


def test_a_checkpoint_sends_the_written_disks_the_console_then_the_memory() -> None:
    """The writable disks (not the read-only ones), the console, and the saved memory last."""
    job = parse_ad('[ VMPARAM_vm_Disk = "in.img:vda:r, out.img:vdb:w, data.qcow2:vdc:rw:qcow2" ]')
    assert checkpoint_files(job, "/sb/vm_checkpoint.1.0.mem") == [
        "out.img",
        "data.qcow2",
        CONSOLE_FILE,
        "vm_checkpoint.1.0.mem",
    ]


def _sandbox_and_iwd(tmp_path: Path, uid: int, gid: int) -> tuple[Path, Path]:
    sandbox, iwd = tmp_path / "sandbox", tmp_path / "iwd"
    sandbox.mkdir()
    iwd.mkdir()
    os.chown(iwd, uid, gid)
    return sandbox, iwd


def test_the_files_reach_the_iwd_as_the_job_s_user(shared_dir: Path, slot_users) -> None:
    """send_to_iwd gives root's files (libvirtd's) to the user and copies them into the Iwd
    as the user, replacing what was there; a missing name is skipped."""
    user = slot_users[0]
    sandbox, iwd = _sandbox_and_iwd(shared_dir, user.uid, user.gid)
    request = attrs.evolve(
        _request(sandbox, "k"), uid=user.uid, gid=user.gid, job=parse_ad(f'[ Iwd = "{iwd}" ]')
    )
    (sandbox / "m.mem").write_bytes(b"memory")
    (sandbox / "out.img").write_bytes(b"disk")
    (iwd / "out.img").write_bytes(b"old disk")
    os.chown(iwd / "out.img", user.uid, user.gid)
    assert send_to_iwd(request, ["out.img", "gone.log", "m.mem"]) is None
    assert (iwd / "m.mem").read_bytes() == b"memory"
    assert (iwd / "out.img").read_bytes() == b"disk"
    assert {(iwd / n).stat().st_uid for n in ("m.mem", "out.img")} == {user.uid}
    assert sorted(p.name for p in iwd.iterdir()) == ["m.mem", "out.img"]


def test_an_iwd_the_user_cannot_write_gets_nothing(shared_dir: Path, slot_users) -> None:
    """The copy runs as the user: root's Iwd refuses it, the reason is given and no
    temporary file is left."""
    user = slot_users[0]
    sandbox, iwd = _sandbox_and_iwd(shared_dir, 0, 0)
    (sandbox / "m.mem").write_bytes(b"memory")
    request = attrs.evolve(
        _request(sandbox, "k"), uid=user.uid, gid=user.gid, job=parse_ad(f'[ Iwd = "{iwd}" ]')
    )
    problem = send_to_iwd(request, ["m.mem"])
    assert problem is not None and "Permission denied" in problem
    assert list(iwd.iterdir()) == []


class RestoringConnection:
    """libvirt's restore of a saved (transient) domain: the domain runs again."""

    def __init__(self, domain: SavingDomain, fails: bool = False) -> None:
        self.domain, self.fails, self.restored = domain, fails, 0

    def restore(self, path: str) -> None:
        if self.fails:
            raise RuntimeError("cannot restore")
        assert Path(path).read_bytes() == b"guest memory"
        self.restored += 1
        self.domain.active = True

    def lookupByName(self, name: str) -> SavingDomain:
        return self.domain

    def close(self) -> None:
        pass


def _periodic_vm(
    tmp_path: Path, connection: RestoringConnection, expression: str | None = None
) -> tuple[RunningVm, Path]:
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    request = _request(tmp_path, "key")
    for name, value in (("Iwd", str(iwd)), ("ClusterId", 1), ("ProcId", 0)):
        request.job[name] = value
    vm = RunningVm(
        connection,
        connection.domain,
        "epcore-key",
        request,
        logging.getLogger("t"),
        checkpoint=str(tmp_path / "vm_checkpoint.1.0.mem"),
        periodic=parse_expr(expression) if expression else None,
    )
    return vm, iwd


def test_a_periodic_checkpoint_sends_the_guest_and_lets_it_go_on(tmp_path: Path) -> None:
    """The guest is saved, its memory and written disk reach the Iwd, and it is restored:
    it still runs, the job has not ended, and the sandbox's copy of the memory is gone."""
    domain = SavingDomain(honours_shutdown=False)
    connection = RestoringConnection(domain)
    vm, iwd = _periodic_vm(tmp_path, connection)
    try:
        (tmp_path / "out.img").write_bytes(b"written")
        assert vm.periodic_checkpoint()
        assert (iwd / "vm_checkpoint.1.0.mem").read_bytes() == b"guest memory"
        assert (iwd / "out.img").read_bytes() == b"written"
        assert not (iwd / "in.img").exists()
        assert (domain.calls, connection.restored, domain.active) == (["save"], 1, True)
        time.sleep(0.6)  # two looks of the watcher
        assert vm.exit_status() is None
        assert not (tmp_path / "vm_checkpoint.1.0.mem").exists()
    finally:
        vm.release()


def test_a_guest_that_cannot_be_restored_ends_the_job_as_libvirt_s_failure(
    tmp_path: Path,
) -> None:
    """A restore libvirt refuses ends the job as an infrastructure failure (requeued; the
    next run resumes from the Iwd's checkpoint)."""
    domain = SavingDomain(honours_shutdown=False)
    vm, iwd = _periodic_vm(tmp_path, RestoringConnection(domain, fails=True))
    try:
        assert vm.periodic_checkpoint()
        assert (iwd / "vm_checkpoint.1.0.mem").exists()
        assert vm.exit_status() is not None
        with pytest.raises(VmInfrastructureError, match="periodic checkpoint"):
            vm.collect_output()
    finally:
        vm.release()


def test_the_timer_checkpoints_when_the_expression_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With PERIODIC_CHECKPOINT true after 0.3 s, the runtime's timer checkpoints the guest
    by itself; a false one never does."""
    monkeypatch.setattr(epcore_vm.running, "CHECK_SECONDS", 0.1)
    connection = RestoringConnection(SavingDomain(honours_shutdown=False))
    vm, iwd = _periodic_vm(tmp_path, connection, "time() - LastPeriodicCheckpoint > 0.3")
    try:
        deadline = time.monotonic() + 10
        while connection.restored == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert connection.restored >= 1 and (iwd / "vm_checkpoint.1.0.mem").exists()
    finally:
        vm.release()
    (tmp_path / "never").mkdir()
    never = RestoringConnection(SavingDomain(honours_shutdown=False))
    vm, _ = _periodic_vm(tmp_path / "never", never, "false")
    try:
        time.sleep(0.5)
        assert never.restored == 0
    finally:
        vm.release()
