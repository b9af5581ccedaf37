"""The personal pool's central manager: collector, negotiator and schedd beside the startd.

:class:`CentralManager` is a :class:`~epcore.startd.loop.LoopCompanion` of the startd's loop,
so the whole pool is one process with one loop: the startd publishes its slot ads straight
into the collector, and the schedd drives the startd in-process. Each turn, after the
startd's own work, it answers the requests that arrived on the pool's socket, activates
the claims that became ready, runs a negotiation cycle when one is due, expires ads and
advertises the schedd's, submitters' and negotiator's ads.

A cycle is due every NEGOTIATOR_INTERVAL seconds, and sooner (but not within
NEGOTIATOR_MIN_INTERVAL of the last one) when jobs were submitted or released or claims were
given back while jobs wait, as a schedd asks its negotiator to reschedule.
"""

from __future__ import annotations

import logging
import selectors
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from epcore.classad import ClassAd
from epcore.collector.collector import Collector
from epcore.collector.collector_log import write_persistent_ads
from epcore.config import Config
from epcore.errors import EpError
from epcore.negotiator import Accountant, negotiate
from epcore.pool.handlers import handle_request
from epcore.pool.setup import PoolPaths
from epcore.runtime.connection_limits import ConnectionLimits
from epcore.runtime.persist import read_history, write_ad_lines
from epcore.runtime.pool_server import PoolServer, Requester
from epcore.schedd.jobqueue import JobStatus
from epcore.schedd.schedd import Schedd
from epcore.startd.startd import Startd

#: How often absent and expired ads are looked for, in seconds.
COLLECTOR_HOUSEKEEPING = 10.0
#: How much of the end of the startd's history a restart reads for the ends of jobs the
#: queue did not record (those of the last moments before the previous process died).
RECOVERY_HISTORY_BYTES = 4 * 1024 * 1024


