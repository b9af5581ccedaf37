"""The job queue's storage: submission, queries, edits, history, batches, durability, damage."""

from __future__ import annotations

import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.classad import ClassAd, parse_expr
from epcore.errors import PoolError, QueueError
from epcore.schedd.jobqueue import JobId, JobQueue, JobStatus

S = JobStatus
NOW = 1_700_000_000


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """Where the queue file lives."""
    return tmp_path / "job_queue.db"


@pytest.fixture
def queue(path: Path) -> Iterator[JobQueue]:
    """An empty queue, closed afterwards."""
    opened = JobQueue.open(path)
    yield opened
    opened.close()


def submit(queue: JobQueue, owner: str = "alice", procs: int = 1, **shared: object) -> list[JobId]:
    """Queue one cluster of ``procs`` jobs owned by ``owner``."""
    cluster_ad = ClassAd({"Owner": owner, "User": f"{owner}@pool", "Cmd": "/bin/sleep", **shared})
    proc_ads = [ClassAd({"ProcId": n, "Args": str(n)}) for n in range(procs)]
    return queue.submit(queue.next_cluster_id(), cluster_ad, proc_ads)


def finished(queue: JobQueue, job: JobId, status: JobStatus, now: float) -> None:
    """Bring a queued idle job to ``status`` (completed or removed) and out of the queue."""
    if status is S.COMPLETED:
        queue.change_status(job, S.RUNNING, now)
    queue.change_status(job, status, now)
    queue.finish(job, now)


# -- ids ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"), [("12.3", JobId(12, 3)), (" 1.0 ", JobId(1, 0)), ("007.10", JobId(7, 10))]
)
def test_job_id_parses_and_prints(text: str, expected: JobId) -> None:
    """JobId.parse reads cluster.proc and str() writes it back without padding."""
    assert JobId.parse(text) == expected
    assert JobId.parse(str(expected)) == expected


@pytest.mark.parametrize(
    "text", ["", "12", "12.", ".3", "1.2.3", "-1.0", "1.-1", "a.b", "1,2", "+1.2"]
)
def test_bad_job_id_is_a_pool_error(text: str) -> None:
    """Text that is not cluster.proc is a PoolError quoting it."""
    with pytest.raises(PoolError, match="is not a job id"):
        JobId.parse(text)


def test_job_ids_sort_by_cluster_then_proc() -> None:
    """JobIds order numerically, cluster first."""
    assert sorted([JobId(10, 0), JobId(2, 5), JobId(2, 1)]) == [
        JobId(2, 1),
        JobId(2, 5),
        JobId(10, 0),
    ]


# -- opening -----------------------------------------------------------------------------
def test_new_queue_file_has_mode_0600(path: Path, queue: JobQueue) -> None:
    """The database file (and SQLite's side files) are readable by their owner only."""
    submit(queue)
    for made in path.parent.iterdir():
        assert stat.S_IMODE(made.stat().st_mode) == 0o600, made


@pytest.mark.parametrize(
    "content", [b"this is not a database at all, just some text" * 30, b"\x00\xff" * 4096]
)
def test_a_file_that_is_not_a_database_is_refused(path: Path, content: bytes) -> None:
    """Opening a file that is not SQLite is a QueueError naming the file."""
    path.write_bytes(content)
    with pytest.raises(QueueError, match=f"{path}: not a job queue database"):
        JobQueue.open(path)


def test_another_programs_database_is_refused(path: Path) -> None:
    """An SQLite database without the queue's schema table is a QueueError naming it."""
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE photos (id INTEGER)")
    other.close()
    with pytest.raises(QueueError, match="not an epcore job queue"):
        JobQueue.open(path)


def test_a_newer_schema_is_refused(path: Path) -> None:
    """A queue written by a newer epcore (higher schema version) is refused, not misread."""
    JobQueue.open(path).close()
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE epcore_job_queue_schema SET version = 99")
    raw.close()
    with pytest.raises(QueueError, match="schema version 99 is newer"):
        JobQueue.open(path)


def test_a_queue_in_a_missing_directory_cannot_be_created(tmp_path: Path) -> None:
    """A queue path whose directory does not exist is a QueueError naming it."""
    with pytest.raises(QueueError, match="cannot create"):
        JobQueue.open(tmp_path / "no" / "job_queue.db")


