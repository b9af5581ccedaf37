"""Wake-on-LAN: what the kernel says of a network interface, and the magic packet.

The power backend (:mod:`epcore.builtin.power`) describes the machine's public interface with
these: its hardware address (``<sysfs>/class/net/<if>/address``), its IPv4 address and mask
(the SIOCGIFADDR and SIOCGIFNETMASK ioctls) and its Wake-on-LAN masks (the SIOCETHTOOL ioctl
with ETHTOOL_GWOL). ``ep power wake`` and the rooster's default wake-up command send the magic
packet: six 0xFF bytes, then the 6-byte hardware address sixteen times, as one UDP datagram
to the subnet's broadcast address.
"""

from __future__ import annotations

import ctypes
import fcntl
import ipaddress
import socket
import struct
from pathlib import Path

#: The Wake-on-LAN bits in linux/ethtool.h's order, with HTCondor's names for them.
WOL_FLAGS: tuple[tuple[int, str], ...] = (
    (0x01, "Physical Packet"),
    (0x02, "UniCast Packet"),
    (0x04, "MultiCast Packet"),
    (0x08, "BroadCast Packet"),
    (0x10, "ARP Packet"),
    (0x20, "Magic Packet"),
    (0x40, "Secure Magic Packet"),
)

#: The port a magic packet goes to when nothing names one ("discard").
DEFAULT_WAKE_PORT = 9

_SIOCGIFADDR = 0x8915
_SIOCGIFNETMASK = 0x891B
_SIOCETHTOOL = 0x8946
_ETHTOOL_GWOL = 0x5
_IFNAMSIZ = 16
# struct ifreq is 40 bytes on 64-bit Linux: the name, then a union holding our pointer.
_IFREQ_SIZE = 40


def wol_flags(mask: int) -> str:
    """The names of the bits set in ``mask``, comma separated, or ``NONE`` (HTCondor's
    WakeOnLanSupportedFlags / WakeOnLanEnabledFlags format)."""
    names = [name for bit, name in WOL_FLAGS if mask & bit]
    return ",".join(names) if names else "NONE"


def ethtool_wol(interface: str) -> tuple[int, int]:
    """(supported, enabled) Wake-on-LAN masks of ``interface`` from the kernel; OSError when
    the interface has no such ability to report (loopback, most virtual NICs)."""
    # The kernel writes the answer through a pointer in the request: the record must stay
    # where ctypes put it until the call returns.
    info = ctypes.create_string_buffer(struct.pack("=III6s2x", _ETHTOOL_GWOL, 0, 0, b""))
    request = struct.pack("16sP", interface.encode()[: _IFNAMSIZ - 1], ctypes.addressof(info))
    request = request.ljust(_IFREQ_SIZE, b"\0")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock.fileno(), _SIOCETHTOOL, request)
    _cmd, supported, enabled, _ = struct.unpack("=III6s2x", info.raw)
    return supported, enabled


def interface_addresses(interface: str) -> tuple[str, str]:
    """(IPv4 address, subnet mask) of ``interface`` as dotted quads; OSError when it has none."""
    request = struct.pack("256s", interface.encode()[: _IFNAMSIZ - 1])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        address = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, request)
        mask = fcntl.ioctl(sock.fileno(), _SIOCGIFNETMASK, request)
    return socket.inet_ntoa(address[20:24]), socket.inet_ntoa(mask[20:24])


def default_interface(proc_root: Path, sysfs_root: Path) -> str | None:
    """The interface of the default route (``<proc>/net/route``), else the first one in
    ``<sysfs>/class/net`` other than loopback, else None."""
    try:
        lines = (proc_root / "net" / "route").read_text().splitlines()[1:]
    except OSError:
        lines = []
    for line in lines:
        fields = line.split()
        if len(fields) > 1 and fields[1] == "00000000":
            return fields[0]
    try:
        names = sorted(path.name for path in (sysfs_root / "class" / "net").iterdir())
    except OSError:
        return None
    return next((name for name in names if name != "lo"), None)


def hardware_address(sysfs_root: Path, interface: str) -> str | None:
    """The interface's hardware address, lower case with colons; None when unknown."""
    try:
        text = (sysfs_root / "class" / "net" / interface / "address").read_text().strip()
    except OSError:
        return None
    return text.lower() if text else None


def parse_mac(text: str) -> bytes:
    """The 6 bytes of a hardware address written with ':' or '-' separators (or none);
    ValueError when it is not one."""
    digits = text.strip().replace(":", "").replace("-", "")
    if len(digits) != 12:
        raise ValueError(f"{text!r} is not a hardware address (six hex bytes)")
    try:
        return bytes.fromhex(digits)
    except ValueError:
        raise ValueError(f"{text!r} is not a hardware address (six hex bytes)") from None


def magic_packet(mac: bytes) -> bytes:
    """Six 0xFF bytes then ``mac`` sixteen times: 102 bytes."""
    if len(mac) != 6:
        raise ValueError("a hardware address has 6 bytes")
    return b"\xff" * 6 + mac * 16


def broadcast_address(ip: str, mask: str) -> str:
    """Where a magic packet for a machine at ``ip`` in subnet ``mask`` goes: the subnet's
    broadcast address, ``(~mask) | ip``; a mask of 255.255.255.255 means the limited
    broadcast (HTCondor's waker does the same). ValueError for a bad address or mask."""
    if mask == "255.255.255.255":
        return "255.255.255.255"
    address = int(ipaddress.IPv4Address(ip))
    netmask = int(ipaddress.IPv4Address(mask))
    return str(ipaddress.IPv4Address(address | (~netmask & 0xFFFFFFFF)))


def send_magic_packet(mac: bytes, address: str, port: int = DEFAULT_WAKE_PORT) -> None:
    """Send the magic packet for ``mac`` by UDP to ``address``:``port`` with SO_BROADCAST."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        sock.sendto(magic_packet(mac), (address, port))
