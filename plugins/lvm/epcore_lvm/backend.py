"""The LVM scratch filesystem: one logical volume per job, sized from its slot's Disk,
formatted ext4 and mounted as the job's sandbox (wave 2 requirements, sections D.2 to D.5).

The startd builds it and calls :meth:`LvmScratch.start`: with no volume group configured (or
thin provisioning without a pool) it makes its own on a loop device over LVM_BACKING_FILE,
then removes the tagged volumes no live starter holds. Each starter, forked with the started
object, makes its job's volume, checks it every LVM_CHECK_INTERVAL and removes it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections.abc import Callable

from epcore.api import HoldCode, VacateCode
from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError, JobSetupError
from epcore.types import MachineAttribute, ScratchRequest, ScratchVerdict, ScratchVolume
from epcore_lvm.commands import TAG, Commands, LvmError, load_module
from epcore_lvm.settings import LvmSettings, read_settings

NAME = "lvm"
#: HTCondor 25.x's hold subcode for a job over its disk (OUT_OF_RESOURCES_SUB_CODE::Disk).
DISK_SUBCODE = 104
#: The smallest volume and the step of volume sizes (KiB): LVM's default extent, 4 MiB.
DISK_QUANTUM_KIB = 4096
FULL_POOL_REASON = "Underlying thin pool is out of space and not recovering"
#: A job volume's name: the slot's id and the starter's PID (who holds it).
_VOLUME = re.compile(r"^slot(\d+)_(\d+)$")


def device_mapper_problem() -> str | None:
    """Why this machine cannot make logical volumes, or None (the kernel first: installing
    lvm2 does not help a kernel without device-mapper)."""
    load_module("dm_mod", "/dev/mapper/control")
    try:
        os.close(os.open("/dev/mapper/control", os.O_RDWR))
    except OSError as error:
        return f"no device-mapper in this kernel: /dev/mapper/control: {error.strerror}"
    if shutil.which("lvm") is None:
        return "the lvm command is not installed (Debian's lvm2)"
    return None


def _bytes(size: int) -> str:
    """A size with byte units, as HTCondor's hold message gives the allocation."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.2f} {unit}"
    return f"{size} B"


def hide_mount_compatible(job: ClassAd) -> bool:
    """HTCondor's isHideMountCompatible: not a docker, VM or transfer-shadow job."""
    universe = job.evaluate("JobUniverse")
    return not (
        job.evaluate("WantDocker") is True
        or universe == 13
        or not isinstance(universe, int)
        or job.evaluate("IsTransferShadow") is True
    )


