"""Starting the personal pool: what ``ep run`` runs.

One process holds the whole pool: the startd with its loop, and the central manager
(collector, negotiator, schedd) as the loop's companion. The startd publishes into the
collector; the collector's absent and offline ads, the accountant and the job queue are
read back from SPOOL at start, so a restarted pool keeps its users' priorities, its jobs
and (as the startd does) its running jobs.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from epcore.collector.collector import Collector, CollectorSink
from epcore.collector.collector_log import read_persistent_ads
from epcore.negotiator import Accountant
from epcore.plugins import Plugins
from epcore.pool.central import CentralManager
from epcore.pool.setup import PoolPaths
from epcore.runtime.persist import make_private, read_ad_lines
from epcore.schedd.jobqueue import JobQueue
from epcore.schedd.schedd import Schedd
from epcore.startd.loop import StartdLoop
from epcore.startd.main import build_startd, daemon_logger
from epcore.types import MachineHost


def build_pool(
    config_file: str | None,
    *,
    host: MachineHost | None = None,
    plugins: Plugins | None = None,
) -> StartdLoop:
    """The loop of a whole pool for the configuration HTCondor would read (or
    ``config_file``); :meth:`StartdLoop.run` runs it."""
    clock = time.time
    startd = build_startd(config_file, host=host, plugins=plugins)
    config = startd.config
    paths = PoolPaths.from_config(config)
    _make_private(paths, startd.log)
    collector = Collector(config)
    collector.load_persistent(read_persistent_ads(Path(paths.collector_log)))
    startd.sink = CollectorSink(collector, clock)
    saved = [ad for _, ad in read_ad_lines(paths.accountant_file, "the accountant's state")]
    accountant = Accountant.from_ads(saved, config) if saved else Accountant.empty(config)
    log = daemon_logger("epcore.schedd", config, "SCHEDD", paths.schedd_log)
    schedd = Schedd(config, JobQueue.open(paths.queue_database), startd, log=log, clock=clock)
    central = CentralManager(
        startd,
        collector,
        schedd,
        accountant,
        paths,
        log=log,
        negotiator_log=daemon_logger(
            "epcore.negotiator", config, "NEGOTIATOR", paths.negotiator_log
        ),
        clock=clock,
    )
    return StartdLoop(startd, companions=[central])


def _make_private(paths: PoolPaths, log: logging.Logger) -> None:
    """Make the central manager's state files mode 0600 (an older version left them 0644);
    those in SPOOL the startd has done already, these may be elsewhere."""
    queue = paths.queue_database
    for path in (queue, f"{queue}-wal", f"{queue}-shm", paths.accountant_file, paths.collector_log):
        try:
            if make_private(path):
                log.info("%s was readable by others: now mode 0600", path)
        except OSError as error:
            log.error("cannot make %s private: %s", path, error)


def run_pool(config_file: str | None) -> None:
    """Run the pool in the foreground until it has shut down (SIGTERM: peacefully, running
    jobs finish; a second SIGTERM or SIGQUIT: fast)."""
    build_pool(config_file).run()
