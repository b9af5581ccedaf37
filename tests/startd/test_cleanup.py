"""Broken slots and clean-up reminders through a real startd and starter (the core's tmpfs
scratch filesystem): a volume the starter cannot remove breaks its slot as HTCondor's
(SlotBrokenCode 5, "Could not clean up Logical Volume", starter exit 15), its resources stay
out of the partitionable slot, and the startd's reminder removes it later and mends the slot."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.plugins import load_plugins
from epcore.runtime.control import ControlError
from epcore.startd.cleanup import retry_on
from epcore.startd.loop import StartdLoop
from epcore.startd.main import build_startd
from epcore.startd.startd import Startd
from epcore.testing.scratch_contracts import TmpfsScratchPlugin
from epcore.testing.system import open_up

EXECUTE_KIB = 64 * 1024
REQUEST_KIB = 4096
REASON = "Could not clean up Logical Volume"


def test_reminders_back_off_as_htcondors() -> None:
    """Retries at the 1st, 2nd, 4th, 8th... tick for the first hour, then hourly, after a
    day daily."""
    assert [t for t in range(1, 61) if retry_on(t)] == [1, 2, 4, 8, 16, 32]
    assert [t for t in range(61, 300) if retry_on(t)] == [120, 180, 240]
    assert retry_on(2880) and not retry_on(1500) and not retry_on(1441)


@pytest.fixture
def execute(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs as EXECUTE."""
    path = tmp_path / "execute"
    path.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={EXECUTE_KIB}k", "tmpfs", str(path)], check=True
    )
    path.chmod(0o755)
    yield path
    subprocess.run(["umount", "-l", str(path)], check=False)


def _slot_ads(startd: Startd) -> dict[str, ClassAd]:
    return startd.ads(startd.state, startd.clock())


def _until(loop: StartdLoop, done: object, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not done():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what}: not within {seconds} s"
        loop.turn()


@pytest.mark.system
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_volume_the_starter_cannot_remove_breaks_the_slot_until_a_reminder_removes_it(
    tmp_path: Path, execute: Path
) -> None:
    """A process outside the job holds the job's volume busy: the starter reports it and
    exits 15, the dynamic slot is broken (code 5, the reason as Requirements, no next job),
    its resources stay held when its claim ends; once the holder is gone the startd's
    reminder removes the volume and the partitionable slot offers everything again."""
    local = tmp_path / "local"
    local.mkdir()
    local.chmod(0o755)
    (local / "condor_config").write_text(
        f"LOCAL_DIR = {local}\nEXECUTE = {execute}\nNUM_CPUS = 2\nBASE_CGROUP =\n"
        "RUNBENCHMARKS = False\nSTART = True\nRESERVED_DISK = 0\nTMPFS_SCRATCH = True\n"
        "NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\n"
        "STARTD_CLEANUP_REMINDER_TIMER_INTERVAL = 1\nAGGRESSIVE_CLEANUP_REMINDER = True\n"
    )
    open_up(tmp_path)
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    iwd.chmod(0o777)
    # The job says where its sandbox is, then waits for the holder to be there.
    (iwd / "job.sh").write_text(
        f'#!/bin/sh\necho "$_CONDOR_SCRATCH_DIR" > {iwd}/where\n'
        f"while [ ! -e {iwd}/go ]; do sleep 0.1; done\n"
    )
    (iwd / "job.sh").chmod(0o755)
    plugin = TmpfsScratchPlugin()
    startd = build_startd(
        str(local / "condor_config"), plugins=load_plugins(extra=[("tmpfs-scratch", plugin)])
    )
    loop = StartdLoop(startd)
    loop.open()
    holder: subprocess.Popen[bytes] | None = None
    try:
        job = parse_ad(
            f'[ ClusterId = 1; ProcId = 0; Owner = "nobody"; Cmd = "{iwd}/job.sh";'
            f' Iwd = "{iwd}"; JobUniverse = 5; RequestCpus = 1; RequestMemory = 64;'
            f" RequestDisk = {REQUEST_KIB} ]"
        )
        # The builder updates its ads in place: the values, not the ad.
        whole = _slot_ads(startd)["slot1"].copy()
        claim_id = startd.claim("slot1", job)
        startd.activate(claim_id)
        handle = startd.starters.handles[claim_id]
        _until(loop, (iwd / "where").exists, "the job's sandbox")
        sandbox = (iwd / "where").read_text().strip()
        holder = subprocess.Popen(["sleep", "600"], cwd=sandbox)
        (iwd / "go").touch()
        _until(loop, lambda: "SlotBrokenCode" in _slot_ads(startd).get("slot1_1", {}), "break")
        assert startd.results[0].evaluate("ExitCode") == 0
        broken = _slot_ads(startd)["slot1_1"]
        assert broken.evaluate("SlotBrokenCode") == 5
        assert broken.evaluate("SlotBrokenReason") == REASON
        assert broken.evaluate("Requirements") == REASON
        _until(loop, lambda: not startd.starters.handles, "the starter's exit")
        assert handle.exit_code == 15 and handle.broke
        assert startd.cleanup.reminders[0].item.startswith("ep_tmpfs_")
        with pytest.raises(ControlError, match="broken"):
            startd.activate(claim_id)
        startd.release(claim_id)
        _until(loop, lambda: "slot1_1" not in _slot_ads(startd), "the claim's end")
        pslot = _slot_ads(startd)["slot1"]
        assert pslot.evaluate("BrokenSlotCpus") == 1
        assert pslot.evaluate("Cpus") == whole.evaluate("Cpus") - 1
        assert pslot.evaluate("TotalSlotCpus") == 1
        holder.kill()
        holder.wait()
        _until(loop, lambda: not startd.cleanup.reminders, "the reminder's removal")
        pslot = _slot_ads(startd)["slot1"]
        assert pslot.lookup("BrokenSlotCpus") is None
        assert pslot.evaluate("Cpus") == whole.evaluate("Cpus")
        assert pslot.evaluate("Disk") == whole.evaluate("Disk")
        assert sandbox in plugin.built[0].removed
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
            holder.wait()
        startd.shutdown(fast=True)
        while not loop.finished:
            loop.turn()
        loop.close()
    assert plugin.built[0].stopped