# -- cluster ids and submission ----------------------------------------------------------
def test_cluster_ids_are_never_reused_across_restarts(path: Path) -> None:
    """Cluster ids keep increasing across close/open, even for clusters that left the queue."""
    queue = JobQueue.open(path)
    [job] = submit(queue)
    finished(queue, job, S.REMOVED, NOW)
    unused = queue.next_cluster_id()
    queue.close()
    queue = JobQueue.open(path)
    try:
        assert queue.next_cluster_id() == unused + 1
        assert job.cluster < unused
    finally:
        queue.close()


def test_submit_overlays_proc_ads_on_the_cluster_ad(queue: JobQueue) -> None:
    """Each job's ad is the cluster ad plus its proc ad, with ClusterId, ProcId and JobStatus."""
    jobs = submit(queue, procs=3, Args="shared")
    cluster = jobs[0].cluster
    assert jobs == [JobId(cluster, n) for n in range(3)]
    ad = queue.get(jobs[2])
    assert (ad.evaluate("ClusterId"), ad.evaluate("ProcId")) == (cluster, 2)
    assert ad.evaluate("Args") == "2"
    assert ad.evaluate("JobStatus") == int(S.IDLE)
    assert queue.cluster_ad(cluster).evaluate("Args") == "shared"
    assert queue.counts()[S.IDLE] == 3


def test_each_job_is_stored_as_the_cluster_ad_plus_its_own_attributes(path: Path) -> None:
    """After a reopen, every job of a cluster reads back as the cluster ad overlaid with its
    proc ad, a proc attribute winning over the cluster's, and a status change of one job
    does not show in its siblings."""
    queue = JobQueue.open(path)
    jobs = submit(queue, procs=3, Args="shared", Color="blue")
    queue.change_status(jobs[1], S.HELD, NOW, reason="for the test")
    queue.close()
    again = JobQueue.open(path)
    try:
        for n, job in enumerate(jobs):
            ad = again.get(job)
            assert (ad.evaluate("ProcId"), ad.evaluate("Args")) == (n, str(n))
            assert (ad.evaluate("Color"), ad.evaluate("Cmd")) == ("blue", "/bin/sleep")
            expected = S.HELD if n == 1 else S.IDLE
            assert ad.evaluate("JobStatus") == int(expected)
    finally:
        again.close()


@pytest.mark.parametrize(
    ("procs", "message"),
    [
        ([], "at least one job"),
        ([ClassAd({"Args": "x"})], "ProcId"),
        ([ClassAd({"ProcId": -1})], "ProcId"),
        ([ClassAd({"ProcId": "0"})], "ProcId"),
        ([ClassAd({"ProcId": 0}), ClassAd({"ProcId": 0})], "ProcId 0 is given twice"),
        ([ClassAd({"ProcId": 0, "JobStatus": 9})], "JobStatus"),
        ([ClassAd({"ProcId": 0, "JobStatus": "idle"})], "JobStatus"),
    ],
)
def test_bad_submission_queues_nothing(queue: JobQueue, procs: list[ClassAd], message: str) -> None:
    """A submission with unusable proc ads is a QueueError and leaves the queue empty."""
    cluster = queue.next_cluster_id()
    with pytest.raises(QueueError, match=message):
        queue.submit(cluster, ClassAd({"Owner": "alice"}), procs)
    assert queue.jobs() == []
    assert sum(queue.counts().values()) == 0


@pytest.mark.parametrize("offset", [0, 1, 5])
def test_cluster_ids_not_handed_out_are_refused(queue: JobQueue, offset: int) -> None:
    """Submitting under an id next_cluster_id never gave is a QueueError."""
    handed = queue.next_cluster_id()
    bad = 0 if offset == 0 else handed + offset
    with pytest.raises(QueueError, match="not handed out"):
        queue.submit(bad, ClassAd(), [ClassAd({"ProcId": 0})])


