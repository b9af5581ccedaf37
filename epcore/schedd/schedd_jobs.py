"""What the schedd knows of a job ad: its submitter, the claims it may reuse, its place in
the queue, and what its end writes into it. Pure functions of the ads."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

import attrs

from epcore.classad import ClassAd, Expr
from epcore.classad.references import ReferenceIndex
from epcore.errors import PoolError
from epcore.interfaces import Significance, SubmitterJobs
from epcore.jobs.updates import job_updates

# A negotiator in another process bounds a request's count by the same capacity
# (epcore.links.negotiate.as_jobs): the one definition is the protocol's.
from epcore.net.negotiation import match_capacity as match_capacity
from epcore.schedd.jobqueue import JobId


def submitter_of(job: ClassAd, uid_domain: str) -> str:
    """The accounting principal of ``job``: ``nice-user.<owner>@domain`` for nice users,
    ``<AccountingGroup>@domain`` for grouped jobs, else the job's User."""
    owner = job.evaluate("Owner")
    owner_text = owner if isinstance(owner, str) else "unknown"
    if job.evaluate("NiceUser") is True:
        return f"nice-user.{owner_text}@{uid_domain}"
    group = job.evaluate("AccountingGroup")
    if isinstance(group, str) and group:
        return f"{group}@{uid_domain}"
    user = job.evaluate("User")
    return user if isinstance(user, str) else f"{owner_text}@{uid_domain}"


#: What two jobs must share for a claim made for one to run the other.
ReuseKey = tuple[Expr | None, ...]

_REUSE_ATTRIBUTES = (
    "Owner",
    "AccountingGroup",
    "NiceUser",
    "JobUniverse",
    "RequestCpus",
    "RequestMemory",
    "RequestDisk",
    "RequestGPUs",
    "Requirements",
    "Rank",
    "DockerImage",
)
#: With CLAIM_RECYCLING_CONSIDER_LIMITS (true by default, as in HTCondor) a claim matched
#: under some concurrency limits runs only jobs asking for the same ones; without it the
#: limits are left out of the key (the negotiator's counts then lag behind until the next
#: cycle rebuilds them from the slot ads).
_WITH_LIMITS = (*_REUSE_ATTRIBUTES, "ConcurrencyLimits")


def reuse_key(job: ClassAd, consider_limits: bool = True) -> ReuseKey:
    """What two jobs must share for a claim made for one to run the other: the same
    submitter's requests and expressions (the autocluster, as far as a slot can tell), and
    with ``consider_limits`` the same concurrency limits. The expressions themselves, which
    compare by their trees, not their text: a queue of thousands is keyed without unparsing
    each of its expressions."""
    return tuple(
        job.lookup(name) for name in (_WITH_LIMITS if consider_limits else _REUSE_ATTRIBUTES)
    )


class IdleIndex:
    """The idle jobs of each (submitter, :func:`reuse_key`), in queue order, so that a claim
    finds its next job without reading the whole queue. Entries are checked when taken: a job
    that stopped being idle since it was added is skipped then."""

    def __init__(self, consider_limits: bool = True) -> None:
        self.heaps: dict[tuple[str, ReuseKey], list[tuple[tuple[float, ...], JobId]]] = {}
        #: CLAIM_RECYCLING_CONSIDER_LIMITS, fixed for the index's life: its keys depend on it.
        self.consider_limits = consider_limits

    def add(self, job: ClassAd, submitter: str) -> None:
        order = queue_order(job)
        heap = self.heaps.setdefault((submitter, reuse_key(job, self.consider_limits)), [])
        heapq.heappush(heap, (order, job_id_of(job)))

    def pop(self, submitter: str, key: ReuseKey) -> JobId | None:
        heap = self.heaps.get((submitter, key))
        if not heap:
            return None
        _, job_id = heapq.heappop(heap)
        if not heap:
            del self.heaps[(submitter, key)]
        return job_id


