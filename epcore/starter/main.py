"""The entry of a starter process the startd forked: its own log, then the job."""

from __future__ import annotations

import logging
import os

from epcore.starter.lifecycle import run_job
from epcore.starter.starter import Starter, StarterRequest

LOG_FORMAT = "%(asctime)s (pid:%(process)d) %(message)s"
LOG_DATE_FORMAT = "%m/%d/%y %H:%M:%S"


def starter_logger(path: str, slot: str) -> logging.Logger:
    """The StarterLog of one slot (``STARTER_LOG.<slot>``, as HTCondor names it), written by
    this process alone: the handlers the startd's logger had are not inherited."""
    log = logging.getLogger(f"epcore.starter.{slot}.{os.getpid()}")
    log.propagate = False
    log.setLevel(logging.INFO)
    for handler in list(log.handlers):
        log.removeHandler(handler)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT, LOG_DATE_FORMAT))
    log.addHandler(handler)
    return log


def run_starter(request: StarterRequest) -> int:
    """Run the starter of ``request`` to its end; the process's exit status."""
    log = starter_logger(request.starter_log, request.slot_name)
    log.info("starter for %s (claim %s...)", request.slot_name, request.claim_id[:24])
    return run_job(Starter(request, log))
