"""The pool's requests: what ``ep submit``, ``ep q``, ``ep rm``... ask of a running pool.

A request is a ClassAd with ``Command`` and its arguments, one per line over the pool's
socket (POOL_CONTROL_SOCKET, default ``$(SPOOL)/pool_control``, open to every local user);
the answer is a ClassAd with ``Ok``, ``Error`` when it is false, and the results. Who asks is
known from the socket itself (the kernel's SO_PEERCRED), never from the request: a user may
submit jobs as themselves and act on their own jobs; QUEUE_SUPER_USERS (root and the pool's
own user always) may act on every job and change priorities, vacate and drain.

Requests and their arguments:

- ``NewCluster`` -> ``ClusterId``; ``Submit`` (ClusterId, ClusterAd, Procs, optional
  SubmissionSize: how many jobs the whole submission has, in its first part, so that one over
  a MAX_JOBS_* limit is refused before any of it is queued) -> ``JobIds``
- ``QueryJobs`` (optional Constraint, Projection, History, Limit) -> ``Ads``
- ``Remove`` / ``Hold`` / ``Release`` (JobIds or Constraint, optional Reason) -> ``Done``
  (the job ids acted on) and ``Refused`` (why others were not)
  (DryRun: who may, without acting); ``VacateJobs`` the same for running jobs
- ``Edit`` (JobIds or Constraint, Attribute, Value: an expression; QueryOnly) -> ``Done``;
  all the jobs must be the requester's or nothing is set
- ``Analyze`` (JobId) -> ``Text``
- ``QueryAds`` (optional MyType, Constraint, Projection, Absent) -> ``Ads`` (the collector)
- ``UserPrio`` (optional All) -> ``Ads`` (the accountant's ads)
- ``SetFactor`` / ``SetCeiling`` (-1: none) / ``SetFloor`` / ``SetPriority`` /
  ``SetAccumulatedUsage`` / ``SetBeginUsageTime`` / ``SetLastUsageTime`` (Submitter,
  Value), ``ResetUsage`` /
  ``DeleteSubmitter`` (Submitter)
- ``Vacate`` (optional Slot, Fast), ``Drain`` (How, optional Check, Start), ``CancelDrain``
- ``Reschedule`` (a negotiation cycle soon)
"""

from __future__ import annotations

from collections.abc import Sequence

from epcore.classad import ClassAd
from epcore.runtime.control import SUBMIT_CHUNK, ControlClient, reply_value

COMMANDS = (
    "NewCluster",
    "Submit",
    "QueryJobs",
    "Remove",
    "Hold",
    "Release",
    "VacateJobs",
    "Edit",
    "Analyze",
    "QueryAds",
    "UserPrio",
    "SetFactor",
    "SetCeiling",
    "SetFloor",
    "SetPriority",
    "SetAccumulatedUsage",
    "SetBeginUsageTime",
    "SetLastUsageTime",
    "ResetUsage",
    "DeleteSubmitter",
    "Vacate",
    "Drain",
    "CancelDrain",
    "Reschedule",
)

#: About the most bytes of job ads a client puts in one Submit request: well within the
#: pool's POOL_MAX_REQUEST_SIZE (256 KB by default), so that a big submission goes as several
#: requests, each cheap to parse, rather than one that holds the pool's loop.
SUBMIT_REQUEST_BYTES = 128 * 1024

#: The requests only QUEUE_SUPER_USERS may make.
ADMIN_COMMANDS = frozenset(
    {
        "SetFactor",
        "SetCeiling",
        "SetFloor",
        "SetPriority",
        "SetAccumulatedUsage",
        "SetBeginUsageTime",
        "SetLastUsageTime",
        "ResetUsage",
        "DeleteSubmitter",
        "Vacate",
        "Drain",
        "CancelDrain",
    }
)

__all__ = ["ADMIN_COMMANDS", "COMMANDS", "SUBMIT_CHUNK", "PoolClient"]


def _ads(reply: ClassAd, name: str = "Ads") -> list[ClassAd]:
    ads = reply_value(reply, name)
    return [ad for ad in ads if isinstance(ad, ClassAd)] if isinstance(ads, list) else []


def _texts(reply: ClassAd, name: str) -> list[str]:
    values = reply_value(reply, name)
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def proc_differences(cluster_ad: ClassAd, proc_ad: ClassAd) -> ClassAd:
    """What ``proc_ad`` adds to ``cluster_ad``: its ProcId and every attribute the cluster ad
    does not hold with the same expression.

    A submission goes over the wire as condor_submit sends it, the shared attributes once in
    the cluster ad and only the differences per job: the pool parses and keeps one copy of
    what the jobs share instead of one per job.
    """
    differences = ClassAd()
    for name, expr in proc_ad.items():
        if name.lower() == "procid" or cluster_ad.lookup(name) != expr:
            differences[name] = expr
    return differences