@attrs.frozen
class IdleFacts:
    """What a cycle needs to know of an idle job, read from its ad once: its submitter,
    its place in the queue, and its kind (a number for its :func:`reuse_key`)."""

    submitter: str
    order: tuple[float, float, int, int]
    kind: int


def matching_names(
    significance: Significance, slots: Sequence[ClassAd], jobs: Sequence[ClassAd]
) -> tuple[str, ...] | None:
    """The names of the job attributes a cycle on ``slots`` may read (what the negotiator's
    own expressions and always-read names in ``significance``, the slots' and the ``jobs``'
    expressions name, and what those names' bindings name in turn); None when an expression
    can read any attribute."""
    index = ReferenceIndex([*slots, *jobs])
    return index.closure(significance.expressions, significance.always_read).names


class JobKinds:
    """The :class:`IdleFacts` of the idle jobs, each worked out once per job: reading and
    comparing the ads of thousands of jobs at every negotiation cycle would cost more than the
    cycle. Two jobs are of one kind when their :func:`reuse_key` and their expressions for
    every name matchmaking may read (:func:`matching_names`) are the same: the slots cannot
    tell them apart. None of these attributes changes while a job is queued."""

    def __init__(self, uid_domain: str) -> None:
        self.uid_domain = uid_domain
        self.of_job: dict[JobId, IdleFacts] = {}
        self.numbers: dict[tuple[object, ...], int] = {}
        #: Kinds whose jobs ask for less than one CPU: a slot may take any number of them.
        self.uncounted: set[int] = set()
        #: The first job seen of each kind (whose ad tells what the kind's jobs name).
        self.first: dict[int, JobId] = {}
        #: The names the kinds tell apart; None: every job is a kind of its own.
        self.names: tuple[str, ...] | None = ()

    def distinguish(self, names: tuple[str, ...] | None) -> None:
        """Tell jobs apart by their expressions for ``names`` from now on, and for the names
        they were told apart by before: a name too many only makes kinds smaller, whereas
        working out every job's kind again costs seconds in a long queue."""
        if names is not None and self.names is not None:
            names = tuple(sorted({*self.names, *names}))
        if names != self.names:
            self.names = names
            self.of_job, self.numbers, self.uncounted, self.first = {}, {}, set(), {}

    def representatives(self) -> list[JobId]:
        """One job of each kind."""
        return list(self.first.values())

    def facts(self, job_id: JobId, load: Callable[[JobId], ClassAd]) -> IdleFacts:
        """The facts of ``job_id``, from its ad (``load``) the first time."""
        found = self.of_job.get(job_id)
        if found is None:
            job = load(job_id)
            key: tuple[object, ...]
            if self.names is None:
                key = (job_id,)
            else:
                key = (*reuse_key(job), *(job.lookup(name) for name in self.names))
            kind = self.numbers.get(key)
            if kind is None:
                kind = self.numbers[key] = len(self.numbers)
                self.first[kind] = job_id
                cpus = job.evaluate("RequestCpus")
                if not isinstance(cpus, int | float) or isinstance(cpus, bool) or cpus < 1:
                    self.uncounted.add(kind)
            found = IdleFacts(submitter_of(job, self.uid_domain), queue_order(job), kind)
            self.of_job[job_id] = found
        return found

    def by_submitter(
        self, ids: Sequence[JobId], load: Callable[[JobId], ClassAd]
    ) -> dict[str, list[tuple[IdleFacts, JobId]]]:
        """``ids`` grouped by submitter, each group in queue order; the facts of jobs not
        among ``ids`` are forgotten."""
        groups: dict[str, list[tuple[IdleFacts, JobId]]] = {}
        kept: dict[JobId, IdleFacts] = {}
        for job_id in ids:
            found = kept[job_id] = self.facts(job_id, load)
            groups.setdefault(found.submitter, []).append((found, job_id))
        self.of_job = kept
        kinds = {found.kind for found in kept.values()}
        self.first = {kind: job for kind, job in self.first.items() if kind in kinds}
        if len(self.numbers) > 2 * len(kinds) + 64:
            # Kinds no job has any more: numbered afresh as the jobs come again.
            self.of_job, self.numbers, self.uncounted, self.first = {}, {}, set(), {}
        for group in groups.values():
            group.sort(key=lambda entry: entry[0].order)
        return groups

    def offered(
        self, ids: Sequence[JobId], capacity: int, load: Callable[[JobId], ClassAd]
    ) -> list[SubmitterJobs]:
        """Each submitter's idle jobs (``ids``) in queue order, cut to the first ``capacity``
        of each kind: jobs the slots cannot tell apart beyond that many cannot match in one
        cycle, so the negotiator need not read them (HTCondor's schedd sends it one request
        per autocluster, with a count). A kind whose jobs ask for less than one CPU is not
        cut. Only the ads offered are read."""
        offered: list[SubmitterJobs] = []
        for submitter, group in sorted(self.by_submitter(ids, load).items()):
            taken: dict[int, int] = {}
            jobs: list[ClassAd] = []
            for found, job_id in group:
                count = taken.get(found.kind, 0)
                if count < capacity or found.kind in self.uncounted:
                    taken[found.kind] = count + 1
                    jobs.append(load(job_id))
            offered.append(SubmitterJobs(submitter, tuple(jobs)))
        return offered


