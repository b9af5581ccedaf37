"""The LVM scratch filesystem's decisions, with the commands recorded instead of run (this
host has no device-mapper): the loop-backed group, thin and thick volumes, the sweep, the
checks (over the request: hold 34/104; a full thin pool: vacate after the grace), failures."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import attrs
import pytest
from epcore_lvm.backend import LvmScratch, start_ticks
from epcore_lvm.commands import Commands, LvmError

from epcore.classad import parse_ad
from epcore.config import Config
from epcore.errors import JobSetupError
from epcore.plugins import load_plugins
from epcore.types import ScratchRequest, ScratchVolume


class FakeCommands(Commands):
    """Records every command line; answers from ``answers`` (first matching prefix), fails
    the ones starting with a prefix in ``failing``."""

    def __init__(self, answers: dict[str, str] | None = None, failing: Sequence[str] = ()) -> None:
        super().__init__(timeout=5.0)
        self.answers = answers or {}
        self.failing = failing
        self.lines: list[str] = []
        self.inputs: dict[str, str] = {}

    def hide(self) -> str:
        """Stands for the starter's move into a mount namespace of its own."""
        self.lines.append("unshare mount namespace")
        return "/proc/77/task/77/ns/mnt"

    def run(self, argv: Sequence[str], stdin: str | None = None) -> str:
        line = " ".join(argv)
        self.lines.append(line)
        if stdin is not None:
            self.inputs[line] = stdin
        if any(line.startswith(prefix) for prefix in self.failing):
            raise LvmError(f"{line}: failed")
        for prefix, answer in self.answers.items():
            if line.startswith(prefix):
                return answer
        return ""


def _scratch(tmp_path: Path, text: str, commands: FakeCommands, clock: float = 0.0) -> LvmScratch:
    plugins = load_plugins()
    config = Config.from_text(
        f"SPOOL = {tmp_path}\nSTARTD_ENFORCE_DISK_LIMITS = True\n" + text,
        defaults=plugins.config_defaults(),
    )
    return LvmScratch(
        config,
        commands,
        problem=lambda: None,
        clock=lambda: clock,
        hide=commands.hide,
        started=lambda pid: 5000 if pid == 77 else start_ticks(pid),
    )


def _request(tmp_path: Path, disk_kib: int = 10_000) -> ScratchRequest:
    sandbox = tmp_path / "dir_77"
    sandbox.mkdir(exist_ok=True)
    return ScratchRequest(
        path=str(sandbox),
        slot_name="slot1_1@host",
        slot_id=1,
        starter_id=77,
        disk_kib=disk_kib,
        uid=os.getuid(),
        gid=os.getgid(),
        job=parse_ad("[ JobUniverse = 5 ]"),
    )


def test_without_a_group_the_startd_makes_a_loop_backed_one(tmp_path: Path) -> None:
    """No LVM_VOLUME_GROUP_NAME: the backing file is made at 1.02 x its size, put on a loop
    device, and the group condor_STARTD made on it; the slot ads say so."""
    commands = FakeCommands({"losetup --find": "/dev/loop3\n"})
    scratch = _scratch(tmp_path, "LVM_BACKING_FILE_SIZE_MB = 100\n", commands)
    scratch.start()
    assert scratch.available(), scratch.reason
    assert os.path.getsize(tmp_path / "startd_disk.img") == int(100 * 1.02) << 20
    assert "lvm pvcreate /dev/loop3" in commands.lines
    assert "lvm vgcreate --autobackup n condor_STARTD /dev/loop3" in commands.lines
    assert not any("thin-pool" in line for line in commands.lines)
    attributes = {a.name: a.value for a in scratch.machine_attributes()}
    assert attributes["IsEnforcingDiskUsage"] is True
    assert attributes["LvmUsingLoopback"] is True
    assert attributes["LvmIsThinProvisioning"] is False
    assert attributes["LvmBackingStore"] == "condor_STARTD"