class CentralManager:
    """Collector, negotiator and schedd sharing the startd's loop (module docstring)."""

    def __init__(
        self,
        startd: Startd,
        collector: Collector,
        schedd: Schedd,
        accountant: Accountant,
        paths: PoolPaths,
        *,
        log: logging.Logger,
        negotiator_log: logging.Logger,
        clock: Callable[[], float],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.startd = startd
        self.config: Config = startd.config
        self.collector = collector
        self.schedd = schedd
        self.accountant = accountant
        self.paths = paths
        self.log = log
        self.negotiator_log = negotiator_log
        self.clock = clock
        self.monotonic = monotonic
        self.server = PoolServer(
            paths.control_socket,
            self.handle,
            super_users=_super_users(self.config),
            log=log,
            limits=ConnectionLimits.from_config(self.config),
        )
        self.last_cycle = -1e9
        self.next_cycle = 0.0
        self.next_housekeeping = 0.0
        self.next_ads = 0.0
        self.cycles = 0
        self.saved_generation = collector.persistent_generation
        self.last_cycle_stats = ClassAd()
        # Jobs the last cycle failed on, with the error: logged when they start failing.
        self.failed_jobs: dict[str, str] = {}
        startd.on_result = self._job_result

    # -- LoopCompanion --------------------------------------------------------------------

    def open(self, selector: selectors.BaseSelector) -> None:
        now = self.clock()
        history = self.startd.paths.history_file
        self.schedd.recover(
            self.startd.claims(),
            now,
            lambda claims: read_history(
                history, last_bytes=RECOVERY_HISTORY_BYTES, containing=claims
            ),
        )
        self.server.open(selector, self)
        self.next_cycle = self.monotonic() + self._min_interval()
        self.log.info("pool ready: requests on %s", self.paths.control_socket)

    def ready(self, fileobj: object) -> None:
        self.server.ready(fileobj)

    def timeout(self) -> float:
        tick = self.monotonic()
        due = self.next_cycle
        if self.startd.shutting_down:
            due = float("inf")  # no more cycles: waiting for one would spin the loop
        elif self.schedd.wants_negotiation:
            due = min(due, self.last_cycle + self._min_interval())
        wait = min(due, self.next_housekeeping, self.next_ads) - tick
        wait = min(wait, self.schedd.periodic.wait(self.clock()))
        if self.schedd.pending:
            wait = min(wait, 1.0)
        return max(min(wait, self.server.timeout()), 0.0)

    def tick(self) -> None:
        now = self.clock()
        tick = self.monotonic()
        if self.startd.config is not self.config:
            self._reconfigured(self.startd.config)
        self.server.work()
        self.schedd.tick(now)
        if tick >= self.next_housekeeping:
            self.collector.expire(now)
            self.save_collector()
            self.next_housekeeping = tick + COLLECTOR_HOUSEKEEPING
        due = tick >= self.next_cycle or (
            self.schedd.wants_negotiation and tick >= self.last_cycle + self._min_interval()
        )
        if due and not self.startd.shutting_down:
            self.next_ads = tick  # the submitters' ads follow each cycle
            try:
                self.negotiate(now)
            except Exception:  # a failed cycle must not take the pool and its jobs down
                self.negotiator_log.exception("the negotiation cycle failed")
                self.next_cycle = tick + max(
                    self.config.get_float("NEGOTIATOR_INTERVAL", 60.0), 1.0
                )
        if tick >= self.next_ads:
            self.advertise(now)
        self.server.flush()

    def close(self) -> None:
        self.server.close()
        self.save_accountant()
        self.save_collector()
        self.schedd.queue.close()

    # -- the work -------------------------------------------------------------------------

    def _min_interval(self) -> float:
        return max(self.config.get_float("NEGOTIATOR_MIN_INTERVAL", 5.0), 0.0)

    def _reconfigured(self, config: Config) -> None:
        self.config = config
        self.schedd.config = config
        self.collector.reconfig(config)
        self.server.super_users = self.server.super_users | _super_users(config)
        self.server.limits = ConnectionLimits.from_config(config)
        self.log.info("reconfigured")

    def negotiate(self, now: float) -> None:
        """One negotiation cycle: update the usage, match, hand the matches to the schedd."""
        started = self.monotonic()
        self.schedd.wants_negotiation = False
        slots = self.collector.query("Machine", now=now)
        self.accountant = self.accountant.update_usage(slots, now)
        reserved = self.schedd.reserved_slots()
        if reserved:
            slots = [s for s in slots if str(s.evaluate("Name")).split("@", 1)[0] not in reserved]
        submitters = self.schedd.negotiable_jobs(slots, now)
        matches = 0
        if submitters:
            cycle = negotiate(self.config, self.accountant, slots, submitters, now)
            self.accountant = cycle.accountant
            self._log_failures(cycle.failures)
            matches = len(cycle.matches)
            for match in cycle.matches:
                self.negotiator_log.info(
                    "Matched %s %s %s (%s)",
                    match.job_id,
                    match.submitter,
                    match.slot_name,
                    match.reason,
                )
            self.schedd.take_matches(cycle.matches, now)
        self.save_accountant()
        tick = self.monotonic()
        self.cycles += 1
        self.last_cycle = tick
        interval = max(self.config.get_float("NEGOTIATOR_INTERVAL", 60.0), 1.0)
        self.next_cycle = tick + interval
        jobs = sum(len(s.jobs) for s in submitters)
        self.negotiator_log.info(
            "negotiation cycle %d: %d slots, %d submitters, %d idle jobs, %d matches in %.3f s",
            self.cycles,
            len(slots),
            len(submitters),
            jobs,
            matches,
            tick - started,
        )
        stats = ClassAd()
        stats["LastNegotiationCycleTime0"] = int(now)
        stats["LastNegotiationCycleDuration0"] = round(tick - started, 3)
        stats["LastNegotiationCycleMatches0"] = matches
        stats["LastNegotiationCycleActiveSubmitterCount0"] = len(submitters)
        stats["LastNegotiationCycleNumIdleJobs0"] = jobs
        stats["LastNegotiationCycleTotalSlots0"] = len(slots)
        self.last_cycle_stats = stats

    def _log_failures(self, failures: Mapping[str, str]) -> None:
        """Log each job the cycle could not handle, once for as long as it keeps failing."""
        for job, error in failures.items():
            if self.failed_jobs.get(job) != error:
                self.negotiator_log.error(
                    "job %s skipped by the negotiation cycle (and its autocluster): %s", job, error
                )
        self.failed_jobs = dict(failures)

    def save_accountant(self) -> None:
        try:
            write_ad_lines(self.paths.accountant_file, self.accountant.to_ads())
        except OSError as error:
            self.log.error(
                "cannot save the accountant to %s: %s", self.paths.accountant_file, error
            )

    def save_collector(self) -> None:
        """Write the absent and offline ads to COLLECTOR_PERSISTENT_AD_LOG when they changed."""
        generation = self.collector.persistent_generation
        if generation == self.saved_generation:
            return
        try:
            write_persistent_ads(Path(self.paths.collector_log), self.collector.persistent_ads())
            self.saved_generation = generation
        except OSError as error:
            self.log.error(
                "cannot save the collector's ads to %s: %s", self.paths.collector_log, error
            )

    def _job_result(self, result: ClassAd, now: float) -> None:
        self.schedd.job_result(result, now)

    def advertise(self, now: float) -> None:
        """The schedd's, the submitters' and the negotiator's ads, into the collector."""
        interval = max(self.config.get_float("SCHEDD_INTERVAL", 300.0), 1.0)
        self.next_ads = self.monotonic() + min(interval, 60.0)
        counts = self.schedd.queue.counts()
        name = self.config.get("SCHEDD_NAME") or self.startd.host_name
        schedd_ad = ClassAd()
        schedd_ad["MyType"] = "Scheduler"
        schedd_ad["Name"] = name
        schedd_ad["Machine"] = self.startd.host_name
        schedd_ad["TotalIdleJobs"] = counts.get(JobStatus.IDLE, 0)
        schedd_ad["TotalRunningJobs"] = counts.get(JobStatus.RUNNING, 0)
        schedd_ad["TotalHeldJobs"] = counts.get(JobStatus.HELD, 0)
        schedd_ad["TotalRemovedJobs"] = counts.get(JobStatus.REMOVED, 0)
        schedd_ad["MyAddress"] = f"<unix:{self.paths.control_socket}>"
        negotiator = self.last_cycle_stats.copy()
        negotiator["MyType"] = "Negotiator"
        negotiator["Name"] = name
        ads = [schedd_ad, negotiator]
        tallies: dict[str, dict[str, int]] = {}
        for submitter_name, idle in self.schedd.idle_counts().items():
            tallies.setdefault(submitter_name, {})["IdleJobs"] = idle
        for running in self.schedd.running.values():
            tally = tallies.setdefault(running.submitter, {})
            tally["RunningJobs"] = tally.get("RunningJobs", 0) + 1
        for job in self.schedd.queue.jobs(statuses=(JobStatus.HELD,)):
            tally = tallies.setdefault(self.schedd.submitter(job), {})
            tally["HeldJobs"] = tally.get("HeldJobs", 0) + 1
        for submitter_name, tally in sorted(tallies.items()):
            ad = ClassAd()
            ad["MyType"] = "Submitter"
            ad["Name"] = submitter_name
            ad["ScheddName"] = name
            for column in ("RunningJobs", "IdleJobs", "HeldJobs"):
                ad[column] = tally.get(column, 0)
            ads.append(ad)
        self.collector.update(ads, now)

    def handle(self, requester: Requester, request: ClassAd) -> ClassAd:
        """Answer one request from the pool's socket."""
        from epcore.runtime.control import answer

        try:
            return handle_request(self, requester, request)
        except EpError as error:
            return answer(False, str(error))
        except Exception as error:
            # A request that trips a fault fails alone; the pool keeps serving the others.
            command = request.evaluate("Command")
            self.log.exception("request %r from %s failed", command, requester.name)
            return answer(False, f"the pool failed on this request: {type(error).__name__}")


def _super_users(config: Config) -> set[str]:
    raw = config.get("QUEUE_SUPER_USERS") or "root, condor"
    return {name.strip() for name in raw.replace(",", " ").split() if name.strip()}
