"""The lvm plugin's hooks: epcore finds this module through the ``epcore`` entry point.

It offers one scratch filesystem, ``lvm`` (:class:`epcore_lvm.backend.LvmScratch`), which the
startd starts when STARTD_ENFORCE_DISK_LIMITS is true, the knobs epcore's table lacks, and the
Disk the slots divide: the free space of the volume group or thin pool instead of EXECUTE's.
"""

from __future__ import annotations

from collections.abc import Sequence

from epcore import hookimpl
from epcore.config import Config, KnobDefault
from epcore.types import DetectedResource, MachineHost, ScratchFilesystemSpec
from epcore_lvm.backend import NAME, LvmScratch, device_mapper_problem
from epcore_lvm.commands import LvmError
from epcore_lvm.settings import KNOBS, read_settings


def _build(config: Config) -> LvmScratch:
    return LvmScratch(config)


@hookimpl
def ep_config_defaults() -> Sequence[KnobDefault]:
    """VOLUME_MANAGER_TIMEOUT and epcore's own LVM knobs (HTCondor's LVM_* are in the table)."""
    return list(KNOBS)


@hookimpl
def ep_scratch_filesystems() -> Sequence[ScratchFilesystemSpec]:
    """The LVM scratch filesystem, built by the startd for its configuration."""
    return [ScratchFilesystemSpec(NAME, _build)]


@hookimpl
def ep_detect_resources(config: Config, host: MachineHost) -> Sequence[DetectedResource]:
    """Disk from LVM when it enforces disk limits: the volume group's (or pool's) free
    space, or the backing file's size before the startd has made its loop-backed group."""
    settings = read_settings(config)
    if not settings.enforce or device_mapper_problem() is not None:
        return []
    scratch = LvmScratch(config)
    try:
        kib = scratch.disk_kib()
    except (LvmError, ValueError):
        if not settings.loopback:
            return []
        share = 0.9 if settings.thin else 1.0
        kib = int(settings.backing_size_mb * 1024 * share)
    return [DetectedResource("Disk", float(kib), source=NAME)]
