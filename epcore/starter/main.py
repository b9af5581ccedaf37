"""The entry of a starter process the startd forked: its own log, then the job."""

from __future__ import annotations

import logging
import os

from epcore.logs import LogSettings, file_logger
from epcore.starter.lifecycle import run_job
from epcore.starter.starter import Starter, StarterRequest

LOG_FORMAT = "%(asctime)s (pid:%(process)d) %(message)s"


def starter_logger(request: StarterRequest) -> logging.Logger:
    """The StarterLog of one slot (``STARTER_LOG.<slot>``, as HTCondor names it), written by
    this process alone (the handlers the startd's logger had are not inherited), rotated as
    MAX_STARTER_LOG and MAX_NUM_STARTER_LOG say."""
    settings = LogSettings.from_config(request.config, "STARTER", request.starter_log)
    name = f"epcore.starter.{request.slot_name}.{os.getpid()}"
    return file_logger(name, settings, LOG_FORMAT)


def run_starter(request: StarterRequest) -> int:
    """Run the starter of ``request`` to its end; the process's exit status."""
    log = starter_logger(request)
    log.info("starter for %s (claim %s...)", request.slot_name, request.claim_id[:24])
    return run_job(Starter(request, log))
