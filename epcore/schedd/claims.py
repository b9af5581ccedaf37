"""The schedd's records of its claims: a running job's, and a match waiting for its slot
(:func:`try_pending`, at each of the schedd's ticks, claims or activates it once the slot is
ready, or picks up a worker's answer, :mod:`epcore.schedd.activation`); and what the queue
records when a job starts (:func:`record_start`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from epcore.classad import ClassAd
from epcore.errors import EpError, QueueError
from epcore.interfaces import ClaimPending
from epcore.schedd.activation import apply_answer, is_remote
from epcore.schedd.jobqueue import JobId, JobStatus
from epcore.schedd.schedd_jobs import ReuseKey

if TYPE_CHECKING:
    from epcore.schedd.schedd import Schedd

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
    #: A worker asks the startd elsewhere to activate ``claim_id`` (epcore.schedd.activation);
    #: ``reused``: for the next job of a claim whose job ended; ``key``: the TransferKey sent.
    asked: bool = False
    reused: bool = False
    key: str | None = None


def try_pending(schedd: Schedd, job_id: JobId, pending: PendingClaim, now: float) -> None:
    """Claim or activate ``pending`` once its slot is ready, or give it up (its job no
    longer idle, its patience gone, its startd gone or refusing)."""
    try:
        job = schedd.queue.get(job_id)
    except QueueError:
        job = None
    if job is None or job.evaluate("JobStatus") != int(JobStatus.IDLE):
        del schedd.pending[job_id]
        if pending.claim_id is not None:
            schedd.give_back(pending.startd, pending.claim_id)
        return
    if now - pending.since > PENDING_CLAIM_PATIENCE:
        schedd.log.info("job %s: gave up waiting for %s", job_id, pending.slot)
        del schedd.pending[job_id]
        if pending.claim_id is not None:
            schedd.give_back(pending.startd, pending.claim_id)
        return
    if pending.asked:
        apply_answer(schedd, pending, now)
        return
    try:
        startd = schedd.startds.link(pending.startd)
    except EpError:
        del schedd.pending[job_id]  # its startd is gone
        return
    if pending.claim_id is None:
        matched = pending.job if pending.job is not None else job
        try:
            claim_id = startd.claim(pending.slot, matched, schedd.host_name)
        except ClaimPending:
            return  # a remote startd's answer is not in yet
        except EpError as error:
            if not pending.preempts:
                # A remote startd refused: the match is void, a new cycle matches anew.
                del schedd.pending[job_id]
                schedd.log.info(
                    "job %s: the claim of %s was refused: %s", job_id, pending.slot, error
                )
                schedd.wants_negotiation = True
            return  # not free yet
        del schedd.pending[job_id]
        with schedd.queue.batch():
            schedd.activate(
                job_id, matched, pending.startd, claim_id, pending.submitter, now,
                slot_ad=pending.slot_ad,
            )  # fmt: skip
        return
    if is_remote(schedd, pending.startd):
        # Whether the slot is ready, and the activation, are asked by a worker.
        schedd.activate(
            job_id, job, pending.startd, pending.claim_id, pending.submitter, now, check=True
        )
        return
    if startd.slot_of(pending.claim_id) is None:
        del schedd.pending[job_id]  # the startd dropped the claim (the slot went away)
        return
    if startd.claim_ready(pending.claim_id):
        del schedd.pending[job_id]
        with schedd.queue.batch():
            schedd.activate(job_id, job, pending.startd, pending.claim_id, pending.submitter, now)


def record_start(
    schedd: Schedd,
    job_id: JobId,
    job: ClassAd,
    address: str,
    claim_id: str,
    now: float,
    *,
    reused: bool,
    key: str | None = None,
    slot: str | None = None,
) -> str:
    """Write in the queue that ``job`` runs on ``claim_id`` (``key``: the TransferKey it
    was given; ``slot``: its slot, else asked of the startd); the slot's full name."""
    if slot is None:
        slot = schedd.slot_of(address, claim_id) or "?"
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
    if key is not None:
        # A restarted schedd takes the starter's output with it (epcore.schedd.reconnect).
        values["TransferKey"] = key
    if not isinstance(job.evaluate("JobStartDate"), int):
        values["JobStartDate"] = int(now)
    for name in job:
        if name.upper().startswith("MATCH_"):
            values[name] = job[name]
    schedd.queue.set_attributes(job_id, values, now)
    schedd.queue.change_status(job_id, JobStatus.RUNNING, now)
    return slot
