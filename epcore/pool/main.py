"""Building and running what ``ep run`` runs: the services of a role, in one loop.

For the personal pool one process holds every daemon: the startd, the schedd, the collector
and the negotiator, each a service of one :class:`~epcore.runtime.loop.EventLoop`, and the
pool's request socket routing users' requests to them. They reach each other through links
(:mod:`epcore.interfaces`) that this module wires in-process: the startd publishes into the
collector and sends job results to the schedd; the negotiator reads slots from the collector
and jobs from the schedd and hands it the matches; the schedd claims slots through a locator
of startds by address. The collector's absent and offline ads, the accountant and the job
queue are read back from SPOOL at start, so a restarted pool keeps its users' priorities,
its jobs and (as the startd does) its running jobs.

A role running alone (:mod:`epcore.pool.roles`) gets the remote links of
:mod:`epcore.links` where a peer does not run here: a startd or schedd advertises to, and
queries, the collector at COLLECTOR_HOST over CEDAR; a schedd asks the negotiator it finds
through the collector for its submitters' priorities.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from epcore.config import Config
from epcore.interfaces import (
    CollectorLink,
    JobSource,
    Locator,
    PriorityQuery,
    RequestHandler,
    StartdLink,
)
from epcore.plugins import Plugins, load_plugins
from epcore.pool.roles import (
    COLLECTOR,
    DEFRAG,
    NEGOTIATOR,
    ROOSTER,
    SCHEDD,
    STARTD,
    check_reachable,
    collector_named,
    daemons_of,
    role_names,
)
from epcore.pool.router import PoolRequests, super_users
from epcore.pool.setup import PoolPaths
from epcore.runtime.loop import EventLoop, Service
from epcore.runtime.persist import make_private, read_ad_lines, read_history
from epcore.startd import recovery
from epcore.startd.link import LocalStartdLink
from epcore.startd.loop import StartdService
from epcore.startd.main import build_startd, daemon_logger
from epcore.startd.requests import startd_handlers
from epcore.startd.startd import Startd
from epcore.types import MachineHost

if TYPE_CHECKING:
    from epcore.collector.service import CollectorService
    from epcore.links.collector import RemoteCollector
    from epcore.links.results import RemoteJobResults
    from epcore.negotiator.service import NegotiatorService
    from epcore.net.commands import Command
    from epcore.net.dispatch import Handler
    from epcore.pool.network import PoolListener


class SharedConfig:
    """The configuration every service of the process reads: ``load`` reads it again at
    each SIGHUP, once for all of them."""

    def __init__(self, load: Callable[[], Config], current: Config | None = None) -> None:
        self.load = load
        self.current = current if current is not None else load()

    def __call__(self) -> Config:
        return self.current

    def reload(self) -> None:
        self.current = self.load()


def build_pool(
    config_file: str | None,
    *,
    role: str | None = None,
    host: MachineHost | None = None,
    plugins: Plugins | None = None,
) -> EventLoop:
    """The loop of the daemons of ``role`` (None: as the configuration says; see
    :mod:`epcore.pool.roles`) for the configuration HTCondor would read (or
    ``config_file``); :meth:`EventLoop.run` runs it. PoolError when a daemon needs a peer
    that would run elsewhere."""
    clock = time.time
    if host is None:
        from epcore.builtin.host import LocalHost

        host = LocalHost()
    if plugins is None:
        plugins = load_plugins()
    known_host, known_plugins = host, plugins

    def load() -> Config:
        # The plugins' ClassAd functions reach every daemon through the configuration's
        # evaluation context: the startd's policy, matchmaking, the schedd's policies.
        return Config.load(
            config_file,
            host=known_host,
            defaults=known_plugins.knob_defaults(),
            eval_context=known_plugins.eval_context(),
        )

    shared = SharedConfig(load)
    config = shared()
    daemons = daemons_of(role, config)
    check_reachable(daemons, config)
    paths = PoolPaths.from_config(config)
    paths.make_directories()
    handlers: dict[str, RequestHandler] = {}
    startds: Locator[StartdLink] = Locator("startd")
    schedds: Locator[JobSource] = Locator("schedd")
    startd: Startd | None = None
    results_link: RemoteJobResults | None = None
    #: Wakes the schedd's loop from a link's worker thread (set once the schedd is made).
    wake_schedd: list[Callable[[], None]] = []

    def wake() -> None:
        for each in wake_schedd:
            each()

    # The CEDAR commands of the roles here besides the collector's (epcore.pool.network).
    cedar: list[dict[Command, Handler]] = []
    if STARTD in daemons:
        startd = build_startd(config_file, host=host, plugins=plugins)
        from epcore.startd.cedar import cedar_handlers as startd_cedar_handlers

        startd.reload_config = shared
        link = LocalStartdLink(startd)
        startds.register(link.address, link)
        handlers.update(startd_handlers(link))
        history_file = startd.paths.history_file
        if SCHEDD not in daemons:
            # The claims' schedds are elsewhere: each result goes back over CEDAR to the
            # address its schedd sent with REQUEST_CLAIM, queued and re-sent by a worker
            # thread, never waited for in the loop (epcore.links.results).
            from epcore.links.results import RemoteJobResults
            from epcore.links.results_journal import ResultsJournal

            # Kept in SPOOL until answered: a restarted startd sends what its
            # predecessor had queued.
            results_link = RemoteJobResults(
                shared,
                schedd_of=partial(recovery.client_of, startd),
                log=startd.log,
                journal=ResultsJournal(startd.paths.results_file, startd.log),
            )
            startd.job_results = results_link
        cedar.append(
            startd_cedar_handlers(
                link,
                lambda: read_history(history_file),
                startd.log,
                clock,
                claimed=results_link.claimed if results_link is not None else None,
                reached=startd.reached_at,
                result_pending=results_link.holds_result_of if results_link is not None else None,
            )
        )
        host_name = startd.host_name
    else:
        host_name = config.get("FULL_HOSTNAME") or host.facts().full_hostname
    # The other roles and CEDAR are imported only now: the startd forks its zygote when it
    # is built, and every module imported before that is copied into each starter the
    # zygote forks (about 12 MB: 0.4 ms of CPU more per starter's fork and exit).
    from epcore.collector.cedar import cedar_handlers
    from epcore.collector.rooster import Rooster
    from epcore.defrag.service import DefragService
    from epcore.links.negotiate import SubmitterDirectory, remote_schedd_connector
    from epcore.negotiator.cedar import cedar_handlers as negotiator_cedar_handlers
    from epcore.negotiator.cedar import reschedule_handlers as negotiator_reschedule_handlers
    from epcore.net.methods import uid_domain
    from epcore.net.policy import VERSION
    from epcore.pool.network import PLATFORM, build_listener, create_signing_key_if_missing
    from epcore.schedd.cedar import cedar_handlers as schedd_cedar_handlers
    from epcore.schedd.cedar import negotiator_handlers, qualified_super_users, result_handlers
    from epcore.schedd.jobqueue import JobQueue
    from epcore.schedd.leases import JobLeases, claim_unknown, startd_reachable
    from epcore.schedd.reconnect import Reconnects
    from epcore.schedd.results import ResultReceiver
    from epcore.schedd.schedd import Schedd
    from epcore.schedd.service import ScheddService

    logs = {
        daemon: daemon_logger(f"epcore.{daemon}", config, subsystem, path)
        for daemon, subsystem, path in (
            (SCHEDD, "SCHEDD", paths.schedd_log),
            (COLLECTOR, "COLLECTOR", paths.collector_daemon_log),
            (NEGOTIATOR, "NEGOTIATOR", paths.negotiator_log),
            (DEFRAG, "DEFRAG", _defrag_log(config)),
            (ROOSTER, "ROOSTER", _rooster_log(config)),
        )
        if daemon in daemons
    }
    # The process's own messages (the loop's, the requests') go to the first daemon's log.
    log = startd.log if startd is not None else next(iter(logs.values()))
    _make_private(paths, daemons, log)
    create_signing_key_if_missing(config, daemons, log)
    collector: CollectorService | None = None
    # The collector the daemons here advertise to and query: this process's own, or (a role
    # running alone) the one at COLLECTOR_HOST over CEDAR, once the listener gives this
    # process the network address its ads carry.
    pool_collector: CollectorLink
    remote_collector: RemoteCollector | None = None
    listening: list[PoolListener] = []
    if COLLECTOR in daemons:
        collector = pool_collector = _collector(shared, paths, logs[COLLECTOR], clock)
        handlers.update(collector.handlers())
    else:
        from epcore.links.collector import RemoteCollector

        remote_collector = pool_collector = RemoteCollector(
            shared,
            address=lambda: _listening_at(listening),
            subsystem="STARTD" if startd is not None else "SCHEDD",
            log=log,
        )
        log.info(
            "the collector is at %s (COLLECTOR_HOST); this process advertises to it over CEDAR",
            collector_named(config),
        )
    if startd is not None:
        startd.sink = pool_collector
    negotiator = None
    if NEGOTIATOR in daemons:
        assert collector is not None  # check_reachable saw to it
        ad_name = config.get("SCHEDD_NAME") or host_name
        negotiator = _negotiator(
            shared, paths, collector, schedds, ad_name, logs[NEGOTIATOR], clock
        )
        # The negotiator's schedds: the one in this process, or (none here) those the
        # Submitter ads in the collector name, each reached by NEGOTIATE over CEDAR.
        # Every schedd remote, cycles talk to them (and match) in a thread, so that the
        # collector's updates and queries are not held for the cycle's seconds; the
        # Submitter ads are read in the loop as each cycle begins.
        directory = SubmitterDirectory(collector, clock) if SCHEDD not in daemons else None
        schedds.connect = remote_schedd_connector(
            collector, shared, name=ad_name, log=logs[NEGOTIATOR], clock=clock, directory=directory
        )
        if directory is not None:
            negotiator.schedd_addresses = directory.addresses
            cedar.append(negotiator_reschedule_handlers(negotiator))
            negotiator.background = True
        negotiator.contact = {
            "Machine": host_name,
            "MyAddress": f"<unix:{paths.control_socket}>",
            "CondorVersion": VERSION,
            "CondorPlatform": PLATFORM,
        }
        handlers.update(negotiator.handlers())
        cedar.append(negotiator_cedar_handlers(negotiator))
    if SCHEDD in daemons or DEFRAG in daemons:
        # A startd no daemon here is (an execute host's: its ads' MyAddress a TCP address)
        # is claimed, activated and kept alive by the schedd, drained by defrag, over CEDAR
        # (epcore.links.startd) with the daemon's credentials; one link per address.
        from epcore.links.startd import remote_startd_connector

        caller = SCHEDD if SCHEDD in daemons else DEFRAG
        startds.connect = remote_startd_connector(
            shared,
            log=logs[caller],
            subsystem=caller.upper(),
            our_address=lambda: _listening_at(listening),
            # A startd without a claim the schedd keeps alive: its loop wakes to give it up.
            on_unknown=wake,
        )
    schedd = None
    if SCHEDD in daemons:
        priorities: PriorityQuery | None = negotiator
        if negotiator is None:
            from epcore.links.priority import RemotePriorities

            # The negotiator elsewhere, found through the collector's Negotiator ad.
            priorities = RemotePriorities(shared, pool_collector, log=logs[SCHEDD], clock=clock)
        queue = JobQueue.open(paths.queue_database)
        core = Schedd(config, queue, startds, host_name=host_name, log=logs[SCHEDD], clock=clock)
        # Read at each call: the schedd's service sets the wake-up when its loop opens.
        wake_schedd.append(lambda: core.activations.on_answer())
        schedd = ScheddService(
            core,
            config=shared,
            address=f"<unix:{paths.control_socket}>",
            collector=pool_collector,
            slots=pool_collector,
            priorities=priorities,
            log=logs[SCHEDD],
            clock=clock,
        )
        schedds.register(schedd.address, schedd)
        # A negotiator in another process negotiates with this schedd over CEDAR.
        cedar.append(negotiator_handlers(schedd, shared, log=logs[SCHEDD], clock=clock))
        # Startds in other processes hand back their jobs' results (EP_JOB_RESULT), each
        # applied once, only while its claim still runs the job here.
        cedar.append(
            result_handlers(
                ResultReceiver(core, schedd.job_result, logs[SCHEDD]), log=logs[SCHEDD], clock=clock
            )
        )
        # File transfer (epcore.schedd.transfer): a key in the job ad at activation, the
        # files served on this process's CEDAR port (known once the listener is built).
        from epcore.schedd.transfer import TransferKeys

        core.transfers = TransferKeys(
            lambda: _transfer_socket(listening),
            host_name=host_name,
            log=logs[SCHEDD],
            clock=clock,
        )
        cedar.append(core.transfers.handlers())
        # Job leases: a running job whose startd cannot be reached for its JobLeaseDuration
        # goes back to idle and runs elsewhere (epcore.schedd.leases).
        # After a restart, the jobs running on startds elsewhere are taken back, their
        # startds asked off the loop; the answers are applied before each lease check
        # (epcore.schedd.reconnect).
        leases = JobLeases(startd_reachable(startds), logs[SCHEDD], claim_unknown(startds))
        reconnects = Reconnects(leases)
        core.lease_check = reconnects.check
        core.reconnect = reconnects
        if startd is not None:
            startd.job_results = schedd
        handlers.update(schedd.handlers())
    defrag = None
    if DEFRAG in daemons:
        assert collector is not None  # check_reachable saw to it
        defrag = DefragService(
            config=shared, collector=collector, startds=startds, log=logs[DEFRAG], clock=clock
        )
        defrag.contact = {"Machine": host_name, "MyAddress": f"<unix:{paths.control_socket}>"}
    running = role_names(daemons)
    # The requests' failures go to the SchedLog, as the schedd answers most of them.
    requests_log = logs.get(SCHEDD, log)
    router = PoolRequests(
        paths.control_socket, handlers, roles=running, config=shared, log=requests_log
    )
    # The turn's order: the startd, then the users' requests (a submission is queued before
    # the schedd looks at its queue), the schedd, the collector's housekeeping, the
    # negotiator; closing in the same order, the startd invalidates its ads before the
    # collector saves them.
    # The CEDAR port answers HTCondor's clients for every daemon here (epcore.pool.network).
    listener = build_listener(
        shared,
        daemons - {ROOSTER},  # the rooster answers no command: no address file of its own
        collector_handlers=cedar_handlers(collector) if collector is not None else None,
        collector=collector,
        role_handlers=cedar,
        schedd_handlers=(
            schedd_cedar_handlers(
                router.handle,
                lambda: qualified_super_users(super_users(shared()), uid_domain(shared())),
                log=logs[SCHEDD],
                clock=clock,
            )
            if schedd is not None
            else None
        ),
        local_address=f"<unix:{paths.control_socket}>",
        log=logs.get(COLLECTOR, log),
    )
    listening.append(listener)
    services: list[Service] = [StartdService(startd)] if startd is not None else []
    services.extend((router, listener))
    services.extend(s for s in (schedd, collector, negotiator, defrag) if s is not None)
    if results_link is not None:
        # After the startd: its close sends the results the startd's end recorded.
        services.append(results_link)
    if remote_collector is not None:
        # Last: its close sends the invalidations the daemons' closes queued.
        services.append(remote_collector)
    if ROOSTER in daemons:
        assert collector is not None  # check_reachable saw to it
        services.append(Rooster(collector, config=shared, log=logs[ROOSTER], clock=clock))
    name = STARTD if startd is not None else running[0]
    return EventLoop(services, log=log, name=name, reload=shared.reload)


def _listening_at(listening: list[PoolListener]) -> tuple[str, int] | None:
    """The host and port the process's CEDAR listener listens on, once it does."""
    if not listening or listening[0].sock is None:
        return None
    return listening[0].host, listening[0].port


