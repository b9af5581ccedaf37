"""The schedd of the personal pool: the job queue's agent towards the startd.

It turns the negotiator's matches into claims and running jobs, reuses a claim for the next
idle job of the same autocluster when a job ends, gives claims back when it has nothing
more for them, keeps their leases alive, and writes every job's fate into the queue: an
exit completes the job (unless its OnExitHold or OnExitRemove say otherwise), a hold from
the starter holds it with the starter's code and reason, an eviction (vacate, preemption,
shutdown, a lost starter) puts it back to idle. A preempting claim, or a claim on a
partitionable slot waiting for the dynamic slots it preempts to go, is activated once the
startd has the slot ready. Every PERIODIC_EXPR_INTERVAL it applies the jobs' periodic_* and
the pool's SYSTEM_PERIODIC_* expressions (:mod:`epcore.schedd.schedd_policy`). It keeps the
MAX_JOBS_* limits (:mod:`epcore.schedd.limits`, which also says how one owner's reused claims
give way to other submitters).

Startds are reached through links (:class:`~epcore.interfaces.StartdLink`) that a locator
finds by the startd's address (its slot ads' MyAddress): every claim is kept with the address
of its startd and the full name of its slot (``slot1@host``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError, PoolError, QueueError
from epcore.interfaces import (
    ClaimPending,
    Locator,
    Match,
    Significance,
    StartdLink,
    SubmitterJobs,
)
from epcore.jobs.codes import HoldCode
from epcore.schedd.jobqueue import JobId, JobQueue, JobStatus
from epcore.schedd.limits import QueueLimits, check_submission
from epcore.schedd.schedd_jobs import (
    IdleIndex,
    JobKinds,
    ReuseKey,
    job_id_of,
    match_capacity,
    matching_names,
    result_values,
    reuse_key,
    submitter_of,
)
from epcore.schedd.schedd_policy import PeriodicPolicy
from epcore.schedd.transfer import TransferKeys
from epcore.submit import SubmittedCluster, expand_match_references

#: How long a claim waiting for its slot (a preempting claim, or a partitionable slot whose
#: dynamic slots are being preempted) may wait before the schedd gives it up.
PENDING_CLAIM_PATIENCE = 600.0


@attrs.frozen
class RunningJob:
    """A job the schedd has started: its claim, the address of the claim's startd and the
    full name of the slot running it."""

    job_id: JobId
    claim_id: str
    startd: str
    slot: str
    submitter: str
    key: ReuseKey
    started_at: float
    #: The slot ad the claim was matched with (for $$() in the next jobs on the claim); None
    #: for a job taken back after a restart.
    slot_ad: ClassAd | None = None


@attrs.frozen
class PendingClaim:
    """A match waiting for its slot: a preempting claim (``claim_id`` set) until the slot is
    Claimed/Idle for it, or a partitionable slot (``claim_id`` None) until enough of it is
    free after the preemption of ``preempts``. ``startd`` is the slot's startd's address."""

    job_id: JobId
    submitter: str
    startd: str
    slot: str
    claim_id: str | None
    by_priority: bool
    since: float
    preempts: tuple[str, ...] = ()
    #: The job as matched ($$() expanded) and the slot's ad, for the claim asked later.
    job: ClassAd | None = None
    slot_ad: ClassAd | None = None


def _ended(
    jobs: dict[JobId, ClassAd], history: Callable[[set[str]], Iterable[ClassAd]]
) -> dict[JobId, ClassAd]:
    """The results ``history`` has for ``jobs`` on the claims the queue says they run on."""
    public = {job_id: str(job.evaluate("PublicClaimId")) for job_id, job in jobs.items()}
    found: dict[JobId, ClassAd] = {}
    for result in history(set(public.values())):
        claim = result.evaluate("ClaimId")
        try:
            job_id = job_id_of(result)
        except PoolError:
            continue
        if isinstance(claim, str) and public.get(job_id) == claim.rsplit("#", 1)[0]:
            found[job_id] = result
    return found


class Schedd:
    """The queue's agent (see the module docstring); ``clock`` gives epoch seconds."""

    def __init__(
        self,
        config: Config,
        queue: JobQueue,
        startds: Locator[StartdLink],
        *,
        host_name: str,
        log: logging.Logger,
        clock: Callable[[], float],
    ) -> None:
        self.config = config
        self.queue = queue
        self.startds = startds
        self.host_name = host_name
        self.log = log
        self.clock = clock
        self.uid_domain = config.get("UID_DOMAIN") or host_name
        self.running: dict[str, RunningJob] = {}
        self.pending: dict[JobId, PendingClaim] = {}
        #: Set when claims were given back while idle jobs wait: a negotiation is wanted.
        self.wants_negotiation = False
        self.next_alive = 0.0
        self.idle = IdleIndex(config.get_bool("CLAIM_RECYCLING_CONSIDER_LIMITS", True))
        self.kinds = JobKinds(self.uid_domain)
        #: Clusters handed out by new_cluster, and who may queue jobs in them.
        self.open_clusters: dict[int, int] = {}
        self.started_clusters: set[int] = set()
        #: Jobs each open cluster has queued so far (MAX_JOBS_PER_SUBMISSION).
        self.submitted: dict[int, int] = {}
        self.limits = QueueLimits.from_config(config)
        self.limits_config = config
        self.periodic = PeriodicPolicy(config, log)
        #: The file-transfer keys, when the schedd serves transfers (build_pool sets it).
        self.transfers: TransferKeys | None = None
        #: The job leases' check at each tick (epcore.schedd.leases; None: no leases kept,
        #: every startd in this process).
        self.lease_check: Callable[[Schedd, float], object] | None = None
        #: After a restart, takes back a running job whose claim is on a startd elsewhere
        #: (epcore.schedd.reconnect); False: the job is requeued.
        self.reconnect: Callable[[Schedd, JobId, ClassAd, float], bool] | None = None
        for job in queue.jobs(statuses=(JobStatus.IDLE,)):
            self.idle.add(job, submitter_of(job, self.uid_domain))

    def submitter(self, job: ClassAd) -> str:
        """The accounting principal of ``job`` in this pool (:func:`submitter_of`)."""
        return submitter_of(job, self.uid_domain)

    def now_idle(self, job_id: JobId) -> None:
        """``job_id`` became idle (submitted, released, evicted): index it for claim reuse."""
        job = self.queue.get(job_id)
        self.idle.add(job, submitter_of(job, self.uid_domain))

    # -- reading the queue ----------------------------------------------------------------

    def busy_jobs(self) -> set[JobId]:
        """Jobs running or waiting for a pending claim (not offered to the negotiator)."""
        return {r.job_id for r in self.running.values()} | set(self.pending)

    def idle_ids(self) -> list[JobId]:
        """The idle jobs not running nor waiting for a pending claim."""
        busy = self.busy_jobs()
        return [i for i in self.queue.job_ids(statuses=(JobStatus.IDLE,)) if i not in busy]

    def idle_jobs(self) -> list[SubmitterJobs]:
        """Every submitter's idle jobs in the schedd's order (JobPrio, then QDate, cluster,
        proc)."""
        groups = self.kinds.by_submitter(self.idle_ids(), self.queue.get)
        return [
            SubmitterJobs(name, tuple(self.queue.get(job_id) for _, job_id in group))
            for name, group in sorted(groups.items())
        ]

    def idle_counts(self) -> dict[str, int]:
        """How many idle jobs each submitter has (without reading their ads again)."""
        groups = self.kinds.by_submitter(self.idle_ids(), self.queue.get)
        return {name: len(group) for name, group in groups.items()}

    def negotiable_jobs(
        self, slots: Sequence[ClassAd], significance: Significance, now: float
    ) -> list[SubmitterJobs]:
        """The idle jobs to offer the negotiator for ``slots``: none while MAX_JOBS_RUNNING
        jobs run, as HTCondor's schedd asks for no more slots then, and of each submitter's
        jobs that the slots cannot tell apart only as many as they could take
        (:func:`match_capacity`, :class:`JobKinds`), so that a cycle's cost does not grow
        with one user's queue."""
        if not self.queue_limits().may_start(len(self.busy_jobs())):
            return []
        names = matching_names(significance, slots, self.representative_jobs())
        return self.offer(names, match_capacity(slots))

    def representative_jobs(self) -> list[ClassAd]:
        """One job of each kind the schedd tells apart now (their expressions name what
        else a cycle may read)."""
        return [self.queue.get(i) for i in self.kinds.representatives() if i in self.queue]

    def offer(self, names: tuple[str, ...] | None, capacity: int) -> list[SubmitterJobs]:
        """The idle jobs told apart by ``names`` (None: by every attribute), of each kind at
        most ``capacity`` (:meth:`negotiable_jobs`; a negotiator in another process sends
        the names its slots read and the capacity)."""
        self.kinds.distinguish(names)
        return self.kinds.offered(self.idle_ids(), capacity, self.queue.get)

    def reserved_slots(self) -> set[str]:
        """Partitionable slots (full names) held back for a pending claim: the resources their
        preempted dynamic slots free are for that claim, not for the next cycle's matches."""
        return {p.slot for p in self.pending.values() if p.claim_id is None}

    # -- matches --------------------------------------------------------------------------

    def take_matches(self, matches: Sequence[Match], now: float) -> None:
        """Claim the slots of this cycle's matches and start their jobs."""
        limits = self.queue_limits()
        with self.queue.batch():
            for match in matches:
                job_id = JobId.parse(match.job_id)
                busy = self.busy_jobs()
                if job_id in busy:
                    continue
                if not limits.may_start(len(busy)):
                    self.log.info("MAX_JOBS_RUNNING (%d) reached", limits.max_jobs_running)
                    break
                try:
                    job = self.queue.get(job_id)
                except QueueError:
                    continue  # removed since the cycle began
                if job.evaluate("JobStatus") != int(JobStatus.IDLE):
                    continue
                self._take_match(match, job_id, job, now)

    def _take_match(self, match: Match, job_id: JobId, job: ClassAd, now: float) -> None:
        address = match.slot.evaluate("MyAddress")
        if not isinstance(address, str):
            self.log.info("job %s: %s has no MyAddress to claim it at", job_id, match.slot_name)
            return
        try:
            startd = self.startds.link(address)
        except EpError as error:
            self.log.info("job %s: cannot claim %s: %s", job_id, match.slot_name, error)
            return
        try:
            job = expand_match_references(job, match.slot)
        except PoolError as error:
            self._hold(job_id, f"cannot expand $$() at match time: {error}", 1, now)
            return
        job["LastMatchTime"] = int(now)
        preempts = tuple(name for name in match.preempts if name != match.slot_name)
        for slot in preempts:
            self._preempt(startd, slot)
        try:
            claim_id = startd.claim(
                match.slot_name,
                job,
                self.host_name,
                by_priority=match.reason == "priority",
            )
        except EpError as error:
            if preempts or isinstance(error, ClaimPending):
                # The partitionable slot frees up as the preempted jobs go, or a remote
                # startd's answer comes later (epcore.links.startd): claim it then.
                self.pending[job_id] = PendingClaim(
                    job_id, match.submitter, address, match.slot_name, None, False, now,
                    preempts, job, match.slot,
                )  # fmt: skip
                return
            self.log.info("job %s: the claim of %s was refused: %s", job_id, match.slot_name, error)
            return
        if match.reason == "no_preemption" and startd.claim_ready(claim_id):
            self._activate(job_id, job, address, claim_id, match.submitter, now, slot_ad=match.slot)
        else:
            if match.reason == "no_preemption":
                # A slot in Backfill takes the claim once its backfill client has let it go.
                self.log.info("job %s: waiting for %s to be free", job_id, match.slot_name)
            else:
                self.log.info(
                    "job %s: preempting %s (by %s)", job_id, match.slot_name, match.reason
                )
            self.pending[job_id] = PendingClaim(
                job_id,
                match.submitter,
                address,
                match.slot_name,
                claim_id,
                match.reason == "priority",
                now,
            )

    def _preempt(self, startd: StartdLink, slot: str) -> None:
        try:
            startd.vacate(slot)
        except EpError as error:
            self.log.warning("cannot preempt %s: %s", slot, error)

    def _activate(
        self,
        job_id: JobId,
        job: ClassAd,
        address: str,
        claim_id: str,
        submitter: str,
        now: float,
        *,
        reused: bool = False,
        slot_ad: ClassAd | None = None,
    ) -> bool:
        """Start ``job`` on ``claim_id`` of the startd at ``address``; False (and the claim
        given back) when refused."""
        sent = job if reused else None
        if self.transfers is not None:
            # A job whose files may travel carries the key to them (epcore.schedd.transfer).
            offered = self.transfers.offer(str(job_id), job)
            sent = offered if offered is not None else sent
        try:
            self.startds.link(address).activate(claim_id, sent)
        except EpError as error:
            self.log.info("job %s: activation refused: %s", job_id, error)
            self._give_back(address, claim_id)
            return False
        slot = self._record_start(job_id, job, address, claim_id, now, reused=reused)
        self.running[claim_id] = RunningJob(
            job_id,
            claim_id,
            address,
            slot,
            submitter,
            reuse_key(job, self.idle.consider_limits),
            now,
            slot_ad,
        )
        return True

    def _record_start(
        self, job_id: JobId, job: ClassAd, address: str, claim_id: str, now: float, *, reused: bool
    ) -> str:
        """Write in the queue that ``job`` runs on ``claim_id``; the slot's full name."""
        slot = self._slot_of(address, claim_id) or "?"
        remote = slot
        starts = job.evaluate("NumJobStarts")
        matches = job.evaluate("NumJobMatches")
        values: dict[str, object] = {
            "RemoteHost": remote,
            "LastRemoteHost": remote,
            "JobCurrentStartDate": int(now),
            "NumJobStarts": (starts if isinstance(starts, int) else 0) + 1,
            "NumJobMatches": (matches if isinstance(matches, int) else 0) + (0 if reused else 1),
            "PublicClaimId": claim_id.rsplit("#", 1)[0],
            # Kept for a restart to reconnect (epcore.schedd.reconnect); ClaimId is private.
            "ClaimId": claim_id,
            "StartdIpAddr": address,
        }
        if not isinstance(job.evaluate("JobStartDate"), int):
            values["JobStartDate"] = int(now)
        for name in job:
            if name.upper().startswith("MATCH_"):
                values[name] = job[name]
        self.queue.set_attributes(job_id, values, now)
        self.queue.change_status(job_id, JobStatus.RUNNING, now)
        return slot

    def _slot_of(self, address: str, claim_id: str) -> str | None:
        """The full name of the slot ``claim_id`` holds at ``address`` (None: no slot has it,
        or that startd cannot be reached)."""
        try:
            return self.startds.link(address).slot_of(claim_id)
        except EpError:
            return None

    def _give_back(self, address: str, claim_id: str) -> None:
        try:
            self.startds.link(address).release(claim_id)
        except EpError as error:
            self.log.info("release of a claim failed: %s", error)
        self.wants_negotiation = True

    # -- results --------------------------------------------------------------------------

    def job_result(self, result: ClassAd, now: float) -> None:
        """A job's end, as the startd recorded it: update the queue, then reuse the claim for
        the next job of the same autocluster or give it back."""
        claim_id = result.evaluate("ClaimId")
        running = self.running.pop(claim_id, None) if isinstance(claim_id, str) else None
        job_id = running.job_id if running is not None else job_id_of(result)
        if self.transfers is not None:
            self.transfers.forget(str(job_id))
        with self.queue.batch():
            try:
                self._record(job_id, result, now)
            except QueueError as error:
                self.log.warning("job %s ended but the queue does not take it: %s", job_id, error)
            except Exception as error:
                # Held, not retried: a fault on this job's ad would otherwise come back with
                # every restart that recovers it and stop the pool for everyone again.
                self.log.exception("job %s ended but handling its end failed; holding it", job_id)
                self._hold_failed(job_id, error, now)
            if running is not None:
                self._next_on_claim(running, now)

    def _record(self, job_id: JobId, result: ClassAd, now: float) -> None:
        job = self.queue.get(job_id)
        status = job.evaluate("JobStatus")
        values = result_values(job, result, now)
        self.queue.set_attributes(job_id, values, now)
        outcome = result.evaluate("JobOutcome")
        if status in (int(JobStatus.REMOVED), int(JobStatus.HELD)):
            # rm or hold of a running job: it was killed for that; the status stays.
            if status == int(JobStatus.REMOVED):
                self.queue.finish(job_id, now)
            return
        if outcome == "exited":
            self._exited(job_id, self.queue.get(job_id), now)
        elif outcome == "held":
            reason = result.evaluate("HoldReason")
            code = result.evaluate("HoldReasonCode")
            subcode = result.evaluate("HoldReasonSubCode")
            self.queue.change_status(
                job_id,
                JobStatus.HELD,
                now,
                reason=reason if isinstance(reason, str) else "held by the starter",
                code=code if isinstance(code, int) else 0,
                subcode=subcode if isinstance(subcode, int) else 0,
            )
        else:
            self.queue.change_status(job_id, JobStatus.IDLE, now)
            self.now_idle(job_id)

    def _hold_failed(self, job_id: JobId, error: Exception, now: float) -> None:
        reason = f"The schedd failed to handle the end of this job: {type(error).__name__}"
        try:
            self._hold(job_id, reason, 0, now)
        except Exception:
            self.log.exception("job %s: holding it failed too", job_id)

    def _exited(self, job_id: JobId, job: ClassAd, now: float) -> None:
        context = self.config.eval_context.at(now)
        if job.evaluate("OnExitHold", context=context) is True:
            reason = job.evaluate("OnExitHoldReason", context=context)
            subcode = job.evaluate("OnExitHoldSubCode", context=context)
            self.queue.change_status(
                job_id,
                JobStatus.HELD,
                now,
                reason=reason if isinstance(reason, str) else "The on_exit_hold expression is true",
                code=HoldCode.JOB_POLICY,
                subcode=subcode if isinstance(subcode, int) else 0,
            )
            return
        if job.evaluate("OnExitRemove", context=context) is False:
            self.queue.change_status(job_id, JobStatus.IDLE, now)
            self.now_idle(job_id)
            return
        self.queue.change_status(job_id, JobStatus.COMPLETED, now)
        self.queue.finish(job_id, now)

    def _next_on_claim(self, ended: RunningJob, now: float) -> None:
        """Run the next idle job of the same submitter and autocluster on the claim."""
        try:
            startd = self.startds.link(ended.startd)
        except EpError:
            self.wants_negotiation = True  # its startd is gone: the claim with it
            return
        try:
            ready = startd.claim_ready(ended.claim_id)
            if not ready and startd.slot_of(ended.claim_id) is not None:
                # Vacated or preempted: the claim is on its way out.
                self._give_back(ended.startd, ended.claim_id)
        except EpError as error:
            # A remote startd that does not answer now (restarting, cut off) must not undo
            # the job's end recorded in this same batch: the claim is left to its lease.
            self.log.info("claim of job %s not reused: %s", ended.job_id, error)
            ready = False
        if not ready:
            self.wants_negotiation = True
            return
        busy = self.busy_jobs()
        while (job_id := self.idle.pop(ended.submitter, ended.key)) is not None:
            if job_id in busy:
                continue
            try:
                job = self.queue.get(job_id)
            except QueueError:
                continue
            if job.evaluate("JobStatus") != int(JobStatus.IDLE):
                continue
            if ended.slot_ad is None:
                self.now_idle(job_id)
                break  # taken back after a restart: no slot ad for its $$(); negotiate again
            try:
                job = expand_match_references(job, ended.slot_ad)
            except PoolError as error:
                self._hold(job_id, f"cannot expand $$() at match time: {error}", 1, now)
                continue
            if not self._activate(
                job_id,
                job,
                ended.startd,
                ended.claim_id,
                ended.submitter,
                now,
                reused=True,
                slot_ad=ended.slot_ad,
            ):
                self.now_idle(job_id)  # refused: it stays idle (and the claim went back)
            return
        self._give_back(ended.startd, ended.claim_id)

    # -- users' actions -------------------------------------------------------------------

    def queue_limits(self) -> QueueLimits:
        """The MAX_JOBS_* limits of the current configuration."""
        if self.limits_config is not self.config:
            self.limits = QueueLimits.from_config(self.config)
            self.limits_config = self.config
        return self.limits

    def new_cluster(self, uid: int) -> int:
        """A new cluster id for a submission by ``uid`` (never used before, even across
        restarts); only ``uid`` may queue jobs in it. QueueError when the queue is full
        (MAX_JOBS_SUBMITTED)."""
        refusal = self.queue_limits().new_cluster_refusal(self.queue.count())
        if refusal is not None:
            raise QueueError(refusal)
        cluster_id = self.queue.next_cluster_id()
        self.open_clusters[cluster_id] = uid
        return cluster_id

    def submit(
        self, cluster: SubmittedCluster, uid: int, now: float, *, announced: int | None = None
    ) -> list[JobId]:
        """Queue the jobs of ``cluster`` (built by ``epcore.submit``), or more of them
        (a large submission comes in parts); the cluster must be one ``uid`` opened.
        ``announced``: how many jobs the whole submission has, when its first part says so,
        so that a submission over a MAX_JOBS_* limit is refused before any of it is queued."""
        cluster_id = cluster.cluster_id
        if self.open_clusters.get(cluster_id) != uid:
            raise QueueError(f"cluster {cluster_id} was not opened by this user (NewCluster)")
        try:
            check_submission(
                self.queue_limits(),
                self.queue,
                cluster,
                submitted=self.submitted.get(cluster_id, 0),
                announced=announced,
            )
        except QueueError as refusal:
            self.log.info("cluster %d refused: %s", cluster_id, refusal)
            raise
        with self.queue.batch():
            if cluster_id in self.started_clusters:
                ids = self.queue.extend(cluster_id, cluster.cluster_ad, cluster.procs)
            else:
                ids = self.queue.submit(cluster_id, cluster.cluster_ad, cluster.procs)
                self.started_clusters.add(cluster_id)
            for job_id in ids:
                if self.queue.get(job_id).evaluate("JobStatus") == int(JobStatus.IDLE):
                    self.now_idle(job_id)
        self.submitted[cluster_id] = self.submitted.get(cluster_id, 0) + len(ids)
        self.wants_negotiation = True
        self.log.info("submitted %d job(s) in cluster %d", len(ids), cluster.cluster_id)
        return ids

    def remove(self, job_id: JobId, reason: str, now: float) -> None:
        """condor_rm: a running job is killed first and leaves the queue when it is gone."""
        running = job_id in self.busy_jobs()
        self.queue.change_status(job_id, JobStatus.REMOVED, now, reason=reason)
        if running:
            self.stop_running(job_id)
        if job_id not in {r.job_id for r in self.running.values()}:
            self.queue.finish(job_id, now)

    def hold(self, job_id: JobId, reason: str, now: float, code: int = 1, subcode: int = 0) -> None:
        """condor_hold (HoldReasonCode 1 for a user's hold), or a hold by policy: a running
        job is stopped."""
        self.queue.change_status(
            job_id, JobStatus.HELD, now, reason=reason, code=code, subcode=subcode
        )
        self.stop_running(job_id)

    def release(self, job_id: JobId, reason: str, now: float) -> None:
        """condor_release: a held job is idle again."""
        self.queue.change_status(job_id, JobStatus.IDLE, now, reason=reason)
        self.now_idle(job_id)
        self.wants_negotiation = True

    def running_slot(self, job_id: JobId) -> str | None:
        """The slot running ``job_id``, or None."""
        found = (r.slot for r in self.running.values() if r.job_id == job_id and r.slot != "?")
        return next(found, None)

    def vacate_slot(self, slot: str) -> None:
        """Evict the job on ``slot`` (periodic_vacate): it comes back as idle."""
        running = next((r for r in self.running.values() if r.slot == slot), None)
        if running is not None:
            self.startds.link(running.startd).vacate(slot)

    def stop_running(self, job_id: JobId) -> None:
        """Have the startd stop ``job_id`` (rm or hold of a running job): its claim goes back."""
        for claim_id, running in list(self.running.items()):
            if running.job_id == job_id:
                try:
                    self.startds.link(running.startd).release(claim_id)
                except EpError as error:
                    self.log.warning("job %s: cannot release its claim: %s", job_id, error)
        pending = self.pending.pop(job_id, None)
        if pending is not None and pending.claim_id is not None:
            self._give_back(pending.startd, pending.claim_id)

    # -- timers ---------------------------------------------------------------------------

    def tick(self, now: float) -> None:
        """Activate pending claims whose slots are ready, give up stale ones, and keep the
        leases of held claims alive (every ALIVE_INTERVAL / 3)."""
        for job_id, pending in list(self.pending.items()):
            self._try_pending(job_id, pending, now)
        self.periodic.run(self, now)
        if now >= self.next_alive:
            interval = max(self.config.get_float("ALIVE_INTERVAL", 300.0) / 3, 1.0)
            self.next_alive = now + interval
            for claim_id, running in list(self.running.items()):
                # A claim that ended between two turns: its result comes separately.
                with contextlib.suppress(EpError):
                    self.startds.link(running.startd).alive(claim_id)
        if self.lease_check is not None:
            self.lease_check(self, now)

    def lease_expired(self, claim_id: str, reason: str, now: float) -> None:
        """The job on ``claim_id`` lost its lease (epcore.schedd.leases): back to idle for
        ``reason``, the claim forgotten without a release (its startd cannot be reached)."""
        running = self.running.pop(claim_id, None)
        if running is None:
            return
        if self.transfers is not None:
            self.transfers.forget(str(running.job_id))
        lost = ClassAd({"JobOutcome": "evicted", "VacateReason": reason})
        with self.queue.batch():
            try:
                self._record(running.job_id, lost, now)
            except QueueError as error:
                self.log.warning("job %s lost its lease; the queue: %s", running.job_id, error)
        self.wants_negotiation = True

    def _try_pending(self, job_id: JobId, pending: PendingClaim, now: float) -> None:
        try:
            job = self.queue.get(job_id)
        except QueueError:
            job = None
        if job is None or job.evaluate("JobStatus") != int(JobStatus.IDLE):
            del self.pending[job_id]
            if pending.claim_id is not None:
                self._give_back(pending.startd, pending.claim_id)
            return
        if now - pending.since > PENDING_CLAIM_PATIENCE:
            self.log.info("job %s: gave up waiting for %s", job_id, pending.slot)
            del self.pending[job_id]
            if pending.claim_id is not None:
                self._give_back(pending.startd, pending.claim_id)
            return
        try:
            startd = self.startds.link(pending.startd)
        except EpError:
            del self.pending[job_id]  # its startd is gone
            return
        if pending.claim_id is None:
            matched = pending.job if pending.job is not None else job
            try:
                claim_id = startd.claim(pending.slot, matched, self.host_name)
            except ClaimPending:
                return  # a remote startd's answer is not in yet
            except EpError as error:
                if not pending.preempts:
                    # A remote startd refused: the match is void, a new cycle matches anew.
                    del self.pending[job_id]
                    self.log.info(
                        "job %s: the claim of %s was refused: %s", job_id, pending.slot, error
                    )
                    self.wants_negotiation = True
                return  # not free yet
            del self.pending[job_id]
            with self.queue.batch():
                self._activate(
                    job_id, matched, pending.startd, claim_id, pending.submitter, now,
                    slot_ad=pending.slot_ad,
                )  # fmt: skip
            return
        if startd.slot_of(pending.claim_id) is None:
            del self.pending[job_id]  # the startd dropped the claim (the slot went away)
            return
        if startd.claim_ready(pending.claim_id):
            del self.pending[job_id]
            with self.queue.batch():
                self._activate(
                    job_id, job, pending.startd, pending.claim_id, pending.submitter, now
                )

    # -- restart --------------------------------------------------------------------------

    def recover(
        self,
        claims: Iterable[tuple[str, str, ClassAd]],
        now: float,
        history: Callable[[set[str]], Iterable[ClassAd]] = lambda claims: (),
    ) -> None:
        """After a restart: adopt the running jobs whose claims the startds took back
        (``claims``: the startd's address, the claim id and the job ad), and put every other
        job marked running back to idle (its claim is gone with the previous process), unless
        the startds' history (``history``: the recent results of the claims with these public
        ids) has its end:
        the previous process was killed between that record and the queue's, and the job
        must not run again.

        A claim's job may still be idle in the queue (the previous process was killed after
        its starter started and before the queue was written): it runs, so it is marked
        running, never offered again. A claim whose job is no longer wanted (removed, held,
        gone from the queue) is given back, which stops the job.
        """
        adopted: dict[JobId, tuple[str, str]] = {}
        for address, claim_id, job in claims:
            try:
                adopted[job_id_of(job)] = (address, claim_id)
            except PoolError:
                self.log.warning("a restored claim has a job without ClusterId/ProcId")
                self._give_back(address, claim_id)
        with self.queue.batch():
            orphans = {
                job_id: job
                for job in self.queue.jobs(statuses=(JobStatus.RUNNING,))
                if (job_id := job_id_of(job)) not in adopted
            }
            ended = _ended(orphans, history) if orphans else {}
            for job_id in orphans:
                if job_id in ended:
                    self.log.info("job %s: ended before the restart (startd history)", job_id)
                    try:
                        self._record(job_id, ended[job_id], now)
                        continue
                    except QueueError as error:
                        self.log.warning("job %s: its end cannot be recorded: %s", job_id, error)
                reconnect = self.reconnect
                if reconnect is not None and reconnect(self, job_id, orphans[job_id], now):
                    continue
                self.log.info("job %s: its claim did not survive the restart", job_id)
                self.queue.change_status(job_id, JobStatus.IDLE, now)
                self.now_idle(job_id)
            for job_id, (address, claim_id) in adopted.items():
                self._adopt(job_id, address, claim_id, now)

    def _adopt(self, job_id: JobId, address: str, claim_id: str, now: float) -> None:
        """Take ``claim_id``, running ``job_id``, back after a restart (or give it back)."""
        try:
            job = self.queue.get(job_id)
        except QueueError:
            job = None
        status = job.evaluate("JobStatus") if job is not None else None
        if job is None or status not in (int(JobStatus.RUNNING), int(JobStatus.IDLE)):
            self.log.info("job %s: its restored claim is given back (job not wanted)", job_id)
            self._give_back(address, claim_id)
            return
        started = job.evaluate("JobCurrentStartDate")
        if status == int(JobStatus.IDLE):
            self.log.info("job %s: runs on a restored claim; marked running", job_id)
            self._record_start(job_id, job, address, claim_id, now, reused=False)
            started = int(now)
        self.running[claim_id] = RunningJob(
            job_id,
            claim_id,
            address,
            self._slot_of(address, claim_id) or "?",
            submitter_of(job, self.uid_domain),
            reuse_key(job, self.idle.consider_limits),
            float(started) if isinstance(started, int) else now,
        )

    def _hold(self, job_id: JobId, reason: str, code: int, now: float) -> None:
        self.queue.change_status(job_id, JobStatus.HELD, now, reason=reason, code=code)
