"""What the schedd knows of a job ad: its submitter, the claims it may reuse, its place in
the queue, and what its end writes into it. Pure functions of the ads."""

from __future__ import annotations

import heapq

from epcore.classad import ClassAd
from epcore.errors import PoolError
from epcore.pool.jobqueue import JobId


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


def reuse_key(job: ClassAd) -> tuple[str, ...]:
    """What two jobs must share for a claim made for one to run the other: the same
    submitter's requests and expressions (the autocluster, as far as a slot can tell)."""
    names = (
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
    return tuple(str(job.get(name, "")) for name in names)


class IdleIndex:
    """The idle jobs of each (submitter, :func:`reuse_key`), in queue order, so that a claim
    finds its next job without reading the whole queue. Entries are checked when taken: a job
    that stopped being idle since it was added is skipped then."""

    def __init__(self) -> None:
        self.heaps: dict[tuple[str, tuple[str, ...]], list[tuple[tuple[float, ...], JobId]]] = {}

    def add(self, job: ClassAd, submitter: str) -> None:
        order = queue_order(job)
        heap = self.heaps.setdefault((submitter, reuse_key(job)), [])
        heapq.heappush(heap, (order, job_id_of(job)))

    def pop(self, submitter: str, key: tuple[str, ...]) -> JobId | None:
        heap = self.heaps.get((submitter, key))
        if not heap:
            return None
        _, job_id = heapq.heappop(heap)
        if not heap:
            del self.heaps[(submitter, key)]
        return job_id


def result_values(job: ClassAd, result: ClassAd, now: float) -> dict[str, object]:
    """The attributes a job's end writes into its ad."""
    values: dict[str, object] = {}
    for name in (
        "ExitCode",
        "ExitBySignal",
        "ExitSignal",
        "ExitReason",
        "ImageSize",
        "ResidentSetSize",
        "MemoryUsage",
        "DiskUsage",
        "RemoteUserCpu",
        "RemoteSysCpu",
        "NumPids",
        "JobDuration",
    ):
        expr = result.lookup(name)
        if expr is not None:
            values[name] = expr
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


def short_name(slot_name: str) -> str:
    """``slot1_2@host`` -> ``slot1_2``: the startd names its slots without the host."""
    return slot_name.split("@", 1)[0]
