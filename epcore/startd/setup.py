"""Where a startd keeps its files, and what it reads once at startup.

Paths come from the configuration as in HTCondor: the log directory (LOG) with STARTD_LOG and
STARTER_LOG, EXECUTE for sandboxes, SPOOL for the saved claims, the job history and the
results not yet delivered, LOCK for the two Unix sockets. The knobs that HTCondor reads only
when the startd starts (the slot layout and the machine's resources, process tracking) are
listed in :data:`RESTART_KNOBS`: a reconfiguration that changes one of them is logged and
waits for a restart.
"""

from __future__ import annotations

import logging
import os
import re

import attrs

from epcore.config import Config
from epcore.errors import DaemonError
from epcore.runtime import persist

#: Knobs (and knob families, as regular expressions) that a reconfiguration does not change:
#: seed 000 says neither the number nor the types of slots change on reconfig, and the
#: tracking GID range "needs a full restart".
RESTART_KNOBS = (
    r"NUM_SLOTS(_TYPE_\d+)?",
    r"SLOT_TYPE_\d+(_PARTITIONABLE)?",
    r"NUM_CPUS",
    r"MEMORY",
    r"RESERVED_MEMORY",
    r"RESERVED_DISK",
    r"MACHINE_RESOURCE_.*",
    r"COUNT_HYPERTHREAD_CPUS",
    r"EXECUTE",
    r"SLOT\d+_EXECUTE",
    r"BASE_CGROUP",
    r"USE_PID_NAMESPACES",
    r"USE_GID_PROCESS_TRACKING",
    r"MIN_TRACKING_GID",
    r"MAX_TRACKING_GID",
    r"STARTD_ENFORCE_DISK_LIMITS",
)
_RESTART = re.compile("|".join(f"(?:{k})" for k in RESTART_KNOBS), re.IGNORECASE)


def needs_restart(name: str) -> bool:
    """True when knob ``name`` is read only when the startd starts."""
    return _RESTART.fullmatch(name) is not None


def restart_changes(old: Config, new: Config) -> list[str]:
    """The knobs read only at startup whose value ``new`` changes."""
    names = {n.upper() for n in old.names()} | {n.upper() for n in new.names()}
    return sorted(n for n in names if needs_restart(n) and old.get(n) != new.get(n))


@attrs.frozen
class StartdPaths:
    """Every file and directory the startd uses."""

    log_dir: str
    startd_log: str
    starter_log: str
    execute: str
    spool: str
    lock: str
    control_socket: str
    starter_socket: str
    claims_file: str
    history_file: str
    #: The results queued for schedds in other processes (epcore.links.results_journal).
    results_file: str

    @classmethod
    def from_config(cls, config: Config) -> StartdPaths:
        """The paths ``config`` names (DaemonError naming the knob when one is unset)."""

        def required(name: str) -> str:
            value = config.get(name)
            if not value or not value.strip():
                raise DaemonError(f"the startd needs {name} to be set")
            return value.strip()

        log_dir = required("LOG")
        spool = required("SPOOL")
        lock = config.get("LOCK") or log_dir
        return cls(
            log_dir=log_dir,
            startd_log=config.get("STARTD_LOG") or os.path.join(log_dir, "StartLog"),
            starter_log=config.get("STARTER_LOG") or os.path.join(log_dir, "StarterLog"),
            execute=required("EXECUTE"),
            spool=spool,
            lock=lock,
            control_socket=config.get("STARTD_CONTROL_SOCKET")
            or os.path.join(lock, "startd_control"),
            starter_socket=os.path.join(lock, "startd_starters"),
            claims_file=os.path.join(spool, "startd_claims"),
            history_file=os.path.join(spool, "startd_history"),
            results_file=os.path.join(spool, "startd_results"),
        )

    def make_directories(self) -> None:
        """Make the directories (EXECUTE 0755, root-owned, so jobs cannot reach each other's
        sandboxes; LOCK 0700); DaemonError naming the one that cannot be made. LOG and SPOOL
        stay reachable (the pool's socket is in SPOOL, and LOCK may be LOG): the files in
        them are private by their own mode (0600)."""
        for path, mode in (
            (self.log_dir, 0o755),
            (self.spool, 0o755),
            (self.lock, 0o700),
            (self.execute, 0o755),
        ):
            try:
                os.makedirs(path, mode=mode, exist_ok=True)
            except OSError as error:
                raise DaemonError(f"cannot make directory {path}: {error.strerror}") from error


def make_state_private(paths: StartdPaths, log: logging.Logger) -> None:
    """Make the state files and logs an older version left readable by all mode 0600."""
    for directory in (paths.spool, paths.log_dir):
        try:
            changed = persist.make_directory_private(directory)
        except OSError as error:
            log.error("cannot make the files in %s private: %s", directory, error)
            continue
        for name in changed:
            log.info("%s/%s was readable by others: now mode 0600", directory, name)
