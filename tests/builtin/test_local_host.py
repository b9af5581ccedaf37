"""LocalHost on this machine: hardware readings, device access times and bounded commands."""

from __future__ import annotations

import ipaddress
import os
import stat
import time
from pathlib import Path

import psutil
import pytest

from epcore.builtin.host import COMMAND_TIMEOUT, LocalHost, first_ipv6, usable_ipv4, usable_ipv6
from epcore.config import Config
from epcore.testing import FakeSysfs


@pytest.fixture(scope="module")
def host() -> LocalHost:
    """The real machine."""
    return LocalHost()


def test_cpu_counts_match_the_operating_system(host: LocalHost) -> None:
    """Logical CPUs equal os.cpu_count(); physical cores are between 1 and that."""
    logical, physical = host.cpu_counts()
    assert logical == os.cpu_count()
    assert 1 <= physical <= logical


def test_cpu_counts_are_psutils(host: LocalHost) -> None:
    """The counts read from sysconf and sysfs are the ones psutil reports."""
    assert host.cpu_counts() == (
        psutil.cpu_count(logical=True),
        psutil.cpu_count(logical=False) or psutil.cpu_count(logical=True),
    )


def _psutil_addresses() -> tuple[str, str]:
    """The first usable IPv4 and IPv6 addresses as psutil lists the interfaces."""
    v4 = v6 = ""
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            try:
                ip = ipaddress.ip_address(entry.address.split("%")[0])
            except ValueError:
                # A link-layer (MAC) address.
                continue
            if ip.is_loopback or ip.is_link_local:
                continue
            if ip.version == 4 and not v4:
                v4 = str(ip)
            elif ip.version == 6 and not v6:
                v6 = str(ip)
    return v4, v6


def test_detected_addresses_are_psutils(host: LocalHost) -> None:
    """IPV4_ADDRESS and IPV6_ADDRESS are the first usable addresses psutil lists."""
    v4, v6 = _psutil_addresses()
    assert host.facts().specials.get("IPV4_ADDRESS", "") == v4
    assert host.facts().specials.get("IPV6_ADDRESS", "") == v6


def test_loopback_and_link_local_addresses_are_not_usable() -> None:
    """127/8, 169.254/16, ::1 and fe80::/10 are passed over; other addresses are kept."""
    assert [usable_ipv4(a) for a in ("127.0.1.1", "169.254.3.4", "10.1.2.3")] == [0, 0, 1]
    hexes = ("0" * 31 + "1", "fe80" + "0" * 27 + "1", "febf" + "0" * 28, "fd00" + "0" * 27 + "2")
    assert [usable_ipv6(h) for h in hexes] == [False, False, False, True]


def test_first_ipv6_takes_the_interfaces_in_the_kernels_order() -> None:
    """Of /proc/net/if_inet6's usable addresses, the one of the earliest interface is taken
    (the file lists them in no order), and none is ""."""
    listing = (
        "fd000000000000000000000000000009 05 40 00 80  eth1\n"
        "fe8000000000000000fc00fffe000001 04 40 20 80  eth0\n"
        "20010db8000000000000000000000001 04 40 00 80  eth0\n"
        "00000000000000000000000000000001 01 80 10 80  lo\n"
    )
    order = {"lo": 0, "eth0": 1, "eth1": 2}
    assert first_ipv6(listing, order) == "2001:db8::1"
    assert first_ipv6(listing, {"eth1": 0, "eth0": 1}) == "fd00::9"
    assert first_ipv6(listing.splitlines()[-1], order) == ""


def test_memory_matches_detected_memory(host: LocalHost) -> None:
    """memory_mb() is the DETECTED_MEMORY the configuration sees."""
    config = Config.from_text("", host=host)
    assert host.memory_mb() == int(config.get("DETECTED_MEMORY") or "-1")
    assert host.memory_mb() == psutil.virtual_memory().total // (1024 * 1024)


