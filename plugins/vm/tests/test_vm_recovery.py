"""A VM job's domain outlives a starter killed with SIGKILL (libvirtd, not the starter, is
qemu's parent): the startd reclaims it at once, and a startd that died with it sweeps it at
its next start."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable

import pytest
from vm_pool import VmPool


def _running_vm_pool(vm_pool: Callable[..., VmPool]) -> tuple[VmPool, str]:
    vm = vm_pool("", b"count")  # the guest counts until it is stopped
    vm.submit()
    return vm, vm.wait_for_domain()


@pytest.mark.xdist_group("libvirtd")
def test_kill_9_of_the_starter_and_the_startd_reclaims_the_domain(
    vm_pool: Callable[..., VmPool],
) -> None:
    """SIGKILL to the starter of a running VM job leaves its domain running until the
    startd, seeing its starter gone, destroys it."""
    vm, name = _running_vm_pool(vm_pool)
    starter = int(re.findall(r"started starter (\d+)", vm.pool.log("StartLog"))[-1])
    os.kill(starter, signal.SIGKILL)
    vm.pool.wait_for(lambda: name not in vm.domains(), 60, "the domain reclaimed")


@pytest.mark.xdist_group("libvirtd")
def test_the_next_startd_start_sweeps_a_dead_pools_domain(
    vm_pool: Callable[..., VmPool],
) -> None:
    """SIGKILL to the whole pool (startd and starter) leaves the domain; the pool started
    again on the same LOCAL_DIR removes it at startd start."""
    vm, name = _running_vm_pool(vm_pool)
    vm.pool.stop()  # SIGKILL to every process of the pool
    assert name in vm.domains(), "the domain went with the pool"
    vm.pool.start()
    vm.pool.wait_for(lambda: name not in vm.domains(), 60, "the domain swept")