def result_values(job: ClassAd, result: ClassAd, now: float) -> dict[str, object]:
    """The attributes a job's end writes into its ad."""
    values: dict[str, object] = {}
    for name in (
        "ExitCode",
        "ExitBySignal",
        "ExitSignal",
        "ExitReason",
        "VacateReason",
        "VacateReasonCode",
        "VacateReasonSubCode",
        "ImageSize",
        "ResidentSetSize",
        "MemoryUsage",
        "DiskUsage",
        "RemoteUserCpu",
        "RemoteSysCpu",
        "NumPids",
        "JobDuration",
        "TransferInStarted",
        "TransferInFinished",
        "TransferOutStarted",
        "TransferOutFinished",
    ):
        expr = result.lookup(name)
        if expr is not None:
            values[name] = expr
    # What the job's runtime asked for (VM_CkptMac), as HTCondor's shadow copies the
    # starter's update ad into the job.
    values.update(job_updates(result))
    # The bytes a run's file transfer moved add up over the job's runs, as HTCondor's do
    # (BytesSent: what the execute host sent back; BytesRecvd: the input it received).
    for name in ("BytesSent", "BytesRecvd"):
        moved, before = result.evaluate(name), job.evaluate(name)
        if isinstance(moved, int | float) and not isinstance(moved, bool):
            values[name] = float(moved) + (
                float(before) if isinstance(before, int | float) else 0.0
            )
    started = job.evaluate("JobCurrentStartDate")
    wall = job.evaluate("RemoteWallClockTime")
    if isinstance(started, int):
        spent = max(now - started, 0.0)
        values["RemoteWallClockTime"] = (
            float(wall) if isinstance(wall, int | float) else 0.0
        ) + spent
        values["CumulativeSlotTime"] = values["RemoteWallClockTime"]
    values["JobLastOutcome"] = result.get("JobOutcome", "")
    if result.evaluate("JobOutcome") == "exited":
        values["CompletionDate"] = int(now)
    return values


def job_id_of(ad: ClassAd) -> JobId:
    """The JobId of a job ad or of a result (PoolError without integer ids)."""
    cluster, proc = ad.evaluate("ClusterId"), ad.evaluate("ProcId")
    if not isinstance(cluster, int) or not isinstance(proc, int):
        raise PoolError(f"a job ad without integer ClusterId and ProcId: {ad}")
    return JobId(cluster, proc)


def queue_order(job: ClassAd) -> tuple[float, float, int, int]:
    prio = job.evaluate("JobPrio")
    qdate = job.evaluate("QDate")
    job_id = job_id_of(job)
    return (
        -(float(prio) if isinstance(prio, int | float) else 0.0),
        float(qdate) if isinstance(qdate, int | float) else 0.0,
        job_id.cluster,
        job_id.proc,
    )
