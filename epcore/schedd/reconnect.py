"""A restarted schedd reconnects to its jobs running on startds in other processes, as
HTCondor's schedd does with a reconnect shadow for each job whose claim it kept.

The claim of a running job is kept in its ad (ClaimId, private: queries never show it, and
StartdIpAddr, the startd's address, as HTCondor keeps them). After a restart, a job marked
running that no startd in this process took back and whose startd is elsewhere is adopted
as running at once, and its startd asked about it once (the link's slot_of: which slot
holds the claim). The questions are asked off the loop, one thread per startd (at most
THREADS at once, a silent startd asked once for all its claims), so that a restarted schedd
answers its clients at once however many of its startds are gone; each answer wakes the
loop, which applies it at its next tick (:meth:`Reconnects.check`):

- the startd holds the claim: the job runs on, NumJobReconnects grows by one;
- the startd answers that it has no such claim: the job goes back to idle (a result the
  startd still holds for it is then refused, and dropped);
- the startd cannot be reached: the job stays running, marked disconnected
  (JobDisconnectedDate), and its lease decides
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
import threading
import time
from collections import deque
from typing import Final

import attrs

from epcore.classad import UNDEFINED, ClassAd
from epcore.errors import EpError, QueueError
from epcore.interfaces import StartdLink
from epcore.schedd import joblog
from epcore.schedd.claims import RunningJob
from epcore.schedd.jobqueue_model import JobId
from epcore.schedd.leases import JobLeases
from epcore.schedd.schedd import Schedd
from epcore.schedd.schedd_jobs import reuse_key, submitter_of

#: Startds asked at once (a silent one holds its thread for its connection timeout).
THREADS: Final = 16


def remote_claim(job: ClassAd) -> tuple[str, str] | None:
    """The startd address and claim id a running job's ad keeps, when its startd is in
    another process (a TCP address); None otherwise."""
    claim_id, address = job.evaluate("ClaimId"), job.evaluate("StartdIpAddr")
    if not isinstance(claim_id, str) or not isinstance(address, str):
        return None
    if not address.startswith("<") or address.startswith("<unix:"):
        return None
    return address, claim_id


@attrs.frozen
class _Question:
    """A claim asked about after the restart: its job, its startd's address."""

    job_id: JobId
    address: str


