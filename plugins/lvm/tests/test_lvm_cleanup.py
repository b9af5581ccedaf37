"""The LVM scratch filesystem's clean-up decisions, with the commands recorded: a volume the
start cannot remove is left to the startd's reminders (not a failed start), the reminders'
retries, and the startd's own loop-backed group removed at its normal end."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from epcore_lvm.commands import LvmError
from test_lvm_backend import FakeCommands, _scratch

from epcore.errors import EpError


def test_a_volume_the_start_cannot_remove_is_left_to_the_reminders(tmp_path: Path) -> None:
    """At start, a dead starter's volume whose removal fails is one of the leftovers and the
    backend is still available; the others are removed."""
    dead = 2**22 + 12345
    names = f"slot1_{dead}_7\nslot2_{dead}_8\n"
    commands = FakeCommands(
        {"lvm vgs": "site_vg\n", "lvm lvs": names},
        failing=["lvm lvremove --autobackup n -f site_vg/slot1_"],
    )
    scratch = _scratch(tmp_path, "LVM_VOLUME_GROUP_NAME = site_vg\n", commands)
    scratch.start()
    assert scratch.available(), scratch.reason
    assert scratch.leftovers() == [f"slot1_{dead}_7"]
    assert f"lvm lvremove --autobackup n -f site_vg/slot2_{dead}_8" in commands.lines


def test_a_left_volume_is_removed_while_it_exists_and_then_nothing_is_done(
    tmp_path: Path,
) -> None:
    """remove_left removes a job volume still listed, raises while its removal fails, and
    does nothing once the volume is gone."""
    commands = FakeCommands({"lvm lvs": "slot1_5_6\n"}, failing=["lvm lvremove"])
    scratch = _scratch(tmp_path, "LVM_VOLUME_GROUP_NAME = site_vg\n", commands)
    with pytest.raises(EpError):
        scratch.remove_left("slot1_5_6")
    commands.failing = []
    scratch.remove_left("slot1_5_6")
    assert commands.lines[-1] == "lvm lvremove --autobackup n -f site_vg/slot1_5_6"
    commands.answers = {"lvm lvs": ""}
    before = len(commands.lines)
    scratch.remove_left("slot1_5_6")
    assert not any("lvremove" in line for line in commands.lines[before:])
    assert issubclass(LvmError, EpError)


def test_stop_removes_the_startds_own_group_loop_device_and_file(tmp_path: Path) -> None:
    """At the startd's normal end the loop-backed group it made goes: the group (with its
    pool), the physical volume, the loop device and the backing file."""
    commands = FakeCommands({"losetup --find": "/dev/loop3\n"})
    scratch = _scratch(tmp_path, "LVM_BACKING_FILE_SIZE_MB = 4\n", commands)
    scratch.start()
    assert (tmp_path / "startd_disk.img").exists()
    scratch.stop()
    tail = commands.lines[-3:]
    assert tail == [
        "lvm vgremove -f condor_STARTD",
        "lvm pvremove -f /dev/loop3",
        "losetup -d /dev/loop3",
    ]
    assert not (tmp_path / "startd_disk.img").exists()


def test_stop_keeps_a_group_that_still_holds_a_job_volume(tmp_path: Path) -> None:
    """A job volume the end's sweep cannot remove (a live starter's) keeps the group, its
    loop device and its file; a configured group is never removed."""
    live = f"slot1_{os.getpid()}_1\n"
    commands = FakeCommands({"losetup --find": "/dev/loop3\n", "lvm lvs": live})
    scratch = _scratch(tmp_path, "LVM_BACKING_FILE_SIZE_MB = 4\n", commands)
    scratch.start()
    scratch.stop()
    assert not any(line.startswith(("lvm vgremove", "losetup -d")) for line in commands.lines)
    assert (tmp_path / "startd_disk.img").exists()
    configured = FakeCommands({"lvm vgs": "site_vg\n"})
    scratch = _scratch(tmp_path, "LVM_VOLUME_GROUP_NAME = site_vg\n", configured)
    scratch.start()
    scratch.stop()
    assert not any(line.startswith("lvm vgremove") for line in configured.lines)
