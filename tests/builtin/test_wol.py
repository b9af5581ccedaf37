"""Wake-on-LAN helpers: flag names, addresses, the magic packet and the kernel's answers."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from epcore.builtin import wol


@pytest.mark.parametrize(
    ("mask", "text"),
    [
        (0, "NONE"),
        (0x20, "Magic Packet"),
        (0x21, "Physical Packet,Magic Packet"),
        (
            0x7F,
            "Physical Packet,UniCast Packet,MultiCast Packet,BroadCast Packet,ARP Packet,"
            "Magic Packet,Secure Magic Packet",
        ),
    ],
)
def test_wol_flags_are_htcondors_names_or_none(mask: int, text: str) -> None:
    """The set bits' names in ethtool's order, comma separated; NONE for no bit."""
    assert wol.wol_flags(mask) == text


def test_the_magic_packet_is_six_ff_then_the_mac_sixteen_times() -> None:
    """102 bytes: 6 x 0xFF, then the six MAC bytes 16 times."""
    mac = wol.parse_mac("00:1A:2b:3c:4d:5e")
    packet = wol.magic_packet(mac)
    assert len(packet) == 102
    assert packet[:6] == b"\xff" * 6
    assert packet[6:] == bytes([0, 0x1A, 0x2B, 0x3C, 0x4D, 0x5E]) * 16


@pytest.mark.parametrize("text", ["00:1a:2b:3c:4d", "zz:1a:2b:3c:4d:5e", ""])
def test_a_bad_hardware_address_is_a_value_error(text: str) -> None:
    """Anything but six hex bytes is refused."""
    with pytest.raises(ValueError, match="not a hardware address"):
        wol.parse_mac(text)


@pytest.mark.parametrize(
    ("ip", "mask", "target"),
    [
        ("192.168.1.20", "255.255.255.0", "192.168.1.255"),
        ("127.0.0.1", "255.0.0.0", "127.255.255.255"),
        ("10.0.0.5", "255.255.255.255", "255.255.255.255"),
        ("255.255.255.255", "0.0.0.0", "255.255.255.255"),
    ],
)
def test_the_broadcast_address_is_the_ip_with_the_host_bits_set(
    ip: str, mask: str, target: str
) -> None:
    """(~mask) | ip, and the limited broadcast for a host mask."""
    assert wol.broadcast_address(ip, mask) == target


def test_a_packet_sent_to_the_loopback_broadcast_reaches_a_listener() -> None:
    """A listener bound to 127.255.255.255 receives the packet (capabilities.md section 8)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as listener:
        listener.bind(("127.255.255.255", 0))
        listener.settimeout(5)
        mac = wol.parse_mac("02:00:00:00:00:01")
        wol.send_magic_packet(mac, "127.255.255.255", listener.getsockname()[1])
        assert listener.recv(200) == wol.magic_packet(mac)


def test_loopback_has_an_address_and_no_wake_on_lan() -> None:
    """lo is 127.0.0.1/8, and the kernel refuses ETHTOOL_GWOL for it."""
    assert wol.interface_addresses("lo") == ("127.0.0.1", "255.0.0.0")
    with pytest.raises(OSError):
        wol.ethtool_wol("lo")


def test_default_interface_falls_back_to_the_first_non_loopback(tmp_path: Path) -> None:
    """Without a default route, the first interface in sysfs other than lo; else None."""
    net = tmp_path / "sys" / "class" / "net"
    assert wol.default_interface(tmp_path / "proc", tmp_path / "sys") is None
    for name in ("lo", "eth1", "eth0"):
        (net / name).mkdir(parents=True)
    assert wol.default_interface(tmp_path / "proc", tmp_path / "sys") == "eth0"
