"""ACTIVATE_CLAIM and the claim-status questions to startds in other processes, asked off
the schedd's loop, as REQUEST_CLAIM already is (:mod:`epcore.links.startd`).

A startd in this process answers at once, so its claims are activated in the loop as
before. For a startd elsewhere (a link the startd Locator made, not one registered), each
question can take STARTD_CONTACT_TIMEOUT when the startd is slow, down or cut off: the
schedd hands it to :class:`Activations` (a few daemon worker threads) and keeps the job as a
pending claim marked ``asked`` (not offered to the negotiator, still idle in the queue) until
the answer is in; its next tick picks the answer up (:func:`apply_answer`). One silent
startd holds one worker for its timeout; the others go on starting the jobs of the other
startds, and the loop answers ``ep q`` meanwhile.

The work done for a claim (:func:`activate_when_ready`): when ``check`` is set (a claim whose
slot may not be ready: a preempting claim, or a claim reused after its job ended), whether
the startd still has the claim and whether it is ready; then the activation; then the
claim's slot, which the queue records as RemoteHost.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import attrs

from epcore.classad import ClassAd
from epcore.errors import EpError
from epcore.interfaces import StartdLink
from epcore.runtime.waiting import wait_while
from epcore.schedd.jobqueue import JobId

if TYPE_CHECKING:
    from epcore.schedd.claims import PendingClaim
    from epcore.schedd.schedd import Schedd

#: Worker threads asking startds; each silent startd holds one for its timeout.
WORKERS: Final = 4
#: Seconds an answer nobody picked up is kept (its job was removed or held meanwhile).
ANSWER_KEPT: Final = 600.0


@attrs.frozen
class Answer:
    """What a startd answered for a claim: ``activated``; ``slot``, the claim's slot (None:
    the startd no longer has the claim); ``error``, why it could not be asked or refused."""

    activated: bool
    slot: str | None
    error: EpError | None = None


def activate_when_ready(
    link: StartdLink, claim_id: str, job: ClassAd | None, *, check: bool
) -> Answer:
    """The questions for one claim (module docstring), in a worker thread."""
    try:
        if check:
            slot = link.slot_of(claim_id)
            if slot is None or not link.claim_ready(claim_id):
                return Answer(False, slot)
        link.activate(claim_id, job)
    except EpError as error:
        return Answer(False, None, error)
    try:
        return Answer(True, link.slot_of(claim_id))
    except EpError:
        return Answer(True, None)  # it runs: only its slot's name is not known


class Activations:
    """The worker threads and the answers not yet picked up, by job (module docstring)."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.monotonic = monotonic
        self._lock = threading.Condition()
        self._work: deque[tuple[JobId, Callable[[], Answer]]] = deque()
        self._answers: dict[JobId, tuple[float, Answer]] = {}
        self._threads: list[threading.Thread] = []
        self._idle = 0
        #: Called in the worker after each answer (the schedd service wakes its loop).
        self.on_answer: Callable[[], None] = lambda: None

    def ask(self, job_id: JobId, work: Callable[[], Answer]) -> None:
        """Run ``work`` for ``job_id`` in a worker; :meth:`take` has its answer later."""
        with self._lock:
            self._answers.pop(job_id, None)
            self._work.append((job_id, work))
            self._threads = [thread for thread in self._threads if thread.is_alive()]
            if self._idle == 0 and len(self._threads) < WORKERS:
                thread = threading.Thread(target=self._run, name="schedd-activate", daemon=True)
                self._threads.append(thread)
                thread.start()
            self._lock.notify()

    def take(self, job_id: JobId) -> Answer | None:
        """``job_id``'s answer once it is in (and forgotten here), else None."""
        with self._lock:
            found = self._answers.pop(job_id, None)
        return None if found is None else found[1]

    def wait(self, timeout: float) -> bool:
        """Whether every question asked so far was answered within ``timeout`` seconds."""
        return wait_while(
            self._lock, lambda: bool(self._work or self._idle < len(self._threads)), timeout
        )

    def _run(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
                self._lock.notify_all()
                while not self._work:
                    if not self._lock.wait(60.0) and not self._work:
                        # Quiet for a minute: this worker goes (the next question makes one).
                        self._idle -= 1
                        self._threads.remove(threading.current_thread())
                        return
                self._idle -= 1
                job_id, work = self._work.popleft()
            answer = work()
            now = self.monotonic()
            with self._lock:
                self._answers[job_id] = (now, answer)
                stale = [
                    key for key, (when, _) in self._answers.items() if now - when > ANSWER_KEPT
                ]
                for key in stale:
                    del self._answers[key]
            self.on_answer()


def is_remote(schedd: Schedd, address: str) -> bool:
    """Whether the startd at ``address`` is in another process (its link made, not
    registered): its questions go to a worker."""
    return address not in schedd.startds.links


def ask_activation(
    schedd: Schedd, pending: PendingClaim, claim_id: str, sent: ClassAd | None, *, check: bool
) -> None:
    """Have a worker activate ``claim_id`` for ``pending``'s job (sending ``sent``), the
    job kept pending meanwhile."""
    try:
        link = schedd.startds.link(pending.startd)
    except EpError as error:
        failed = Answer(False, None, error)
        schedd.activations.ask(pending.job_id, lambda: failed)
    else:
        schedd.activations.ask(
            pending.job_id, lambda: activate_when_ready(link, claim_id, sent, check=check)
        )
    schedd.pending[pending.job_id] = attrs.evolve(pending, claim_id=claim_id, asked=True)


def apply_answer(schedd: Schedd, pending: PendingClaim, now: float) -> bool:
    """Pick up the answer for ``pending`` (asked): start its job, give the claim back, or
    wait for the slot again; False while no answer is in."""
    answer = schedd.activations.take(pending.job_id)
    if answer is None:
        return False
    job_id, claim_id = pending.job_id, pending.claim_id
    assert claim_id is not None  # asked for a claim
    if answer.activated:
        del schedd.pending[job_id]
        job = pending.job if pending.job is not None else schedd.queue.get(job_id)
        with schedd.queue.batch():
            schedd.started(
                job_id, job, pending.startd, claim_id, pending.submitter, now,
                reused=pending.reused, slot_ad=pending.slot_ad, slot=answer.slot or "?",
                key=pending.key,
            )  # fmt: skip
        return True
    if answer.error is None and answer.slot is not None and not pending.reused:
        # Not ready yet (a preempting claim): asked again at a later tick.
        schedd.pending[job_id] = attrs.evolve(pending, asked=False)
        return True
    del schedd.pending[job_id]
    if answer.error is not None:
        schedd.log.info("job %s: activation refused: %s", job_id, answer.error)
    if answer.slot is not None or answer.error is not None:
        schedd.give_back(pending.startd, claim_id)
    schedd.now_idle(job_id)
    schedd.wants_negotiation = True
    return True
