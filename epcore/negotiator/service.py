"""The negotiator as a service of the runtime's loop.

A cycle is due every NEGOTIATOR_INTERVAL seconds, and sooner (but not within
NEGOTIATOR_MIN_INTERVAL of the last one) when a schedd wants one (jobs were submitted or
released, or claims were given back while jobs wait), as a schedd asks its negotiator to
reschedule. Each cycle takes the slot ads from the collector and the idle jobs from every
schedd through their links, updates the accountant's usage, matches, and hands each
schedd its matches; then it saves the accountant and advertises the negotiator's ad. No
cycle starts once the pool is shutting down.

When every schedd is in another process (:attr:`NegotiatorService.background`, the
assembly's choice), a cycle runs in a thread of its own (:mod:`epcore.negotiator.background`):
the loop gathers the slot ads and the links, the thread talks to the schedds and matches, and
the loop takes the outcome back, so that the collector beside the negotiator keeps answering
its hosts' updates meanwhile. A peaceful shutdown waits for that cycle; a fast one leaves it.

A schedd in another process may be unreachable, slow or broken: its link says so
(PeerUnreachable) and the cycle goes on with the others; the log names it, and so does the
negotiator's ad (LastNegotiationCycleScheddsFailed0, epcore's, a list of addresses).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.interfaces import (
    CollectorLink,
    JobSource,
    Locator,
    PeerUnreachable,
    RequestHandlers,
    SubmitterJobs,
)
from epcore.interfaces.requests import bind_handlers
from epcore.negotiator.accountant import Accountant
from epcore.negotiator.background import CycleInput, CycleOutcome, CycleWorker, run_cycle
from epcore.negotiator.limits import MatchedLimits, job_limits
from epcore.negotiator.records import Cycle
from epcore.negotiator.requests import HANDLERS
from epcore.runtime.loop import LoopHandle, TimedService
from epcore.runtime.persist import write_ad_lines

#: The longest the negotiator's ad waits between two advertisements, in seconds.
ADVERTISE_INTERVAL = 60.0
#: How often the loop looks whether a cycle running in its thread has ended, in seconds.
CYCLE_POLL = 0.05


class NegotiatorService(TimedService):
    """The negotiation cycle and the accountant in the loop (module docstring); ``config``
    gives the configuration in force, ``name`` the negotiator ad's Name."""

    name = "negotiator"

    def __init__(
        self,
        accountant: Accountant,
        *,
        config: Callable[[], Config],
        collector: CollectorLink,
        schedds: Locator[JobSource],
        accountant_file: str,
        ad_name: str,
        log: logging.Logger,
        clock: Callable[[], float],
        monotonic: Callable[[], float] = time.monotonic,
        schedd_addresses: Callable[[], list[str]] | None = None,
    ) -> None:
        super().__init__(config, log=log, clock=clock, monotonic=monotonic)
        self.accountant = accountant
        self.collector = collector
        self.schedds = schedds
        #: The schedds a cycle negotiates with, by address: those of the locator, or (the
        #: assembly's choice when the schedds run elsewhere) those the submitters' ads name.
        self.schedd_addresses = schedd_addresses or schedds.addresses
        #: The schedds whose negotiation failed in the last cycle, by address, and why.
        self.failed_schedds: dict[str, str] = {}
        self.accountant_file = accountant_file
        self.ad_name = ad_name
        #: How clients reach and know the negotiator (Machine, MyAddress, CondorVersion...): its
        #: ad carries these; the pool's assembly sets them (HTCondor's clients locate a
        #: negotiator only by an ad that has these).
        self.contact: dict[str, str] = {}
        self.last_cycle = -1e9
        self.next_cycle = 0.0
        self.next_ad = 0.0
        self.cycles = 0
        self.last_cycle_stats = ClassAd()
        # Jobs the last cycle failed on, with the error: logged when they start failing.
        self.failed_jobs: dict[str, str] = {}
        #: Concurrency limits of matches whose slot ads do not show the claim yet.
        self.matched_limits: list[MatchedLimits] = []
        #: The last cycle that had idle jobs (groups, limits and why jobs wait).
        self.last_report: Cycle | None = None
        self.waiting: dict[tuple[str, str], str] = {}
        #: A schedd in another process asked for a cycle soon (RESCHEDULE).
        self.rescheduled = False
        #: Whether cycles run in a thread (the assembly's choice when every schedd is in
        #: another process): the loop keeps serving the collector while a cycle talks to
        #: the schedds and matches (:mod:`epcore.negotiator.background`).
        self.background = False
        self.worker = CycleWorker(log, monotonic)
        #: Changes to the accountant made while a cycle ran in its thread, replayed on the
        #: accountant the cycle gives back.
        self.changes: list[Callable[[Accountant], Accountant]] = []
        self.abandoned = False

    # -- the in-process link (PriorityQuery) --------------------------------------------------

    def effective_priority(self, submitter: str) -> float:
        return self.accountant.eup(submitter)

    def waiting_reason(self, submitter: str, job_id: str) -> str | None:
        return self.waiting.get((submitter, job_id))

    def handlers(self) -> RequestHandlers:
        """The negotiator's answers to the pool's requests, by Command."""
        return bind_handlers(self, HANDLERS)

    # -- the loop's calls -----------------------------------------------------------------

    def open(self, loop: LoopHandle) -> None:
        self.next_cycle = self.monotonic() + self._min_interval()

    def reschedule(self) -> None:
        """A cycle soon (not within NEGOTIATOR_MIN_INTERVAL of the last): a schedd in
        another process asked, as the in-process one says by wants_negotiation."""
        self.rescheduled = True

    def _wanted(self) -> bool:
        return self.rescheduled or any(
            self.schedds.link(a).wants_negotiation() for a in self.schedds.addresses()
        )

    def change_accountant(self, change: Callable[[Accountant], Accountant]) -> None:
        """Apply ``change`` to the accountant now, and again to the one a cycle running in
        its thread gives back (which began before it)."""
        self.accountant = change(self.accountant)
        if self.worker.running:
            self.changes.append(change)

    def timeout(self) -> float:
        if self.worker.running:
            return min(CYCLE_POLL, self.next_ad - self.monotonic())
        if self.stopping:
            return self.next_ad - self.monotonic()  # no more cycles: waiting would spin
        due = self.next_cycle
        if self._wanted():
            due = min(due, self.last_cycle + self._min_interval())
        return min(due, self.next_ad) - self.monotonic()

    def tick(self) -> None:
        now = self.clock()
        tick = self.monotonic()
        if self.worker.done():
            self._cycle_ended(self.worker.take)
            self.next_ad = tick
        due = tick >= self.next_cycle or (
            self._wanted() and tick >= self.last_cycle + self._min_interval()
        )
        if due and not self.stopping and not self.worker.running:
            if self.background:
                self._cycle_ended(lambda: self.worker.start(self._gather(now)))
            else:
                self._cycle_ended(lambda: self.negotiate(now))
                self.next_ad = tick  # the negotiator's ad follows each cycle
        if tick >= self.next_ad:
            self.advertise(now)

    def _cycle_ended(self, step: Callable[[], object]) -> None:
        """Run ``step`` (a cycle, its start or its outcome taken back); a failure is logged
        and the next cycle comes after NEGOTIATOR_INTERVAL."""
        outcome = None
        try:
            outcome = step()
        except Exception:  # a failed cycle must not take the pool and its jobs down
            self.log.exception("the negotiation cycle failed")
            self.changes.clear()
            self.next_cycle = self.monotonic() + self._interval()
        if isinstance(outcome, CycleOutcome):
            self._finish(outcome)

    def shutdown(self, fast: bool) -> None:
        super().shutdown(fast)
        # A peaceful end lets a cycle in its thread finish (its matches go out); a fast one
        # leaves it.
        self.abandoned = self.abandoned or fast

    @property
    def finished(self) -> bool:
        return self.stopping and (self.abandoned or not self.worker.running)

    def close(self) -> None:
        if self.worker.running and not self.abandoned and self.worker.wait(0):
            self._cycle_ended(self.worker.take)
        self.save_accountant()

    # -- the work -------------------------------------------------------------------------

    def _min_interval(self) -> float:
        return max(self.config.get_float("NEGOTIATOR_MIN_INTERVAL", 5.0), 0.0)

    def _interval(self) -> float:
        return max(self.config.get_float("NEGOTIATOR_INTERVAL", 60.0), 1.0)

    def negotiate(self, now: float) -> None:
        """One negotiation cycle, here and now: update the usage, match, hand the matches to
        the schedds."""
        self._finish(run_cycle(self._gather(now), self.log, self.monotonic))

    def _gather(self, now: float) -> CycleInput:
        """What a cycle starts from: the schedds' links and the slot ads as they are."""
        started = self.monotonic()
        self.rescheduled = False
        failed: dict[str, str] = {}
        schedds: dict[str, JobSource] = {}
        for address in self.schedd_addresses():
            try:
                schedds[address] = self.schedds.link(address)
            except PeerUnreachable as error:
                failed[address] = str(error)
        return CycleInput(
            now=now,
            started=started,
            config=self.config,
            schedds=schedds,
            failed=failed,
            slots=self.collector.query("Machine", now=now),
            accountant=self.accountant,
            matched_limits=tuple(self.matched_limits),
        )

    def _finish(self, outcome: CycleOutcome) -> None:
        """Take a cycle's outcome into the negotiator's state, log it and report it."""
        now = outcome.now
        cycle, submitters = outcome.cycle, outcome.submitters
        self.accountant = outcome.accountant
        for change in self.changes:
            # condor_userprio's changes made while the cycle ran in its thread.
            self.accountant = change(self.accountant)
        self.changes.clear()
        self.matched_limits = list(outcome.matched_limits)
        matches = 0
        if cycle is not None:
            self._remember(cycle, submitters, now)
            self._log_failures(cycle.failures)
            matches = len(cycle.matches)
        if outcome.offline_ads:
            self.collector.update(outcome.offline_ads, now)
        self._log_schedd_failures(outcome.failed)
        self.save_accountant()
        started, tick = outcome.started, outcome.ended
        self.cycles += 1
        self.last_cycle = tick
        self.next_cycle = tick + self._interval()
        jobs = outcome.idle_jobs
        self.log.info(
            "negotiation cycle %d: %d slots, %d submitters, %d idle jobs, %d matches in %.3f s",
            self.cycles,
            len(outcome.slots),
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
        stats["LastNegotiationCycleTotalSlots0"] = len(outcome.slots)
        stats["LastNegotiationCycleScheddsFailed0"] = ", ".join(sorted(outcome.failed))
        self.last_cycle_stats = stats

    def _remember(self, cycle: Cycle, submitters: Sequence[SubmitterJobs], now: float) -> None:
        """Keep what later cycles and the tools need: the matches' concurrency limits, why
        each job waits, and the groups' and limits' figures."""
        for match in cycle.matches:
            limits = job_limits(match.job, match.slot)
            if limits:
                self.matched_limits.append(MatchedLimits(match.slot_name, limits, now))
        owner = {
            f"{job.evaluate('ClusterId')}.{job.evaluate('ProcId')}": entry.submitter
            for entry in submitters
            for job in entry.jobs
        }
        self.waiting = {
            (owner[ident], ident): reason
            for ident, reason in cycle.rejections.items()
            if ident in owner
        }
        self.last_report = cycle

    def _log_schedd_failures(self, failed: Mapping[str, str]) -> None:
        """Log each schedd the cycle could not negotiate with (and when it is back)."""
        for address, error in failed.items():
            self.log.warning("negotiation with the schedd at %s failed: %s", address, error)
        for address in self.failed_schedds.keys() - failed.keys():
            self.log.info("negotiation with the schedd at %s works again", address)
        self.failed_schedds = dict(failed)

    def _log_failures(self, failures: Mapping[str, str]) -> None:
        """Log each job the cycle could not handle, once for as long as it keeps failing."""
        for job, error in failures.items():
            if self.failed_jobs.get(job) != error:
                self.log.error(
                    "job %s skipped by the negotiation cycle (and its autocluster): %s", job, error
                )
        self.failed_jobs = dict(failures)

    def save_accountant(self) -> None:
        try:
            write_ad_lines(self.accountant_file, self.accountant.to_ads())
        except OSError as error:
            self.log.error("cannot save the accountant to %s: %s", self.accountant_file, error)

    def advertise(self, now: float) -> None:
        """The negotiator's ad (the last cycle's statistics), into the collector."""
        interval = max(self.config.get_float("SCHEDD_INTERVAL", 300.0), 1.0)
        self.next_ad = self.monotonic() + min(interval, ADVERTISE_INTERVAL)
        ad = self.last_cycle_stats.copy()
        ad["MyType"] = "Negotiator"
        ad["Name"] = self.ad_name
        for name, value in self.contact.items():
            ad[name] = value
        self.collector.update([ad], now)