class LvmScratch:
    """The ``lvm`` scratch filesystem (module docstring)."""

    name = NAME

    def __init__(
        self,
        config: Config,
        commands: Commands | None = None,
        problem: Callable[[], str | None] = device_mapper_problem,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.settings: LvmSettings = read_settings(config)
        self.commands = commands or Commands(self.settings.timeout, self.settings.lvm_config)
        self.problem = problem
        self.clock = clock
        self.check_interval = self.settings.check_interval
        self.group = self.settings.group(config)
        self.pool = self.settings.pool(config)
        #: Why there are no volumes (None once started): shown in every slot ad.
        self.reason: str | None = "not started"
        #: The loop device under the startd's own volume group.
        self.loop_device = ""
        #: Since when (clock) the thin pool has been full, while it is.
        self.full_since: float | None = None

    # -- the startd ---------------------------------------------------------------------------

    def wanted(self) -> bool:
        return self.settings.enforce

    def available(self) -> bool:
        return self.reason is None

    def start(self) -> None:
        """Make the backing store and remove what dead starters left (HTCondor ASSERTs when
        it cannot; epcore runs its jobs without disk enforcement and says why)."""
        self.reason = self.problem()
        if self.reason is not None:
            return
        try:
            if self.settings.loopback:
                self._make_loopback()
            else:
                self._check_configured()
            self.sweep()
        except (LvmError, OSError) as error:
            self.reason = f"cannot set up LVM: {error}"

    def machine_attributes(self) -> list[MachineAttribute]:
        if self.reason is not None:
            return [
                MachineAttribute("IsEnforcingDiskUsage", False),
                MachineAttribute("LvmUnavailableReason", self.reason),
            ]
        store = f"{self.group}/{self.pool}" if self.settings.thin else self.group
        return [
            MachineAttribute("IsEnforcingDiskUsage", True),
            MachineAttribute("LvmIsThinProvisioning", self.settings.thin),
            MachineAttribute("LvmUsingLoopback", self.settings.loopback),
            MachineAttribute("LvmBackingStore", store),
            MachineAttribute("DiskQuantum", DISK_QUANTUM_KIB),
        ]

    def _make_loopback(self) -> None:
        path = self.settings.backing_file
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                # 2% over the size, as HTCondor: LVM's own metadata comes out of it.
                os.posix_fallocate(descriptor, 0, int(self.settings.backing_size_mb * 1.02) << 20)
            finally:
                os.close(descriptor)
        load_module("loop", "/dev/loop-control")
        found = self.commands.run(["losetup", "-j", path]).strip()
        if found:
            self.loop_device = found.split(":", 1)[0]
        else:
            self.loop_device = self.commands.run(["losetup", "--find", "--show", path]).strip()
        volumes = {row[0] for row in self.commands.report("pvs", "pv_name")}
        if self.loop_device not in volumes:
            self.commands.lvm("pvcreate", self.loop_device)
        if not self._group_exists():
            self.commands.lvm("vgcreate", "--autobackup", "n", self.group, self.loop_device)
        if self.settings.thin and not self._pool_exists():
            # Not 100%FREE: the pool's metadata and its spare need extents of their own.
            self.commands.lvm(
                "lvcreate", "--autobackup", "n", "--type", "thin-pool", "-l", "90%FREE",
                "-n", self.pool, self.group,
            )  # fmt: skip
            # lvcreate refuses --errorwhenfull for a pool: a full pool errors at once
            # instead of queueing writes for 60 s.
            self.commands.lvm("lvchange", "--errorwhenfull", "y", f"{self.group}/{self.pool}")

    def _check_configured(self) -> None:
        if not self._group_exists():
            raise LvmError(f"LVM_VOLUME_GROUP_NAME {self.group}: no such volume group")
        if self.settings.thin and not self._pool_exists():
            raise LvmError(f"LVM_THINPOOL_NAME {self.pool}: no such thin pool in {self.group}")

    def _group_exists(self) -> bool:
        return any(row[0] == self.group for row in self.commands.report("vgs", "vg_name"))

    def _pool_exists(self) -> bool:
        rows = self.commands.report("lvs", "lv_name", self.group)
        return any(row[0] == self.pool for row in rows)

    def sweep(self) -> list[str]:
        """Remove the tagged volumes whose starter is gone; their names."""
        rows = self.commands.report("lvs", "lv_name", "--select", f"lv_tags={TAG}", self.group)
        removed = []
        for name, *_rest in rows:
            match = _VOLUME.match(name)
            if match is not None and _alive(int(match.group(2))):
                continue
            self._destroy(name)
            removed.append(name)
        return removed

    def disk_kib(self) -> int:
        """The free KiB jobs' volumes come from: the thin pool's free data, else the VG's."""
        if self.settings.thin:
            target = f"{self.group}/{self.pool}"
            ((size, percent),) = self.commands.report("lvs", "lv_size,data_percent", target)
            return int(int(size) * (1.0 - float(percent or 0) / 100.0)) // 1024
        ((free,),) = self.commands.report("vgs", "vg_free", self.group)
        return int(free) // 1024

    # -- a starter ----------------------------------------------------------------------------

    def prepare(self, request: ScratchRequest) -> ScratchVolume:
        if self.settings.hide_mount == "true" and not hide_mount_compatible(request.job):
            raise JobSetupError(
                "Failed to create LV for scratch dir: LVM_HIDE_MOUNT is true, which this job "
                "(docker, VM or transfer shadow) cannot run with",
                VacateCode.SCRATCH_DIR_ERROR,
            )
        name = f"slot{request.slot_id}_{request.starter_id}"
        quanta = max(1, -(-request.disk_kib // DISK_QUANTUM_KIB))
        size = quanta * DISK_QUANTUM_KIB
        device = f"/dev/{self.group}/{name}"
        try:
            if self.settings.thin:
                virtual = size + self.settings.thin_extra_mb * 1024
                self.commands.lvm(
                    "lvcreate", "--autobackup", "n", "-n", name, "--addtag", TAG,
                    "-V", f"{virtual}k", "-T", f"{self.group}/{self.pool}",
                )  # fmt: skip
            else:
                self.commands.lvm(
                    "lvcreate", "--autobackup", "n", "--yes", "-n", name, "--addtag", TAG,
                    "-L", f"{size}k", self.group,
                )  # fmt: skip
            self.commands.run(
                ["mke2fs", "-q", "-F", "-t", "ext4", "-O", "^has_journal",
                 "-E", "lazy_itable_init=1", "-m", "0", "-L", "HTCondorLV_FS", device]
            )  # fmt: skip
            self.commands.run(
                ["mount", "-t", "ext4", "-o", "noatime,nodev,nosuid,barrier=0,discard",
                 device, request.path]
            )  # fmt: skip
            os.chown(request.path, request.uid, request.gid)
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(request.path, "lost+found"))
        except (LvmError, OSError) as error:
            with contextlib.suppress(EpError, OSError):
                self._destroy(name)
            raise JobSetupError(
                f"Failed to create LV for scratch dir: {error}", VacateCode.SCRATCH_DIR_ERROR
            ) from error
        return ScratchVolume(name, request.path, device, size)

    def check(self, volume: ScratchVolume) -> ScratchVerdict | None:
        stats = os.statvfs(volume.path)
        used = (stats.f_blocks - stats.f_bfree) * stats.f_frsize
        limit = volume.size_kib * 1024
        if not self.settings.thin:
            # A thick volume is exactly its size, and its filesystem keeps some of it (its
            # structures, ext4's reserved clusters): hold a little before ENOSPC, of what
            # the job can fill.
            fillable = (stats.f_blocks - stats.f_bfree + stats.f_bavail) * stats.f_frsize
            limit = int(min(limit, fillable) * self.settings.thick_margin)
        if used >= limit:
            return ScratchVerdict(
                hold=True,
                reason=f"Job has exceeded allocated disk ({_bytes(volume.size_kib * 1024)}). "
                "Consider increasing the value of request_disk.",
                code=HoldCode.JOB_OUT_OF_RESOURCES,
                subcode=DISK_SUBCODE,
            )
        return self._check_pool() if self.settings.thin else None

    def _check_pool(self) -> ScratchVerdict | None:
        target = f"{self.group}/{self.pool}"
        ((percent,),) = self.commands.report("lvs", "data_percent", target)
        if float(percent or 0) < 100.0:
            self.full_since = None
            return None
        now = self.clock()
        if self.full_since is None:
            self.full_since = now
            return None
        if now - self.full_since < self.settings.full_grace:
            return None
        # HTCondor holds with code 0, which is a vacate: the job goes back to idle.
        return ScratchVerdict(hold=False, reason=FULL_POOL_REASON, code=0)

    def remove(self, volume: ScratchVolume) -> None:
        self._destroy(volume.name)

    def _destroy(self, name: str) -> None:
        """Unmount the volume wherever it is mounted, then remove it."""
        device = os.path.realpath(f"/dev/{self.group}/{name}")
        for where in _mount_points(device):
            try:
                self.commands.run(["umount", where])
            except LvmError:
                # Busy (a process of the job still in it): detach now, freed when it goes.
                self.commands.run(["umount", "-l", where])
        self.commands.lvm("lvremove", "--autobackup", "n", "-f", f"{self.group}/{name}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _mount_points(device: str) -> list[str]:
    """Where ``device`` (resolved) is mounted in this process's namespace."""
    found = []
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            source, target = line.split()[:2]
            if source.startswith("/dev/") and os.path.realpath(source) == device:
                found.append(target.replace("\\040", " "))
    return found