def test_a_cluster_cannot_be_submitted_twice(queue: JobQueue) -> None:
    """A cluster id already submitted, queued or in the history, is a QueueError."""
    [job] = submit(queue)
    with pytest.raises(QueueError, match="already submitted"):
        queue.submit(job.cluster, ClassAd(), [ClassAd({"ProcId": 1})])
    finished(queue, job, S.REMOVED, NOW)
    with pytest.raises(QueueError, match="already submitted"):
        queue.submit(job.cluster, ClassAd(), [ClassAd({"ProcId": 1})])


# -- reading -----------------------------------------------------------------------------
def test_get_returns_a_copy_and_names_missing_jobs(queue: JobQueue) -> None:
    """get() gives a copy of the ad; a job not queued is a QueueError naming it."""
    [job] = submit(queue)
    queue.get(job)["Cmd"] = "/bin/false"
    assert queue.get(job).evaluate("Cmd") == "/bin/sleep"
    assert job in queue
    assert JobId(99, 0) not in queue
    with pytest.raises(QueueError, match=r"job 99\.0 is not in the queue"):
        queue.get(JobId(99, 0))


@pytest.mark.parametrize(
    ("constraint", "owner", "statuses", "expected"),
    [
        (None, None, None, ["1.0", "1.1", "2.0", "3.0"]),
        (None, "bob", None, ["2.0"]),
        (None, "nobody", None, []),
        (None, None, [S.HELD], ["1.1"]),
        (None, None, [S.IDLE, S.HELD], ["1.0", "1.1", "2.0"]),
        (None, None, [], []),
        (None, "alice", [S.IDLE], ["1.0"]),
        ("ProcId == 1", None, None, ["1.1"]),
        ('Owner == "carol" && JobStatus == 2', None, None, ["3.0"]),
        ("NoSuchAttribute", None, None, []),
        ("JobStatus == 1", "bob", None, ["2.0"]),
    ],
)
def test_jobs_filter_by_owner_status_and_constraint(
    queue: JobQueue,
    constraint: str | None,
    owner: str | None,
    statuses: list[JobStatus] | None,
    expected: list[str],
) -> None:
    """jobs() filters by Owner, status and a constraint, ordered by cluster and proc."""
    alice = submit(queue, "alice", procs=2)
    submit(queue, "bob")
    [carol] = submit(queue, "carol")
    queue.change_status(alice[1], S.HELD, NOW)
    queue.change_status(carol, S.RUNNING, NOW)
    found = queue.jobs(constraint, owner=owner, statuses=statuses)
    assert [f"{ad.evaluate('ClusterId')}.{ad.evaluate('ProcId')}" for ad in found] == expected
    ids = [str(job) for job in queue.job_ids(owner=owner, statuses=statuses)]
    if constraint is None:
        assert ids == expected


def test_jobs_by_submitter(queue: JobQueue) -> None:
    """jobs(submitter=...) selects on the User attribute."""
    submit(queue, "alice")
    [bob] = submit(queue, "bob")
    assert [ad.evaluate("Owner") for ad in queue.jobs(submitter="bob@pool")] == ["bob"]
    assert queue.job_ids(submitter="bob@pool") == [bob]


@pytest.mark.parametrize(
    ("projection", "expected"),
    [(["Owner"], {"Owner"}), (["owner", "PROCID", "Missing"], {"Owner", "ProcId"}), ([], set())],
)
def test_jobs_projection(queue: JobQueue, projection: list[str], expected: set[str]) -> None:
    """A projection keeps only the named attributes the job has."""
    submit(queue)
    [ad] = queue.jobs(projection=projection)
    assert set(ad) == expected


@pytest.mark.parametrize("constraint", ["Owner ==", "(", "a = 1", ""])
def test_bad_constraint_is_a_pool_error(queue: JobQueue, constraint: str) -> None:
    """A constraint that does not parse is a PoolError saying so, for jobs and history."""
    submit(queue)
    with pytest.raises(PoolError, match="does not parse"):
        queue.jobs(constraint)
    with pytest.raises(PoolError, match="does not parse"):
        queue.history(constraint)