def test_thin_provisioning_makes_a_pool_that_errors_when_full(tmp_path: Path) -> None:
    """Thin without a pool: the startd's group gets <vg>_THINPOOL, set to error when full."""
    commands = FakeCommands({"losetup --find": "/dev/loop3\n"})
    # A small backing file: the default (10 GiB) would be allocated for real in tmp_path.
    text = "LVM_USE_THIN_PROVISIONING = True\nLVM_BACKING_FILE_SIZE_MB = 16\n"
    scratch = _scratch(tmp_path, text, commands)
    scratch.start()
    assert any(
        "--type thin-pool" in line and "-n condor_STARTD_THINPOOL" in line
        for line in commands.lines
    )
    assert "lvm lvchange --errorwhenfull y condor_STARTD/condor_STARTD_THINPOOL" in commands.lines
    attributes = {a.name: a.value for a in scratch.machine_attributes()}
    assert attributes["LvmBackingStore"] == "condor_STARTD/condor_STARTD_THINPOOL"


def test_a_configured_group_that_is_missing_makes_lvm_unavailable(tmp_path: Path) -> None:
    """A configured volume group that does not exist: unavailable, the reason names it."""
    scratch = _scratch(tmp_path, "LVM_VOLUME_GROUP_NAME = site_vg\n", FakeCommands())
    scratch.start()
    assert not scratch.available()
    attributes = {a.name: a.value for a in scratch.machine_attributes()}
    assert attributes["IsEnforcingDiskUsage"] is False
    assert "site_vg" in str(attributes["LvmUnavailableReason"])


def test_the_sweep_removes_the_volumes_of_dead_starters_only(tmp_path: Path) -> None:
    """At start, tagged volumes whose starter is gone are removed: a dead PID's, and a PID
    now used by a process that started at another time (a reused PID); a live starter's is
    kept, as is one of an older epcore named without the start time."""
    live, dead = os.getpid(), 2**22 + 12345
    ticks = start_ticks(live)
    names = f"slot1_{live}_{ticks}\nslot2_{dead}_7\nslot3_{live}_1\nslot4_{live}\n"
    commands = FakeCommands({"lvm vgs": "site_vg\n", "lvm lvs": names})
    scratch = _scratch(tmp_path, "LVM_VOLUME_GROUP_NAME = site_vg\n", commands)
    scratch.start()
    assert scratch.available(), scratch.reason
    removals = [line for line in commands.lines if line.startswith("lvm lvremove")]
    assert removals == [
        f"lvm lvremove --autobackup n -f site_vg/slot2_{dead}_7",
        f"lvm lvremove --autobackup n -f site_vg/slot3_{live}_1",
    ]


def test_a_zombie_holds_no_volume() -> None:
    """A starter that died but is not yet reaped (a zombie) holds nothing: no start time."""
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        os._exit(0)
    try:
        deadline = time.monotonic() + 10
        while start_ticks(child) is not None:
            assert time.monotonic() < deadline, "the child never became a zombie"
            time.sleep(0.01)
    finally:
        os.waitpid(child, 0)
    assert start_ticks(os.getpid()) is not None


@pytest.mark.parametrize("thin", [False, True])
def test_the_detected_disk_and_what_other_volumes_use_are_advertised(
    tmp_path: Path, thin: bool
) -> None:
    """LvmDetectedDisk is the group's size (thick) or the pool's (thin); LvmNonCondorDiskUsage
    what the volumes other than the jobs' take of it (a thin one: its data in use)."""
    rows = (
        "pool|1000000||| 5.00\n"
        "home|200000|||\n"
        "thinvol|400000||pool|25.00\n"
        "slot1_1_1|300000|htcondor_lv|pool|50.00\n"
    )
    report = "--noheadings --nosuffix --units b --separator | -o"
    commands = FakeCommands(
        {
            f"lvm vgs {report} vg_size": "4000000\n",
            "lvm vgs": "vg\n",
            f"lvm lvs {report} lv_name,lv_size,lv_tags": rows,
            "lvm lvs": "pool\n",
        }
    )
    text = "LVM_VOLUME_GROUP_NAME = vg\nLVM_THINPOOL_NAME = pool\n"
    if thin:
        text += "LVM_USE_THIN_PROVISIONING = True\n"
    scratch = _scratch(tmp_path, text, commands)
    scratch.start()
    assert scratch.available(), scratch.reason
    attributes = {a.name: a.value for a in scratch.machine_attributes()}
    if thin:
        assert attributes["LvmDetectedDisk"] == 1000000
        assert attributes["LvmNonCondorDiskUsage"] == 100000
    else:
        assert attributes["LvmDetectedDisk"] == 4000000
        assert attributes["LvmNonCondorDiskUsage"] == 1000000 + 200000


