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
of its startd and the full name of its slot (``slot1@host``). The claims' records and the
pending ones' progress are in :mod:`epcore.schedd.claims`, a job's end in
:mod:`epcore.schedd.outcomes`, the restart in :mod:`epcore.schedd.recovery`, the activation
of claims on startds elsewhere (off the loop) in :mod:`epcore.schedd.activation`, the
keep-alives in :mod:`epcore.schedd.alives`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

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
from epcore.schedd.activation import Activations, ask_activation, is_remote
from epcore.schedd.alives import KeepAlives, alive_every
from epcore.schedd.claims import PendingClaim, RunningJob, record_start, try_pending
from epcore.schedd.jobqueue import JobId, JobQueue, JobStatus
from epcore.schedd.limits import QueueLimits
from epcore.schedd.outcomes import hold_failed, next_on_claim, record
from epcore.schedd.recovery import recover
from epcore.schedd.schedd_jobs import (
    IdleIndex,
    JobKinds,
    job_id_of,
    match_capacity,
    matching_names,
    reuse_key,
    submitter_of,
)
from epcore.schedd.schedd_policy import PeriodicPolicy
from epcore.schedd.submission import submit_cluster
from epcore.schedd.transfer import TransferKeys
from epcore.submit import SubmittedCluster, expand_match_references


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
        #: The running claims' keep-alives (epcore.schedd.alives).
        self.alives = KeepAlives()
        #: The activations asked of startds elsewhere (epcore.schedd.activation).
        self.activations = Activations()
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
            self.hold_idle(job_id, f"cannot expand $$() at match time: {error}", 1, now)
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
            self.activate(job_id, job, address, claim_id, match.submitter, now, slot_ad=match.slot)
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

    def activate(
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
        check: bool = False,
    ) -> bool:
        """Start ``job`` on ``claim_id`` of the startd at ``address``; False (and the claim
        given back) when refused. A startd elsewhere is asked by a worker, the job pending
        meanwhile (epcore.schedd.activation; ``check``: whether the claim is ready first)."""
        sent = job if reused else None
        if self.transfers is not None:
            # A job whose files may travel carries the key to them (epcore.schedd.transfer).
            offered = self.transfers.offer(str(job_id), job)
            sent = offered if offered is not None else sent
        found = sent.evaluate("TransferKey") if sent is not None else None
        key = found if isinstance(found, str) else None
        if is_remote(self, address):
            before = self.pending.get(job_id)
            waiting = PendingClaim(
                job_id, submitter, address, before.slot if before else "?", claim_id,
                before.by_priority if before else False, before.since if before else now,
                job=job, slot_ad=slot_ad, reused=reused, key=key,
            )  # fmt: skip
            ask_activation(self, waiting, claim_id, sent, check=check)
            return True
        try:
            self.startds.link(address).activate(claim_id, sent)
        except EpError as error:
            self.log.info("job %s: activation refused: %s", job_id, error)
            self.give_back(address, claim_id)
            return False
        self.started(
            job_id, job, address, claim_id, submitter, now,
            reused=reused, slot_ad=slot_ad, key=key,
        )  # fmt: skip
        return True

    def started(
        self,
        job_id: JobId,
        job: ClassAd,
        address: str,
        claim_id: str,
        submitter: str,
        now: float,
        *,
        reused: bool,
        slot_ad: ClassAd | None,
        key: str | None,
        slot: str | None = None,
    ) -> None:
        """The startd took ``job`` on ``claim_id``: it runs (``slot``: the claim's slot, when
        known already)."""
        slot = record_start(
            self, job_id, job, address, claim_id, now, reused=reused, key=key, slot=slot
        )
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
        self.keep_alive(claim_id, job, now, first=False)

    def keep_alive(self, claim_id: str, job: ClassAd, now: float, *, first: bool) -> None:
        """Send ``claim_id``'s keep-alives on its job's lease clock from now on (``first``:
        the first one at once, for a claim taken back after a restart)."""
        every = alive_every(self.config, job)
        self.alives.add(claim_id, every, now if first else now + every)

    def slot_of(self, address: str, claim_id: str) -> str | None:
        """The full name of the slot ``claim_id`` holds at ``address`` (None: no slot has it,
        or that startd cannot be reached)."""
        try:
            return self.startds.link(address).slot_of(claim_id)
        except EpError:
            return None

    def give_back(self, address: str, claim_id: str) -> None:
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
                record(self, job_id, result, now)
            except QueueError as error:
                self.log.warning("job %s ended but the queue does not take it: %s", job_id, error)
            except Exception as error:
                # Held, not retried: a fault on this job's ad would otherwise come back with
                # every restart that recovers it and stop the pool for everyone again.
                self.log.exception("job %s ended but handling its end failed; holding it", job_id)
                hold_failed(self, job_id, error, now)
            if running is not None:
                next_on_claim(self, running, now)

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
        return submit_cluster(self, cluster, uid, announced)

    def remove(self, job_id: JobId, reason: str, now: float) -> None:
        """condor_rm: a running job is killed first and leaves the queue when it is gone."""
        running = job_id in self.busy_jobs()
        self.queue.change_status(job_id, JobStatus.REMOVED, now, reason=reason)
        if running:
            self.stop_running(job_id, removed=True)
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

    def stop_running(self, job_id: JobId, *, removed: bool = False) -> None:
        """Have the startd stop ``job_id`` (rm or hold of a running job): its claim goes back
        (``removed``: told that the job was removed)."""
        for claim_id, running in list(self.running.items()):
            if running.job_id == job_id:
                try:
                    self.startds.link(running.startd).release(claim_id, removed=removed)
                except EpError as error:
                    self.log.warning("job %s: cannot release its claim: %s", job_id, error)
        pending = self.pending.pop(job_id, None)
        if pending is not None and pending.claim_id is not None:
            self.give_back(pending.startd, pending.claim_id)

    # -- timers ---------------------------------------------------------------------------

    def tick(self, now: float) -> None:
        """Activate pending claims whose slots are ready, give up stale ones, and keep the
        leases of running claims alive (epcore.schedd.alives)."""
        for job_id, pending in list(self.pending.items()):
            try_pending(self, job_id, pending, now)
        self.periodic.run(self, now)
        self.alives.send(self.running, self.startds, now)
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
                record(self, running.job_id, lost, now)
            except QueueError as error:
                self.log.warning("job %s lost its lease; the queue: %s", running.job_id, error)
        self.wants_negotiation = True

    # -- restart --------------------------------------------------------------------------

    def recover(
        self,
        claims: Iterable[tuple[str, str, ClassAd]],
        now: float,
        history: Callable[[set[str]], Iterable[ClassAd]] = lambda claims: (),
    ) -> None:
        """After a restart: adopt the running jobs the startds took back, requeue the rest
        (:func:`epcore.schedd.recovery.recover`)."""
        recover(self, claims, now, history)

    def hold_idle(self, job_id: JobId, reason: str, code: int, now: float) -> None:
        self.queue.change_status(job_id, JobStatus.HELD, now, reason=reason, code=code)
