"""The guests' MACs and IPs without libvirt: read from a domain's XML and addresses, published
on the slots by the usage count, and sent to a checkpointing job's ad as VM_CkptMac."""

from __future__ import annotations

import logging
import select
from pathlib import Path

from epcore_vm.accounting import RunningGuest, running_guests, usage_ads
from epcore_vm.domain import domain_xml, plan_domain
from epcore_vm.guestnet import GuestNetwork, domain_slot, guest_network, interface_macs
from epcore_vm.running import RunningVm
from epcore_vm.settings import read_settings
from test_vm_accounting import KNOBS, Connection
from test_vm_running import FakeConnection, FakeDomain, _checkpointing
from test_vm_runtime import _request

from epcore.classad import UNDEFINED, parse_ad
from epcore.config import Config

XML = (
    "<domain><name>epcore-k</name><title>slot1_1</title><devices>"
    "<disk><source file='/x'/></disk>"
    "<interface type='user'><mac address='52:54:00:AA:BB:CC'/><model type='virtio'/></interface>"
    '<interface type="network"><mac address="52:54:00:11:22:33"/></interface>'
    "</devices></domain>"
)
#: What libvirt's interfaceAddresses gives for a guest with a DHCP lease.
ADDRESSES = {
    "vnet0": {
        "hwaddr": "52:54:00:aa:bb:cc",
        "addrs": [
            {"type": 1, "addr": "fe80::1", "prefix": 64},
            {"type": 0, "addr": "192.168.122.7", "prefix": 24},
        ],
    }
}


class NetworkedDomain(FakeDomain):
    """A running stand-in domain with two interfaces; its leases answer, ARP is refused."""

    def __init__(self, name: str = "epcore-k", xml: str = XML, leases: bool = True) -> None:
        super().__init__(honours_shutdown=False)
        self._name, self.xml, self.leases = name, xml, leases

    def name(self) -> str:
        return self._name

    def maxMemory(self) -> int:
        return 131072

    def XMLDesc(self, flags: int) -> str:
        return self.xml

    def interfaceAddresses(self, source: int, flags: int) -> dict[str, object]:
        if source == 0 and self.leases:
            return ADDRESSES
        raise RuntimeError("no addresses from this source")

    def save(self, path: str) -> None:
        self.calls.append("save")
        Path(path).write_bytes(b"guest memory")
        self.active = False


def test_the_macs_and_the_slot_come_from_the_domain_xml() -> None:
    """Every interface's MAC, lower-cased and in order; the title names the slot; a domain
    without either gives none."""
    assert interface_macs(XML) == ("52:54:00:aa:bb:cc", "52:54:00:11:22:33")
    assert domain_slot(XML) == "slot1_1"
    assert (interface_macs("<domain/>"), domain_slot("<domain/>")) == ((), "")


def test_the_guest_network_reads_the_leases_ipv4_first() -> None:
    """A running guest's network: its MACs and libvirt's addresses (IPv4 first); no IP
    without a lease or ARP entry; nothing when libvirt fails."""
    network = guest_network(NetworkedDomain())
    assert (network.slot, network.mac, network.ips) == (
        "slot1_1",
        "52:54:00:aa:bb:cc",
        ("192.168.122.7", "fe80::1"),
    )
    assert guest_network(NetworkedDomain(leases=False)).ip == ""
    assert guest_network(FakeDomain(honours_shutdown=True)) == GuestNetwork()


