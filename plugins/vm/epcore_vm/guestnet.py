"""A running guest's network identity: the MAC addresses and IPs of its interfaces.

HTCondor's starter learns them from the vm-gahp's status answers and tells its startd, which
advertises them in the slot running the job (``VM_Guest_Mac``, ``VM_Guest_IP``) and, for all
the running guests, on every slot (``VM_All_Guest_Macs``, ``VM_All_Guest_IPs``); a
checkpointing job's starter also sends its guest's MAC (and IP) to the job ad as
``VM_CkptMac`` (``VM_CkptIP``), so that the guest resumes with the same MAC and is never
placed on a machine where a guest already holds it. Here they are read from libvirt: the
MACs from the running domain's XML (libvirt picks one when the job named none), the IPs from
the addresses libvirt knows (its DHCP leases, else the host's ARP table). The slot is the
domain's title, which the runtime sets to the slot's name.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

#: libvirt's VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE and _SRC_ARP (not the guest agent's
#: source: a guest without the agent makes that call wait for its timeout).
ADDRESS_SOURCES = (0, 2)

_INTERFACE = re.compile(r"<interface\b.*?</interface>", re.DOTALL)
_MAC = re.compile(r"<mac\s+address=['\"]([0-9A-Fa-f:]+)['\"]")
_TITLE = re.compile(r"<title>\s*([^<]*?)\s*</title>")


@attrs.frozen
class GuestNetwork:
    """The guest running in ``slot`` (empty: unknown) and its interfaces' MACs and IPs."""

    slot: str = ""
    macs: tuple[str, ...] = ()
    ips: tuple[str, ...] = ()

    @property
    def mac(self) -> str:
        """The first interface's MAC ("" without one), as HTCondor keeps one per guest."""
        return self.macs[0] if self.macs else ""

    @property
    def ip(self) -> str:
        """The first address libvirt knows of ("" when none)."""
        return self.ips[0] if self.ips else ""


def interface_macs(xml: str) -> tuple[str, ...]:
    """The MAC of each network interface in domain ``xml``, lower-cased, in order."""
    found: list[str] = []
    for interface in _INTERFACE.findall(xml):
        mac = _MAC.search(interface)
        if mac is not None:
            found.append(mac.group(1).lower())
    return tuple(found)


def domain_slot(xml: str) -> str:
    """The slot named in domain ``xml``'s title ("" when it has none)."""
    title = _TITLE.search(xml)
    return title.group(1) if title is not None else ""


def guest_ips(domain: Any) -> tuple[str, ...]:
    """The addresses libvirt knows for ``domain``'s interfaces (IPv4 first); none when it
    knows none or cannot say (a guest with no DHCP lease from libvirt's network)."""
    for source in ADDRESS_SOURCES:
        try:
            interfaces = domain.interfaceAddresses(source, 0)
        except Exception:
            continue  # this source is not available for this domain's network
        addresses = [
            (int(entry.get("type", 0)), str(entry["addr"]))
            for interface in (interfaces or {}).values()
            for entry in (interface.get("addrs") or [])
            if entry.get("addr")
        ]
        if addresses:
            # libvirt's VIR_IP_ADDR_TYPE_IPV4 is 0: the sort puts IPv4 first.
            return tuple(address for _, address in sorted(addresses, key=lambda a: a[0]))
    return ()


def guest_network(domain: Any) -> GuestNetwork:
    """What ``domain`` (running) says of its slot, MACs and IPs; empty when libvirt fails."""
    try:
        xml = str(domain.XMLDesc(0))
    except Exception:
        return GuestNetwork()
    macs = interface_macs(xml)
    return GuestNetwork(domain_slot(xml), macs, guest_ips(domain) if macs else ())
