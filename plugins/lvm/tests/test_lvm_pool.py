"""Must-show 1 of issue 26 through ``ep run`` (the qemu guest: this host has no device-mapper):
a personal pool with epcore-lvm and its loop-backed volume group runs a job within its
request_disk, holds one writing past it with code 34 and the reason, and leaves no volume and
no mount; ``ep run`` killed with -9 mid-job leaves a volume that the next start removes.
``test_lvm_guest.py`` runs this module in the guest."""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from epcore_lvm.backend import device_mapper_problem
from epcore_lvm.commands import TAG

from epcore.classad import ClassAd
from epcore.pool.personal import personal_config_text
from epcore.testing.pool import PoolProcess, run_ep
from epcore.testing.system import open_up

pytestmark = pytest.mark.skipif(
    device_mapper_problem() is not None or os.geteuid() != 0,
    reason=f"no LVM here ({device_mapper_problem()}): run in the guest",
)

NO_UDEV = (
    "activation/udev_sync=0 activation/udev_rules=0 activation/monitoring=0 "
    "devices/obtain_device_list_from_udev=0"
)
GROUP = "ep_pool"
POOL_CONFIG = f"""
NUM_CPUS = 2
MEMORY = 512
BASE_CGROUP =
RUNBENCHMARKS = False
POLLING_INTERVAL = 1
UPDATE_INTERVAL = 5
NEGOTIATOR_INTERVAL = 2
NEGOTIATOR_MIN_INTERVAL = 0
STARTER_INITIAL_UPDATE_INTERVAL = 1
STARTER_UPDATE_INTERVAL = 2
STARTD_ENFORCE_DISK_LIMITS = True
LVM_BACKING_FILE = /var/tmp/{GROUP}.img
LVM_BACKING_FILE_SIZE_MB = 64
LVM_AUTO_VG_NAME = {GROUP}
LVM_CHECK_INTERVAL = 1
LVM_COMMAND_CONFIG = {NO_UDEV}
"""
#: Each job's request_disk (KiB): its volume is 8 MiB.
REQUEST_KIB = 8192
SUBMIT = """\
executable = {script}
transfer_executable = false
output = {name}.out
error = {name}.err
request_cpus = 1
request_memory = 32
request_disk = {kib}
{extra}queue
"""


