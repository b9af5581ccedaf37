"""A running VM job's qemu is in the job's cgroups (not libvirt's machine.slice), so that
the slot's usage includes the guest's."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest
from epcore_vm.qemu import join_cgroups, memory_limited, qemu_pid
from epcore_vm.running import RunningVm
from test_vm_running import FakeConnection, FakeDomain
from test_vm_runtime import _request
from vm_pool import VmPool

from epcore.testing.system import missing
from epcore.types import ChildSetup

CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def _cpuacct_group(pid: int) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            return path
    return ""


def test_join_cgroups_names_the_files_it_could_not_write(tmp_path: Path) -> None:
    """A cgroup.procs that cannot be opened is reported with the kernel's answer."""
    missing = str(tmp_path / "gone" / "cgroup.procs")
    (failure,) = join_cgroups(12345, (missing,))
    assert failure.startswith(missing) and "No such file" in failure


def test_memory_limited_groups_are_left_out(tmp_path: Path) -> None:
    """A group with a memory limit file (v1 or v2) is not joined; one without is."""
    for name in ("memory.limit_in_bytes", "memory.max"):
        group = tmp_path / name.replace(".", "_")
        group.mkdir()
        (group / name).write_text("134217728\n")
        assert memory_limited(str(group / "cgroup.procs"))
    assert not memory_limited(str(tmp_path / "cgroup.procs"))


def test_the_guests_process_joins_the_jobs_cgroup_it_is_given(tmp_path: Path) -> None:
    """RunningVm writes the process libvirtd started for the guest (found by its guest= name)
    into the job's cgroup.procs files: the group then lists it and counts its CPU time."""
    if os.geteuid() != 0 or not (CPUACCT / "cgroup.procs").exists():
        missing("needs root and a cgroup v1 cpuacct hierarchy")
    name = f"epcore-standin-{os.getpid()}"
    group = CPUACCT / name
    group.mkdir()
    # A stand-in qemu: its command line names the guest as libvirt's qemu's does.
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass", f"guest={name},x"])
    # Until its exec, the child's command line is still the test's (a loaded machine).
    deadline = time.monotonic() + 10
    while qemu_pid(name) != spinner.pid and time.monotonic() < deadline:
        time.sleep(0.01)
    request = attrs.evolve(
        _request(tmp_path, "key"), child_setup=ChildSetup(join_files=(str(group / "cgroup.procs"),))
    )
    vm = RunningVm(FakeConnection(), FakeDomain(True), name, request, logging.getLogger("t"))
    try:
        vm.join_job_cgroups()
        assert str(spinner.pid) in (group / "cgroup.procs").read_text().split()
        assert vm.pids() == frozenset({spinner.pid})
        first = int((group / "cpuacct.usage").read_text())
        time.sleep(1)
        assert int((group / "cpuacct.usage").read_text()) > first
    finally:
        vm.release()
        spinner.kill()
        spinner.wait()
        group.rmdir()


@pytest.mark.xdist_group("libvirtd")
def test_a_running_guests_qemu_is_in_the_jobs_cgroup_and_its_usage_grows(
    vm_pool: Callable[..., VmPool],
) -> None:
    """While a counting guest runs, its qemu process is listed in the job's cpuacct group
    (named condor_..., not libvirt's), that group's CPU time grows, and the job is not held
    for the slot's memory limit (qemu stays out of the memory group)."""
    if not (CPUACCT / "cgroup.procs").exists():
        missing("no cgroup v1 cpuacct hierarchy on this host")
    vm = vm_pool("MachineMaxVacateTime = 4\n", b"count", cpus=4, memory=4096)
    pool = vm.pool
    vm.submit()
    name = vm.wait_for_domain()
    # libvirt can list a domain a moment before its qemu's command line is readable.
    pool.wait_for(lambda: qemu_pid(name) is not None, 30, "the guest's qemu process")
    pid = qemu_pid(name)
    assert pid is not None, f"{name}'s qemu is gone: {vm.domains()}"

    def moved() -> bool:
        return "/condor_" in _cpuacct_group(pid)

    pool.wait_for(moved, 30, "qemu in the job's cgroup")
    group = CPUACCT / _cpuacct_group(pid).lstrip("/")
    assert "machine" not in str(group)
    assert str(pid) in (group / "cgroup.procs").read_text().split()
    first = int((group / "cpuacct.usage").read_text())
    time.sleep(3)
    assert int((group / "cpuacct.usage").read_text()) > first
    time.sleep(8)  # the memory limit held the job within 8 s when qemu joined its group
    assert vm.domains() == [name]
    assert pool.ep("rm", "1.0").status == 0
    pool.wait_for(lambda: not vm.domains(), 60, "the domain to go")
