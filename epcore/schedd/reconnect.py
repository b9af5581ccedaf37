"""A restarted schedd reconnects to its jobs running on startds in other processes, as
HTCondor's schedd does with a reconnect shadow for each job whose claim it kept.

The claim of a running job is kept in its ad (ClaimId, private: queries never show it, and
StartdIpAddr, the startd's address, as HTCondor keeps them). After a restart, a job marked
running that no startd in this process took back and whose startd is elsewhere is asked
about once (the link's slot_of: which slot holds the claim):

- the startd holds the claim: the job is adopted as running, NumJobReconnects grows by one;
- the startd answers that it has no such claim: the job goes back to idle now (a result the
  startd still holds for it is then refused, and dropped);
- the startd cannot be reached: the job is adopted all the same, marked disconnected
  (JobDisconnectedDate) and its lease decides
  (:mod:`epcore.schedd.leases`): it counts from LastJobLeaseRenewal, as HTCondor's schedd
  reads it back into the claim's last keep-alive, and the job is requeued when the startd
  stays silent to the end of it.

The job's event log says so (:mod:`epcore.schedd.joblog`), as HTCondor's does: disconnected
(022) for every job asked about, then reconnected (023) or reconnect failed (024, the
startd without the claim; the lease's end writes it for a silent one).

A job taken back also has its TransferKey (kept private in its ad at activation) taken
again: its starter sends the output with the key the previous process gave it, to the same
address (the restarted schedd listens on its former port, :mod:`epcore.pool.network`), and
tries again while the schedd is down (:mod:`epcore.starter.fetch`).
"""

from __future__ import annotations

import contextlib

from epcore.classad import UNDEFINED, ClassAd
from epcore.errors import EpError, QueueError
from epcore.schedd import joblog
from epcore.schedd.claims import RunningJob
from epcore.schedd.jobqueue_model import JobId
from epcore.schedd.schedd import Schedd
from epcore.schedd.schedd_jobs import reuse_key, submitter_of


def remote_claim(job: ClassAd) -> tuple[str, str] | None:
    """The startd address and claim id a running job's ad keeps, when its startd is in
    another process (a TCP address); None otherwise."""
    claim_id, address = job.evaluate("ClaimId"), job.evaluate("StartdIpAddr")
    if not isinstance(claim_id, str) or not isinstance(address, str):
        return None
    if not address.startswith("<") or address.startswith("<unix:"):
        return None
    return address, claim_id


def reconnect(schedd: Schedd, job_id: JobId, job: ClassAd, now: float) -> bool:
    """Take back ``job_id`` (marked running, its claim not taken back by a startd in this
    process) when its claim is on a startd elsewhere (module docstring); False when the
    job is not such a job or its startd no longer holds the claim (the caller requeues it)."""
    found = remote_claim(job)
    if found is None:
        return False
    address, claim_id = found
    # HTCondor's schedd writes this for every job it takes back, before asking its startd.
    joblog.disconnected(job, address, joblog.RESTART_REASON, now, schedd.log)
    reconnected = False
    try:
        slot = schedd.startds.link(address).slot_of(claim_id)
    except EpError as error:
        schedd.log.info(
            "job %s: its startd at %s cannot be reached (%s); kept until its lease ends",
            job_id,
            address,
            error,
        )
        slot = None
    else:
        if slot is None:
            schedd.log.info("job %s: the startd at %s no longer has its claim", job_id, address)
            joblog.reconnect_failed(job, address, joblog.NO_CLAIM_REASON, now, schedd.log)
            return False
        reconnected = True
    remote_host = job.evaluate("RemoteHost")
    started = job.evaluate("JobCurrentStartDate")
    schedd.running[claim_id] = RunningJob(
        job_id,
        claim_id,
        address,
        slot or (remote_host if isinstance(remote_host, str) else "?"),
        submitter_of(job, schedd.uid_domain),
        reuse_key(job, schedd.idle.consider_limits),
        float(started) if isinstance(started, int) else now,
    )
    # The startd's claim lease ran on while no schedd was there: renewed at once.
    schedd.keep_alive(claim_id, job, now, first=True)
    key = job.evaluate("TransferKey")
    if schedd.transfers is not None and isinstance(key, str):
        # The starter holds the key the previous process gave: its output comes with it.
        schedd.transfers.restore(str(job_id), job, key)
    if not reconnected:
        if job.evaluate("JobDisconnectedDate") is UNDEFINED:
            # Disconnected since now, as far as this process knows (the event is written).
            with contextlib.suppress(QueueError):
                schedd.queue.set_attributes(job_id, {"JobDisconnectedDate": int(now)}, now)
        return True
    joblog.reconnected(job, address, now, schedd.log)
    count = job.evaluate("NumJobReconnects")
    with contextlib.suppress(QueueError):  # gone meanwhile: nothing to count
        schedd.queue.set_attributes(
            job_id,
            {
                "NumJobReconnects": (count if isinstance(count, int) else 0) + 1,
                "JobDisconnectedDate": None,  # a mark from before the restart goes
            },
            now,
        )
    schedd.log.info("job %s: reconnected to its claim on %s", job_id, slot)
    return True
