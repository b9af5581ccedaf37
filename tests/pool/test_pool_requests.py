"""The pool's request client: what a submission sends over the wire."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.interfaces.requests import SUBMIT_CHUNK
from epcore.pool.requests import SUBMIT_REQUEST_BYTES, proc_differences, submit_chunks
from epcore.submit import LocalSubmitHost, SubmitContext, build_jobs, parse_submit


def _cluster(submit_text: str) -> tuple[ClassAd, tuple[ClassAd, ...]]:
    context = SubmitContext(
        owner="alice", submit_dir="/tmp", now=int(time.time()), config=Config.from_text("")
    )
    built = build_jobs(parse_submit(submit_text), context, LocalSubmitHost(), cluster_id=7)
    return built.cluster_ad, built.procs


def test_a_proc_sends_its_procid_and_what_differs_from_the_cluster_ad() -> None:
    """Attributes every job shares go once, in the cluster ad; a job's ad carries ProcId and
    the attributes whose expressions differ from the cluster ad's."""
    cluster_ad, procs = _cluster(
        "executable = /bin/echo\narguments = $(Process)\nrequest_memory = 64\nqueue 3\n"
    )
    sent = proc_differences(cluster_ad, procs[2])
    assert {name.lower() for name in sent} == {"procid", "arguments"}
    assert (sent.evaluate("ProcId"), sent.evaluate("Arguments")) == (2, "2")


def test_a_single_job_sends_only_its_procid() -> None:
    """With one job everything but ProcId is in the cluster ad, and the job sends ProcId
    alone (ProcId goes in every proc ad, even one that matches the cluster ad's)."""
    cluster_ad, (proc,) = _cluster("executable = /bin/true\nqueue\n")
    sent = proc_differences(cluster_ad, proc)
    assert [name.lower() for name in sent] == ["procid"]
    cluster_ad["ProcId"] = 0
    sent = proc_differences(cluster_ad, proc)
    assert [name.lower() for name in sent] == ["procid"]


@settings(max_examples=50, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=6),
    memory=st.integers(min_value=1, max_value=4096),
    extra=st.sampled_from(["", "+Color = $(Process) * 2\n", 'environment = "A=$(Process)"\n']),
)
def test_the_cluster_ad_and_the_differences_give_back_each_job(
    count: int, memory: int, extra: str
) -> None:
    """Overlaying what a job sends on the cluster ad gives back the job's complete ad."""
    cluster_ad, procs = _cluster(
        f"executable = /bin/true\nrequest_memory = {memory}\n{extra}queue {count}\n"
    )
    for proc in procs:
        rebuilt = cluster_ad.copy()
        rebuilt.update(proc_differences(cluster_ad, proc))
        assert rebuilt == proc


def test_a_submission_is_split_by_size_as_well_as_by_count() -> None:
    """submit_chunks keeps each request within SUBMIT_REQUEST_BYTES (a job too large for it
    goes alone) and SUBMIT_CHUNK jobs, and keeps every job in order."""
    small = [ClassAd({"ProcId": n}) for n in range(1200)]
    chunks = submit_chunks(100, small)
    assert [len(c) for c in chunks] == [SUBMIT_CHUNK, SUBMIT_CHUNK, 200]
    wide = [ClassAd({"ProcId": n, "Args": "a" * 1000}) for n in range(600)]
    chunks = submit_chunks(5000, wide)
    assert len(chunks) > 2
    for chunk in chunks:
        assert 5000 + sum(len(str(ad)) + 2 for ad in chunk) <= SUBMIT_REQUEST_BYTES
    assert [ad for chunk in chunks for ad in chunk] == wide
    huge = [ClassAd({"ProcId": 0, "Args": "a" * (2 * SUBMIT_REQUEST_BYTES)}), small[1]]
    assert [len(c) for c in submit_chunks(10, huge)] == [1, 1]
