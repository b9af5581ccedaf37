"""The LVM scratch filesystem: one logical volume per job, sized from its slot's Disk,
formatted ext4 and mounted as the job's sandbox (wave 2 requirements, sections D.2 to D.5).

The startd builds it and calls :meth:`LvmScratch.start`: with no volume group configured (or
thin provisioning without a pool) it makes its own on a loop device over LVM_BACKING_FILE,
then removes the tagged volumes no live starter holds. Each starter, forked with the started
object, makes its job's volume, checks it every LVM_CHECK_INTERVAL and removes it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable

from epcore.api import HoldCode, OutOfResourcesSubcode, VacateCode
from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError, JobSetupError
from epcore.types import MachineAttribute, ScratchRequest, ScratchVerdict, ScratchVolume
from epcore_lvm.commands import ENCRYPTED_TAG, TAG, Commands, LvmError, load_module
from epcore_lvm.namespace import private_mount_namespace
from epcore_lvm.settings import LvmSettings, read_settings

NAME = "lvm"
_log = logging.getLogger(__name__)
#: HTCondor 25.x's hold subcode for a job over its disk (OUT_OF_RESOURCES_SUB_CODE::Disk).
DISK_SUBCODE = int(OutOfResourcesSubcode.DISK)
#: The smallest volume and the step of volume sizes (KiB): LVM's default extent, 4 MiB.
DISK_QUANTUM_KIB = 4096
FULL_POOL_REASON = "Underlying thin pool is out of space and not recovering"
_HIDDEN = "LVM configured to hide scratch dir via LVM_HIDE_MOUNT, which prohibits {} jobs"
#: A job volume's name: the slot's id, the starter's PID and its start time (clock ticks
#: since boot): who holds it, and never the name of another starter's volume, of this startd
#: or another, before or after a restart. Volumes of epcore before 0.2 lack the start time.
_VOLUME = re.compile(r"^slot(\d+)_(\d+)(?:_(\d+))?$")


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


def start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), or None when there is no such
    process or it is a zombie (dead, not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces: the fields follow the last ")".
    fields = text[text.rindex(")") + 2 :].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


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
        hide: Callable[[], str] = private_mount_namespace,
        started: Callable[[int], int | None] = start_ticks,
    ) -> None:
        self.config = config
        self.settings: LvmSettings = read_settings(config)
        self.commands = commands or Commands(self.settings.timeout, self.settings.lvm_config)
        self.problem = problem
        self.clock = clock
        self.hide = hide
        self.started = started
        self.check_interval = self.settings.check_interval
        self.group = self.settings.group(config)
        self.pool = self.settings.pool(config)
        #: Why there are no volumes (None once started): shown in every slot ad.
        self.reason: str | None = "not started"
        #: The loop device under the startd's own volume group.
        self.loop_device = ""
        #: Since when (clock) the thin pool has been full, while it is.
        self.full_since: float | None = None
        #: Job volumes the last sweep could not remove (the startd retries them).
        self.left: list[str] = []
        #: Bytes of the group (thick) or pool (thin), and what volumes other than the jobs'
        #: take of them, as the startd found them at its start (None: not known).
        self.detected: tuple[int, int] | None = None

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
            return
        try:
            self.detected = self._detect()
        except (LvmError, ValueError, IndexError):
            # A report not as expected: only two attributes depend on it, volumes still work.
            self.detected = None

    def _detect(self) -> tuple[int, int]:
        """LvmDetectedDisk and LvmNonCondorDiskUsage: the group's size (thick) or the pool's
        (thin), and the bytes the volumes not tagged as jobs' take of it."""
        rows = self.commands.report(
            "lvs", "lv_name,lv_size,lv_tags,pool_lv,data_percent", self.group
        )
        if self.settings.thin:
            (size,) = [int(row[1]) for row in rows if row[0] == self.pool]
            others = sum(
                int(int(row[1]) * float(row[4] or 0) / 100.0)
                for row in rows
                if row[3] == self.pool and TAG not in row[2].split(",")
            )
            return size, others
        ((group_size,),) = self.commands.report("vgs", "vg_size", self.group)
        # A thin volume takes nothing of the group: its pool does.
        others = sum(int(row[1]) for row in rows if TAG not in row[2].split(",") and not row[3])
        return int(group_size), others

    def machine_attributes(self) -> list[MachineAttribute]:
        if self.reason is not None:
            return [
                MachineAttribute("IsEnforcingDiskUsage", False),
                MachineAttribute("LvmUnavailableReason", self.reason),
            ]
        store = f"{self.group}/{self.pool}" if self.settings.thin else self.group
        found = [
            MachineAttribute("IsEnforcingDiskUsage", True),
            MachineAttribute("LvmIsThinProvisioning", self.settings.thin),
            MachineAttribute("LvmUsingLoopback", self.settings.loopback),
            MachineAttribute("LvmBackingStore", store),
            MachineAttribute("DiskQuantum", DISK_QUANTUM_KIB),
        ]
        if self.detected is not None:
            found += [
                MachineAttribute("LvmDetectedDisk", self.detected[0]),
                MachineAttribute("LvmNonCondorDiskUsage", self.detected[1]),
            ]
        if not self.settings.encryption_disabled and shutil.which("dmsetup") is not None:
            found.append(MachineAttribute("HasEncryptExecuteDirectory", True))
        if self.settings.hide_mount == "true":
            # HTCondor's starter probe says the same: such jobs would fail their LV setup.
            found += [
                MachineAttribute("HasDocker", False),
                MachineAttribute("DockerOfflineReason", _HIDDEN.format("docker universe")),
                MachineAttribute("HasVM", False),
                MachineAttribute("VMOfflineReason", _HIDDEN.format("VM universe")),
            ]
        return found

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
        """Remove the tagged volumes whose starter is gone; their names. Those that cannot
        be removed are :meth:`leftovers` (HTCondor's clean-up reminders), not a failure."""
        removed = []
        self.left = []
        for name in self._job_volumes():
            if self.held(name):
                continue
            try:
                self._destroy(name)
            except LvmError:
                self.left.append(name)
                continue
            removed.append(name)
        return removed

    def _job_volumes(self) -> list[str]:
        rows = self.commands.report("lvs", "lv_name", "--select", f"lv_tags={TAG}", self.group)
        return [row[0] for row in rows]

    def leftovers(self) -> list[str]:
        return list(self.left)

    def remove_left(self, name: str) -> None:
        """Remove job volume ``name`` (one a starter or the start could not); nothing to do
        once it is gone."""
        if name in self._job_volumes():
            self._destroy(name)

    def stop(self) -> None:
        """At the startd's normal end: remove the job volumes no starter holds and, when the
        startd made its own loop-backed group, the pool, the group, the physical volume, the
        loop device and the backing file, as HTCondor's VolumeManager does. A group still
        holding a job volume (a live starter's, one that cannot be removed) is kept."""
        if self.reason is not None:
            return
        try:
            self.sweep()
            if not self.settings.loopback or self._job_volumes():
                return
            if self.settings.thin and self._pool_exists():
                self.commands.lvm(
                    "lvremove", "--autobackup", "n", "-f", f"{self.group}/{self.pool}"
                )
            self.commands.lvm("vgremove", "-f", self.group)
            device = self.loop_device or self._loop_of_backing_file()
            if device:
                self.commands.lvm("pvremove", "-f", device)
                self.commands.run(["losetup", "-d", device])
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.settings.backing_file)
        except (LvmError, OSError) as error:
            _log.warning("cannot remove the startd's volume group %s: %s", self.group, error)

    def _loop_of_backing_file(self) -> str:
        found = self.commands.run(["losetup", "-j", self.settings.backing_file]).strip()
        return found.split(":", 1)[0] if found else ""

    def held(self, name: str) -> bool:
        """True while the starter named in volume ``name`` runs: its PID is a live process
        (not a zombie) that started when the starter did, not a later process given the
        same PID."""
        match = _VOLUME.match(name)
        if match is None:
            return False
        started = self.started(int(match.group(2)))
        if started is None:
            return False
        return match.group(3) is None or int(match.group(3)) == started

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
        compatible = hide_mount_compatible(request.job)
        encrypted = self.encrypts(request.job)
        tags = ["--addtag", TAG] + (["--addtag", ENCRYPTED_TAG] if encrypted else [])
        if self.settings.hide_mount == "true" and not compatible:
            raise JobSetupError(
                "Failed to create LV for scratch dir: LVM_HIDE_MOUNT is true, which this job "
                "(docker, VM or transfer shadow) cannot run with",
                VacateCode.SCRATCH_DIR_ERROR,
            )
        # auto hides the jobs that can be hidden; true refused the others above.
        hidden = self.settings.hide_mount != "false" and compatible
        namespace = ""
        name = f"slot{request.slot_id}_{request.starter_id}_{self.started(request.starter_id) or 0}"
        quanta = max(1, -(-request.disk_kib // DISK_QUANTUM_KIB))
        size = quanta * DISK_QUANTUM_KIB
        device = f"/dev/{self.group}/{name}"
        try:
            if self.settings.thin:
                virtual = size + self.settings.thin_extra_mb * 1024
                self.commands.lvm(
                    "lvcreate", "--autobackup", "n", "-n", name, *tags,
                    "-V", f"{virtual}k", "-T", f"{self.group}/{self.pool}",
                )  # fmt: skip
            else:
                self.commands.lvm(
                    "lvcreate", "--autobackup", "n", "--yes", "-n", name, *tags,
                    "-L", f"{size}k", self.group,
                )  # fmt: skip
            if encrypted:
                device = self._open_encrypted(name, device)
            self.commands.run(
                ["mke2fs", "-q", "-F", "-t", "ext4", "-O", "^has_journal",
                 "-E", "lazy_itable_init=1", "-m", "0", "-L", "HTCondorLV_FS", device]
            )  # fmt: skip
            if hidden:
                namespace = self.hide()
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
        return ScratchVolume(name, request.path, device, size, mount_namespace=namespace)

    def encrypts(self, job: ClassAd) -> bool:
        """Whether ``job``'s volume is encrypted: ENCRYPT_EXECUTE_DIRECTORY or the job's
        encrypt_execute_directory, unless DISABLE_EXECUTE_DIRECTORY_ENCRYPTION."""
        if self.settings.encryption_disabled:
            return False
        return self.settings.encrypt or job.evaluate("EncryptExecuteDirectory") is True

    def _open_encrypted(self, name: str, device: str) -> str:
        """dm-crypt over the volume with a random key only the kernel keeps; the device to
        format and mount. HTCondor runs ``cryptsetup open --type plain`` with a key file in
        /dev/shm; the same plain mapping is made here with dmsetup (lvm2's, always there),
        the table on its standard input so that the key is in no file and no command line."""
        load_module("dm_crypt", "/sys/module/dm_crypt")
        sectors = self.commands.run(["blockdev", "--getsz", device]).strip()
        # AES-256 in XTS mode takes two 256-bit keys.
        key = secrets.token_hex(64)
        mapped = _crypt_name(self.group, name)
        table = f"0 {sectors} crypt aes-xts-plain64 {key} 0 {device} 0\n"
        self.commands.run(["dmsetup", "create", "--noudevsync", mapped], stdin=table)
        if not os.path.exists(f"/dev/mapper/{mapped}"):
            # No udev made the node.
            self.commands.run(["dmsetup", "mknodes", mapped])
        return f"/dev/mapper/{mapped}"

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
        """Unmount the volume wherever it is mounted, close its encryption, remove it."""
        mapped = f"/dev/mapper/{_crypt_name(self.group, name)}"
        devices = {os.path.realpath(f"/dev/{self.group}/{name}"), os.path.realpath(mapped)}
        for where in _mount_points(devices):
            try:
                self.commands.run(["umount", where])
            except LvmError:
                # Busy (a process of the job still in it): detach now, freed when it goes.
                self.commands.run(["umount", "-l", where])
        if os.path.exists(mapped):
            self.commands.run(["dmsetup", "remove", "--noudevsync", os.path.basename(mapped)])
        self.commands.lvm("lvremove", "--autobackup", "n", "-f", f"{self.group}/{name}")


def _crypt_name(group: str, name: str) -> str:
    """The device-mapper name of volume ``name``'s encryption, as HTCondor's."""
    return f"{group}-{name}-enc"


def _mount_points(devices: set[str]) -> list[str]:
    """Where any of ``devices`` (resolved) is mounted in this process's namespace."""
    found = []
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            source, target = line.split()[:2]
            if source.startswith("/dev/") and os.path.realpath(source) in devices:
                found.append(target.replace("\\040", " "))
    return found
