"""``ep power wake`` (condor_power's options) and ``ep status -offline``'s constraint."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from epcore.builtin.wol import magic_packet, parse_mac
from epcore.classad import ClassAd
from epcore.cli import status_cmd
from epcore.cli.main import ep
from epcore.cli.power_cmd import PowerFailure, wake_target

MAC = "00:1a:2b:3c:4d:5e"


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A UDP socket on the loopback broadcast address, standing for a sleeping NIC."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.255.255.255", 0))
        sock.settimeout(5)
        yield sock


def test_wake_by_mac_sends_the_magic_packet(listener: socket.socket) -> None:
    """-m MAC with -a and -p sends the 102-byte packet there and says so."""
    port = str(listener.getsockname()[1])
    result = CliRunner().invoke(
        ep, ["power", "wake", "-m", MAC, "-a", "127.255.255.255", "-p", port]
    )
    assert result.exit_code == 0, result.output
    assert result.output == "Packet sent.\n"
    assert listener.recv(200) == magic_packet(parse_mac(MAC))


def test_wake_reads_the_machine_ad_from_stdin(listener: socket.socket) -> None:
    """-i takes HardwareAddress, SubnetMask and MyAddress's IP: 127.0.0.1/8 is 127.255.255.255,
    and the ad's WakePort is the port."""
    port = listener.getsockname()[1]
    ad = (
        f'HardwareAddress = "{MAC}"\nSubnetMask = "255.0.0.0"\n'
        f'MyAddress = "<127.0.0.1:9618>"\nWakePort = {port}\n'
    )
    result = CliRunner().invoke(ep, ["power", "wake", "-i"], input=ad)
    assert result.exit_code == 0, result.output
    assert listener.recv(200) == magic_packet(parse_mac(MAC))


@pytest.mark.parametrize(
    ("fields", "target"),
    [
        ({"SubnetMask": "255.255.255.0", "MyAddress": "<10.1.2.3:9618?x=y>"}, ("10.1.2.255", 9)),
        ({"MyAddress": "<unix:/tmp/socket>"}, ("255.255.255.255", 9)),
        (
            {"SubnetMask": "255.255.255.255", "MyAddress": "<10.1.2.3:1>", "WakePort": 7},
            ("255.255.255.255", 7),
        ),
    ],
)
def test_the_target_follows_the_ad(fields: dict[str, object], target: tuple[str, int]) -> None:
    """(~SubnetMask) | IP; no IP in MyAddress is the limited broadcast; WakePort else 9."""
    ad = ClassAd({"HardwareAddress": MAC, **fields})
    assert wake_target(ad, None)[1:] == target


def test_an_ad_without_a_hardware_address_cannot_be_woken() -> None:
    """A machine ad that lacks HardwareAddress is a PowerFailure."""
    with pytest.raises(PowerFailure, match="HardwareAddress"):
        wake_target(ClassAd({"SubnetMask": "255.0.0.0"}), None)


@pytest.mark.parametrize(
    "args",
    [[], ["-m", MAC, "-i"], ["-m", "not-a-mac"], ["-m", MAC, "-a", "nowhere"]],
)
def test_wrong_arguments_fail_with_a_message(args: list[str]) -> None:
    """No machine, two machines, a bad MAC or a bad -a: exit 1, an ep power message."""
    result = CliRunner().invoke(ep, ["power", "wake", *args], input="")
    assert result.exit_code == 1
    assert "ep power:" in result.output


def test_status_offline_keeps_only_offline_ads() -> None:
    """-offline adds Offline =?= true to the constraint (and to any -constraint given)."""
    assert status_cmd.parse_arguments(["-offline"]).constraint == "Offline =?= true"
    both = status_cmd.parse_arguments(["-offline", "-constraint", "Cpus > 1"])
    assert both.constraint == "(Offline =?= true) && (Cpus > 1)"
