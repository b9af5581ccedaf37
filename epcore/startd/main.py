"""Starting a startd from a configuration: what ``ep startd`` runs, and what embedders call."""

from __future__ import annotations

import logging
import time

from epcore.config import Config
from epcore.interfaces import AdSink
from epcore.logs import LogSettings, file_logger
from epcore.plugins import Plugins, load_plugins
from epcore.startd.loop import StartdLoop
from epcore.startd.publish import FileSink
from epcore.startd.setup import StartdPaths
from epcore.startd.startd import Startd
from epcore.types import MachineHost


def daemon_logger(name: str, config: Config, subsystem: str, path: str) -> logging.Logger:
    """The logger ``name`` writing the log of daemon ``subsystem`` (StartLog, SchedLog...) at
    ``path`` in HTCondor's ``MM/DD/YY HH:MM:SS message`` lines, mode 0600, rotated as
    MAX_<SUBSYS>_LOG and MAX_NUM_<SUBSYS>_LOG say, repeated messages limited
    (:mod:`epcore.logs`)."""
    return file_logger(name, LogSettings.from_config(config, subsystem, path))


def build_startd(
    config_file: str | None,
    *,
    host: MachineHost | None = None,
    plugins: Plugins | None = None,
    sink: AdSink | None = None,
) -> Startd:
    """A startd for the configuration HTCondor would read (or ``config_file``), on the local
    machine, with every installed plugin (failures logged and skipped), its ads written to
    ``$(SPOOL)/startd_ads`` unless another ``sink`` is given."""
    if host is None:
        from epcore.builtin.host import LocalHost

        host = LocalHost()
    if plugins is None:
        plugins = load_plugins()
    known_host, known_plugins = host, plugins

    def load() -> Config:
        defaults = known_plugins.knob_defaults()
        # The plugins' ClassAd functions reach every expression evaluated with the
        # configuration's context: policy, slot ads, matchmaking, the schedd's policies.
        context = known_plugins.eval_context()
        return Config.load(config_file, host=known_host, defaults=defaults, eval_context=context)

    config = load()
    paths = StartdPaths.from_config(config)
    paths.make_directories()
    log = daemon_logger("epcore.startd", config, "STARTD", paths.startd_log)
    if sink is None:
        sink = FileSink(f"{paths.spool}/startd_ads")
    return Startd(config, plugins, host, log=log, sink=sink, clock=time.time, reload_config=load)


def run_startd(config_file: str | None) -> None:
    """Run a startd in the foreground until it has shut down."""
    StartdLoop(build_startd(config_file)).run()