def _transfer_socket(holder: list[PoolListener]) -> str | None:
    """The CEDAR address starters reach the schedd's files at, once it listens (None
    before); listening on every interface, it is given as loopback (a pool of many hosts
    names its address with NETWORK_INTERFACE)."""
    if not holder or holder[0].sock is None:
        return None
    return str(holder[0].sinful).replace("<0.0.0.0:", "<127.0.0.1:")


def _rooster_log(config: Config) -> str:
    return config.get("ROOSTER_LOG") or str(Path(config.get("LOG") or ".") / "RoosterLog")


def _collector(
    shared: SharedConfig, paths: PoolPaths, log: logging.Logger, clock: Callable[[], float]
) -> CollectorService:
    from epcore.collector.collector import Collector
    from epcore.collector.collector_log import read_persistent_ads
    from epcore.collector.service import CollectorService

    collector = Collector(shared())
    collector.load_persistent(read_persistent_ads(Path(paths.collector_log)))
    return CollectorService(
        collector, config=shared, persistent_log=paths.collector_log, log=log, clock=clock
    )


def _negotiator(
    shared: SharedConfig,
    paths: PoolPaths,
    collector: CollectorService,
    schedds: Locator[JobSource],
    ad_name: str,
    log: logging.Logger,
    clock: Callable[[], float],
) -> NegotiatorService:
    from epcore.negotiator import Accountant
    from epcore.negotiator.service import NegotiatorService

    config = shared()
    saved = [ad for _, ad in read_ad_lines(paths.accountant_file, "the accountant's state")]
    accountant = Accountant.from_ads(saved, config) if saved else Accountant.empty(config)
    return NegotiatorService(
        accountant,
        config=shared,
        collector=collector,
        schedds=schedds,
        accountant_file=paths.accountant_file,
        ad_name=ad_name,
        log=log,
        clock=clock,
    )


def _defrag_log(config: Config) -> str:
    return config.get("DEFRAG_LOG") or os.path.join(config.get("LOG") or ".", "DefragLog")


def _make_private(paths: PoolPaths, daemons: frozenset[str], log: logging.Logger) -> None:
    """Make the central manager's state files mode 0600 (an older version left them 0644);
    those in SPOOL the startd has done already, these may be elsewhere."""
    files: list[str] = []
    if SCHEDD in daemons:
        queue = paths.queue_database
        files += [queue, f"{queue}-wal", f"{queue}-shm"]
    if NEGOTIATOR in daemons:
        files.append(paths.accountant_file)
    if COLLECTOR in daemons:
        files.append(paths.collector_log)
    for path in files:
        try:
            if make_private(path):
                log.info("%s was readable by others: now mode 0600", path)
        except OSError as error:
            log.error("cannot make %s private: %s", path, error)


def run_pool(config_file: str | None, role: str | None = None) -> None:
    """Run the daemons of ``role`` in the foreground until they have shut down (SIGTERM:
    peacefully, running jobs finish; a second SIGTERM or SIGQUIT: fast)."""
    build_pool(config_file, role=role).run()
