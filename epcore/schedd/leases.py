"""Job leases on the schedd's side: a running job whose startd cannot be reached for its
JobLeaseDuration goes back to idle and runs elsewhere, as HTCondor's schedd does when a
claim's lease runs out under a disconnected shadow (schedd.cpp's keep-alive pass: the match
is deleted without a RELEASE_CLAIM, the job requeued as JOB_RECONNECT_FAILED).

- The lease is the job's JobLeaseDuration (condor_submit gives every job
  JOB_DEFAULT_LEASE_DURATION, 2400 s); a job without one has 6 x ALIVE_INTERVAL, the claim
  lease HTCondor's startd gives a claim the schedd asked with that alive interval.
- A claim's lease is renewed whenever its startd is reachable (the link's last contact did
  not fail: ``reachable``); LastJobLeaseRenewal in the job's ad says when, written at most
  once per keep-alive round (ALIVE_INTERVAL / 3), as HTCondor writes it with each round.
- A startd that was unreachable and answers again before the lease ran out has reconnected:
  NumJobReconnects of each of its running jobs grows by one (HTCondor's shadow counts a
  successful reconnect there). JobDisconnectedDate says since when a job's startd has not
  answered, and is undefined again once it answers, as HTCondor's shadow keeps it.
- The job's event log tells the user (:mod:`epcore.schedd.joblog`): disconnected (022) when
  its startd stops answering, reconnected (023) when it answers again, reconnect failed
  (024) when the lease runs out.
- A startd that answers an ALIVE that it has no such claim (-1, :mod:`epcore.links.startd`)
  has the job requeued at its next check, with HTCondor's shadow's reason "Claim not found
  at execution machine": the claim is gone, its lease need not run out.
- At the lease's end the job is requeued with HTCondor's shadow's reason, "Job disconnected
  too long: JobLeaseDuration (N seconds) expired", its claim forgotten: a result that comes
  later for that claim is refused (:mod:`epcore.schedd.results`) and the startd drops it,
  so no job finishes twice.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Container
from typing import Final

from epcore.classad import UNDEFINED, ClassAd
from epcore.errors import EpError, QueueError
from epcore.interfaces import Locator, StartdLink
from epcore.schedd import joblog
from epcore.schedd.claims import RunningJob
from epcore.schedd.schedd import Schedd

#: HTCondor's shadow's reason for a job whose lease ran out (remoteresource.cpp).
EXPIRED_REASON: Final = "Job disconnected too long: JobLeaseDuration ({seconds} seconds) expired"
#: Seconds between two checks (the schedd ticks far more often; leases are minutes).
CHECK_EVERY: Final = 1.0
#: The claim lease HTCondor's startd gives a claim without a job lease, in alive intervals.
ALIVES_PER_LEASE: Final = 6


def lease_seconds(job: ClassAd, alive_interval: float) -> float:
    """The job's lease: JobLeaseDuration when positive, else 6 x ALIVE_INTERVAL."""
    duration = job.evaluate("JobLeaseDuration")
    if isinstance(duration, int | float) and not isinstance(duration, bool) and duration > 0:
        return float(duration)
    return ALIVES_PER_LEASE * alive_interval


def _last_renewal(schedd: Schedd, running: RunningJob) -> float:
    """When a claim first seen was last renewed: LastJobLeaseRenewal when the job's ad keeps
    one from before a restart (HTCondor's schedd reads it back the same way), else the
    job's start."""
    try:
        renewal = schedd.queue.get(running.job_id).evaluate("LastJobLeaseRenewal")
    except QueueError:
        renewal = None
    if isinstance(renewal, int) and not isinstance(renewal, bool):
        return max(float(renewal), running.started_at)
    return running.started_at


def claim_unknown(startds: Locator[StartdLink]) -> Callable[[str, str], bool]:
    """Whether the startd at an address said it has no such claim (a link to another
    process that got -1 for an ALIVE: its ``take_unknown``); each such answer is taken once."""

    def unknown(address: str, claim_id: str) -> bool:
        try:
            link = startds.link(address)
        except EpError:
            return False
        take = getattr(link, "take_unknown", None)
        return bool(take(claim_id)) if callable(take) else False

    return unknown


def startd_reachable(startds: Locator[StartdLink]) -> Callable[[str], bool]:
    """Whether the startd at an address is reachable: a startd in this process always is;
    a link to another process is not while its last contact failed (its ``down``)."""

    def reachable(address: str) -> bool:
        try:
            link = startds.link(address)
        except EpError:
            return False
        return not bool(getattr(link, "down", False))

    return reachable


