"""A VM job's domain outlives a starter killed with SIGKILL (libvirtd, not the starter, is
qemu's parent): the startd reclaims it at once, and a startd that died with it sweeps it at
its next start."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
from vm_guest import Guest
from vm_pool import JOB_DEADLINE, domains, submit_vm, vm_config, write_disks

from epcore.testing.pool import PoolProcess, user_home


def _running_vm_pool(pool_factory, slot_users, shared_dir: Path, uri: str, guest: Guest):
    pool: PoolProcess = pool_factory(vm_config(uri, guest), cpus=2, memory=2048)
    user = slot_users[0]
    home = user_home(shared_dir, user)
    write_disks(home, user, b"count")  # the guest counts until it is stopped
    submit_vm(pool, user, home)
    pool.wait_for(lambda: bool(domains(uri, shared_dir.name)), JOB_DEADLINE, "the domain")
    return pool


@pytest.mark.xdist_group("libvirtd")
def test_kill_9_of_the_starter_and_the_startd_reclaims_the_domain(
    leftover_domains: None,
    pool_factory,
    slot_users,
    shared_dir: Path,
    libvirt_uri: str,
    vm_guest: Guest,
) -> None:
    """SIGKILL to the starter of a running VM job leaves its domain running until the
    startd, seeing its starter gone, destroys it."""
    pool = _running_vm_pool(pool_factory, slot_users, shared_dir, libvirt_uri, vm_guest)
    (name,) = domains(libvirt_uri, shared_dir.name)
    starter = int(re.findall(r"started starter (\d+)", pool.log("StartLog"))[-1])
    os.kill(starter, signal.SIGKILL)
    pool.wait_for(
        lambda: name not in domains(libvirt_uri, shared_dir.name), 60, "the domain reclaimed"
    )


@pytest.mark.xdist_group("libvirtd")
def test_the_next_startd_start_sweeps_a_dead_pools_domain(
    leftover_domains: None,
    pool_factory,
    slot_users,
    shared_dir: Path,
    libvirt_uri: str,
    vm_guest: Guest,
) -> None:
    """SIGKILL to the whole pool (startd and starter) leaves the domain; the pool started
    again on the same LOCAL_DIR removes it at startd start."""
    pool = _running_vm_pool(pool_factory, slot_users, shared_dir, libvirt_uri, vm_guest)
    (name,) = domains(libvirt_uri, shared_dir.name)
    pool.stop()  # SIGKILL to every process of the pool
    assert name in domains(libvirt_uri, shared_dir.name), "the domain went with the pool"
    pool.start()
    pool.wait_for(lambda: name not in domains(libvirt_uri, shared_dir.name), 60, "the domain swept")