def test_a_thick_volume_is_the_slots_disk_rounded_to_4_mib(tmp_path: Path) -> None:
    """A thick volume is tagged, of the slot's Disk rounded up to 4 MiB, formatted as
    HTCondor formats it, mounted on the sandbox nodev,nosuid."""
    commands = FakeCommands()
    scratch = _scratch(tmp_path, "LVM_VOLUME_GROUP_NAME = site_vg\n", commands)
    volume = scratch.prepare(_request(tmp_path, disk_kib=10_000))
    assert volume.size_kib == 12288
    assert volume.device == "/dev/site_vg/slot1_77_5000"
    assert (
        "lvm lvcreate --autobackup n --yes -n slot1_77_5000 --addtag htcondor_lv -L 12288k site_vg"
        in commands.lines
    )
    assert any(line.startswith("mke2fs -q -F -t ext4 -O ^has_journal") for line in commands.lines)
    assert any(
        line.startswith("mount -t ext4 -o noatime,nodev,nosuid") and line.endswith("dir_77")
        for line in commands.lines
    )


def test_a_thin_volume_gets_the_extra_size(tmp_path: Path) -> None:
    """A thin volume is virtual: the slot's Disk plus LVM_THIN_LV_EXTRA_SIZE_MB."""
    commands = FakeCommands()
    text = (
        "LVM_VOLUME_GROUP_NAME = vg\nLVM_THINPOOL_NAME = pool\nLVM_USE_THIN_PROVISIONING = True\n"
    )
    scratch = _scratch(tmp_path, text + "LVM_THIN_LV_EXTRA_SIZE_MB = 10\n", commands)
    scratch.prepare(_request(tmp_path, disk_kib=4096))
    assert (
        "lvm lvcreate --autobackup n -n slot1_77_5000 --addtag htcondor_lv -V 14336k -T vg/pool"
        in commands.lines
    )


def test_a_volume_that_cannot_be_made_requeues_the_job(tmp_path: Path) -> None:
    """lvcreate failing: the job's setup fails with vacate code 1024 (requeued) and what was
    made is removed."""
    commands = FakeCommands(failing=("lvm lvcreate",))
    scratch = _scratch(tmp_path, "LVM_VOLUME_GROUP_NAME = vg\n", commands)
    with pytest.raises(JobSetupError) as raised:
        scratch.prepare(_request(tmp_path))
    assert raised.value.hold_code == 1024
    assert raised.value.reason.startswith("Failed to create LV for scratch dir")
    assert "lvm lvremove --autobackup n -f vg/slot1_77_5000" in commands.lines


def test_hide_mount_true_refuses_a_docker_job(tmp_path: Path) -> None:
    """LVM_HIDE_MOUNT = true: a docker job's volume setup fails with code 1024."""
    scratch = _scratch(
        tmp_path, "LVM_VOLUME_GROUP_NAME = vg\nLVM_HIDE_MOUNT = true\n", FakeCommands()
    )
    job = parse_ad("[ JobUniverse = 5; WantDocker = true ]")
    docker = attrs.evolve(_request(tmp_path), job=job)
    with pytest.raises(JobSetupError) as raised:
        scratch.prepare(docker)
    assert raised.value.hold_code == 1024


