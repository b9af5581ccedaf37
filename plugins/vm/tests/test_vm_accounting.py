"""VM_AvailNum and VM_Memory follow the running VMs: the figures, the count libvirt gives,
and a real pool whose slot ads change while a guest runs."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from epcore_vm.accounting import running_guests, usage_ad, usage_job
from epcore_vm.settings import read_settings
from vm_pool import VmPool

from epcore.config import Config

KNOBS = "VM_TYPE = kvm\nVM_MEMORY = 512\n"


class Domain:
    def __init__(self, name: str, kib: int, active: bool = True) -> None:
        self._name, self.kib, self.active = name, kib, active

    def name(self) -> str:
        return self._name

    def isActive(self) -> bool:
        return self.active

    def maxMemory(self) -> int:
        return self.kib


class Connection:
    def __init__(self, *found: Domain) -> None:
        self.found = found
        self.closed = False

    def listAllDomains(self, flags: int) -> list[Domain]:
        return list(self.found)

    def close(self) -> None:
        self.closed = True


def test_the_figures_are_what_the_running_vms_leave() -> None:
    """VM_AvailNum is VM_MAX_NUMBER minus the running VMs (never below 0, 10000 when
    unlimited); VM_Memory is VM_MEMORY minus their memory."""
    limited = read_settings(Config.from_text(KNOBS + "VM_MAX_NUMBER = 2\n"))
    ad = usage_ad(limited, [128])
    assert (ad.evaluate("VM_AvailNum"), ad.evaluate("VM_Memory")) == (1, 384)
    ad = usage_ad(limited, [256, 256, 128])
    assert (ad.evaluate("VM_AvailNum"), ad.evaluate("VM_Memory")) == (0, 0)
    unlimited = read_settings(Config.from_text(KNOBS))
    assert usage_ad(unlimited, [128]).evaluate("VM_AvailNum") == 10000


def test_only_running_epcore_domains_count() -> None:
    """Other domains and stopped ones are not this startd's running VMs."""
    connection = Connection(
        Domain("epcore-a", 131072),
        Domain("someone-else", 1048576),
        Domain("epcore-b", 262144, active=False),
    )
    assert [guest.memory_mib for guest in running_guests(connection)] == [128]


def test_the_cron_job_publishes_nothing_when_libvirt_fails() -> None:
    """A libvirt that cannot be reached leaves the idle machine's figures (no ad); a
    reachable one gives the ad, and the connection is closed."""
    settings = read_settings(Config.from_text(KNOBS))
    config = Config.from_text("VM_USAGE_INTERVAL = 3\n")

    def refuse(uri: str) -> Connection:
        raise RuntimeError("no libvirtd")

    job = usage_job(settings, config, refuse)
    assert (job.name, job.period, job.run()) == ("VM_USAGE", 3.0, [])
    connection = Connection(Domain("epcore-a", 131072))
    (ad,) = usage_job(settings, config, lambda uri: connection).run()
    assert ad.evaluate("VM_Memory") == 384 and connection.closed


def _slot_value(pool, name: str) -> str:
    for line in pool.ep("status", "-l").stdout.splitlines():
        if line.startswith(f"{name} = "):
            return line.split(" = ", 1)[1].strip()
    return ""


@pytest.mark.xdist_group("libvirtd")
def test_the_slot_ads_follow_a_running_guest(
    vm_pool: Callable[..., VmPool],
) -> None:
    """While a 128 MiB guest runs, the slots advertise VM_AvailNum = VM_MAX_NUMBER - 1 and
    VM_Memory = VM_MEMORY - 128; when it is gone, the idle machine's figures again."""
    # The tests' guest ignores the power button: ep rm destroys it after 4 s.
    extra = "VM_MAX_NUMBER = 2\nVM_USAGE_INTERVAL = 1\nMachineMaxVacateTime = 4\n"
    vm = vm_pool(extra, b"count")
    pool = vm.pool
    assert (_slot_value(pool, "VM_AvailNum"), _slot_value(pool, "VM_Memory")) == ("2", "512")
    vm.submit()
    vm.wait_for_domain()
    pool.wait_for(lambda: _slot_value(pool, "VM_AvailNum") == "1", 60, "VM_AvailNum = 1")
    assert _slot_value(pool, "VM_Memory") == "384"
    assert pool.ep("rm", "1.0").status == 0
    pool.wait_for(lambda: not vm.domains(), 60, "the domain to go")
    pool.wait_for(lambda: _slot_value(pool, "VM_AvailNum") == "2", 60, "VM_AvailNum = 2")
    assert _slot_value(pool, "VM_Memory") == "512"
