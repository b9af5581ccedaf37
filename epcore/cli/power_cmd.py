"""``ep power wake``: send the Wake-on-LAN magic packet to a sleeping machine, like
condor_power (the rooster's ROOSTER_WAKEUP_CMD is ``ep power wake -i``).

The machine is described by ``-m MAC`` (with ``-s SUBNET_MASK``, default 0.0.0.0, and ``-p
PORT``, default 9), by its machine ad on standard input (``-i``: HardwareAddress, SubnetMask,
MyAddress for the IP, WakePort), or by a slot or machine name whose ad the running pool's
collector has (an offline ad, usually). The packet goes by UDP broadcast to the subnet's
broadcast address, ``(~SubnetMask) | IP``; ``-a ADDRESS`` sends it there instead (epcore's
own option: a test's listener, a relay). ``-p`` given with an ad replaces its WakePort.
"""

from __future__ import annotations

import ipaddress
import re
import sys

import click

from epcore.builtin.wol import (
    DEFAULT_WAKE_PORT,
    broadcast_address,
    parse_mac,
    send_magic_packet,
)
from epcore.classad import ClassAd, ClassAdSyntaxError, parse_ad
from epcore.errors import EpError

#: The IPv4 address a sinful string starts with (``<10.0.0.5:9618?...>``).
_SINFUL_IP = re.compile(r"^<(\d+\.\d+\.\d+\.\d+)[:>]")


class PowerFailure(click.ClickException):
    """What ``ep power`` cannot do: ``ep power: <message>``, exit status 1."""

    exit_code = 1

    def show(self, file: object = None) -> None:
        click.echo(f"ep power: {self.format_message()}", err=True)


def wake_target(ad: ClassAd, port: int | None) -> tuple[bytes, str, int]:
    """(hardware address, broadcast address, port) a machine ad says to wake it by;
    PowerFailure when its HardwareAddress or SubnetMask is missing or wrong."""
    mac_text = ad.evaluate("HardwareAddress")
    if not isinstance(mac_text, str):
        raise PowerFailure("the machine ad has no HardwareAddress")
    mask = ad.evaluate("SubnetMask")
    mask = mask if isinstance(mask, str) else "0.0.0.0"
    address = ad.evaluate("MyAddress")
    found = _SINFUL_IP.match(address) if isinstance(address, str) else None
    # HTCondor's waker stands in this address for a machine whose IP it does not know.
    ip = found.group(1) if found else "255.255.255.255"
    wake_port = ad.evaluate("WakePort")
    if port is None:
        port = wake_port if isinstance(wake_port, int) else DEFAULT_WAKE_PORT
    try:
        return parse_mac(mac_text), broadcast_address(ip, mask), port
    except ValueError as error:
        raise PowerFailure(str(error)) from None


def _pool_ad(name: str, config_file: str | None) -> ClassAd:
    """The collector's ad of slot or machine ``name`` in the pool ``config_file`` (None: the
    configuration HTCondor would read) runs; PowerFailure when none answers."""
    import os

    from epcore.config import Config
    from epcore.pool.personal import config_file_for
    from epcore.pool.requests import PoolClient
    from epcore.pool.setup import PoolPaths

    path, _ = config_file_for(config_file, os.environ, uid=os.getuid(), home=os.environ.get("HOME"))
    try:
        config = Config.load(path, subsystem="TOOL")
        client = PoolClient(PoolPaths.from_config(config).control_socket, timeout=10)
        ads = client.query_ads("Machine")
    except (EpError, OSError) as error:
        raise PowerFailure(f"no pool answers to look {name} up: {error}") from None
    for ad in ads:
        if name in (ad.evaluate("Name"), ad.evaluate("Machine")):
            return ad
    raise PowerFailure(f"the collector has no machine ad named {name}")


@click.group(name="power")
def power_command() -> None:
    """Power management: wake sleeping machines, like condor_power."""


@power_command.command(name="wake", context_settings={"ignore_unknown_options": False})
@click.option("-d", "debug", is_flag=True, help="Say where the packet goes.")
@click.option("-i", "from_stdin", is_flag=True, help="Read the machine ad from standard input.")
@click.option("-m", "mac", help="The hardware address to wake (00:1a:2b:3c:4d:5e).")
@click.option("-s", "subnet", default="0.0.0.0", show_default=True, help="The subnet mask.")
@click.option("-p", "port", type=click.IntRange(1, 65535), help="UDP port (default 9).")
@click.option("-a", "address", help="Send to this address instead of the subnet's broadcast.")
@click.option("--config", "config_file", help="The pool's configuration, to look NAME up.")
@click.argument("name", required=False)
def wake_command(
    debug: bool,
    from_stdin: bool,
    mac: str | None,
    subnet: str,
    port: int | None,
    address: str | None,
    config_file: str | None,
    name: str | None,
) -> None:
    """Send the magic packet that wakes a sleeping machine (by -m MAC, -i, or NAME)."""
    if sum((from_stdin, mac is not None, name is not None)) != 1:
        raise PowerFailure("give exactly one of -m MAC, -i or a slot or machine name")
    if from_stdin:
        try:
            ad = parse_ad(sys.stdin.read(), source="<stdin>")
        except ClassAdSyntaxError as error:
            raise PowerFailure(f"the machine ad does not parse: {error}") from None
    elif name is not None:
        ad = _pool_ad(name, config_file)
    else:
        ad = ClassAd()
        ad["HardwareAddress"] = mac
        ad["SubnetMask"] = subnet
        ad["MyAddress"] = "<255.255.255.255:1234>"
    hardware, target, wake_port = wake_target(ad, port)
    if address is not None:
        try:
            target = str(ipaddress.IPv4Address(address))
        except ValueError:
            raise PowerFailure(f"-a {address}: not an IPv4 address") from None
    if debug:
        shown = ":".join(f"{byte:02x}" for byte in hardware)
        click.echo(f"waking {shown} by {target}:{wake_port}", err=True)
    try:
        send_magic_packet(hardware, target, wake_port)
    except OSError as error:
        raise PowerFailure(f"cannot send to {target}:{wake_port}: {error}") from None
    click.echo("Packet sent.")
