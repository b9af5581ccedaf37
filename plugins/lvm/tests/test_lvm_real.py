"""epcore-lvm on a real kernel with device-mapper (the qemu guest; this host has none): a
startd with a loop-backed volume group runs a job within its request_disk and holds one
writing past it with code 34, leaving no volume and no mount; a volume left by a startd
killed with -9 mid-job (its starter and job with it) is removed by the next start; a volume
held busy breaks its slot until the startd's reminder removes it, and the startd's end
removes its loop-backed group. ``test_lvm_guest.py`` runs this module in the guest."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from epcore_lvm.backend import device_mapper_problem
from epcore_lvm.commands import TAG
from test_lvm_host import lvm_plugins

from epcore.classad import ClassAd, parse_ad
from epcore.startd.loop import StartdLoop
from epcore.startd.main import build_startd
from epcore.startd.startd import Startd
from epcore.testing.system import open_up

pytestmark = pytest.mark.skipif(
    device_mapper_problem() is not None or os.geteuid() != 0,
    reason=f"no LVM here ({device_mapper_problem()}): run in the guest",
)

NO_UDEV = (
    "activation/udev_sync=0 activation/udev_rules=0 activation/monitoring=0 "
    "devices/obtain_device_list_from_udev=0"
)
#: The job's RequestDisk in KiB: its volume is 8 MiB.
REQUEST_KIB = 8192


def _config(tmp_path: Path, group: str, extra: str = "") -> Path:
    open_up(tmp_path)
    local = tmp_path / "local"
    local.mkdir(exist_ok=True)
    local.chmod(0o755)
    path = local / "condor_config"
    path.write_text(
        f"LOCAL_DIR = {local}\nNUM_CPUS = 2\nBASE_CGROUP =\nRUNBENCHMARKS = False\n"
        "START = True\nSTARTD_ENFORCE_DISK_LIMITS = True\n"
        f"LVM_BACKING_FILE = /var/tmp/{group}.img\nLVM_BACKING_FILE_SIZE_MB = 64\n"
        f"LVM_AUTO_VG_NAME = {group}\nLVM_CHECK_INTERVAL = 1\nLVM_COMMAND_CONFIG = {NO_UDEV}\n"
        + extra
    )
    return path


def _job(tmp_path: Path, proc: int, script: str) -> ClassAd:
    iwd = tmp_path / "iwd"
    iwd.mkdir(exist_ok=True)
    iwd.chmod(0o777)
    (iwd / f"job{proc}.sh").write_text("#!/bin/sh\n" + script)
    (iwd / f"job{proc}.sh").chmod(0o755)
    return parse_ad(
        f'[ ClusterId = 1; ProcId = {proc}; Owner = "nobody"; Cmd = "{iwd}/job{proc}.sh";'
        f' Iwd = "{iwd}"; Out = "out{proc}"; Err = "err{proc}"; JobUniverse = 5;'
        f" RequestCpus = 1; RequestMemory = 64; RequestDisk = {REQUEST_KIB} ]"
    )


def _write(kib: int) -> str:
    return f'dd if=/dev/zero of="$_CONDOR_SCRATCH_DIR/f" bs=1k count={kib} 2>/dev/null\n'


def _volumes(group: str) -> list[str]:
    """The job volumes in ``group`` (none while the group is not made yet)."""
    done = subprocess.run(
        ["lvm", "lvs", "--config", NO_UDEV, "--noheadings", "-o", "lv_name",
         "--select", f"lv_tags={TAG}", group],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.split() if done.returncode == 0 else []


def _mounts_under(path: Path) -> list[str]:
    with open("/proc/self/mounts") as mounts:
        return [line.split()[1] for line in mounts if line.split()[1].startswith(f"{path}/")]


def _run(startd: Startd, loop: StartdLoop, job: ClassAd, count: int) -> ClassAd:
    startd.activate(startd.claim("slot1", job))
    deadline = time.monotonic() + 120
    while len(startd.results) < count:
        assert time.monotonic() < deadline, "no result in 120 s"
        loop.turn()
    return startd.results[-1]


@pytest.mark.parametrize(
    "extra",
    ["", "LVM_USE_THIN_PROVISIONING = True\nLVM_THIN_LV_EXTRA_SIZE_MB = 8\n"],
    ids=["thick", "thin"],
)
def test_within_completes_past_is_held_and_nothing_is_left(tmp_path: Path, extra: str) -> None:
    """A job writing within its request_disk completes on its own ext4 volume; one writing
    past it is held with 34/104 and the reason; then no job volume and no mount is left
    (thick volumes from the group, or thin ones from the startd's pool)."""
    group = "ep_thin" if extra else "ep_thick"
    startd = build_startd(str(_config(tmp_path, group, extra)), plugins=lvm_plugins())
    loop = StartdLoop(startd)
    loop.open()
    execute = Path(startd.config.get("EXECUTE") or "")
    try:
        ads = startd.ads(startd.state, 0.0)
        assert all(ad.evaluate("IsEnforcingDiskUsage") is True for ad in ads.values()), ads
        look = 'stat -f -c "fs=%T" "$_CONDOR_SCRATCH_DIR"\n'
        within = _run(startd, loop, _job(tmp_path, 0, look + _write(REQUEST_KIB // 2)), 1)
        out = (tmp_path / "iwd" / "out0").read_text()
        assert within.evaluate("ExitCode") == 0, (within, out)
        assert "fs=ext2/ext3" in out, out
        past = _run(startd, loop, _job(tmp_path, 1, _write(2 * REQUEST_KIB) + "sleep 100\n"), 2)
        assert past.evaluate("HoldReasonCode") == 34, past
        assert past.evaluate("HoldReasonSubCode") == 104, past
        assert str(past.evaluate("HoldReason")).startswith("Job has exceeded allocated disk (")
        # The starter removes the volume after its report: give it the time.
        deadline = time.monotonic() + 30
        while _volumes(group) and time.monotonic() < deadline:
            loop.turn()
        assert _volumes(group) == []
        assert _mounts_under(execute) == []
    finally:
        startd.shutdown(fast=True)
        while not loop.finished:
            loop.turn()
        loop.close()


def test_a_volume_left_by_a_killed_startd_is_removed_at_the_next_start(tmp_path: Path) -> None:
    """A startd killed with -9 mid-job, with its starter and job, leaves a mounted volume;
    the next startd's start removes it."""
    group = "ep_killed"
    config = _config(tmp_path, group)
    job = _job(tmp_path, 0, "sleep 600\n")
    child = os.fork()
    if child == 0:  # pragma: no cover - the first startd, killed below
        startd = build_startd(str(config), plugins=lvm_plugins())
        loop = StartdLoop(startd)
        loop.open()
        startd.activate(startd.claim("slot1", job))
        while True:
            loop.turn()
    deadline = time.monotonic() + 120
    while not _volumes(group):
        assert time.monotonic() < deadline, "the job's volume never appeared"
        time.sleep(0.5)
    time.sleep(2)
    first = psutil.Process(child)
    for process in [*first.children(recursive=True), first]:
        process.send_signal(signal.SIGKILL)
    os.waitpid(child, 0)
    psutil.wait_procs(psutil.Process().children(recursive=True), timeout=0)
    left = _volumes(group)
    assert len(left) == 1
    startd = build_startd(str(config), plugins=lvm_plugins())
    try:
        assert _volumes(group) == [], "the next start left the dead job's volume"
        execute = Path(startd.config.get("EXECUTE") or "")
        assert _mounts_under(execute) == []
    finally:
        loop = StartdLoop(startd)
        loop.open()
        startd.shutdown(fast=True)
        while not loop.finished:
            loop.turn()
        loop.close()


def _groups() -> list[str]:
    done = subprocess.run(
        ["lvm", "vgs", "--config", NO_UDEV, "--noheadings", "-o", "vg_name"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.split()


def _logs(tmp_path: Path) -> str:
    """The end of each daemon log under ``tmp_path`` (what a failure shows)."""
    found = []
    for path in sorted((tmp_path / "local").rglob("*Log*")):
        if path.is_file():
            found.append(f"== {path.name}\n" + path.read_text(errors="replace")[-3000:])
    return "\n".join(found)


def _broken(startd: Startd) -> list[ClassAd]:
    """The ads of the broken slots."""
    return [
        ad for ad in startd.ads(startd.state, startd.clock()).values() if "SlotBrokenCode" in ad
    ]


def test_a_busy_volume_breaks_the_slot_until_the_reminder_removes_it(tmp_path: Path) -> None:
    """A process outside the job keeps the job's volume busy: its removal fails, the slot is
    broken (5, "Could not clean up Logical Volume") and the volume stays; once the process
    is gone the startd's reminder removes it and the slot is whole. At the startd's end its
    loop-backed group, loop device and backing file are gone."""
    group = "ep_busy"
    extra = (
        "LVM_HIDE_MOUNT = false\nSTARTD_CLEANUP_REMINDER_TIMER_INTERVAL = 1\n"
        "AGGRESSIVE_CLEANUP_REMINDER = True\n"
    )
    startd = build_startd(str(_config(tmp_path, group, extra)), plugins=lvm_plugins())
    loop = StartdLoop(startd)
    loop.open()
    iwd = tmp_path / "iwd"
    script = (
        f'echo "$_CONDOR_SCRATCH_DIR" > {iwd}/where\nwhile [ ! -e {iwd}/go ]; do sleep 0.2; done\n'
    )
    holder: subprocess.Popen[bytes] | None = None
    try:
        startd.activate(startd.claim("slot1", _job(tmp_path, 0, script)))
        deadline = time.monotonic() + 120
        while not (iwd / "where").exists():
            assert time.monotonic() < deadline, "the job never started"
            loop.turn()
        holder = subprocess.Popen(["sleep", "600"], cwd=(iwd / "where").read_text().strip())
        (iwd / "go").touch()
        deadline = time.monotonic() + 120
        while not _broken(startd):
            assert time.monotonic() < deadline, "the slot was never broken\n" + _logs(tmp_path)
            loop.turn()
        (ad,) = _broken(startd)
        assert ad.evaluate("SlotBrokenCode") == 5
        assert ad.evaluate("SlotBrokenReason") == "Could not clean up Logical Volume"
        assert len(_volumes(group)) == 1
        holder.kill()
        holder.wait()
        deadline = time.monotonic() + 60
        while startd.cleanup.reminders or _volumes(group):
            assert time.monotonic() < deadline, "no removal by the reminder\n" + _logs(tmp_path)
            loop.turn()
        assert _broken(startd) == []
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
            holder.wait()
        startd.shutdown(fast=True)
        while not loop.finished:
            loop.turn()
        loop.close()
    assert group not in _groups()
    assert not os.path.exists(f"/var/tmp/{group}.img")
    # No loop device backs the (deleted) file any more.
    attached = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False)
    assert f"{group}.img" not in attached.stdout
