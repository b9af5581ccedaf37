"""One negotiation cycle as a unit of work the loop can hand to a thread.

A cycle is in three parts. :class:`CycleInput` is what the loop gathers (the schedds'
links, the slot ads from the collector, the accountant and the pending concurrency limits
as they are); :func:`run_cycle` is the rest of the work up to the matches handed out: the
jobs fetched from every schedd, the usage updated, the matching, each schedd's matches sent;
and :class:`CycleOutcome` is what the loop takes back into the negotiator's state.

:func:`run_cycle` reads only its input and the schedds' links, so it may run in a worker
thread: a central manager whose schedds are in other processes talks to them (HTCondor's
NEGOTIATE, seconds for tens of thousands of jobs) and matches there, while its loop goes on
answering the collector's updates and queries. A schedd in the same process is the loop's
own object, and a cycle with one runs in the loop as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.interfaces import JobSource, Match, PeerUnreachable, SubmitterJobs
from epcore.negotiator.accountant import Accountant
from epcore.negotiator.cycle import negotiate
from epcore.negotiator.limits import MatchedLimits, still_pending
from epcore.negotiator.offline import offline_match_ads, split_offline
from epcore.negotiator.records import Cycle
from epcore.negotiator.settings import significance


@runtime_checkable
class RequestLists(Protocol):
    """A schedd's link that speaks HTCondor's request lists (a schedd in another process):
    its requests stood for ``requested`` idle jobs in the last :meth:`negotiable_jobs`
    (the cycle may see fewer: no more of a request than the slots could take), and it tells
    the schedd why jobs got no match, told before its matches are handed out."""

    requested: int

    def note_rejections(self, reasons: Mapping[str, str]) -> None: ...


@attrs.frozen
class CycleInput:
    """What a cycle starts from, gathered in the loop."""

    now: float
    #: When the cycle began (the negotiator's monotonic clock).
    started: float
    config: Config
    schedds: Mapping[str, JobSource]
    #: Schedds whose link could not be made, by address, and why.
    failed: Mapping[str, str]
    slots: Sequence[ClassAd]
    accountant: Accountant
    matched_limits: Sequence[MatchedLimits]


@attrs.frozen
class CycleOutcome:
    """What a cycle gives back to the loop."""

    #: The cycle's ``now`` and when it began (monotonic), from its input.
    now: float
    started: float
    #: The accountant after the usage update and the matches.
    accountant: Accountant
    #: The matching's record; None when no schedd offered a job.
    cycle: Cycle | None
    submitters: Sequence[SubmitterJobs]
    slots: Sequence[ClassAd]
    #: The ads that record the matches of offline (sleeping) machines, for the collector.
    offline_ads: Sequence[ClassAd]
    matched_limits: Sequence[MatchedLimits]
    failed: Mapping[str, str]
    #: When the last matches were handed out (monotonic).
    ended: float
    #: The idle jobs the schedds offered (a request of a request list counts its jobs).
    idle_jobs: int = 0


def run_cycle(
    given: CycleInput, log: logging.Logger, monotonic: Callable[[], float]
) -> CycleOutcome:
    """The cycle's work after the loop's gathering (module docstring)."""
    now, config = given.now, given.config
    failed = dict(given.failed)
    schedds = given.schedds
    for schedd in schedds.values():
        schedd.cycle_started()
    slots = list(given.slots)
    accountant = given.accountant.update_usage(slots, now)
    timeout = max(config.get_float("MATCH_TIMEOUT", 120.0), 1.0)
    matched_limits = still_pending(given.matched_limits, slots, now, timeout)
    reserved = set().union(*(schedd.reserved_slots() for schedd in schedds.values()))
    if reserved:
        slots = [s for s in slots if str(s.evaluate("Name")) not in reserved]
    wanted = significance(config, slots, now)
    submitters: list[SubmitterJobs] = []
    # Where each submitter's jobs came from, by address, and (a user may submit at several
    # schedds) each job's.
    owners: dict[str, str] = {}
    sources: dict[Hashable, str] = {}
    idle_jobs = 0
    for address, schedd in schedds.items():
        try:
            offers = schedd.negotiable_jobs(slots, wanted, now)
        except PeerUnreachable as error:
            failed[address] = str(error)
            continue
        if isinstance(schedd, RequestLists):
            idle_jobs += schedd.requested
        else:
            idle_jobs += sum(len(offered.jobs) for offered in offers)
        for offered in offers:
            submitters.append(offered)
            owners.setdefault(offered.submitter, address)
            for job in offered.jobs:
                sources.setdefault(job_key(offered.submitter, job), address)
    cycle = None
    offline_ads: list[ClassAd] = []
    if submitters:
        pending = [entry.limits for entry in matched_limits]
        cycle = negotiate(config, accountant, slots, submitters, now, pending)
        accountant = cycle.accountant
        for match in cycle.matches:
            log.info(
                "Matched %s %s %s (%s)",
                match.job_id,
                match.submitter,
                match.slot_name,
                match.reason,
            )
        live, offline = split_offline(cycle.matches)
        if offline:
            for match in offline:
                log.info("Matched %s to %s (offline)", match.job_id, match.slot_name)
            offline_ads = offline_match_ads(offline, slots, now)
        for schedd in schedds.values():
            if isinstance(schedd, RequestLists):
                schedd.note_rejections(cycle.rejections)
        failed.update(hand_out(live, schedds, owners, sources, now))
    return CycleOutcome(
        now=now,
        started=given.started,
        accountant=accountant,
        cycle=cycle,
        submitters=submitters,
        slots=slots,
        offline_ads=offline_ads,
        matched_limits=matched_limits,
        failed=failed,
        ended=monotonic(),
        idle_jobs=idle_jobs,
    )


def hand_out(
    matches: Sequence[Match],
    schedds: Mapping[str, JobSource],
    owners: Mapping[str, str],
    sources: Mapping[Hashable, str],
    now: float,
) -> dict[str, str]:
    """Each schedd's matches, in the cycle's order, to that schedd (to every schedd that
    offered jobs, none perhaps: a schedd in another process ends its negotiation then); the
    schedds that could not take them, by address."""
    by_schedd: dict[str, list[Match]] = {
        address: [] for address in dict.fromkeys([*owners.values(), *sources.values()])
    }
    for match in matches:
        address = sources.get(job_key(match.submitter, match.job), owners[match.submitter])
        by_schedd[address].append(match)
    failed: dict[str, str] = {}
    for address, taken in by_schedd.items():
        try:
            schedds[address].take_matches(taken, now)
        except PeerUnreachable as error:
            # Its slots stay unclaimed; MATCH_TIMEOUT lets them go, as a failed claim.
            failed[address] = str(error)
    return failed


def job_key(submitter: str, job: ClassAd) -> Hashable:
    """What tells a job apart among every schedd's: its GlobalJobId (the schedd's name is
    in it), else its submitter and ids."""
    global_id = job.evaluate("GlobalJobId")
    if isinstance(global_id, str) and global_id:
        return global_id
    return (submitter, job.evaluate("ClusterId"), job.evaluate("ProcId"))


class CycleWorker:
    """One cycle at a time in a thread of its own: :meth:`start` it, then look at
    :meth:`done` from the loop and :meth:`take` its outcome (or the exception it raised)."""

    def __init__(self, log: logging.Logger, monotonic: Callable[[], float]) -> None:
        self.log = log
        self.monotonic = monotonic
        self._thread: threading.Thread | None = None
        self._result: CycleOutcome | BaseException | None = None

    @property
    def running(self) -> bool:
        """Whether a cycle was started and its outcome not yet taken."""
        return self._thread is not None

    def start(self, given: CycleInput) -> None:
        assert self._thread is None, "one cycle at a time"
        self._result = None
        self._thread = threading.Thread(
            target=self._run, args=(given,), name="negotiation-cycle", daemon=True
        )
        self._thread.start()

    def _run(self, given: CycleInput) -> None:
        try:
            self._result = run_cycle(given, self.log, self.monotonic)
        except BaseException as error:  # handed to the loop, which logs it
            self._result = error

    def done(self) -> bool:
        return self._thread is not None and not self._thread.is_alive()

    def wait(self, timeout: float) -> bool:
        """Wait for the cycle to end (``timeout`` seconds at most); whether it has."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.done()

    def take(self) -> CycleOutcome:
        """The finished cycle's outcome; what it raised, raised here."""
        assert self.done()
        result, self._result, self._thread = self._result, None, None
        if isinstance(result, BaseException):
            raise result
        assert result is not None
        return result
