"""A running VM job's qemu is in the job's cgroups (not libvirt's machine.slice), so that
the slot's usage includes the guest's."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import attrs
import pytest
from epcore_vm.qemu import join_cgroups
from epcore_vm.runtime import RunningVm
from test_vm_running import FakeConnection, FakeDomain
from test_vm_runtime import _request

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


def test_the_guests_process_joins_the_jobs_cgroup_it_is_given(tmp_path: Path) -> None:
    """RunningVm writes the process libvirtd started for the guest (found by its guest= name)
    into the job's cgroup.procs files: the group then lists it and counts its CPU time."""
    if os.geteuid() != 0 or not (CPUACCT / "cgroup.procs").exists():
        pytest.skip("needs root and a cgroup v1 cpuacct hierarchy")
    name = f"epcore-standin-{os.getpid()}"
    group = CPUACCT / name
    group.mkdir()
    # A stand-in qemu: its command line names the guest as libvirt's qemu's does.
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass", f"guest={name},x"])
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