# -- edits -------------------------------------------------------------------------------
def test_set_attributes_stores_values_and_expressions(path: Path, queue: JobQueue) -> None:
    """Python values and Expr objects are stored and survive a reopen."""
    [job] = submit(queue)
    expr = parse_expr("RequestMemory * 2")
    queue.set_attributes(job, {"RequestMemory": 512, "Limit": expr, "Note": "a\nb"}, NOW)
    queue.close()
    again = JobQueue.open(path)
    try:
        ad = again.get(job)
        assert ad.evaluate("Limit") == 1024
        assert ad["Limit"] == expr
        assert ad.evaluate("Note") == "a\nb"
    finally:
        again.close()


def test_changing_owner_moves_the_job_between_owner_queries(queue: JobQueue) -> None:
    """Setting Owner and User updates the indexed columns that owner queries use."""
    [job] = submit(queue, "alice")
    queue.set_attributes(job, {"Owner": "bob", "User": "bob@pool"}, NOW)
    assert queue.job_ids(owner="alice") == []
    assert queue.job_ids(owner="bob") == [job]
    assert queue.job_ids(submitter="bob@pool") == [job]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"JobStatus": 5}, "JobStatus cannot be set"),
        ({"clusterid": 5}, "clusterid cannot be set"),
        ({"ProcId": 5}, "ProcId cannot be set"),
        ({"Big": 2**70}, "cannot set Big"),
        ({"Nul": "a\x00b"}, "cannot set Nul"),
        ({"Thing": object()}, "cannot set Thing"),
    ],
)
def test_refused_edits_change_nothing(
    queue: JobQueue, values: dict[str, object], message: str
) -> None:
    """Protected attributes and values a ClassAd cannot hold are QueueErrors naming the job."""
    [job] = submit(queue)
    before = queue.get(job)
    with pytest.raises(QueueError, match=message) as caught:
        queue.set_attributes(job, {"Fine": 1, **values}, NOW)
    assert f"job {job}" in str(caught.value)
    assert queue.get(job) == before


# -- history -----------------------------------------------------------------------------
@pytest.mark.parametrize("status", [S.IDLE, S.RUNNING, S.HELD, S.SUSPENDED])
def test_only_finished_jobs_leave_the_queue(queue: JobQueue, status: JobStatus) -> None:
    """finish() of a job that is not completed or removed is a QueueError naming it."""
    cluster = queue.next_cluster_id()
    [job] = queue.submit(cluster, ClassAd(), [ClassAd({"ProcId": 0, "JobStatus": int(status)})])
    with pytest.raises(QueueError, match=f"job {job}: only a completed or removed"):
        queue.finish(job, NOW)
    assert job in queue


def test_finished_jobs_move_to_history_newest_first(path: Path, queue: JobQueue) -> None:
    """Finished jobs leave the queue for the history, listed newest first, kept across reopen."""
    jobs = submit(queue, procs=3)
    finished(queue, jobs[1], S.COMPLETED, NOW)
    finished(queue, jobs[0], S.REMOVED, NOW + 1)
    assert queue.job_ids() == [jobs[2]]
    assert queue.counts()[S.COMPLETED] == queue.counts()[S.REMOVED] == 0
    queue.close()
    again = JobQueue.open(path)
    try:
        history = again.history()
        assert [ad.evaluate("ProcId") for ad in history] == [0, 1]
        assert [ad.evaluate("JobStatus") for ad in history] == [int(S.REMOVED), int(S.COMPLETED)]
        assert [ad.evaluate("ProcId") for ad in again.history(limit=1)] == [0]
        assert again.history(limit=0) == []
        assert [ad.evaluate("ProcId") for ad in again.history("JobStatus == 4")] == [1]
        assert [set(ad) for ad in again.history(projection=["ProcId"])] == [{"ProcId"}] * 2
        assert again.cluster_ad(jobs[0].cluster).evaluate("Owner") == "alice"
    finally:
        again.close()


def test_history_since_stops_at_the_newest_job_it_is_true_of(queue: JobQueue) -> None:
    """With ``since``, the history is the jobs recorded after the newest one the expression is
    true of, that one left out, as HTCondor's history Since reads; constraint and limit
    apply to what is left."""
    jobs = submit(queue, procs=4)
    for offset, job in enumerate(jobs):
        finished(queue, job, S.COMPLETED, NOW + offset)
    procs = [ad.evaluate("ProcId") for ad in queue.history(since="ProcId == 1")]
    assert procs == [3, 2]
    assert [ad.evaluate("ProcId") for ad in queue.history("ProcId != 3", since="ProcId == 0")] == [
        2,
        1,
    ]
    assert [ad.evaluate("ProcId") for ad in queue.history(limit=1, since="ProcId == 0")] == [3]
    assert queue.history(since="ProcId == 3") == []
    assert len(queue.history(since="ProcId == 99")) == 4