def test_a_job_over_its_request_is_held_with_34_and_104(tmp_path: Path) -> None:
    """Usage at 98% of a thick volume holds the job: code 34, subcode 104, HTCondor 25's
    message with the allocation in byte units; below it, nothing."""
    scratch = _scratch(tmp_path, "LVM_VOLUME_GROUP_NAME = vg\n", FakeCommands())
    stats = os.statvfs(tmp_path)
    used_kib = (stats.f_blocks - stats.f_bfree) * stats.f_frsize // 1024
    over = ScratchVolume("slot1_77", str(tmp_path), "/dev/vg/slot1_77", int(used_kib / 0.98) - 1)
    verdict = scratch.check(over)
    assert verdict is not None and verdict.hold
    assert (verdict.code, verdict.subcode) == (34, 104)
    assert verdict.reason.startswith("Job has exceeded allocated disk (")
    assert verdict.reason.endswith("). Consider increasing the value of request_disk.")
    within = ScratchVolume("slot1_77", str(tmp_path), "/dev/vg/slot1_77", used_kib * 2)
    assert scratch.check(within) is None


def test_a_full_thin_pool_vacates_after_the_grace(tmp_path: Path) -> None:
    """A pool at 100%: nothing the first time, nothing within the grace, then a vacate
    (not a hold) with HTCondor's reason; a pool that recovers starts the grace again."""
    commands = FakeCommands({"lvm lvs": "100.00\n"})
    text = (
        "LVM_VOLUME_GROUP_NAME = vg\nLVM_THINPOOL_NAME = pool\nLVM_USE_THIN_PROVISIONING = True\n"
    )
    now = [0.0]
    scratch = _scratch(tmp_path, text + "LVM_THINPOOL_FULL_GRACE = 60\n", commands)
    scratch.clock = lambda: now[0]
    volume = ScratchVolume("slot1_77", str(tmp_path), "/dev/vg/slot1_77", 2**40)
    assert scratch.check(volume) is None
    now[0] = 59.0
    assert scratch.check(volume) is None
    now[0] = 61.0
    verdict = scratch.check(volume)
    assert verdict is not None and not verdict.hold and verdict.code == 0
    assert verdict.reason == "Underlying thin pool is out of space and not recovering"
    commands.answers["lvm lvs"] = "50.00\n"
    assert scratch.check(volume) is None and scratch.full_since is None


def test_a_volume_that_cannot_be_removed_is_an_error(tmp_path: Path) -> None:
    """lvremove failing is an EpError for the starter to report."""
    scratch = _scratch(
        tmp_path, "LVM_VOLUME_GROUP_NAME = vg\n", FakeCommands(failing=("lvm lvremove",))
    )
    with pytest.raises(LvmError):
        scratch.remove(ScratchVolume("slot1_77", str(tmp_path), "/dev/vg/slot1_77", 4096))


@pytest.mark.parametrize(
    ("mode", "job", "hidden"),
    [
        ("auto", "[ JobUniverse = 5 ]", True),
        ("auto", "[ JobUniverse = 5; WantDocker = true ]", False),
        ("auto", "[ JobUniverse = 13 ]", False),
        ("true", "[ JobUniverse = 5 ]", True),
        ("false", "[ JobUniverse = 5 ]", False),
    ],
)
def test_hide_mount_mounts_the_volume_in_the_starters_own_namespace(
    tmp_path: Path, mode: str, job: str, hidden: bool
) -> None:
    """LVM_HIDE_MOUNT: true, and auto for a job that allows it, move the starter into a
    mount namespace of its own before the mount and name it in the volume (the job enters
    it); false, and auto for a docker or VM job, mount where every process sees it."""
    commands = FakeCommands()
    scratch = _scratch(tmp_path, f"LVM_VOLUME_GROUP_NAME = vg\nLVM_HIDE_MOUNT = {mode}\n", commands)
    request = attrs.evolve(_request(tmp_path), job=parse_ad(job))
    volume = scratch.prepare(request)
    if hidden:
        assert volume.mount_namespace == "/proc/77/task/77/ns/mnt"
        unshared = commands.lines.index("unshare mount namespace")
        mounted = next(i for i, line in enumerate(commands.lines) if line.startswith("mount "))
        assert unshared < mounted, commands.lines
    else:
        assert volume.mount_namespace == ""
        assert "unshare mount namespace" not in commands.lines


