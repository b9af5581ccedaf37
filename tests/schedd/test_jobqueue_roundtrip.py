"""Property tests: job ads survive the queue unchanged; counts follow any sequence of moves;
the piecewise stored text stays equal to the ad."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import ClassAd, parse_ad
from epcore.errors import QueueError
from epcore.schedd.jobqueue import JobId, JobQueue, JobStatus
from epcore.schedd.jobqueue_codec import AdText

RESERVED = {"true", "false", "undefined", "error", "is", "isnt", "parent", "my", "target"}
OWNED = {"clusterid", "procid", "jobstatus"}

names = st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,12}\Z").filter(
    lambda name: name.lower() not in RESERVED | OWNED
)
scalars: st.SearchStrategy[Any] = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        max_size=30,
    ),
)
values: st.SearchStrategy[Any] = st.one_of(scalars, st.lists(scalars, max_size=3))


@st.composite
def ads(draw: st.DrawFn) -> ClassAd:
    """A flat ad of literals with distinct case-insensitive names (none the queue owns)."""
    found = draw(st.dictionaries(names, values, max_size=8))
    unique = {name.lower(): (name, value) for name, value in found.items()}
    return ClassAd(dict(unique.values()))


def fresh_queue(base: Path) -> tuple[JobQueue, Path]:
    """A new queue in its own directory under ``base`` (one per hypothesis example)."""
    path = Path(tempfile.mkdtemp(dir=base)) / "job_queue.db"
    return JobQueue.open(path), path


@given(cluster_ad=ads(), proc_ads=st.lists(ads(), min_size=1, max_size=3))
def test_job_ads_round_trip_through_the_queue(
    tmp_path: Path, cluster_ad: ClassAd, proc_ads: list[ClassAd]
) -> None:
    """Any job ads of literal values read back equal after the queue is closed and reopened."""
    queue, path = fresh_queue(tmp_path)
    cluster = queue.next_cluster_id()
    procs = []
    for number, ad in enumerate(proc_ads):
        proc = ad.copy()
        proc["ProcId"] = number
        procs.append(proc)
    expected = []
    for proc in procs:
        merged = cluster_ad.copy()
        merged.update(proc)
        merged["ClusterId"] = cluster
        merged["JobStatus"] = int(JobStatus.IDLE)
        expected.append(merged)
    jobs = queue.submit(cluster, cluster_ad, procs)
    queue.close()
    queue = JobQueue.open(path)
    try:
        assert [queue.get(job) for job in jobs] == expected
        assert queue.jobs() == expected
    finally:
        queue.close()


@given(moves=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(JobStatus)), max_size=25))
def test_counts_follow_any_sequence_of_moves(
    tmp_path: Path, moves: list[tuple[int, JobStatus]]
) -> None:
    """Whatever moves are tried, counts and stored statuses match the accepted moves, reopened."""
    queue, path = fresh_queue(tmp_path)
    cluster = queue.next_cluster_id()
    jobs = queue.submit(cluster, ClassAd(), [ClassAd({"ProcId": n}) for n in range(3)])
    model: dict[JobId, JobStatus] = dict.fromkeys(jobs, JobStatus.IDLE)
    for index, new in moves:
        job = jobs[index]
        try:
            queue.change_status(job, new, 1000.0)
        except QueueError:
            continue
        model[job] = new
    queue.close()
    queue = JobQueue.open(path)
    try:
        for job, status in model.items():
            assert queue.get(job).evaluate("JobStatus") == int(status)
        assert dict(queue.counts()) == {
            status: sum(1 for seen in model.values() if seen is status) for status in JobStatus
        }
    finally:
        queue.close()


@given(
    start=ads(),
    edits=st.lists(st.tuples(names, st.one_of(st.none(), values)), max_size=10),
)
def test_piecewise_ad_text_parses_back_to_the_edited_ad(
    start: ClassAd, edits: list[tuple[str, Any]]
) -> None:
    """The per-attribute stored text, refreshed after edits and deletions, reads back equal."""
    text = AdText(start)
    ad = start.copy()
    assert str(text) == str(ad)
    for name, value in edits:
        if value is None:
            ad.pop(name, None)
        else:
            ad[name] = value
        text.refresh(ad, [name])
    assert parse_ad(str(text)) == ad


@given(edits=st.lists(st.tuples(names, values), min_size=1, max_size=6))
def test_edited_jobs_read_back_equal_after_reopen(
    tmp_path: Path, edits: list[tuple[str, Any]]
) -> None:
    """Jobs edited and moved through statuses (in and out of batches) reopen unchanged."""
    queue, path = fresh_queue(tmp_path)
    [job] = queue.submit(queue.next_cluster_id(), ClassAd({"Owner": "a"}), [ClassAd({"ProcId": 0})])
    with queue.batch():
        for name, value in edits[: len(edits) // 2]:
            queue.set_attributes(job, {name: value}, 1000.0)
        queue.change_status(job, JobStatus.HELD, 1000.0, reason="held")
    for name, value in edits[len(edits) // 2 :]:
        queue.set_attributes(job, {name: value}, 1000.0)
    queue.change_status(job, JobStatus.IDLE, 1001.0, reason="released")
    expected = queue.get(job)
    queue.close()
    queue = JobQueue.open(path)
    try:
        assert queue.get(job) == expected
    finally:
        queue.close()
