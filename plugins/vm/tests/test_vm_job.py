"""VM universe jobs through a real personal pool (``ep run``) and the private libvirtd: the
guest boots, reads its input disk, writes its output disk and powers off, and the job ends
as HTCondor reports it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import pytest
from vm_guest import DONE_LINE, UP_LINE
from vm_pool import JOB_DEADLINE, VmPool


# One libvirtd per machine holds /run/libvirt: its tests share one worker.
@pytest.mark.xdist_group("libvirtd")
def test_vm_job_completes_and_its_output_disk_comes_back(vm_pool: Callable[..., VmPool]) -> None:
    """A user's VM job boots the guest, which copies its input disk upper-cased onto its
    output disk and powers off: the job completes with exit code 0, the written disk and the
    console come back to the Iwd owned by the user, and no domain or qemu is left."""
    vm = vm_pool()
    pool, user, home = vm.pool, vm.user, vm.home
    vm.submit()
    pool.wait_for(
        lambda: not pool.jobs(), JOB_DEADLINE, f"the VM job to leave the queue: {pool.jobs()}"
    )
    (job,) = pool.jobs(history=True)
    assert (job.evaluate("JobStatus"), job.evaluate("ExitCode")) == (4, 0), job
    assert (home / "out.img").read_bytes()[:26] == b"HELLO FROM THE INPUT DISK\n"
    assert (home / "out.img").stat().st_uid == user.uid
    console = (home / "vm_console.log").read_text(errors="replace")
    assert UP_LINE in console and DONE_LINE in console, console[-2000:]
    assert vm.domains() == []
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _is_qemu(p, vm.tag)]


def _is_qemu(pid: str, containing: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            line = handle.read()
    except OSError:
        return False
    return b"guest=epcore-" in line and containing.encode() in line


@pytest.mark.xdist_group("libvirtd")
def test_vacate_shuts_the_guest_down_then_destroys_it_and_requeues(
    vm_pool: Callable[..., VmPool],
) -> None:
    """ep vacate of a running VM job asks the guest to shut down and, since this guest
    ignores the power button, destroys its domain once MachineMaxVacateTime (4 s) is up;
    the job goes back to the queue and runs again."""
    vm = vm_pool("MachineMaxVacateTime = 4\n", b"count")
    pool = vm.pool
    vm.submit()
    name = vm.wait_for_domain()
    vacated = time.monotonic()
    result = pool.ep("vacate")
    assert result.status == 0, result.stderr
    pool.wait_for(lambda: name not in vm.domains(), 60, "the domain to go")
    took = time.monotonic() - vacated
    assert 3.0 <= took <= 60.0, took
    pool.wait_for(
        lambda: pool.log("StartLog").count("started starter") >= 2, 60, "the job to run again"
    )
    assert [j.evaluate("JobStatus") for j in pool.jobs()] in ([1], [2])
    starter_log = vm.starter_log()
    assert "shutdown" in starter_log and "destroy" in starter_log, starter_log[-2000:]


@pytest.mark.xdist_group("libvirtd")
def test_an_output_disk_that_cannot_go_back_holds_the_job_at_once(
    vm_pool: Callable[..., VmPool],
) -> None:
    """A VM job whose written disk cannot be copied back to its Iwd (root's file there) is
    held with code 12 naming the disk, and the schedd shows it held within seconds of the
    starter's end (a held job once seemed to stay Running in the queue)."""
    vm = vm_pool()
    pool, home = vm.pool, vm.home
    os.chown(home / "out.img", 0, 0)  # readable by the user, not writable
    os.chmod(home / "out.img", 0o644)
    vm.submit()
    pool.wait_for(lambda: "job ended: held" in vm.starter_log(), JOB_DEADLINE, "the hold")
    ended = time.monotonic()
    pool.wait_for(lambda: [j.evaluate("JobStatus") for j in pool.jobs()] == [5], 20, "held")
    assert time.monotonic() - ended < 20
    (job,) = pool.jobs()
    assert (job.evaluate("HoldReasonCode"), job.evaluate("HoldReasonSubCode")) == (12, 0)
    assert "cannot copy the output file out.img back" in str(job.evaluate("HoldReason"))
    assert vm.domains() == []
