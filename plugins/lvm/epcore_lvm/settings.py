"""The LVM knobs, read once into a frozen record (wave 2 requirements, section D.1)."""

from __future__ import annotations

import logging
import os

import attrs

from epcore.config import Config, KnobDefault
from epcore.errors import ConfigError

_log = logging.getLogger("epcore_lvm")

#: Knobs the plugin adds to epcore's table.
KNOBS = (
    KnobDefault(
        "VOLUME_MANAGER_TIMEOUT",
        "120",
        "int",
        "Seconds every lvm, losetup, mke2fs and mount command of the LVM scratch "
        "filesystems may take.",
    ),
    KnobDefault(
        "LVM_CHECK_INTERVAL",
        "10",
        "int",
        "epcore: seconds between two checks of a job's logical volume (HTCondor: 10).",
    ),
    KnobDefault(
        "LVM_THINPOOL_FULL_GRACE",
        "60",
        "int",
        "epcore: seconds a full thin pool may stay full before its jobs are vacated "
        "(HTCondor: 60).",
    ),
    KnobDefault(
        "LVM_COMMAND_CONFIG",
        "",
        "string",
        "epcore: text for the --config option of every lvm command (a machine without udev: "
        "activation/udev_sync=0 activation/udev_rules=0 activation/monitoring=0).",
    ),
)


@attrs.frozen
class LvmSettings:
    """What the knobs say. ``volume_group`` empty: the startd makes its own, loop-backed."""

    enforce: bool
    volume_group: str
    thin_pool: str
    thin: bool
    backing_file: str
    backing_size_mb: int
    thin_extra_mb: int
    thick_margin: float
    hide_mount: str
    timeout: float
    check_interval: float
    full_grace: float
    lvm_config: str
    #: ENCRYPT_EXECUTE_DIRECTORY, and DISABLE_EXECUTE_DIRECTORY_ENCRYPTION (which wins over
    #: it and over a job's encrypt_execute_directory).
    encrypt: bool = False
    encryption_disabled: bool = False

    @property
    def loopback(self) -> bool:
        """True when the startd makes its volume group on a loop device (HTCondor: no VG
        configured, or thin provisioning without a pool)."""
        return not self.volume_group or (self.thin and not self.thin_pool)

    def group(self, config: Config) -> str:
        """The volume group's name: the configured one, else the startd's own."""
        if not self.loopback:
            return self.volume_group
        named = config.get("LVM_AUTO_VG_NAME")
        if named:
            return named
        # A startd run with -local-name gets its own; epcore's table has LOCALNAME = STARTD.
        local = config.get("LOCALNAME") or ""
        own = local and local.upper() != "STARTD"
        return f"condor_{local}_STARTD" if own else "condor_STARTD"

    def pool(self, config: Config) -> str:
        """The thin pool's name (thin provisioning only)."""
        if self.thin_pool and not self.loopback:
            return self.thin_pool
        return f"{self.group(config)}_THINPOOL"


def _renamed(config: Config, name: str, old: str) -> str:
    value = config.get(name) or ""
    if not value and config.get(old):
        _log.warning("%s is deprecated: use %s", old, name)
        return config.get(old) or ""
    return value


def read_settings(config: Config) -> LvmSettings:
    """The settings of ``config``; ConfigError naming the knob for a value out of range."""
    hide = (config.get("LVM_HIDE_MOUNT") or "auto").strip().lower()
    if hide not in ("auto", "true", "false"):
        raise ConfigError(f"LVM_HIDE_MOUNT = {hide}: must be true, false or auto")
    margin = config.get_float("LVM_THICK_LV_MARGIN", 0.98)
    if not 0.0 <= margin <= 1.0:
        raise ConfigError(f"LVM_THICK_LV_MARGIN = {margin}: must be between 0.0 and 1.0")
    spool = config.get("SPOOL") or "/var/lib/condor/spool"
    return LvmSettings(
        enforce=config.get_bool("STARTD_ENFORCE_DISK_LIMITS", False),
        volume_group=_renamed(config, "LVM_VOLUME_GROUP_NAME", "THINPOOL_VOLUME_GROUP_NAME"),
        thin_pool=_renamed(config, "LVM_THINPOOL_NAME", "THINPOOL_NAME"),
        # 25.x's default: thick (23.9 defaulted to thin).
        thin=config.get_bool("LVM_USE_THIN_PROVISIONING", False),
        backing_file=config.get("LVM_BACKING_FILE") or os.path.join(spool, "startd_disk.img"),
        backing_size_mb=config.get_int("LVM_BACKING_FILE_SIZE_MB", 10240),
        thin_extra_mb=config.get_int("LVM_THIN_LV_EXTRA_SIZE_MB", 2000),
        thick_margin=margin,
        hide_mount=hide,
        timeout=float(config.get_int("VOLUME_MANAGER_TIMEOUT", 120)),
        check_interval=float(max(config.get_int("LVM_CHECK_INTERVAL", 10), 1)),
        full_grace=float(config.get_int("LVM_THINPOOL_FULL_GRACE", 60)),
        lvm_config=config.get("LVM_COMMAND_CONFIG") or "",
        encrypt=config.get_bool("ENCRYPT_EXECUTE_DIRECTORY", False),
        encryption_disabled=config.get_bool("DISABLE_EXECUTE_DIRECTORY_ENCRYPTION", False),
    )