@pytest.mark.parametrize("mode", ["true", "auto", "false"])
def test_hide_mount_true_advertises_no_docker_and_no_vm_with_the_reason(
    tmp_path: Path, mode: str
) -> None:
    """With LVM_HIDE_MOUNT = true the slot ads say HasDocker and HasVM false with HTCondor's
    reason (such jobs would fail their volume's setup); auto and false say nothing of them."""
    scratch = _scratch(
        tmp_path,
        f"LVM_VOLUME_GROUP_NAME = vg\nLVM_HIDE_MOUNT = {mode}\n",
        FakeCommands({"lvm vgs": "vg\n"}),
    )
    scratch.start()
    assert scratch.available(), scratch.reason
    attributes = {a.name: a.value for a in scratch.machine_attributes()}
    if mode == "true":
        assert attributes["HasDocker"] is False
        assert attributes["HasVM"] is False
        assert attributes["VMOfflineReason"] == (
            "LVM configured to hide scratch dir via LVM_HIDE_MOUNT, which prohibits VM "
            "universe jobs"
        )
        assert "LVM_HIDE_MOUNT" in str(attributes["DockerOfflineReason"])
    else:
        assert "HasDocker" not in attributes
        assert "HasVM" not in attributes


@pytest.mark.parametrize(
    ("knobs", "job", "encrypted"),
    [
        ("ENCRYPT_EXECUTE_DIRECTORY = True\n", "[ JobUniverse = 5 ]", True),
        ("", "[ JobUniverse = 5; EncryptExecuteDirectory = true ]", True),
        ("", "[ JobUniverse = 5 ]", False),
        (
            "ENCRYPT_EXECUTE_DIRECTORY = True\nDISABLE_EXECUTE_DIRECTORY_ENCRYPTION = True\n",
            "[ JobUniverse = 5; EncryptExecuteDirectory = true ]",
            False,
        ),
    ],
)
def test_an_encrypted_volume_is_a_dm_crypt_mapping_with_a_key_in_no_command_line(
    tmp_path: Path, knobs: str, job: str, encrypted: bool
) -> None:
    """ENCRYPT_EXECUTE_DIRECTORY or the job's encrypt_execute_directory (unless
    DISABLE_EXECUTE_DIRECTORY_ENCRYPTION): the volume is tagged lv_is_encrypted and a plain
    dm-crypt mapping over it, with a random key given on dmsetup's standard input, is what is
    formatted and mounted."""
    commands = FakeCommands({"blockdev --getsz": "24576\n"})
    scratch = _scratch(tmp_path, "LVM_VOLUME_GROUP_NAME = vg\n" + knobs, commands)
    request = attrs.evolve(_request(tmp_path), job=parse_ad(job))
    volume = scratch.prepare(request)
    (create,) = [line for line in commands.lines if line.startswith("lvm lvcreate")]
    mapped = "/dev/mapper/vg-slot1_77_5000-enc"
    if not encrypted:
        assert "lv_is_encrypted" not in create
        assert not any(line.startswith("dmsetup") for line in commands.lines)
        assert volume.device == "/dev/vg/slot1_77_5000"
        return
    assert "--addtag htcondor_lv --addtag lv_is_encrypted" in create
    table = commands.inputs["dmsetup create --noudevsync vg-slot1_77_5000-enc"]
    start, sectors, target, cipher, key, offset, device, skip = table.split()
    assert (start, sectors, target, cipher) == ("0", "24576", "crypt", "aes-xts-plain64")
    assert len(key) == 128 and int(key, 16) >= 0
    assert (offset, device, skip) == ("0", "/dev/vg/slot1_77_5000", "0")
    assert not any(key in line for line in commands.lines)
    assert volume.device == mapped
    assert any(line.startswith("mke2fs") and line.endswith(mapped) for line in commands.lines)
    assert any(line.startswith("mount ") and mapped in line for line in commands.lines)