class Reconnects:
    """The schedd's ``reconnect`` after a restart (module docstring) and its questions to the
    startds, asked off the loop: :meth:`check`, the schedd's lease check, applies the answers
    and then checks the leases (``leases``)."""

    def __init__(self, leases: JobLeases | None = None) -> None:
        self.leases = leases
        self._lock = threading.Lock()
        #: The claims asked about and not yet answered (the loop's own).
        self.asking: dict[str, _Question] = {}
        if leases is not None:
            # Their startds' answers come first: the leases leave them be meanwhile.
            leases.asking = self.asking
        #: The answers not yet applied: the claim's slot (None: the startd has no such
        #: claim) or why its startd could not be asked.
        self._answers: dict[str, str | EpError | None] = {}
        #: The claims each startd's thread has yet to ask about.
        self._queued: dict[str, deque[str]] = {}
        self._slots = threading.BoundedSemaphore(THREADS)

    def __call__(self, schedd: Schedd, job_id: JobId, job: ClassAd, now: float) -> bool:
        """Take back ``job_id`` (marked running, its claim not taken back by a startd in this
        process) when its claim is on a startd elsewhere, and ask that startd about it; False
        when the job is not such a job (the caller requeues it)."""
        found = remote_claim(job)
        if found is None:
            return False
        address, claim_id = found
        # HTCondor's schedd writes this for every job it takes back, before asking its startd.
        joblog.disconnected(job, address, joblog.RESTART_REASON, now, schedd.log)
        remote_host = job.evaluate("RemoteHost")
        started = job.evaluate("JobCurrentStartDate")
        schedd.running[claim_id] = RunningJob(
            job_id,
            claim_id,
            address,
            remote_host if isinstance(remote_host, str) else "?",
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
        self._ask(schedd, claim_id, _Question(job_id, address), now)
        return True

    def _ask(self, schedd: Schedd, claim_id: str, question: _Question, now: float) -> None:
        self.asking[claim_id] = question
        try:
            link = schedd.startds.link(question.address)
        except EpError as error:
            answer: str | EpError | None = error
        else:
            if question.address not in schedd.startds.links:
                self._ask_elsewhere(schedd, link, claim_id)
                return
            answer = _slot_of(link, claim_id)  # a startd in this process answers at once
        with self._lock:
            self._answers[claim_id] = answer
        self._apply(schedd, now)

    def _ask_elsewhere(self, schedd: Schedd, link: StartdLink, claim_id: str) -> None:
        """Queue the question for the thread of ``link``'s startd (one per startd, at most
        THREADS asking at once); each answer wakes the loop."""
        address = self.asking[claim_id].address
        with self._lock:
            queued = self._queued.get(address)
            if queued is not None:
                queued.append(claim_id)
                return
            self._queued[address] = deque([claim_id])
        wake = schedd.activations.on_answer

        def ask() -> None:
            failed: EpError | None = None
            with self._slots:
                while True:
                    with self._lock:
                        queued = self._queued[address]
                        if not queued:
                            del self._queued[address]
                            return
                        asked = queued.popleft()
                    # A startd that could not be reached is not asked again for each claim.
                    answer = failed if failed is not None else _slot_of(link, asked)
                    if isinstance(answer, EpError):
                        failed = answer
                    with self._lock:
                        self._answers[asked] = answer
                    wake()

        threading.Thread(target=ask, name="schedd-reconnect", daemon=True).start()

    def wait(self, timeout: float) -> bool:
        """Whether every question asked so far was answered within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if set(self.asking) <= set(self._answers):
                    return True
            time.sleep(0.01)
        return False

    def check(self, schedd: Schedd, now: float) -> list[str]:
        """Apply the answers in, then check the leases (the claims whose lease ran out)."""
        self._apply(schedd, now)
        return [] if self.leases is None else self.leases.check(schedd, now)

    def _apply(self, schedd: Schedd, now: float) -> None:
        with self._lock:
            answers, self._answers = self._answers, {}
        for claim_id, answer in answers.items():
            question = self.asking.pop(claim_id, None)
            running = schedd.running.get(claim_id)
            if question is None or running is None or running.job_id != question.job_id:
                continue  # the job ended meanwhile (its result came, or it was removed)
            try:
                job = schedd.queue.get(question.job_id)
            except QueueError:
                continue
            with schedd.queue.batch():
                _answered(schedd, running, job, answer, now)


def _slot_of(link: StartdLink, claim_id: str) -> str | EpError | None:
    try:
        return link.slot_of(claim_id)
    except EpError as error:
        return error


def _answered(
    schedd: Schedd, running: RunningJob, job: ClassAd, answer: str | EpError | None, now: float
) -> None:
    """What the startd answered about ``running``'s claim (module docstring)."""
    job_id, address = running.job_id, running.startd
    if isinstance(answer, EpError):
        schedd.log.info(
            "job %s: its startd at %s cannot be reached (%s); kept until its lease ends",
            job_id,
            address,
            answer,
        )
        if job.evaluate("JobDisconnectedDate") is UNDEFINED:
            # Disconnected since now, as far as this process knows (the event is written).
            with contextlib.suppress(QueueError):
                schedd.queue.set_attributes(job_id, {"JobDisconnectedDate": int(now)}, now)
        return
    if answer is None:
        schedd.log.info("job %s: the startd at %s no longer has its claim", job_id, address)
        joblog.reconnect_failed(job, address, joblog.NO_CLAIM_REASON, now, schedd.log)
        schedd.lease_expired(running.claim_id, joblog.NO_CLAIM_REASON, now)
        return
    schedd.running[running.claim_id] = attrs.evolve(running, slot=answer)
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
    schedd.log.info("job %s: reconnected to its claim on %s", job_id, answer)