def test_history_keeps_changes_made_in_the_same_batch(queue: JobQueue) -> None:
    """A job that finishes in the batch that changed it goes to the history with those
    changes, and with its own and its cluster's attributes."""
    [job, _] = submit(queue, procs=2, Color="blue")
    with queue.batch():
        queue.set_attributes(job, {"ExitCode": 3, "Color": "red"}, NOW)
        queue.change_status(job, S.RUNNING, NOW)
        queue.change_status(job, S.COMPLETED, NOW + 5)
        queue.finish(job, NOW + 5)
    [ad] = queue.history()
    assert ad.evaluate("ExitCode") == 3
    assert ad.evaluate("JobStatus") == int(S.COMPLETED)
    assert (ad.evaluate("Args"), ad.evaluate("Cmd")) == ("0", "/bin/sleep")
    assert ad.evaluate("Color") == "red"


def test_cluster_ad_goes_with_the_last_job(queue: JobQueue) -> None:
    """When the cluster's last job leaves, so does its cluster ad."""
    [job] = submit(queue)
    finished(queue, job, S.COMPLETED, NOW)
    with pytest.raises(QueueError, match=f"cluster {job.cluster} is not in the queue"):
        queue.cluster_ad(job.cluster)


# -- batches -----------------------------------------------------------------------------
def test_batch_commits_everything_at_its_end(path: Path, queue: JobQueue) -> None:
    """Changes inside a batch are visible at once and durable after it."""
    [job] = submit(queue)
    with queue.batch():
        queue.change_status(job, S.RUNNING, NOW)
        queue.set_attributes(job, {"RemoteHost": "slot1@a"}, NOW)
        assert queue.jobs(statuses=[S.RUNNING])[0].evaluate("RemoteHost") == "slot1@a"
        with queue.batch():
            queue.change_status(job, S.COMPLETED, NOW + 1)
    queue.close()
    again = JobQueue.open(path)
    try:
        ad = again.get(job)
        assert (ad.evaluate("JobStatus"), ad.evaluate("RemoteHost")) == (4, "slot1@a")
        assert again.counts()[S.COMPLETED] == 1
    finally:
        again.close()


def test_batch_rolls_back_everything_on_error(path: Path, queue: JobQueue) -> None:
    """An error inside a batch undoes all of its changes, in memory and on disk."""
    [job] = submit(queue)
    with pytest.raises(QueueError), queue.batch():
        queue.change_status(job, S.RUNNING, NOW)
        queue.set_attributes(job, {"RemoteHost": "slot1@a"}, NOW)
        submit(queue, "bob")
        queue.change_status(job, S.HELD, NOW)
        queue.change_status(job, S.COMPLETED, NOW)  # held -> completed is refused
    assert queue.get(job).evaluate("JobStatus") == int(S.IDLE)
    assert "RemoteHost" not in queue.get(job)
    assert queue.job_ids() == [job]
    assert queue.counts()[S.IDLE] == 1
    assert sum(queue.counts().values()) == 1
    queue.close()
    again = JobQueue.open(path)
    try:
        assert again.job_ids() == [job]
        assert again.get(job).evaluate("JobStatus") == int(S.IDLE)
    finally:
        again.close()


def test_batch_rolls_back_on_any_exception(queue: JobQueue) -> None:
    """Not only queue errors: any exception leaving the batch undoes it."""
    [job] = submit(queue)
    with pytest.raises(KeyError), queue.batch():
        queue.change_status(job, S.HELD, NOW)
        raise KeyError("schedd bug")
    assert queue.get(job).evaluate("JobStatus") == int(S.IDLE)