def test_the_domain_xml_names_the_slot_and_keeps_a_checkpointed_mac(tmp_path: Path) -> None:
    """The runtime's domain carries the slot as its title, and a job with VM_CkptMac (its
    last run's MAC) gets that MAC back; JobVM_MACADDR, when given, wins."""
    (tmp_path / "in.img").write_bytes(b"x")
    job = parse_ad(
        '[ JobVMType = "kvm"; JobVMMemory = 128; VMPARAM_vm_Disk = "in.img:vda:r";'
        ' JobVMNetworking = true; JobVMNetworkingType = "user";'
        ' VM_CkptMac = "52:54:00:aa:bb:cc" ]'
    )
    config = Config.from_text("VM_TYPE = kvm\nVM_MEMORY = 512\n")
    plan = plan_domain(job, config, "key", str(tmp_path), slot="slot1_1")
    xml = domain_xml(plan)
    assert domain_slot(xml) == "slot1_1"
    assert interface_macs(xml) == ("52:54:00:aa:bb:cc",)
    job["JobVM_MACADDR"] = "52:54:00:00:00:01"
    assert interface_macs(domain_xml(plan_domain(job, config, "key", str(tmp_path)))) == (
        "52:54:00:00:00:01",
    )


def test_the_slots_get_every_guest_s_macs_and_their_own_guest_s() -> None:
    """Every slot gets VM_All_Guest_Macs / VM_All_Guest_IPs; the slot running a guest gets
    its VM_Guest_Mac / VM_Guest_IP through an ad aimed at its exact Name; a guest whose
    slot is unknown adds only to the lists; no guest, no lists."""
    settings = read_settings(Config.from_text(KNOBS))
    guests = [
        RunningGuest(128, GuestNetwork("slot1_1", ("52:54:00:aa:bb:cc",), ("10.0.0.7",))),
        RunningGuest(128, GuestNetwork("", ("52:54:00:11:22:33",), ())),
    ]
    every, slot = usage_ads(settings, guests)
    assert every.evaluate("VM_All_Guest_Macs") == "52:54:00:aa:bb:cc,52:54:00:11:22:33"
    assert every.evaluate("VM_All_Guest_IPs") == "10.0.0.7"
    assert every.evaluate("VM_Memory") == 256
    assert slot.evaluate("SlotName") == "slot1_1@"
    assert (slot.evaluate("VM_Guest_Mac"), slot.evaluate("VM_Guest_IP")) == (
        "52:54:00:aa:bb:cc",
        "10.0.0.7",
    )
    (idle,) = usage_ads(settings, [])
    assert idle.evaluate("VM_All_Guest_Macs") is UNDEFINED


def test_the_count_reads_each_running_guest_s_network() -> None:
    """running_guests gives each running epcore domain's memory and network."""
    (guest,) = running_guests(Connection(NetworkedDomain()))  # type: ignore[arg-type]
    assert (guest.memory_mib, guest.network.mac) == (128, "52:54:00:aa:bb:cc")


def test_a_checkpointing_guest_reports_its_mac_for_the_job_ad(tmp_path: Path) -> None:
    """A vm_checkpoint job's RunningVm gives VM_CkptMac and VM_CkptIP (read again when the
    guest is saved); a job that does not checkpoint, or a guest without a MAC, gives none."""
    domain = NetworkedDomain()
    vm, _ = _checkpointing(tmp_path, domain)
    try:
        vm.stop(15, 30.0)
        assert select.select([vm.fileno()], [], [], 5)[0]
        found = vm.job_attributes()
        assert found is not None
        assert (found.evaluate("VM_CkptMac"), found.evaluate("VM_CkptIP")) == (
            "52:54:00:aa:bb:cc",
            "192.168.122.7",
        )
    finally:
        vm.release()

    plain = RunningVm(
        FakeConnection(),
        NetworkedDomain(),
        "epcore-k",
        _request(tmp_path, "k2"),
        logging.getLogger("t"),
    )
    try:
        assert plain.job_attributes() is None
    finally:
        plain.release()
    no_mac = RunningVm(
        FakeConnection(),
        NetworkedDomain(xml="<domain/>"),
        "epcore-k",
        _request(tmp_path, "k3"),
        logging.getLogger("t"),
        checkpoint=str(tmp_path / "c.mem"),
    )
    try:
        assert no_mac.job_attributes() is None
    finally:
        no_mac.release()
