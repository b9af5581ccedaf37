"""A restarted schedd takes back its running jobs: those whose claims the startds took back,
those whose end the startds' history has, and (:mod:`epcore.schedd.reconnect`) those on
startds elsewhere; every other job marked running goes back to idle."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from epcore.classad import ClassAd
from epcore.errors import PoolError, QueueError
from epcore.schedd.claims import RunningJob, record_start
from epcore.schedd.jobqueue import JobId, JobStatus
from epcore.schedd.outcomes import record
from epcore.schedd.schedd_jobs import job_id_of, reuse_key, submitter_of

if TYPE_CHECKING:
    from epcore.schedd.schedd import Schedd


def ended(
    jobs: dict[JobId, ClassAd], history: Callable[[set[str]], Iterable[ClassAd]]
) -> dict[JobId, ClassAd]:
    """The results ``history`` has for ``jobs`` on the claims the queue says they run on."""
    public = {job_id: str(job.evaluate("PublicClaimId")) for job_id, job in jobs.items()}
    found: dict[JobId, ClassAd] = {}
    for result in history(set(public.values())):
        claim = result.evaluate("ClaimId")
        try:
            job_id = job_id_of(result)
        except PoolError:
            continue
        if isinstance(claim, str) and public.get(job_id) == claim.rsplit("#", 1)[0]:
            found[job_id] = result
    return found


def recover(
    schedd: Schedd,
    claims: Iterable[tuple[str, str, ClassAd]],
    now: float,
    history: Callable[[set[str]], Iterable[ClassAd]] = lambda claims: (),
) -> None:
    """After a restart: adopt the running jobs whose claims the startds took back
    (``claims``: the startd's address, the claim id and the job ad), and put every other
    job marked running back to idle (its claim is gone with the previous process), unless
    the startds' history (``history``: the recent results of the claims with these public
    ids) has its end:
    the previous process was killed between that record and the queue's, and the job
    must not run again.

    A claim's job may still be idle in the queue (the previous process was killed after
    its starter started and before the queue was written): it runs, so it is marked
    running, never offered again. A claim whose job is no longer wanted (removed, held,
    gone from the queue) is given back, which stops the job.
    """
    adopted: dict[JobId, tuple[str, str]] = {}
    for address, claim_id, job in claims:
        try:
            adopted[job_id_of(job)] = (address, claim_id)
        except PoolError:
            schedd.log.warning("a restored claim has a job without ClusterId/ProcId")
            schedd.give_back(address, claim_id)
    with schedd.queue.batch():
        orphans = {
            job_id: job
            for job in schedd.queue.jobs(statuses=(JobStatus.RUNNING,))
            if (job_id := job_id_of(job)) not in adopted
        }
        ended_jobs = ended(orphans, history) if orphans else {}
        for job_id in orphans:
            if job_id in ended_jobs:
                schedd.log.info("job %s: ended before the restart (startd history)", job_id)
                try:
                    record(schedd, job_id, ended_jobs[job_id], now)
                    continue
                except QueueError as error:
                    schedd.log.warning("job %s: its end cannot be recorded: %s", job_id, error)
            reconnect = schedd.reconnect
            if reconnect is not None and reconnect(schedd, job_id, orphans[job_id], now):
                continue
            schedd.log.info("job %s: its claim did not survive the restart", job_id)
            schedd.queue.change_status(job_id, JobStatus.IDLE, now)
            schedd.now_idle(job_id)
        for job_id, (address, claim_id) in adopted.items():
            adopt(schedd, job_id, address, claim_id, now)


def adopt(schedd: Schedd, job_id: JobId, address: str, claim_id: str, now: float) -> None:
    """Take ``claim_id``, running ``job_id``, back after a restart (or give it back)."""
    try:
        job = schedd.queue.get(job_id)
    except QueueError:
        job = None
    status = job.evaluate("JobStatus") if job is not None else None
    if job is None or status not in (int(JobStatus.RUNNING), int(JobStatus.IDLE)):
        schedd.log.info("job %s: its restored claim is given back (job not wanted)", job_id)
        schedd.give_back(address, claim_id)
        return
    started = job.evaluate("JobCurrentStartDate")
    if status == int(JobStatus.IDLE):
        schedd.log.info("job %s: runs on a restored claim; marked running", job_id)
        record_start(schedd, job_id, job, address, claim_id, now, reused=False)
        started = int(now)
    schedd.running[claim_id] = RunningJob(
        job_id,
        claim_id,
        address,
        schedd.slot_of(address, claim_id) or "?",
        submitter_of(job, schedd.uid_domain),
        reuse_key(job, schedd.idle.consider_limits),
        float(started) if isinstance(started, int) else now,
    )
    schedd.keep_alive(claim_id, job, now, first=True)