def submit_chunks(cluster_size: int, differences: Sequence[ClassAd]) -> list[list[ClassAd]]:
    """``differences`` split into requests of at most SUBMIT_CHUNK jobs and, with the cluster
    ad's ``cluster_size`` characters, about SUBMIT_REQUEST_BYTES (a job ad larger than that
    goes alone, and the pool says when it is too large)."""
    chunks: list[list[ClassAd]] = []
    current: list[ClassAd] = []
    size = cluster_size
    for proc in differences:
        proc_size = len(str(proc).encode()) + 2
        if current and (len(current) >= SUBMIT_CHUNK or size + proc_size > SUBMIT_REQUEST_BYTES):
            chunks.append(current)
            current, size = [], cluster_size
        current.append(proc)
        size += proc_size
    if current:
        chunks.append(current)
    return chunks


class PoolClient(ControlClient):
    """A blocking client of a running pool (``path``: its POOL_CONTROL_SOCKET); each method
    raises ControlError with the pool's answer when it refuses."""

    daemon = "pool"

    def new_cluster(self) -> int:
        value = reply_value(self.call("NewCluster"), "ClusterId")
        assert isinstance(value, int)
        return value

    def submit(
        self,
        cluster_id: int,
        cluster_ad: ClassAd,
        procs: Sequence[ClassAd],
        *,
        submission_size: int | None = None,
    ) -> list[str]:
        """Submit ``procs`` to the cluster, in as many requests as SUBMIT_CHUNK and
        SUBMIT_REQUEST_BYTES call for; the job ids. ``submission_size`` (the whole
        submission's job count, for MAX_JOBS_PER_SUBMISSION and the owner limits) goes with
        the first request only."""
        differences = [proc_differences(cluster_ad, proc) for proc in procs]
        ids: list[str] = []
        size = submission_size
        for chunk in submit_chunks(len(str(cluster_ad).encode()), differences):
            extra = {} if size is None else {"SubmissionSize": size}
            reply = self.call(
                "Submit", ClusterId=cluster_id, ClusterAd=cluster_ad, Procs=chunk, **extra
            )
            ids.extend(_texts(reply, "JobIds"))
            size = None
        return ids

    def query_jobs(
        self,
        constraint: str | None = None,
        projection: Sequence[str] | None = None,
        *,
        history: bool = False,
        limit: int | None = None,
    ) -> list[ClassAd]:
        reply = self.call(
            "QueryJobs",
            Constraint=constraint,
            Projection=list(projection) if projection else None,
            History=history,
            Limit=limit,
        )
        return _ads(reply)

    def act(
        self,
        command: str,
        *,
        job_ids: Sequence[str] = (),
        constraint: str | None = None,
        reason: str | None = None,
    ) -> tuple[list[str], list[str]]:
        """``Remove``, ``Hold`` or ``Release``: the job ids acted on, and the refusals."""
        reply = self.call(
            command,
            JobIds=list(job_ids) if job_ids else None,
            Constraint=constraint,
            Reason=reason,
        )
        return _texts(reply, "Done"), _texts(reply, "Refused")

    def analyze(self, job_id: str) -> str:
        text = reply_value(self.call("Analyze", JobId=job_id), "Text")
        return text if isinstance(text, str) else ""

    def query_ads(
        self,
        my_type: str | None = "Machine",
        constraint: str | None = None,
        projection: Sequence[str] | None = None,
        *,
        absent: bool = False,
    ) -> list[ClassAd]:
        reply = self.call(
            "QueryAds",
            MyType=my_type,
            Constraint=constraint,
            Projection=list(projection) if projection else None,
            Absent=absent,
        )
        return _ads(reply)

    def user_prio(self, *, all_users: bool = False) -> list[ClassAd]:
        return _ads(self.call("UserPrio", All=all_users))

    def set_submitter(self, command: str, submitter: str, value: float | None = None) -> None:
        """``SetFactor``, ``SetCeiling``, ``SetFloor``, ``ResetUsage`` or ``DeleteSubmitter``."""
        self.call(command, Submitter=submitter, Value=value)

    def vacate(self, slot: str | None = None, fast: bool = False) -> list[str]:
        return _texts(self.call("Vacate", Slot=slot, Fast=fast), "Done")

    def drain(self, how: str, check: str | None = None, start: str | None = None) -> None:
        self.call("Drain", How=how, Check=check, Start=start)

    def cancel_drain(self) -> None:
        self.call("CancelDrain")

    def reschedule(self) -> None:
        self.call("Reschedule")
