"""The schedd of a claim in another process: the :class:`JobResults` a startd running without
a schedd hands its finished jobs' results to, over CEDAR.

HTCondor has no such conversation (its shadow, on the submit host, hears the job's end from
the starter); epcore's startd sends the result itself with EP_JOB_RESULT (90001, outside
every range of HTCondor's condor_commands.h), at DAEMON level: the claim id (a string: the
whole id, whose secret proves that the sender holds the claim), then the result ad. The
schedd answers an int, 1 when the result is applied or was applied before (a re-sent result
is acknowledged and not applied twice), 0 when it refuses it (no such claim runs that job
any more: its lease ran out and the job went back to idle), then a string saying why. Either
answer ends the result's journey: a refused one is dropped (no job finishes twice).

The schedd is the claim's client: the address it sent with REQUEST_CLAIM
(:meth:`RemoteJobResults.claimed`; after a restart of the startd, the claim's client as the
claims file kept it, through ``schedd_of``).

Nothing here waits in the startd's loop: :meth:`job_result` only queues; a worker thread
sends. A schedd that is down or cut off keeps its results queued and costs its entries a
growing pause (1 s doubling to 5 minutes), logged once when it becomes unreachable and once
when it answers again; the results of other schedds go on meanwhile. Given a
:class:`~epcore.links.results_journal.ResultsJournal`, the results queued are kept on disk
until answered, and those a previous process left are queued again when the link is made.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator
from typing import Final

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError
from epcore.links.connection import FAILURES, open_connection
from epcore.links.results_journal import ResultsJournal
from epcore.links.worker import WorkerService
from epcore.net.client import start_command
from epcore.net.commands import EP_JOB_RESULT
from epcore.net.conversation import Step, Stream, receive, run_blocking, send
from epcore.net.keyexchange import EcdhClientKeyExchange
from epcore.net.sinful import SinfulError, parse_sinful

#: Seconds one delivery (connection, authentication, the answer) may take.
SEND_TIMEOUT: Final = 10.0
#: The first pause after a failed delivery to a schedd, doubled per failure up to MAX_BACKOFF.
FIRST_BACKOFF: Final = 1.0
MAX_BACKOFF: Final = 300.0
#: Seconds the process's end waits for the queued results to go out (they are in the
#: startd's history; a schedd that misses them requeues the job when its lease runs out).
CLOSE_WAIT: Final = 5.0
#: How many claims' schedd addresses are remembered.
REMEMBERED: Final = 10_000
#: The schedd's answers.
APPLIED: Final = 1
REFUSED: Final = 0


@attrs.frozen
class Delivery:
    """One result on its way to the schedd at ``address``."""

    claim_id: str
    job_id: str
    address: str
    result: ClassAd


def _job_id(result: ClassAd) -> str:
    return f"{result.evaluate('ClusterId')}.{result.evaluate('ProcId')}"


class RemoteJobResults(WorkerService):
    """The JobResults of a startd whose claims' schedds are elsewhere (module docstring); a
    service of its loop, whose close waits CLOSE_WAIT at most for the last results.

    ``schedd_of`` gives the client address of a claim the startd holds (None: unknown);
    ``subsystem`` names the daemon in the handshake; ``journal`` keeps the queued results
    over a restart."""

    thread_name = "results-link"
    close_wait = CLOSE_WAIT
    left_behind = "results not yet delivered to their schedds were left"

    name = "results-link"

    def __init__(
        self,
        config: Callable[[], Config],
        *,
        schedd_of: Callable[[str], str | None],
        log: logging.Logger,
        subsystem: str = "STARTD",
        monotonic: Callable[[], float] = time.monotonic,
        journal: ResultsJournal | None = None,
    ) -> None:
        self.config = config
        self.schedd_of = schedd_of
        self.log = log
        self.subsystem = subsystem
        self.monotonic = monotonic
        self._lock = threading.Condition()
        #: The client address of each claim, as REQUEST_CLAIM gave it.
        self._clients: dict[str, str] = {}
        #: What is to be sent, by (claim id, job id): a re-sent result replaces the queued one.
        self._pending: dict[tuple[str, str], Delivery] = {}
        #: Per schedd address: when the next attempt may be made, and the pause after that.
        self._retry_at: dict[str, float] = {}
        self._backoff: dict[str, float] = {}
        self._stopping = False
        self._busy = False
        self._thread: threading.Thread | None = None
        #: Results the schedds applied (or had applied), refused, and failed attempts.
        self.applied = 0
        self.refused = 0
        self.failures = 0
        self.journal = journal
        if journal is not None:
            for address, result in journal.load():
                claim_id, job_id = str(result.evaluate("ClaimId")), _job_id(result)
                self._pending[(claim_id, job_id)] = Delivery(claim_id, job_id, address, result)
            if self._pending:
                log.info("%d results a previous startd queued are sent again", len(self._pending))

    # -- JobResults -----------------------------------------------------------------------

    @property
    def keeps_results(self) -> bool:
        """Whether each result is on disk (the journal) when :meth:`job_result` returns, to
        be sent later by the worker: the startd then hands it over before its claims file
        forgets the job (:func:`epcore.startd.starter_events.finished`)."""
        return self.journal is not None

    def claimed(self, claim_id: str, address: str) -> None:
        """The schedd at ``address`` holds ``claim_id`` (REQUEST_CLAIM's client)."""
        with self._lock:
            self._clients[claim_id] = address
            while len(self._clients) > REMEMBERED:
                # The oldest claims are long gone (a claim's address is also in its slot).
                del self._clients[next(iter(self._clients))]

    def job_result(self, result: ClassAd, now: float) -> None:
        claim_id = result.evaluate("ClaimId")
        job_id = _job_id(result)
        if not isinstance(claim_id, str):
            self.log.warning("the result of job %s names no claim: not sent", job_id)
            return
        with self._lock:
            address = self._clients.get(claim_id)
        if address is None:
            address = self.schedd_of(claim_id)
        if not address or not address.startswith("<"):
            # A claim made in this process or before the schedd's address was known.
            self.log.warning("no schedd address for the claim of job %s: result not sent", job_id)
            return
        delivery = Delivery(claim_id, job_id, address, result.copy())
        with self._lock:
            self._pending.pop((claim_id, job_id), None)
            self._pending[(claim_id, job_id)] = delivery
            if self.journal is not None:
                self.journal.queued(claim_id, job_id, address, delivery.result)
            self._lock.notify()

    # -- the loop's service ---------------------------------------------------------------

    def reconfig(self) -> None:
        with self._lock:
            self._retry_at.clear()
            self._backoff.clear()
            self._lock.notify()

    def holds_result_of(self, claim_id: str) -> bool:
        """Whether a result under ``claim_id`` waits to be delivered (or is being sent)."""
        with self._lock:
            return any(claim == claim_id for claim, _job in self._pending)

    def pending(self) -> int:
        """How many results wait to be delivered."""
        with self._lock:
            return len(self._pending) + (1 if self._busy else 0)

    def wait_sent(self, timeout: float) -> bool:
        """Whether every queued result was answered within ``timeout`` seconds (tests)."""
        deadline = self.monotonic() + timeout
        with self._lock:
            while self._pending or self._busy:
                left = deadline - self.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(min(left, 0.1))
        return True

    # -- the worker -----------------------------------------------------------------------

    def _next(self) -> Delivery | None:
        """The oldest delivery whose schedd may be tried now, waiting for one (under the
        lock); None when stopping with nothing that may be tried."""
        while True:
            now = self.monotonic()
            wake: float | None = None
            for delivery in self._pending.values():
                at = self._retry_at.get(delivery.address, 0.0)
                if at <= now or (self._stopping and at <= now + CLOSE_WAIT):
                    return delivery
                wake = at if wake is None else min(wake, at)
            if self._stopping:
                return None
            self._lock.wait(None if wake is None else wake - now)

    def _work(self) -> None:
        while True:
            with self._lock:
                delivery = self._next()
                if delivery is None:
                    return
                key = (delivery.claim_id, delivery.job_id)
                self._busy = True
            answer: bool | None = None
            try:
                answer = self._deliver(delivery)
            finally:
                with self._lock:
                    self._busy = False
                    if answer is not None and self._pending.get(key) is delivery:
                        del self._pending[key]
                        if self.journal is not None:
                            self.journal.answered(*key)
                    self._lock.notify_all()
            if answer is None and self._stopping:
                return  # the end: one attempt, not a wait for a schedd that is down

    def _deliver(self, delivery: Delivery) -> bool | None:
        """Send one result: True applied, False refused, None not answered (retried)."""
        address = delivery.address
        try:
            applied, why = self._send(delivery)
        except (*FAILURES, SinfulError) as error:
            self.failures += 1
            with self._lock:
                pause = self._backoff.get(address, FIRST_BACKOFF)
                first = address not in self._backoff
                self._backoff[address] = min(pause * 2, MAX_BACKOFF)
                self._retry_at[address] = self.monotonic() + pause
            if first:
                self.log.warning(
                    "cannot deliver the result of job %s to the schedd at %s (%s); retrying",
                    delivery.job_id,
                    address,
                    error,
                )
            return None
        with self._lock:
            was_down = self._backoff.pop(address, None) is not None
            self._retry_at.pop(address, None)
        if was_down:
            self.log.info("the schedd at %s answers again", address)
        if applied:
            self.applied += 1
            self.log.info(
                "result of job %s delivered to the schedd at %s", delivery.job_id, address
            )
        else:
            self.refused += 1
            self.log.warning(
                "the schedd at %s refused the result of job %s (%s): dropped",
                address,
                delivery.job_id,
                why,
            )
        return applied

    def _send(self, delivery: Delivery) -> tuple[bool, str]:
        where = parse_sinful(delivery.address)
        config = self.config()
        sock, stream = open_connection(config, where.host, where.port)
        with sock:
            sock.settimeout(SEND_TIMEOUT)
            return run_blocking(sock, stream, self._conversation(stream, config, delivery))

    def _conversation(
        self, stream: Stream, config: Config, delivery: Delivery
    ) -> Generator[Step, bytes | None, tuple[bool, str]]:
        yield from start_command(
            stream,
            EP_JOB_RESULT.number,
            config,
            key_exchange=EcdhClientKeyExchange(),
            subsystem=self.subsystem,
        )
        writer = stream.writer().put_string(delivery.claim_id).put_classad(delivery.result)
        yield from send(writer)
        reader = yield from receive(stream, "the schedd's answer")
        answer = reader.get_int("whether the result was applied")
        why = reader.get_string("why")
        if answer not in (APPLIED, REFUSED):
            raise EpError(f"the schedd answered {answer} to a job's result")
        return answer == APPLIED, why