def test_swap_is_free_swap_plus_physical_memory(host: LocalHost) -> None:
    """swap_kb() is HTCondor's VirtualMemory: free swap plus RAM, in KB."""
    expected = (psutil.swap_memory().free + psutil.virtual_memory().total) // 1024
    # Free swap moves while the test runs; a page or two of slack is plenty.
    assert abs(host.swap_kb() - expected) <= 64 * 1024
    assert host.swap_kb() >= host.memory_mb() * 1024


def test_free_disk_of_tmp_is_positive_and_missing_paths_fail(
    host: LocalHost, tmp_path: Path
) -> None:
    """disk_free_kb() measures an existing path and raises OSError for a missing one."""
    assert host.disk_free_kb("/tmp") > 0
    assert host.disk_free_kb(str(tmp_path)) == psutil.disk_usage(str(tmp_path)).free // 1024
    with pytest.raises(OSError):
        host.disk_free_kb(str(tmp_path / "no" / "such" / "dir"))


def test_load_average_is_the_one_minute_figure(
    host: LocalHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """load_average() reads the first of the three load averages."""
    assert host.load_average() >= 0.0
    monkeypatch.setattr(os, "getloadavg", lambda: (1.25, 0.5, 0.125))
    assert host.load_average() == 1.25


def test_device_access_times_cover_consoles_terminals_and_input(tmp_path: Path) -> None:
    """console, mouse, ttyN, pts/* and input/* are read; others and broken links are skipped."""
    sysfs = FakeSysfs(tmp_path)
    wanted = {
        "/dev/console": 1000.0,
        "/dev/mouse": 1500.0,
        "/dev/tty1": 2000.0,
        "/dev/tty12": 2500.0,
        "/dev/pts/0": 3000.0,
        "/dev/input/event0": 4000.0,
        "/dev/input/mice": 4500.0,
    }
    ignored = {"/dev/tty": 1.0, "/dev/ttyS0": 2.0, "/dev/null": 3.0, "/dev/pts/ptmx": 4.0}
    dev = sysfs.devices({**wanted, **ignored})
    sysfs.mkdir("/dev/input/by-id")
    sysfs.symlink("/dev/input/event9", str(tmp_path / "gone"))
    found = LocalHost(dev_root=str(dev)).device_access_times()
    assert found == wanted


def test_device_access_times_without_devices_are_empty(tmp_path: Path) -> None:
    """A /dev with none of the devices gives an empty mapping, not an error."""
    assert LocalHost(dev_root=str(tmp_path / "nothing")).device_access_times() == {}


def test_device_access_times_on_this_machine_are_dev_paths(host: LocalHost) -> None:
    """On the real /dev every reported device is a /dev path with an access time."""
    for path, atime in host.device_access_times().items():
        assert path.startswith("/dev/") and os.path.exists(path)
        assert atime == pytest.approx(os.stat(path).st_atime, abs=5)


def test_run_command_captures_output_and_status(host: LocalHost) -> None:
    """A real process's standard output and exit status come back; stderr does not."""
    done = host.run_command("sh -c 'echo out; echo err >&2; exit 7'")
    assert (done.stdout, done.exit_status) == ("out\n", 7)


def test_a_missing_program_is_an_oserror(host: LocalHost) -> None:
    """A command whose program does not exist raises OSError."""
    with pytest.raises(OSError):
        host.run_command("/no/such/program --flag")


def test_a_hung_command_is_killed_with_its_children(tmp_path: Path) -> None:
    """A command past the timeout raises TimeoutError and its whole process group is killed."""
    script = tmp_path / "hang.sh"
    pid_file = tmp_path / "child.pid"
    script.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pid_file}\nwait\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"did not finish within 0\.5 seconds"):
        LocalHost(command_timeout=0.5).run_command(str(script))
    assert time.monotonic() - started < 10
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while psutil.pid_exists(child) and psutil.Process(child).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the script's child survived the timeout"
        time.sleep(0.05)


def test_the_default_timeout_is_the_modules() -> None:
    """LocalHost() uses COMMAND_TIMEOUT unless told otherwise."""
    assert LocalHost().command_timeout == COMMAND_TIMEOUT
    assert LocalHost(command_timeout=3).command_timeout == 3