def volumes() -> list[str]:
    """The job volumes in the pool's group (none while the group is not made yet)."""
    done = subprocess.run(
        ["lvm", "lvs", "--config", NO_UDEV, "--noheadings", "-o", "lv_name",
         "--select", f"lv_tags={TAG}", GROUP],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.split() if done.returncode == 0 else []


def mounts_under(path: Path, pid: int | str = "self") -> list[str]:
    """The mount points below ``path`` in the mount namespace of process ``pid``."""
    with open(f"/proc/{pid}/mounts") as mounts:
        return [line.split()[1] for line in mounts if line.split()[1].startswith(f"{path}/")]


def mounts_anywhere(path: Path) -> list[str]:
    """The mount points below ``path`` in any process's mount namespace (a hidden volume is
    mounted in its starter's own)."""
    found = set()
    for process in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            found.update(mounts_under(path, process.pid))
    return sorted(found)


def _mappings() -> list[str]:
    """The device-mapper devices of job volumes' encryption."""
    listed = subprocess.run(["dmsetup", "ls"], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in listed.stdout.splitlines() if "-enc" in line]


def _pool(local: Path, extra: str = "") -> PoolProcess:
    local.mkdir(exist_ok=True)
    local.chmod(0o755)
    pool = PoolProcess(local, personal_config_text(str(local)) + POOL_CONFIG + extra)
    pool.start(wait=120)
    return pool


def _submit(pool: PoolProcess, home: Path, name: str, script: str, extra: str = "") -> None:
    """Submit ``script`` as job ``name`` from ``home``, as nobody."""
    path = home / f"{name}.sh"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    (home / f"{name}.sub").write_text(
        SUBMIT.format(script=path, name=name, kib=REQUEST_KIB, extra=extra)
    )
    nobody = pwd.getpwnam("nobody")
    result = run_ep(
        ["submit", f"{name}.sub", "--config", str(pool.config_path)],
        uid=nobody.pw_uid,
        gid=nobody.pw_gid,
        cwd=str(home),
    )
    assert result.status == 0, result.stderr


def _write(kib: int) -> str:
    return f'dd if=/dev/zero of="$_CONDOR_SCRATCH_DIR/f" bs=1k count={kib} 2>/dev/null\n'


def _ended(pool: PoolProcess, timeout: float = 180) -> list[ClassAd]:
    pool.wait_for(lambda: not pool.jobs("JobStatus != 5"), timeout, "the jobs to end or be held")
    return pool.jobs(history=True)


def _home(tmp: Path) -> Path:
    home = tmp / "home"
    home.mkdir()
    home.chmod(0o777)
    return home


def _killed(pool: PoolProcess) -> None:
    """``ep run`` and everything it started (its starters and their jobs), killed with -9."""
    assert pool.process is not None
    top = psutil.Process(pool.process.pid)
    processes = [top, *top.children(recursive=True)]
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.send_signal(signal.SIGKILL)
    pool.process.wait()
    pool.wait_for(lambda: not any(map(_running, processes[1:])), 30, "the killed processes")


def _running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_ep_run_holds_a_job_past_its_request_disk_and_removes_a_killed_pools_volume(
    tmp_path: Path,
) -> None:
    """Through ``ep run``: a job writing within its request_disk completes on its own ext4
    volume, one writing past it is held with 34/104 and the reason, one asking for
    encryption gets a dm-crypt mapping over its volume, and then no job volume, no mapping
    and no mount is left; ``ep run`` killed with -9 mid-job leaves its job's mounted volume,
    which the next ``ep run`` removes at its start."""
    open_up(tmp_path)
    home = _home(tmp_path)
    local = tmp_path / "pool"
    pool = _pool(local)
    execute = local / "execute"
    try:
        ads = pool.client.query_ads("Machine")
        assert ads and all(ad.evaluate("IsEnforcingDiskUsage") is True for ad in ads), ads
        look = 'stat -f -c "fs=%T" "$_CONDOR_SCRATCH_DIR"\n'
        _submit(pool, home, "within", look + _write(REQUEST_KIB // 2))
        _submit(pool, home, "past", _write(2 * REQUEST_KIB) + "sleep 100\n")
        source = 'grep " $_CONDOR_SCRATCH_DIR " /proc/self/mounts\n'
        _submit(pool, home, "secret", source, "encrypt_execute_directory = true\n")
        _ended(pool)
        (done,) = [j for j in pool.jobs(history=True) if j.evaluate("ClusterId") == 1]
        assert done.evaluate("ExitCode") == 0, done
        assert "fs=ext2/ext3" in (home / "within.out").read_text()
        # The encrypted job's volume is a dm-crypt mapping over its logical volume.
        assert f"/dev/mapper/{GROUP}-slot" in (home / "secret.out").read_text()
        (held,) = pool.jobs("JobStatus == 5")
        assert held.evaluate("HoldReasonCode") == 34, held
        assert held.evaluate("HoldReasonSubCode") == 104, held
        reason = str(held.evaluate("HoldReason"))
        assert reason == (
            "Job has exceeded allocated disk (8.00 MiB). Consider increasing the value of "
            "request_disk."
        ), reason
        pool.wait_for(lambda: volumes() == [], 60, "the held job's volume to go")
        assert mounts_anywhere(execute) == []
        assert _mappings() == []
        assert pool.ep("rm", "-all").status == 0
        _submit(pool, home, "killed", "sleep 600\n")
        pool.wait_for(lambda: len(volumes()) == 1, 120, "the job's volume")
        time.sleep(1)
        _killed(pool)
        (left,) = volumes()
        pool = _pool(local)
        pool.wait_for(lambda: left not in volumes(), 60, f"the next start to remove {left}")
        assert left not in volumes()
    finally:
        pool.ep("rm", "-all")
        pool.terminate()
    assert volumes() == []
    assert mounts_anywhere(execute) == []


def _sleepers() -> dict[int, str]:
    """The jobs' ``sleep`` processes (run as nobody) and the scratch directory of each."""
    found = {}
    for process in psutil.process_iter(["username", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if process.info["username"] == "nobody" and process.info["cmdline"][:1] == ["sleep"]:
                found[process.pid] = process.environ()["_CONDOR_SCRATCH_DIR"]
    return found


def test_hide_mount_shows_each_job_its_own_volume_and_nobody_else(tmp_path: Path) -> None:
    """LVM_HIDE_MOUNT = auto (the default): two jobs running at once each see their own
    ext4 volume on their scratch directory, and neither sees the other's; the machine's own
    mount namespace sees neither; both volumes go when the jobs are removed. When ``ep run``
    ends, the loop-backed volume group it made goes with its backing file."""
    open_up(tmp_path)
    home = _home(tmp_path)
    local = tmp_path / "pool"
    pool = _pool(local)
    execute = local / "execute"
    try:
        look = 'stat -f -c "fs=%T" "$_CONDOR_SCRATCH_DIR"\nsleep 300\n'
        _submit(pool, home, "one", look)
        _submit(pool, home, "two", look)
        pool.wait_for(lambda: len(_sleepers()) == 2, 120, "both jobs to run")
        seen = {pid: mounts_under(execute, pid) for pid in _sleepers()}
        assert sorted(seen.values()) == sorted([scratch] for scratch in _sleepers().values())
        assert mounts_under(execute) == []
        assert len(volumes()) == 2
        for name in ("one", "two"):
            assert "fs=ext2/ext3" in (home / f"{name}.out").read_text()
        assert pool.ep("rm", "-all").status == 0
        pool.wait_for(lambda: volumes() == [], 60, "both volumes to go")
        assert mounts_anywhere(execute) == []
    finally:
        pool.ep("rm", "-all")
        pool.terminate()
    groups = subprocess.run(
        ["lvm", "vgs", "--config", NO_UDEV, "--noheadings", "-o", "vg_name"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert GROUP not in groups.stdout.split()
    assert not os.path.exists(f"/var/tmp/{GROUP}.img")