class JobLeases:
    """The leases of a schedd's running jobs (module docstring); :meth:`check` at each of
    the schedd's ticks."""

    def __init__(
        self,
        reachable: Callable[[str], bool],
        log: logging.Logger,
        unknown: Callable[[str, str], bool] = lambda address, claim_id: False,
    ) -> None:
        self.reachable = reachable
        self.unknown = unknown
        self.log = log
        #: When each running claim's startd was last reachable.
        self.renewed: dict[str, float] = {}
        #: When LastJobLeaseRenewal was last written for each claim.
        self.written: dict[str, float] = {}
        #: Claims whose startd was unreachable at the last check.
        self.disconnected: set[str] = set()
        #: Claims a restart took back whose startd has not answered yet: that answer says
        #: whether they are connected (epcore.schedd.reconnect); only their lease runs.
        self.asking: Container[str] = frozenset()
        self.next_check = 0.0

    def check(self, schedd: Schedd, now: float) -> list[str]:
        """Renew the leases of claims whose startd is reachable, requeue the jobs whose
        lease ran out; the claims given up."""
        if now < self.next_check:
            return []
        self.next_check = now + CHECK_EVERY
        with schedd.queue.batch():
            return self._check(schedd, now)

    def _check(self, schedd: Schedd, now: float) -> list[str]:
        alive_interval = max(schedd.config.get_float("ALIVE_INTERVAL", 300.0), 1.0)
        round_length = max(alive_interval / 3, 1.0)
        reachable: dict[str, bool] = {}
        expired: list[str] = []
        for claim_id, running in list(schedd.running.items()):
            renewed = self.renewed.get(claim_id)
            if renewed is None:
                renewed = self.renewed[claim_id] = _last_renewal(schedd, running)
            if self.unknown(running.startd, claim_id):
                self._gone(schedd, claim_id, running, now)
                expired.append(claim_id)
                continue
            if running.startd not in reachable:
                reachable[running.startd] = self.reachable(running.startd)
            if reachable[running.startd] and claim_id not in self.asking:
                self._renew(schedd, claim_id, running, now, round_length)
                continue
            try:
                job = schedd.queue.get(running.job_id)
            except QueueError:
                continue  # gone from the queue: its claim goes with the next result
            # A claim being asked about is neither: its startd's answer says which.
            if claim_id not in self.asking and claim_id not in self.disconnected:
                self.disconnected.add(claim_id)
                self.log.warning(
                    "job %s: its startd at %s cannot be reached; the job's lease runs out "
                    "unless it answers",
                    running.job_id,
                    running.startd,
                )
                # HTCondor's shadow marks the job disconnected the same way (and clears
                # the mark when it reconnects); a mark already there (a restart found the
                # startd silent) had its event written then.
                if job.evaluate("JobDisconnectedDate") is UNDEFINED:
                    joblog.disconnected(job, running.startd, joblog.SILENT_REASON, now, self.log)
                    with contextlib.suppress(QueueError):
                        schedd.queue.set_attributes(
                            running.job_id, {"JobDisconnectedDate": int(now)}, now
                        )
            seconds = lease_seconds(job, alive_interval)
            if now >= renewed + seconds:
                reason = EXPIRED_REASON.format(seconds=int(seconds))
                self.log.warning("job %s: %s; back to idle", running.job_id, reason)
                joblog.reconnect_failed(job, running.startd, reason, now, self.log)
                schedd.lease_expired(claim_id, reason, now)
                expired.append(claim_id)
        for gone in set(self.renewed) - set(schedd.running):
            self.renewed.pop(gone, None)
            self.written.pop(gone, None)
            self.disconnected.discard(gone)
        return expired

    def _gone(self, schedd: Schedd, claim_id: str, running: RunningJob, now: float) -> None:
        """The startd answered that it has no such claim: the job is requeued now, as at
        the lease's end (a result that comes later for the claim is refused)."""
        self.log.warning(
            "job %s: the startd at %s no longer has its claim; back to idle",
            running.job_id,
            running.startd,
        )
        with contextlib.suppress(QueueError):
            job = schedd.queue.get(running.job_id)
            joblog.reconnect_failed(job, running.startd, joblog.NO_CLAIM_REASON, now, self.log)
        schedd.lease_expired(claim_id, joblog.NO_CLAIM_REASON, now)

    def _renew(
        self, schedd: Schedd, claim_id: str, running: RunningJob, now: float, round_length: float
    ) -> None:
        self.renewed[claim_id] = now
        values: dict[str, object] = {}
        if claim_id in self.disconnected:
            self.disconnected.discard(claim_id)
            self.log.info("job %s: its startd at %s answers again", running.job_id, running.startd)
            try:
                job = schedd.queue.get(running.job_id)
            except QueueError:
                return
            joblog.reconnected(job, running.startd, now, self.log)
            count = job.evaluate("NumJobReconnects")
            values["NumJobReconnects"] = (count if isinstance(count, int) else 0) + 1
            values["JobDisconnectedDate"] = None  # undefined: connected again
        # The job's start is its first renewal (JobCurrentStartDate says it): no write for a
        # job that ends within its first round, as most short jobs do.
        written = self.written.get(claim_id, running.started_at)
        if values or now - written >= round_length:
            values["LastJobLeaseRenewal"] = int(now)
            self.written[claim_id] = now
        if values:
            with contextlib.suppress(QueueError):  # gone meanwhile: nothing to write
                schedd.queue.set_attributes(running.job_id, values, now)
