"""How the schedd writes a job's end into the queue (an exit completes it unless OnExitHold
or OnExitRemove say otherwise, a hold from the starter holds it with the starter's code and
reason, an eviction puts it back to idle), and runs the next idle job of the same submitter
and autocluster on the claim that ran it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from epcore.classad import ClassAd
from epcore.errors import EpError, PoolError, QueueError
from epcore.jobs.codes import HoldCode
from epcore.schedd.activation import is_remote
from epcore.schedd.claims import RunningJob
from epcore.schedd.jobqueue import JobId, JobStatus
from epcore.schedd.schedd_jobs import result_values
from epcore.submit import expand_match_references

if TYPE_CHECKING:
    from epcore.schedd.schedd import Schedd


def record(schedd: Schedd, job_id: JobId, result: ClassAd, now: float) -> None:
    job = schedd.queue.get(job_id)
    status = job.evaluate("JobStatus")
    values = result_values(job, result, now)
    schedd.queue.set_attributes(job_id, values, now)
    outcome = result.evaluate("JobOutcome")
    if status in (int(JobStatus.REMOVED), int(JobStatus.HELD)):
        # rm or hold of a running job: it was killed for that; the status stays.
        if status == int(JobStatus.REMOVED):
            schedd.queue.finish(job_id, now)
        return
    if outcome == "exited":
        exited(schedd, job_id, schedd.queue.get(job_id), now)
    elif outcome == "held":
        reason = result.evaluate("HoldReason")
        code = result.evaluate("HoldReasonCode")
        subcode = result.evaluate("HoldReasonSubCode")
        schedd.queue.change_status(
            job_id,
            JobStatus.HELD,
            now,
            reason=reason if isinstance(reason, str) else "held by the starter",
            code=code if isinstance(code, int) else 0,
            subcode=subcode if isinstance(subcode, int) else 0,
        )
    else:
        schedd.queue.change_status(job_id, JobStatus.IDLE, now)
        schedd.now_idle(job_id)


def hold_failed(schedd: Schedd, job_id: JobId, error: Exception, now: float) -> None:
    reason = f"The schedd failed to handle the end of this job: {type(error).__name__}"
    try:
        schedd.hold_idle(job_id, reason, 0, now)
    except Exception:
        schedd.log.exception("job %s: holding it failed too", job_id)


def exited(schedd: Schedd, job_id: JobId, job: ClassAd, now: float) -> None:
    context = schedd.config.eval_context.at(now)
    if job.evaluate("OnExitHold", context=context) is True:
        reason = job.evaluate("OnExitHoldReason", context=context)
        subcode = job.evaluate("OnExitHoldSubCode", context=context)
        schedd.queue.change_status(
            job_id,
            JobStatus.HELD,
            now,
            reason=reason if isinstance(reason, str) else "The on_exit_hold expression is true",
            code=HoldCode.JOB_POLICY,
            subcode=subcode if isinstance(subcode, int) else 0,
        )
        return
    if job.evaluate("OnExitRemove", context=context) is False:
        schedd.queue.change_status(job_id, JobStatus.IDLE, now)
        schedd.now_idle(job_id)
        return
    schedd.queue.change_status(job_id, JobStatus.COMPLETED, now)
    schedd.queue.finish(job_id, now)


def next_on_claim(schedd: Schedd, ended: RunningJob, now: float) -> None:
    """Run the next idle job of the same submitter and autocluster on the claim."""
    try:
        startd = schedd.startds.link(ended.startd)
    except EpError:
        schedd.wants_negotiation = True  # its startd is gone: the claim with it
        return
    remote = is_remote(schedd, ended.startd)
    # A startd elsewhere is asked whether the claim is ready with its activation, by a worker.
    if not remote:
        try:
            ready = startd.claim_ready(ended.claim_id)
            if not ready and startd.slot_of(ended.claim_id) is not None:
                # Vacated or preempted: the claim is on its way out.
                schedd.give_back(ended.startd, ended.claim_id)
        except EpError as error:
            # A startd that does not answer now (restarting, cut off) must not undo the
            # job's end recorded in this same batch: the claim is left to its lease.
            schedd.log.info("claim of job %s not reused: %s", ended.job_id, error)
            ready = False
        if not ready:
            schedd.wants_negotiation = True
            return
    busy = schedd.busy_jobs()
    while (job_id := schedd.idle.pop(ended.submitter, ended.key)) is not None:
        if job_id in busy:
            continue
        try:
            job = schedd.queue.get(job_id)
        except QueueError:
            continue
        if job.evaluate("JobStatus") != int(JobStatus.IDLE):
            continue
        if ended.slot_ad is None:
            schedd.now_idle(job_id)
            break  # taken back after a restart: no slot ad for its $$(); negotiate again
        try:
            job = expand_match_references(job, ended.slot_ad)
        except PoolError as error:
            schedd.hold_idle(job_id, f"cannot expand $$() at match time: {error}", 1, now)
            continue
        if not schedd.activate(
            job_id,
            job,
            ended.startd,
            ended.claim_id,
            ended.submitter,
            now,
            reused=True,
            slot_ad=ended.slot_ad,
            check=remote,
        ):
            schedd.now_idle(job_id)  # refused: it stays idle (and the claim went back)
        return
    schedd.give_back(ended.startd, ended.claim_id)
