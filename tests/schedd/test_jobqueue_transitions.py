"""Job status changes: every allowed and refused move, and the attributes each one keeps."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.classad import ClassAd
from epcore.errors import QueueError
from epcore.schedd.jobqueue import JobId, JobQueue, JobStatus

S = JobStatus
NOW = 1_700_000_000

#: Written out independently of the implementation's table, from the schedd's rules.
ALLOWED = {
    (S.IDLE, S.RUNNING),
    (S.IDLE, S.HELD),
    (S.IDLE, S.REMOVED),
    (S.RUNNING, S.IDLE),
    (S.RUNNING, S.COMPLETED),
    (S.RUNNING, S.HELD),
    (S.RUNNING, S.REMOVED),
    (S.RUNNING, S.SUSPENDED),
    (S.RUNNING, S.TRANSFERRING_OUTPUT),
    (S.SUSPENDED, S.RUNNING),
    (S.SUSPENDED, S.IDLE),
    (S.SUSPENDED, S.HELD),
    (S.SUSPENDED, S.REMOVED),
    (S.TRANSFERRING_OUTPUT, S.COMPLETED),
    (S.TRANSFERRING_OUTPUT, S.IDLE),
    (S.TRANSFERRING_OUTPUT, S.HELD),
    (S.TRANSFERRING_OUTPUT, S.REMOVED),
    (S.HELD, S.IDLE),
    (S.HELD, S.REMOVED),
}
EVERY_PAIR = list(itertools.product(JobStatus, JobStatus))


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[JobQueue]:
    """An empty queue in a temporary spool, closed afterwards."""
    opened = JobQueue.open(tmp_path / "job_queue.db")
    yield opened
    opened.close()


def submit_in(queue: JobQueue, status: JobStatus, **extra: object) -> JobId:
    """Queue one job that is already in ``status``."""
    cluster = queue.next_cluster_id()
    proc = ClassAd({"ProcId": 0, "JobStatus": int(status), **extra})
    [job] = queue.submit(cluster, ClassAd({"Owner": "alice", "Cmd": "/bin/true"}), [proc])
    return job


@pytest.mark.parametrize(("old", "new"), sorted(ALLOWED))
def test_allowed_transition_changes_status_and_keeps_the_bookkeeping(
    queue: JobQueue, old: JobStatus, new: JobStatus
) -> None:
    """An allowed move sets JobStatus, LastJobStatus and EnteredCurrentStatus, and the counts."""
    job = submit_in(queue, old)
    ad = queue.change_status(job, new, NOW + 0.9)
    assert ad.evaluate("JobStatus") == int(new)
    assert ad.evaluate("LastJobStatus") == int(old)
    assert ad.evaluate("EnteredCurrentStatus") == NOW
    assert queue.get(job) == ad
    assert queue.counts()[new] == 1
    assert sum(queue.counts().values()) == 1


@pytest.mark.parametrize(("old", "new"), [pair for pair in EVERY_PAIR if pair not in ALLOWED])
def test_refused_transition_names_job_and_both_statuses(
    queue: JobQueue, old: JobStatus, new: JobStatus
) -> None:
    """A move the schedd does not allow is a QueueError naming the job and both statuses."""
    job = submit_in(queue, old)
    before = queue.get(job)
    with pytest.raises(QueueError) as caught:
        queue.change_status(job, new, NOW)
    message = str(caught.value)
    assert f"job {job}" in message
    assert old.name in message
    assert new.name in message
    assert queue.get(job) == before
    assert queue.counts()[old] == 1


@pytest.mark.parametrize(
    ("reason", "code", "subcode", "expected"),
    [
        (None, None, None, ("Unspecified", 1, 0)),
        ("via condor_hold (by user alice)", None, None, ("via condor_hold (by user alice)", 1, 0)),
        ("Error from starter: no such file", 6, 2, ("Error from starter: no such file", 6, 2)),
    ],
)
def test_hold_records_reason_codes_and_counts_holds(
    queue: JobQueue,
    reason: str | None,
    code: int | None,
    subcode: int | None,
    expected: tuple[str, int, int],
) -> None:
    """A hold sets HoldReason, HoldReasonCode, HoldReasonSubCode and increments NumHolds."""
    job = submit_in(queue, S.IDLE)
    ad = queue.change_status(job, S.HELD, NOW, reason=reason, code=code, subcode=subcode)
    assert (
        ad.evaluate("HoldReason"),
        ad.evaluate("HoldReasonCode"),
        ad.evaluate("HoldReasonSubCode"),
    ) == expected
    assert ad.evaluate("NumHolds") == 1
    queue.change_status(job, S.IDLE, NOW + 1)
    again = queue.change_status(job, S.HELD, NOW + 2, reason="again", code=3)
    assert again.evaluate("NumHolds") == 2
    assert again.evaluate("HoldReason") == "again"


def test_release_files_the_hold_away(queue: JobQueue) -> None:
    """A release records ReleaseReason and moves the hold attributes to LastHold*."""
    job = submit_in(queue, S.RUNNING)
    queue.change_status(job, S.HELD, NOW, reason="disk full", code=12, subcode=28)
    ad = queue.change_status(job, S.IDLE, NOW + 5, reason="via condor_release")
    assert ad.evaluate("ReleaseReason") == "via condor_release"
    assert (
        ad.evaluate("LastHoldReason"),
        ad.evaluate("LastHoldReasonCode"),
        ad.evaluate("LastHoldReasonSubCode"),
    ) == ("disk full", 12, 28)
    assert not {"HoldReason", "HoldReasonCode", "HoldReasonSubCode"} & set(ad)
    assert ad.evaluate("NumHolds") == 1
    assert ad.evaluate("LastJobStatus") == int(S.HELD)


def test_removing_a_held_job_keeps_why_it_was_held(queue: JobQueue) -> None:
    """A held job that is removed keeps its HoldReason beside the RemoveReason."""
    job = submit_in(queue, S.IDLE)
    queue.change_status(job, S.HELD, NOW, reason="quota")
    ad = queue.change_status(job, S.REMOVED, NOW + 1, reason="via condor_rm")
    assert (ad.evaluate("HoldReason"), ad.evaluate("RemoveReason")) == ("quota", "via condor_rm")


@pytest.mark.parametrize(
    ("old", "reason", "expected"), [(S.IDLE, None, "Unspecified"), (S.RUNNING, "policy", "policy")]
)
def test_remove_records_remove_reason(
    queue: JobQueue, old: JobStatus, reason: str | None, expected: str
) -> None:
    """A removal records RemoveReason."""
    job = submit_in(queue, old)
    assert queue.change_status(job, S.REMOVED, NOW, reason=reason).evaluate("RemoveReason") == (
        expected
    )


def test_completion_records_completion_date(queue: JobQueue) -> None:
    """A job that completes gets CompletionDate, the time it entered Completed."""
    job = submit_in(queue, S.RUNNING)
    ad = queue.change_status(job, S.COMPLETED, NOW + 7.5)
    assert ad.evaluate("CompletionDate") == NOW + 7


def test_change_status_of_a_missing_job_names_it(queue: JobQueue) -> None:
    """Changing the status of a job that is not queued is a QueueError naming it."""
    with pytest.raises(QueueError, match=r"job 9\.4 is not in the queue"):
        queue.change_status(JobId(9, 4), S.HELD, NOW)
