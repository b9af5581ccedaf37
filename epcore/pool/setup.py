"""Where the personal pool keeps its files, from the configuration.

HTCondor's knobs where HTCondor has one (SCHEDD_LOG, NEGOTIATOR_LOG, COLLECTOR_LOG,
COLLECTOR_PERSISTENT_AD_LOG); epcore's own for what HTCondor keeps differently:
POOL_CONTROL_SOCKET (``$(SPOOL)/pool_control``: the socket every local user's ``ep submit``
reaches), JOB_QUEUE_DATABASE (``$(SPOOL)/job_queue.db``, the SQLite queue where HTCondor
keeps job_queue.log) and ACCOUNTANT_STATE_FILE (``$(SPOOL)/accountant.ads``: the
accountant's ads, one per line, where HTCondor keeps Accountantnew.log).
"""

from __future__ import annotations

import os

import attrs

from epcore.config import Config
from epcore.errors import PoolError


@attrs.frozen
class PoolPaths:
    """The central manager's files (see the module docstring)."""

    control_socket: str
    queue_database: str
    accountant_file: str
    collector_log: str
    schedd_log: str
    negotiator_log: str
    collector_daemon_log: str

    @classmethod
    def from_config(cls, config: Config) -> PoolPaths:
        """The paths ``config`` names (PoolError naming the knob when LOG or SPOOL is unset)."""

        def required(name: str) -> str:
            value = config.get(name)
            if not value or not value.strip():
                raise PoolError(f"the pool needs {name} to be set")
            return value.strip()

        log_dir = required("LOG")
        spool = required("SPOOL")
        return cls(
            control_socket=config.get("POOL_CONTROL_SOCKET") or os.path.join(spool, "pool_control"),
            queue_database=config.get("JOB_QUEUE_DATABASE") or os.path.join(spool, "job_queue.db"),
            accountant_file=config.get("ACCOUNTANT_STATE_FILE")
            or os.path.join(spool, "accountant.ads"),
            # OFFLINE_LOG is the knob's old name, still read when the new one is unset.
            collector_log=config.get("COLLECTOR_PERSISTENT_AD_LOG")
            or config.get("OFFLINE_LOG")
            or os.path.join(spool, "collector_persistent.ads"),
            schedd_log=config.get("SCHEDD_LOG") or os.path.join(log_dir, "SchedLog"),
            negotiator_log=config.get("NEGOTIATOR_LOG") or os.path.join(log_dir, "NegotiatorLog"),
            collector_daemon_log=config.get("COLLECTOR_LOG")
            or os.path.join(log_dir, "CollectorLog"),
        )

    def make_directories(self) -> None:
        """Make the directories of the central manager's files (mode 0755: the pool's
        socket must stay reachable; the files are private by their own mode); PoolError
        naming the one that cannot be made. A startd in the process makes its own."""
        files = (
            self.control_socket,
            self.queue_database,
            self.accountant_file,
            self.collector_log,
            self.schedd_log,
            self.negotiator_log,
            self.collector_daemon_log,
        )
        for directory in sorted({os.path.dirname(path) for path in files} - {""}):
            try:
                os.makedirs(directory, mode=0o755, exist_ok=True)
            except OSError as error:
                raise PoolError(f"cannot make directory {directory}: {error.strerror}") from error
