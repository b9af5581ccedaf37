"""The schedd as a service of the runtime's loop, and as its peers reach it in-process.

Each turn it activates the claims that became ready, applies the periodic policy when due and
keeps its claims alive (:meth:`Schedd.tick`); every SCHEDD_INTERVAL (at most a minute) and
after each negotiation cycle it advertises the schedd's and the submitters' ads to the
collector. At start it adopts the running jobs whose claims its startds took back. It is the
in-process :class:`~epcore.interfaces.JobSource` of the negotiator and
:class:`~epcore.interfaces.JobResults` of the startds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import time
from collections.abc import Callable, Iterable, Sequence

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.interfaces import (
    AdQuery,
    CollectorLink,
    Match,
    PriorityQuery,
    RequestHandlers,
    Significance,
    SubmitterJobs,
)
from epcore.interfaces.requests import bind_handlers
from epcore.net.policy import VERSION
from epcore.runtime.loop import LoopHandle, ReadyEvent, TimedService
from epcore.schedd.jobqueue import JobStatus
from epcore.schedd.requests import HANDLERS
from epcore.schedd.schedd import Schedd

#: The longest the schedd's ads wait between two advertisements, in seconds.
ADVERTISE_INTERVAL = 60.0


class ScheddService(TimedService):
    """A :class:`Schedd` in the loop (module docstring). ``config`` gives the configuration in
    force; ``address`` is where users reach it (its ad's MyAddress); ``collector`` takes its
    ads, ``slots`` answers better-analyze's slot query and ``priorities`` its priority
    question (None: no negotiator in reach)."""

    name = "schedd"

    def __init__(
        self,
        schedd: Schedd,
        *,
        config: Callable[[], Config],
        address: str,
        collector: CollectorLink,
        slots: AdQuery,
        priorities: PriorityQuery | None,
        log: logging.Logger,
        clock: Callable[[], float],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(config, log=log, clock=clock, monotonic=monotonic)
        self.schedd = schedd
        self.address = address
        self.collector = collector
        self.slots = slots
        self.priorities = priorities
        self.next_ads = 0.0
        #: The loop's selector once open (the activations' wake-up socket is in it).
        self.selector: selectors.BaseSelector | None = None

    @property
    def host_name(self) -> str:
        return self.schedd.host_name

    @property
    def ad_name(self) -> str:
        """The schedd's Name: SCHEDD_NAME, else the host's name."""
        return self.config.get("SCHEDD_NAME") or self.schedd.host_name

    def priority(self, submitter: str) -> float | None:
        """``submitter``'s effective priority, when a negotiator is in reach."""
        return None if self.priorities is None else self.priorities.effective_priority(submitter)

    def waiting_reason(self, submitter: str, job_id: str) -> str | None:
        """Why the negotiator's last cycle left the job unmatched, when it is in reach."""
        return (
            None if self.priorities is None else self.priorities.waiting_reason(submitter, job_id)
        )

    def handlers(self) -> RequestHandlers:
        """The schedd's answers to the pool's requests, by Command."""
        return bind_handlers(self, HANDLERS)

    # -- the in-process links (JobResults, JobSource) ---------------------------------------

    def job_result(self, result: ClassAd, now: float) -> None:
        self.schedd.job_result(result, now)

    def wants_negotiation(self) -> bool:
        return self.schedd.wants_negotiation

    def cycle_started(self) -> None:
        self.schedd.wants_negotiation = False
        self.next_ads = self.monotonic()  # the submitters' ads follow each cycle

    def reserved_slots(self) -> set[str]:
        return self.schedd.reserved_slots()

    def negotiable_jobs(
        self, slots: Sequence[ClassAd], significance: Significance, now: float
    ) -> list[SubmitterJobs]:
        return self.schedd.negotiable_jobs(slots, significance, now)

    def take_matches(self, matches: Sequence[Match], now: float) -> None:
        self.schedd.take_matches(matches, now)

    def reschedule(self) -> None:
        """A negotiation cycle soon (condor_reschedule)."""
        self.schedd.wants_negotiation = True

    # -- the loop's calls -----------------------------------------------------------------

    def open(self, loop: LoopHandle) -> None:
        """Adopt the running jobs whose claims the startds took back; the activations'
        workers wake the loop with each answer (epcore.schedd.activation)."""
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        self.selector = loop.selector
        loop.selector.register(self._wake_read, selectors.EVENT_READ, self)
        self.schedd.activations.on_answer = self._wake
        startds = self.schedd.startds
        claims: list[tuple[str, str, ClassAd]] = []
        for address in startds.addresses():
            claims.extend((address, claim, job) for claim, job in startds.link(address).claims())

        def history(claim_ids: set[str]) -> Iterable[ClassAd]:
            for address in startds.addresses():
                yield from startds.link(address).recent_results(claim_ids)

        self.schedd.recover(claims, self.clock(), history)

    def _wake(self) -> None:
        # A full buffer already wakes the loop; a closed one: the loop is gone.
        with contextlib.suppress(OSError):
            self._wake_write.send(b"!")

    def ready(self, events: Sequence[ReadyEvent]) -> None:
        if any(data is self for _, data in events):
            with contextlib.suppress(OSError):
                while self._wake_read.recv(4096):
                    pass

    def timeout(self) -> float:
        wait = min(self.next_ads - self.monotonic(), self.schedd.periodic.wait(self.clock()))
        if self.schedd.pending:
            wait = min(wait, 1.0)
        due = self.schedd.alives.next_due()
        if due is not None:
            # The keep-alives' own timer: a quiet schedd still keeps its claims.
            wait = min(wait, due - self.clock())
        return wait

    def tick(self) -> None:
        now = self.clock()
        self.schedd.tick(now)
        if self.monotonic() >= self.next_ads:
            self.advertise(now)

    def reconfig(self) -> None:
        super().reconfig()
        self.schedd.config = self.config

    def close(self) -> None:
        self.schedd.activations.on_answer = lambda: None
        if self.selector is not None:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(self._wake_read)
            self._wake_read.close()
            self._wake_write.close()
        self.schedd.queue.close()

    def close_in_child(self) -> None:
        # The loop closes the read end with its registered descriptors.
        if self.selector is not None:
            with contextlib.suppress(OSError):
                os.close(self._wake_write.fileno())

    # -- the work -------------------------------------------------------------------------

    def advertise(self, now: float) -> None:
        """The schedd's and the submitters' ads, into the collector."""
        interval = max(self.config.get_float("SCHEDD_INTERVAL", 300.0), 1.0)
        self.next_ads = self.monotonic() + min(interval, ADVERTISE_INTERVAL)
        schedd = self.schedd
        counts = schedd.queue.counts()
        name = self.ad_name
        schedd_ad = ClassAd()
        schedd_ad["MyType"] = "Scheduler"
        schedd_ad["Name"] = name
        schedd_ad["Machine"] = schedd.host_name
        schedd_ad["TotalIdleJobs"] = counts.get(JobStatus.IDLE, 0)
        schedd_ad["TotalRunningJobs"] = counts.get(JobStatus.RUNNING, 0)
        schedd_ad["TotalHeldJobs"] = counts.get(JobStatus.HELD, 0)
        schedd_ad["TotalRemovedJobs"] = counts.get(JobStatus.REMOVED, 0)
        schedd_ad["MyAddress"] = self.address
        # HTCondor's clients choose their protocol by the schedd's version.
        schedd_ad["CondorVersion"] = VERSION
        ads = [schedd_ad]
        tallies: dict[str, dict[str, int]] = {}
        for submitter_name, idle in schedd.idle_counts().items():
            tallies.setdefault(submitter_name, {})["IdleJobs"] = idle
        for running in schedd.running.values():
            tally = tallies.setdefault(running.submitter, {})
            tally["RunningJobs"] = tally.get("RunningJobs", 0) + 1
        for job in schedd.queue.jobs(statuses=(JobStatus.HELD,)):
            tally = tallies.setdefault(schedd.submitter(job), {})
            tally["HeldJobs"] = tally.get("HeldJobs", 0) + 1
        for submitter_name, tally in sorted(tallies.items()):
            ad = ClassAd()
            ad["MyType"] = "Submitter"
            ad["Name"] = submitter_name
            ad["ScheddName"] = name
            # Where a negotiator in another process reaches this schedd (HTCondor's name).
            ad["ScheddIpAddr"] = self.address
            for column in ("RunningJobs", "IdleJobs", "HeldJobs"):
                ad[column] = tally.get(column, 0)
            ads.append(ad)
        self.collector.update(ads, now)
