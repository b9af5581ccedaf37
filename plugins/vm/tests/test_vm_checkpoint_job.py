"""vm_checkpoint through a real personal pool: a vacated guest is saved, its saved state
goes back to the Iwd with the job's files, and the next run resumes the guest from it."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from vm_guest import TICK_LINE, UP_LINE
from vm_pool import JOB_DEADLINE, VmPool

from epcore.testing.pool import PoolProcess

#: The guest's counter, as it prints it on its console.
_TICK = re.compile(rf"{TICK_LINE} (\d+)")


def _running_console(pool: PoolProcess) -> Path | None:
    """The console of the job's guest in its sandbox (under the pool's execute directory)."""
    found = sorted(pool.directory.rglob("vm_console.log"))
    return found[0] if found else None


def _ticks(path: Path | None) -> list[int]:
    if path is None:
        return []
    try:
        return [int(n) for n in _TICK.findall(path.read_text(errors="replace"))]
    except OSError:
        return []  # the sandbox went meanwhile


@pytest.mark.xdist_group("libvirtd")
def test_a_vacated_checkpointing_guest_resumes_its_counter_when_it_runs_again(
    vm_pool: Callable[..., VmPool],
) -> None:
    """ep vacate of a vm_checkpoint job saves its guest (counting once a second); the saved
    memory comes back to the Iwd with the console, and when the job runs again the guest
    resumes: its counter goes on from the last value it printed instead of starting over,
    and it does not boot again."""
    vm = vm_pool("", b"count")
    pool, user, home = vm.pool, vm.user, vm.home
    # The guest ignores the power button: the final ep rm (no save) destroys it after 20 s.
    vm.submit("vm_checkpoint = true\njob_max_vacate_time = 20")
    pool.wait_for(
        lambda: len(_ticks(_running_console(pool))) >= 4, JOB_DEADLINE, "the guest to count"
    )
    result = pool.ep("vacate")
    assert result.status == 0, result.stderr
    saved = home / "vm_checkpoint.1.0.mem"
    # The output goes back in name order: the console comes after the saved guest.
    pool.wait_for(
        lambda: saved.exists() and bool(_ticks(home / "vm_console.log")),
        120,
        "the saved guest and the console in the Iwd",
    )
    before = _ticks(home / "vm_console.log")
    assert saved.stat().st_uid == user.uid
    pool.wait_for(lambda: bool(vm.domains()), JOB_DEADLINE, "the second run")
    pool.wait_for(lambda: len(_ticks(_running_console(pool))) >= 2, 120, "the counter again")
    console = _running_console(pool)
    assert console is not None
    after = _ticks(console)
    starter_log = vm.starter_log()
    assert after[0] >= before[-1] >= 3, (before, after, starter_log[-3000:])
    assert UP_LINE not in console.read_text(errors="replace")
    assert "resumed from its checkpoint" in starter_log, starter_log[-2000:]
    assert pool.ep("rm", "1.0").status == 0
    pool.wait_for(lambda: not vm.domains(), 60, "the domain to go")


@pytest.mark.xdist_group("libvirtd")
def test_removing_a_checkpointing_job_saves_nothing_and_leaves_no_domain(
    vm_pool: Callable[..., VmPool],
) -> None:
    """ep rm of a running vm_checkpoint job (its guest counting) does not save the guest:
    the domain goes, no vm_checkpoint file is made in the sandbox or the Iwd, and the one an
    earlier run left in the Iwd is removed with the job (HTCondor's spool goes with it)."""
    vm = vm_pool("", b"count")
    pool, user, home = vm.pool, vm.user, vm.home
    earlier = home / "vm_checkpoint.1.0.mem"
    earlier.write_bytes(b"not a saved guest: the run boots afresh")
    os.chown(earlier, user.uid, user.gid)
    # The guest ignores the power button: it is destroyed when the 10 s vacate time is up.
    vm.submit("vm_checkpoint = true\njob_max_vacate_time = 10")
    pool.wait_for(
        lambda: len(_ticks(_running_console(pool))) >= 2, JOB_DEADLINE, "the guest to count"
    )
    result = pool.ep("rm", "1.0")
    assert result.status == 0, result.stderr
    pool.wait_for(lambda: not vm.domains(), 120, "the domain to go")
    pool.wait_for(lambda: not pool.jobs(), 120, "the job to leave the queue")
    pool.wait_for(lambda: _running_console(pool) is None, 60, "the sandbox to go")
    (removed,) = pool.jobs(history=True)
    assert removed.evaluate("JobStatus") == 3
    starter_log = vm.starter_log()
    assert "the job is removed" in starter_log, starter_log[-3000:]
    assert "checkpointed" not in starter_log, starter_log[-3000:]
    assert not list(home.glob("vm_checkpoint.*")), sorted(p.name for p in home.iterdir())
    assert not list(pool.directory.rglob("vm_checkpoint.*"))


def _slot_values(pool: PoolProcess, name: str) -> list[str]:
    """``name``'s value in each slot ad that has it (quotes kept)."""
    found = []
    for line in pool.ep("status", "-l").stdout.splitlines():
        if line.startswith(f"{name} = "):
            found.append(line.split(" = ", 1)[1].strip())
    return found


def _guest_mac(uri: str, containing: str) -> str | None:
    import libvirt
    from epcore_vm.guestnet import interface_macs

    connection = libvirt.open(uri)
    try:
        for domain in connection.listAllDomains(0):
            if domain.name().startswith("epcore-") and containing in domain.name():
                macs = interface_macs(domain.XMLDesc(0))
                return macs[0] if macs else None
        return None
    finally:
        connection.close()


@pytest.mark.xdist_group("libvirtd")
def test_a_networked_checkpointing_guest_keeps_its_mac(
    vm_pool: Callable[..., VmPool],
) -> None:
    """A networked (user networking: qemu's own, no passt here) vm_checkpoint guest: while
    it runs its slot advertises VM_Guest_Mac and every slot VM_All_Guest_Macs; ep vacate
    writes its MAC into the job's ad as VM_CkptMac, and the guest resumed by the next run
    has the same MAC. (The tests' guest asks for no DHCP lease, so no VM_Guest_IP.)"""
    extra = "VM_NETWORKING = true\nVM_NETWORKING_TYPE = user\nVM_USAGE_INTERVAL = 1\n"
    vm = vm_pool(extra, b"count")
    pool = vm.pool
    submit = (
        "vm_checkpoint = true\nvm_networking = true\nvm_networking_type = user\n"
        "when_to_transfer_output = ON_EXIT_OR_EVICT\n"
        # The guest ignores the power button: the final ep rm (no save) destroys it after 20 s.
        "job_max_vacate_time = 20"
    )
    vm.submit(submit)
    pool.wait_for(
        lambda: len(_ticks(_running_console(pool))) >= 2, JOB_DEADLINE, "the guest to count"
    )
    mac = _guest_mac(vm.uri, vm.tag)
    assert mac is not None
    pool.wait_for(lambda: bool(_slot_values(pool, "VM_Guest_Mac")), 60, "VM_Guest_Mac")
    assert _slot_values(pool, "VM_Guest_Mac") == [f'"{mac}"']
    assert f'"{mac}"' in _slot_values(pool, "VM_All_Guest_Macs")
    assert pool.ep("vacate").status == 0
    pool.wait_for(
        lambda: [j.evaluate("VM_CkptMac") for j in pool.jobs()] == [mac], 120, "VM_CkptMac"
    )
    pool.wait_for(lambda: _guest_mac(vm.uri, vm.tag) is not None, JOB_DEADLINE, "run 2")
    assert _guest_mac(vm.uri, vm.tag) == mac
    pool.wait_for(lambda: len(_ticks(_running_console(pool))) >= 1, 120, "the counter again")
    starter_log = vm.starter_log()
    assert "resumed from its checkpoint" in starter_log, starter_log[-2000:]
    assert pool.ep("rm", "1.0").status == 0
    pool.wait_for(lambda: not vm.domains(), 60, "the domain to go")


@pytest.mark.xdist_group("libvirtd")
def test_a_periodic_checkpoint_reaches_the_iwd_and_the_guest_goes_on(
    vm_pool: Callable[..., VmPool],
) -> None:
    """With VM_PERIODIC_CHECKPOINT and a PERIODIC_CHECKPOINT of 10 s, a running vm_checkpoint
    guest is saved, its memory and console reach the Iwd as the user's while the job still
    runs, and the guest is restored: its counter goes on past the checkpoint's last value
    without a second boot."""
    extra = (
        "VM_PERIODIC_CHECKPOINT = true\n"
        "PERIODIC_CHECKPOINT = (time() - LastPeriodicCheckpoint) > 10\n"
    )
    vm = vm_pool(extra, b"count")
    pool, user, home = vm.pool, vm.user, vm.home
    # The guest ignores the power button: the final ep rm (no save) destroys it after 20 s.
    vm.submit("vm_checkpoint = true\njob_max_vacate_time = 20")
    saved = home / "vm_checkpoint.1.0.mem"
    # The first checkpoint may come before the guest has booted: wait for one that has
    # the counter on its console.
    pool.wait_for(
        lambda: saved.exists() and bool(_ticks(home / "vm_console.log")),
        JOB_DEADLINE,
        "a periodic checkpoint of the counting guest in the Iwd",
    )
    assert saved.stat().st_uid == user.uid
    assert [j.evaluate("JobStatus") for j in pool.jobs()] == [2]
    at_checkpoint = _ticks(home / "vm_console.log")
    pool.wait_for(
        lambda: max(_ticks(_running_console(pool)) or [0]) >= at_checkpoint[-1] + 3,
        120,
        "the counter to go on after the checkpoint",
    )
    console = _running_console(pool)
    assert console is not None
    assert console.read_text(errors="replace").count(UP_LINE) == 1
    starter_log = vm.starter_log()
    assert "periodic checkpoint of" in starter_log and "sent to the Iwd" in starter_log
    assert pool.ep("rm", "1.0").status == 0
    pool.wait_for(lambda: not vm.domains(), 60, "the domain to go")