# -- damage ------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["garbage", "[ a = ", "[ a = 1; ]]", ""])
def test_damaged_job_row_is_a_queue_error_naming_the_job(path: Path, text: str) -> None:
    """A job whose stored ad does not parse is a QueueError naming it, for get and jobs."""
    queue = JobQueue.open(path)
    [job, other] = submit(queue, procs=2)
    queue.close()
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE jobs SET ad = ? WHERE proc = 1", (text,))
    raw.close()
    queue = JobQueue.open(path)
    try:
        assert queue.get(job).evaluate("ProcId") == 0
        with pytest.raises(QueueError, match=f"job {other}: the stored ad is damaged"):
            queue.get(other)
        with pytest.raises(QueueError, match=f"job {other}"):
            queue.jobs()
        assert [ad.evaluate("ProcId") for ad in queue.jobs(statuses=[S.HELD])] == []
    finally:
        queue.close()


def test_damaged_history_row_is_a_queue_error_naming_the_job(path: Path) -> None:
    """A history entry that does not parse is a QueueError naming its job."""
    queue = JobQueue.open(path)
    [job] = submit(queue)
    finished(queue, job, S.COMPLETED, NOW)
    queue.close()
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE history SET ad = 'not an ad'")
    raw.close()
    queue = JobQueue.open(path)
    try:
        with pytest.raises(QueueError, match=f"history entry of job {job}"):
            queue.history()
    finally:
        queue.close()


def test_damaged_status_in_an_ad_is_a_queue_error(path: Path) -> None:
    """A stored ad whose JobStatus is not a status refuses status changes, naming the job."""
    queue = JobQueue.open(path)
    [job] = submit(queue)
    queue.close()
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE jobs SET ad = '[ ClusterId = 1; ProcId = 0; JobStatus = 42 ]'")
    raw.close()
    queue = JobQueue.open(path)
    try:
        with pytest.raises(QueueError, match=f"job {job}: JobStatus 42"):
            queue.change_status(job, S.HELD, NOW)
    finally:
        queue.close()


@pytest.mark.oracle
def test_stored_job_text_is_a_classad_htcondor_reads_the_same(path: Path) -> None:
    """HTCondor's classad2 parses each stored job row (after edits) to the same values."""
    classad2 = pytest.importorskip("classad2")
    queue = JobQueue.open(path)
    [job] = submit(queue, Note='quote " and\nnewline', Ratio=2.5, Items=[1, "two", False])
    queue.change_status(job, S.HELD, NOW, reason="tab\there", code=3)
    queue.set_attributes(job, {"Limit": parse_expr("RequestMemory * 2 + Ratio")}, NOW)
    expected = queue.get(job)
    queue.close()
    with sqlite3.connect(path) as raw:
        [(text,)] = raw.execute("SELECT ad FROM jobs").fetchall()
    raw.close()
    theirs = classad2.parseOne(text)
    assert {name.lower() for name in theirs} == {name.lower() for name in expected}
    for name in ("Note", "Ratio", "Items", "HoldReason", "HoldReasonCode", "NumHolds", "Owner"):
        assert theirs.eval(name) == expected.evaluate(name), name
    assert str(theirs.lookup("Limit")) == str(expected["Limit"])


def test_a_cluster_grows_by_parts_even_after_its_first_jobs_left(queue: JobQueue) -> None:
    """extend() queues more procs of a cluster, even once its first procs are in the
    history; a ProcId used before, or a cluster never handed out, is refused."""
    cluster = queue.next_cluster_id()
    shared = ClassAd()
    shared["Owner"] = "alice"
    first = ClassAd()
    first["ProcId"] = 0
    queue.submit(cluster, shared, [first])
    finished(queue, JobId(cluster, 0), JobStatus.COMPLETED, 5.0)
    more = [ClassAd(), ClassAd()]
    for proc, ad in enumerate(more, start=1):
        ad["ProcId"] = proc
    assert queue.extend(cluster, shared, more) == [JobId(cluster, 1), JobId(cluster, 2)]
    assert queue.get(JobId(cluster, 2)).evaluate("Owner") == "alice"
    with pytest.raises(QueueError, match="ProcId 0 is already queued"):
        queue.extend(cluster, shared, [first])
    with pytest.raises(QueueError, match="not handed out"):
        queue.extend(cluster + 5, shared, more)
