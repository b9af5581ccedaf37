"""Power management end to end in one ``ep run`` pool on loopback (issue 29, must-show 1-2).

The startd's power backend reads a fake sysfs whose ``power/state`` is a FIFO: the test feeds
it ``freeze mem disk`` when the startd detects its states, and reads what the startd writes
when it goes to sleep, which stands for the machine sleeping (the write blocks) until the
test's Wake-on-LAN listener, bound to 127.255.255.255, receives the rooster's magic packet
and reads the FIFO: the machine wakes.
"""

from __future__ import annotations

import os
import select
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from epcore.classad import parse_ad
from epcore.testing.pool import PoolProcess, submit_as

pytestmark = pytest.mark.system

MAC = "00:1a:2b:3c:4d:5e"
BROADCAST = "127.255.255.255"


class SleepingNic:
    """The fake machine's NIC and sysfs (module docstring); records what it saw."""

    def __init__(self, sysfs: Path) -> None:
        self.state = sysfs / "power" / "state"
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind((BROADCAST, 0))
        self.port = self.socket.getsockname()[1]
        self.packets: list[bytes] = []
        self.written: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        # The startd's detection reads the FIFO once: this write waits for that reader.
        with open(self.state, "w") as fifo:
            fifo.write("freeze mem disk\n")
        while not self.stop.is_set():
            ready, _, _ = select.select([self.socket], [], [], 0.2)
            if not ready:
                continue
            packet, _ = self.socket.recvfrom(1024)
            self.packets.append(packet)
            self.written.append(self._wake())

    def _wake(self) -> str:
        """Read what the sleeping startd writes to power/state: that ends its sleep."""
        fd = os.open(self.state, os.O_RDONLY | os.O_NONBLOCK)
        data = b""
        try:
            for _ in range(20):
                select.select([fd], [], [], 0.1)
                try:
                    chunk = os.read(fd, 64)
                except BlockingIOError:
                    continue
                data += chunk
                if chunk == b"" and data:
                    break
        finally:
            os.close(fd)
        return data.decode()


def _fake_sysfs(root: Path) -> Path:
    sysfs = root / "sys"
    (sysfs / "power").mkdir(parents=True)
    os.mkfifo(sysfs / "power" / "state")
    (sysfs / "power" / "disk").write_text("[platform] shutdown reboot suspend\n")
    (sysfs / "class" / "net" / "lo").mkdir(parents=True)
    (sysfs / "class" / "net" / "lo" / "address").write_text(MAC + "\n")
    return sysfs


def _power_config(sysfs: Path, port: int) -> str:
    wake = f"{sys.executable} -m epcore.cli.main power wake -i -a {BROADCAST} -p {port}"
    return f"""
DAEMON_LIST = MASTER COLLECTOR NEGOTIATOR SCHEDD STARTD ROOSTER
UPDATE_INTERVAL = 2
HIBERNATE_CHECK_INTERVAL = 2
HIBERNATE = ifThenElse(KeyboardIdle > 60 && State == "Unclaimed", "RAM", "NONE")
POWER_SYSFS_ROOT = {sysfs}
POWER_NETWORK_INTERFACE = lo
POWER_ETHTOOL_WOL = 0x20 0x20
ROOSTER_INTERVAL = 1
ROOSTER_WAKEUP_CMD = "{wake}"
"""


def _offline(pool: PoolProcess) -> list[str]:
    result = pool.ep("status", "-offline", "-af", "Name")
    return result.stdout.split() if result.status == 0 else []


def test_a_job_submitted_while_asleep_wakes_the_machine(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """The idle startd publishes its slots offline and writes mem to power/state; a job
    submitted meanwhile matches an offline ad, the rooster's magic packet reaches the
    listener with the machine's MAC, the machine wakes, its live slots return and the job
    runs; idle again, it sleeps again and ``ep power wake SLOT`` wakes it."""
    sysfs = _fake_sysfs(shared_dir)
    nic = SleepingNic(sysfs)
    nic.thread.start()
    try:
        pool = pool_factory(_power_config(sysfs, nic.port), cpus=2)
        pool.wait_for(lambda: bool(_offline(pool)), 30, "the slots to go offline")
        slots = _offline(pool)
        shown = pool.ep("status", "-offline", "-l")
        offline = parse_ad(shown.stdout.split("\n\n")[0])
        assert offline.evaluate("Offline") is True
        assert offline.evaluate("HibernationState") == "S3"
        assert offline.evaluate("HibernationLevel") == 3
        assert offline.evaluate("HardwareAddress") == MAC
        assert offline.evaluate("IsWakeAble") is True
        assert "entering sleep state S3" in pool.log("StartLog")
        # Asleep, the startd publishes nothing: the ads stay offline past UPDATE_INTERVAL.
        time.sleep(3)
        assert _offline(pool) == slots
        assert not nic.packets
        user = slot_users[0]
        submit_as(pool, user, shared_dir, "executable = /bin/true\nqueue\n")
        pool.wait_for(lambda: pool.jobs("JobStatus == 4", history=True), 60, "the job to run")
        # Idle again, the machine sleeps again; ep power wake by slot name wakes it.
        # (The rooster may have sent more than one packet for the first sleep: one per
        # negotiation cycle that matched the offline ad; the later ones find it awake.)
        pool.wait_for(lambda: bool(_offline(pool)), 30, "the machine to sleep again")
        sleeps = nic.written.count("mem")
        port = str(nic.port)
        woken = pool.ep("power", "wake", slots[0], "-a", BROADCAST, "-p", port)
        assert woken.status == 0, woken.stderr
        pool.wait_for(lambda: nic.written.count("mem") == sleeps + 1, 30, "the second wake")
    finally:
        nic.stop.set()
    magic = b"\xff" * 6 + bytes.fromhex(MAC.replace(":", "")) * 16
    assert nic.packets and nic.packets[0] == magic
    assert nic.written[0] == "mem"
    assert all(packet == magic for packet in nic.packets)
    assert "(offline)" in pool.log("NegotiatorLog")
    assert "Sending wake request" in pool.log("RoosterLog")
    assert "woke up from S3" in pool.log("StartLog")
