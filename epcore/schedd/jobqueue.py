"""The schedd's durable job queue: job ClassAds in an SQLite file in the pool's spool.

One process and one thread use a queue. Each job's ad is stored as new-syntax ClassAd text
beside indexed columns (cluster, proc, status, owner, submitter), and kept parsed in memory
once read, since parsing is what costs: a status change rewrites one row from the ad in memory.
Every change is one transaction, or part of the enclosing :meth:`JobQueue.batch`, which writes
each changed ad once, at its end.

>>> queue = JobQueue.open(spool / "job_queue.db")            # doctest: +SKIP
>>> cluster = queue.next_cluster_id()                         # doctest: +SKIP
>>> [job] = queue.submit(cluster, cluster_ad, [ClassAd({"ProcId": 0})])  # doctest: +SKIP
>>> queue.change_status(job, JobStatus.HELD, now, reason="disk full")    # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import sqlite3
import types
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path

from epcore.classad import ClassAd, Expr
from epcore.errors import QueueError
from epcore.interfaces.queries import matches, parse_constraint, project, string_attribute
from epcore.schedd.jobqueue_codec import (
    READ_ONLY_ATTRIBUTES,
    AdText,
    job_status_of,
    parse_stored_ad,
    proc_id_of,
)
from epcore.schedd.jobqueue_model import (
    FINISHED_STATUSES,
    JobId,
    JobStatus,
    status_changes,
    transition_allowed,
)
from epcore.schedd.jobqueue_schema import connect

__all__ = ["JobId", "JobQueue", "JobStatus"]

#: The attributes behind the owner and submitter columns (lower case).
_IDENTITY_ATTRIBUTES = frozenset({"owner", "user"})


class JobQueue:
    """A durable queue of job ads (see the module docstring); open with :meth:`open`."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._db = connection
        self.path = path
        self._ads: dict[JobId, ClassAd] = {}  # parsed ads; the truth for ids in _dirty
        self._texts: dict[JobId, AdText] = {}
        self._dirty: dict[JobId, set[str]] = {}  # changed attributes not yet written
        self._depth = 0
        self._counts = self._count_from_database()

    @classmethod
    def open(cls, path: Path | str) -> JobQueue:
        """Open (creating or migrating) the queue at ``path``; QueueError naming the file when
        it is not an epcore job queue."""
        where = Path(path)
        return cls(connect(where), where)

    def close(self) -> None:
        """Close the database (an unfinished batch is lost); closing twice is harmless."""
        self._db.close()
        self._ads.clear()
        self._texts.clear()
        self._dirty.clear()

    def __enter__(self) -> JobQueue:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- transactions ------------------------------------------------------------------------
    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Group many changes in one transaction: all are kept at the end, or none when the
        block raises. Batches nest (the outermost one commits)."""
        with self._transaction():
            yield

    @contextlib.contextmanager
    def _transaction(self, *, one_job_ad: bool = False) -> Iterator[None]:
        # ``one_job_ad``: the block only changes one job's ad in memory, so that the whole
        # write is the single UPDATE of the flush, a transaction of its own in autocommit
        # mode; leaving out BEGIN and COMMIT saves two statements per status change.
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        explicit = not one_job_ad
        if explicit:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as error:
                raise QueueError(f"{self.path}: cannot start a transaction: {error}") from error
        self._depth = 1
        try:
            yield
            self._flush()
            if explicit:
                self._db.execute("COMMIT")
        except BaseException as error:
            self._abandon()
            if isinstance(error, sqlite3.Error):
                raise QueueError(f"{self.path}: job queue write failed: {error}") from error
            raise
        finally:
            self._depth = 0

    def _flush(self) -> None:
        # The columns and the text of each changed job, in one statement per job.
        if not self._dirty:
            return
        for job, names in self._dirty.items():
            ad = self._ads[job]
            text = self._texts.get(job)
            if text is None:
                text = self._texts[job] = AdText(ad)
            else:
                text.refresh(ad, names)
            status = int(job_status_of(ad, job))
            if not any(name.lower() in _IDENTITY_ATTRIBUTES for name in names):
                self._db.execute(
                    "UPDATE jobs SET status = ?, ad = ? WHERE cluster = ? AND proc = ?",
                    (status, str(text), job.cluster, job.proc),
                )
                continue
            self._db.execute(
                "UPDATE jobs SET status = ?, owner = ?, submitter = ?, ad = ?"
                " WHERE cluster = ? AND proc = ?",
                (
                    status,
                    string_attribute(ad, "Owner"),
                    string_attribute(ad, "User"),
                    str(text),
                    job.cluster,
                    job.proc,
                ),
            )
        self._dirty.clear()

    def _abandon(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("ROLLBACK")
        # The parsed ads may hold changes the rollback undid: read them again when needed.
        self._ads.clear()
        self._texts.clear()
        self._dirty.clear()
        with contextlib.suppress(sqlite3.Error):
            self._counts = self._count_from_database()

    # -- cluster ids and submission ----------------------------------------------------------
    def next_cluster_id(self) -> int:
        """A new cluster id, recorded at once so that it is never handed out again."""
        with self._transaction():
            (value,) = self._db.execute(
                "SELECT value FROM counters WHERE name = 'next_cluster'"
            ).fetchone()
            self._db.execute(
                "UPDATE counters SET value = ? WHERE name = 'next_cluster'", (value + 1,)
            )
        return int(value)

    def submit(self, cluster_id: int, cluster_ad: ClassAd, procs: Sequence[ClassAd]) -> list[JobId]:
        """Queue one cluster: each job's ad is the cluster ad overlaid with its proc ad, which
        must hold its ProcId; ClusterId is set, JobStatus defaults to idle. QueueError (and
        nothing queued) for an id not from :meth:`next_cluster_id` or already used, no procs,
        or a missing, negative or repeated ProcId."""
        self._check_new_cluster(cluster_id)
        shared = cluster_ad.copy()
        shared["ClusterId"] = cluster_id
        return self._insert(cluster_id, shared, procs, new_cluster=True)

    def extend(self, cluster_id: int, cluster_ad: ClassAd, procs: Sequence[ClassAd]) -> list[JobId]:
        """Queue more jobs of a cluster :meth:`submit` began (a submission too large for one
        request comes in parts); QueueError (and nothing queued) for a cluster never handed
        out or a ProcId it already has, in the queue or in the history."""
        self._check_handed_out(cluster_id)
        shared = cluster_ad.copy()
        shared["ClusterId"] = cluster_id
        return self._insert(cluster_id, shared, procs, new_cluster=False)

    def _insert(
        self, cluster_id: int, shared: ClassAd, procs: Sequence[ClassAd], *, new_cluster: bool
    ) -> list[JobId]:
        if not procs:
            raise QueueError(f"cluster {cluster_id}: a submission needs at least one job")
        jobs: list[tuple[JobId, ClassAd]] = []
        texts: list[AdText] = []
        shared_text = AdText(shared)
        seen: set[int] = set()
        for proc_ad in procs:
            proc = proc_id_of(proc_ad, cluster_id)
            if proc in seen:
                raise QueueError(f"cluster {cluster_id}: ProcId {proc} is given twice")
            if not new_cluster and self._proc_used(JobId(cluster_id, proc)):
                raise QueueError(f"cluster {cluster_id}: ProcId {proc} is already queued")
            seen.add(proc)
            job = JobId(cluster_id, proc)
            ad = shared.copy()
            for name, expr in proc_ad.items():
                ad[name] = expr
            ad["ClusterId"] = cluster_id
            if "JobStatus" not in ad:
                ad["JobStatus"] = int(JobStatus.IDLE)
            job_status_of(ad, job)
            jobs.append((job, ad))
            texts.append(AdText.overlaid(shared_text, ad, [*proc_ad, "JobStatus"]))
        rows = [
            (
                job.cluster,
                job.proc,
                int(job_status_of(ad, job)),
                string_attribute(ad, "Owner"),
                string_attribute(ad, "User"),
                str(text),
            )
            for (job, ad), text in zip(jobs, texts, strict=True)
        ]
        with self._transaction():
            # A later part finds the row gone when the earlier parts' jobs have all left.
            verb = "INSERT" if new_cluster else "INSERT OR IGNORE"
            self._db.execute(
                f"{verb} INTO clusters (cluster, ad) VALUES (?, ?)", (cluster_id, str(shared))
            )
            self._db.executemany(
                "INSERT INTO jobs (cluster, proc, status, owner, submitter, ad)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            for (job, ad), row, text in zip(jobs, rows, texts, strict=True):
                self._ads[job] = ad
                self._texts[job] = text
                status = JobStatus(row[2])
                self._counts[status] += 1
        return [job for job, _ in jobs]

    def _proc_used(self, job_id: JobId) -> bool:
        used = self._db.execute(
            "SELECT 1 FROM jobs WHERE cluster = ? AND proc = ?"
            " UNION ALL SELECT 1 FROM history WHERE cluster = ? AND proc = ? LIMIT 1",
            (job_id.cluster, job_id.proc, job_id.cluster, job_id.proc),
        ).fetchone()
        return used is not None

    def _check_handed_out(self, cluster_id: int) -> None:
        (next_free,) = self._db.execute(
            "SELECT value FROM counters WHERE name = 'next_cluster'"
        ).fetchone()
        if not 1 <= cluster_id < next_free:
            raise QueueError(f"cluster {cluster_id} was not handed out by next_cluster_id")

    def _check_new_cluster(self, cluster_id: int) -> None:
        self._check_handed_out(cluster_id)
        used = self._db.execute(
            "SELECT 1 FROM clusters WHERE cluster = ?"
            " UNION ALL SELECT 1 FROM history WHERE cluster = ? LIMIT 1",
            (cluster_id, cluster_id),
        ).fetchone()
        if used is not None:
            raise QueueError(f"cluster {cluster_id} was already submitted")

    # -- reading -----------------------------------------------------------------------------
    def get(self, job_id: JobId) -> ClassAd:
        """A copy of the job's ad; QueueError when the job is not in the queue."""
        return self._ad(job_id).copy()

    def __contains__(self, job_id: object) -> bool:
        if not isinstance(job_id, JobId):
            return False
        if job_id in self._ads:
            return True
        found = self._db.execute(
            "SELECT 1 FROM jobs WHERE cluster = ? AND proc = ?", (job_id.cluster, job_id.proc)
        ).fetchone()
        return found is not None

    def cluster_ad(self, cluster_id: int) -> ClassAd:
        """The cluster's shared ad as submitted; QueueError when no job of it is queued."""
        row = self._db.execute("SELECT ad FROM clusters WHERE cluster = ?", (cluster_id,))
        found = row.fetchone()
        if found is None:
            raise QueueError(f"cluster {cluster_id} is not in the queue")
        return parse_stored_ad(found[0], f"cluster {cluster_id}")

    def _ad(self, job_id: JobId) -> ClassAd:
        ad = self._ads.get(job_id)
        if ad is not None:
            return ad
        row = self._db.execute(
            "SELECT ad FROM jobs WHERE cluster = ? AND proc = ?", (job_id.cluster, job_id.proc)
        ).fetchone()
        if row is None:
            raise QueueError(f"job {job_id} is not in the queue")
        ad = parse_stored_ad(row[0], f"job {job_id}")
        self._ads[job_id] = ad
        return ad

    def jobs(
        self,
        constraint: str | None = None,
        projection: Sequence[str] | None = None,
        *,
        owner: str | None = None,
        submitter: str | None = None,
        statuses: Collection[JobStatus] | None = None,
    ) -> list[ClassAd]:
        """Copies of the queued jobs' ads, by cluster and proc, that have this Owner, User
        (submitter) and status (from the indexed columns) and pass the constraint, cut to the
        projection. PoolError when the constraint does not parse."""
        expr = None if constraint is None else parse_constraint(constraint)
        columns = None if projection is None else tuple(projection)
        found: list[ClassAd] = []
        for job in self._select_ids(owner, submitter, statuses):
            ad = self._ad(job)
            if matches(expr, ad, None):
                found.append(project(ad, columns))
        return found

    def job_ids(
        self,
        *,
        owner: str | None = None,
        submitter: str | None = None,
        statuses: Collection[JobStatus] | None = None,
    ) -> list[JobId]:
        """The ids of the queued jobs with this Owner, User and status, without reading ads."""
        return self._select_ids(owner, submitter, statuses)

    def count(self, *, owner: str | None = None) -> int:
        """How many jobs are queued (with this Owner), without reading ads."""
        if owner is None:
            return sum(self._counts.values())
        self._flush()
        row = self._db.execute("SELECT COUNT(*) FROM jobs WHERE owner = ?", (owner,)).fetchone()
        return int(row[0])

    def _select_ids(
        self, owner: str | None, submitter: str | None, statuses: Collection[JobStatus] | None
    ) -> list[JobId]:
        clauses: list[str] = []
        params: list[object] = []
        if owner is not None:
            clauses.append("owner = ?")
            params.append(owner)
        if submitter is not None:
            clauses.append("submitter = ?")
            params.append(submitter)
        if statuses is not None:
            wanted = sorted({int(status) for status in statuses})
            if not wanted:
                return []
            clauses.append(f"status IN ({', '.join('?' * len(wanted))})")
            params.extend(wanted)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        # Inside a batch the indexed columns of changed jobs are written only now.
        self._flush()
        query = f"SELECT cluster, proc FROM jobs{where} ORDER BY cluster, proc"
        rows = self._db.execute(query, params)
        return [JobId(cluster, proc) for cluster, proc in rows]

    def counts(self) -> Mapping[JobStatus, int]:
        """How many queued jobs are in each status (every status present, zeros included)."""
        return types.MappingProxyType(dict(self._counts))

    def _count_from_database(self) -> dict[JobStatus, int]:
        counts = dict.fromkeys(JobStatus, 0)
        for status, number in self._db.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status"):
            if status in JobStatus._value2member_map_:
                counts[JobStatus(status)] = number
        return counts

    # -- changes -----------------------------------------------------------------------------
    def set_attributes(self, job_id: JobId, values: Mapping[str, object], now: float) -> None:
        """Set attributes of a queued job (Python values or Expr). JobStatus, ClusterId and
        ProcId are refused (status moves go through :meth:`change_status`), as is a value a
        ClassAd cannot hold; QueueError names the job and attribute, and nothing is set."""
        del now  # nothing is stamped on an edit, as with condor_qedit
        ad = self._ad(job_id)
        nodes: dict[str, Expr] = {}
        probe = ClassAd()
        for name, value in values.items():
            if name.lower() in READ_ONLY_ATTRIBUTES:
                raise QueueError(f"job {job_id}: {name} cannot be set directly")
            try:
                probe[name] = value
            except (TypeError, ValueError) as error:
                raise QueueError(f"job {job_id}: cannot set {name}: {error}") from error
            nodes[name] = probe[name]
        with self._transaction(one_job_ad=True):
            for name, expr in nodes.items():
                ad[name] = expr
            self._dirty.setdefault(job_id, set()).update(nodes)

    def change_status(
        self,
        job_id: JobId,
        new: JobStatus,
        now: float,
        *,
        reason: str | None = None,
        code: int | None = None,
        subcode: int | None = None,
    ) -> ClassAd:
        """Move the job to ``new`` if its status allows it (see
        ``jobqueue_model.ALLOWED_TRANSITIONS``), keeping EnteredCurrentStatus, LastJobStatus,
        the hold, release and remove reasons and NumHolds as the schedd does; a copy of the
        new ad. QueueError naming the job and both statuses when the move is not allowed."""
        ad = self._ad(job_id)
        old = job_status_of(ad, job_id)
        if not transition_allowed(old, new):
            raise QueueError(f"job {job_id}: cannot change status from {old.name} to {new.name}")
        # Only holds and releases read the job's hold bookkeeping; most moves skip it.
        involves_hold = JobStatus.HELD in (old, new)
        current = {
            name: ad.evaluate(name) if involves_hold and name in ad else None
            for name in ("NumHolds", "HoldReason", "HoldReasonCode", "HoldReasonSubCode")
        }
        holds = current["NumHolds"]
        values, dropped = status_changes(
            old,
            new,
            now,
            num_holds=holds if type(holds) is int else 0,
            hold_reason=current["HoldReason"],
            hold_code=current["HoldReasonCode"],
            hold_subcode=current["HoldReasonSubCode"],
            reason=reason,
            code=code,
            subcode=subcode,
        )
        with self._transaction(one_job_ad=True):
            for name, value in values.items():
                ad[name] = value
            for name in dropped:
                ad.pop(name, None)
            self._dirty.setdefault(job_id, set()).update((*values, *dropped))
            self._counts[old] -= 1
            self._counts[new] += 1
        return ad.copy()

    def _text_of(self, job_id: JobId, ad: ClassAd) -> str:
        """The ad's text as stored, with the changes not yet written: the kept pieces are
        reused rather than the whole ad unparsed again."""
        text = self._texts.get(job_id)
        if text is None:
            return str(ad)
        text.refresh(ad, self._dirty.get(job_id, ()))
        return str(text)

    def finish(self, job_id: JobId, now: float) -> None:
        """Move a completed or removed job out of the queue into the history; QueueError
        naming the job and its status for any other job."""
        ad = self._ad(job_id)
        status = job_status_of(ad, job_id)
        if status not in FINISHED_STATUSES:
            raise QueueError(
                f"job {job_id}: only a completed or removed job can leave the queue, "
                f"not a {status.name} one"
            )
        with self._transaction():
            self._db.execute(
                "INSERT INTO history (cluster, proc, status, owner, submitter, finished_at, ad)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    job_id.cluster,
                    job_id.proc,
                    int(status),
                    string_attribute(ad, "Owner"),
                    string_attribute(ad, "User"),
                    now,
                    self._text_of(job_id, ad),
                ),
            )
            self._db.execute(
                "DELETE FROM jobs WHERE cluster = ? AND proc = ?", (job_id.cluster, job_id.proc)
            )
            self._db.execute(
                "DELETE FROM clusters WHERE cluster = ? AND NOT EXISTS"
                " (SELECT 1 FROM jobs WHERE cluster = ?)",
                (job_id.cluster, job_id.cluster),
            )
            self._ads.pop(job_id, None)
            self._texts.pop(job_id, None)
            self._dirty.pop(job_id, None)
            self._counts[status] -= 1

    def history(
        self,
        constraint: str | None = None,
        projection: Sequence[str] | None = None,
        limit: int | None = None,
        since: str | None = None,
    ) -> list[ClassAd]:
        """The ads of jobs that left the queue, newest first, passing the constraint, at most
        ``limit`` of them, and only those recorded after the newest one ``since`` is true of
        (HTCondor's history Since: the scan stops there, that job left out); PoolError for a
        constraint that does not parse, QueueError for a damaged history row."""
        expr = None if constraint is None else parse_constraint(constraint)
        stop = None if since is None else parse_constraint(since)
        columns = None if projection is None else tuple(projection)
        found: list[ClassAd] = []
        if limit is not None and limit <= 0:
            return found
        rows = self._db.execute("SELECT cluster, proc, ad FROM history ORDER BY seq DESC")
        for cluster, proc, text in rows:
            ad = parse_stored_ad(text, f"history entry of job {cluster}.{proc}")
            if stop is not None and matches(stop, ad, None):
                break
            if matches(expr, ad, None):
                found.append(project(ad, columns))
                if limit is not None and len(found) >= limit:
                    break
        return found
