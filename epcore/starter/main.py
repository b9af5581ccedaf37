"""The entry of a starter process (forked by the startd's zygote): its own log, then the job."""

from __future__ import annotations

import logging
import os

from epcore.config import Config
from epcore.logs import LogSettings, file_logger
from epcore.starter.claim_loop import run_claim
from epcore.starter.starter import StarterRequest

LOG_FORMAT = "%(asctime)s (pid:%(process)d) %(message)s"
#: The logger of the cgroup backend (epcore.starter.cgroups), used inside starters.
CGROUP_LOGGER = "epcore.starter.cgroups"


def starter_log_settings(config: Config, starter_log: str) -> LogSettings:
    """Where the StarterLog of one slot goes (``starter_log``: ``STARTER_LOG.<slot>``, as
    HTCondor names it) and when it rotates (MAX_STARTER_LOG, MAX_NUM_STARTER_LOG)."""
    return LogSettings.from_config(config, "STARTER", starter_log)


def starter_logger(request: StarterRequest, settings: LogSettings | None = None) -> logging.Logger:
    """The StarterLog of one slot, written by this process alone (the handlers the startd's
    logger had are not inherited); ``settings`` as :func:`starter_log_settings` gives them."""
    if settings is None:
        settings = starter_log_settings(request.config, request.starter_log)
    name = f"epcore.starter.{request.slot_name}.{os.getpid()}"
    log = file_logger(name, settings, LOG_FORMAT)
    # The cgroup backend's warnings belong in this log, not on the startd's stderr (whose
    # lock a thread of the startd may have held when this process was forked).
    cgroups = logging.getLogger(CGROUP_LOGGER)
    cgroups.handlers = list(log.handlers)
    cgroups.propagate = False
    return log


def run_starter(request: StarterRequest, log_settings: LogSettings | None = None) -> int:
    """Run the starter of ``request`` to its end (its job, then the claim's next jobs the
    startd sends it: :mod:`epcore.starter.claim_loop`); the process's exit status.
    ``log_settings`` spares the starter reading them from the configuration (its zygote
    keeps them)."""
    log = starter_logger(request, log_settings)
    log.info("starter for %s (claim %s...)", request.slot_name, request.claim_id[:24])
    return run_claim(request, log)
