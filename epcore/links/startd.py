"""A startd in another process as a schedd reaches it: the :class:`StartdLink` that speaks
the startd's CEDAR commands (:mod:`epcore.startd.claim_commands`, :mod:`epcore.startd.cedar`).

- :meth:`RemoteStartd.claim` is REQUEST_CLAIM (442), sent by a worker thread: the first
  call raises :class:`ClaimPending` at once and the schedd asks again at its next tick, when
  the answer (the claim id, or the startd's refusal) is there; an answer nobody picks up
  within ANSWER_KEPT seconds is given back (the worker looks every SWEEP_EVERY seconds).
  :meth:`~RemoteStartd.activate` is ACTIVATE_CLAIM (444), asked and answered in the calling
  thread: the schedd records the job as running only once the startd took it.
  :meth:`~RemoteStartd.claim_ready` and :meth:`~RemoteStartd.slot_of` are EP_CLAIM_STATUS
  (65001, epcore's own: HTCondor's schedd learns the same from the claim's answer and the
  startd's ads); a claim found ready keeps its slot's name here, so that the schedd's
  questions about its slot cost nothing.
- :meth:`~RemoteStartd.alive` (ALIVE, 441), :meth:`~RemoteStartd.release` (RELEASE_CLAIM,
  443; a removed job's claim has ``"removed"`` after the id, epcore's own) and
  :meth:`~RemoteStartd.vacate` (VACATE_CLAIM(_FAST)) are never answered when they succeed, so
  they are queued for a worker thread and the caller goes on at once; a failure is logged by
  the worker (the claim's lease ends it on the startd's side). An epcore
  startd answers an ALIVE for a claim it does not know with -1, as HTCondor's schedd
  answers a startd's ALIVE (HTCondor's startd closes without a word): the claim is kept in
  ``unknown_claims`` for the schedd, which gives it up at once (:mod:`epcore.schedd.leases`)
  rather than at the end of its lease; an ALIVE closed without an answer is no news.
- :meth:`~RemoteStartd.drain` and :meth:`~RemoteStartd.cancel_drain` are DRAIN_JOBS and
  CANCEL_DRAIN_JOBS (they need ADMINISTRATOR, which a schedd's DAEMON credentials may not
  have); :meth:`~RemoteStartd.vacate_slots` is VACATE_ALL_CLAIMS(_FAST) or VACATE_CLAIM(_FAST),
  unanswered, so it returns the slot it was given (every slot: none).
- :meth:`~RemoteStartd.query`, :meth:`~RemoteStartd.claims` and
  :meth:`~RemoteStartd.recent_results` have no conversation yet: a query raises
  PeerUnreachable (the startd's ads are in the collector), and both others are empty: a
  restarted schedd finds its remote claims in its own queue (the running jobs' ClaimId,
  :mod:`epcore.schedd.reconnect`) and asks each startd with :meth:`~RemoteStartd.slot_of`.

REQUEST_CLAIM names the schedd by this process's CEDAR address, as HTCondor's schedd does:
the startd sends the job's result there (:mod:`epcore.links.results`).

Connections start a session with the daemon's credentials (DAEMON level: the token in
SEC_TOKEN_DIRECTORY, as :mod:`epcore.links.collector` does) and later ones resume it; the
answer NOT_OK of a refused claim or activation is an :class:`EpError` with the startd's
reason.

What blocks the caller: activate and the status question (before each activation; a ready
claim's slot is kept; the schedd asks both from worker threads, :mod:`epcore.schedd.activation`,
so its loop does not wait), each bounded by STARTD_CONTACT_TIMEOUT
(HTCondor's knob; here 5 s when unset rather than HTCondor's 45, as the loop waits) for
the connection and for each answer. A startd that did not answer is then given up at once
for a pause (1 s, doubling to 60 s while it stays silent), so that a dead execute host costs
the loop one timeout per pause, not one per call; the link's failure is logged once when
the startd stops answering and once when it answers again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator, Iterable
from typing import Final, TypeVar

from epcore.classad import ClassAd, parse_expr
from epcore.config import Config
from epcore.errors import EpError
from epcore.interfaces import RELEASE_REMOVED, ClaimPending, PeerUnreachable
from epcore.links.connection import FAILURES, open_connection, tcp_address
from epcore.links.worker import Background
from epcore.net import commands
from epcore.net.client import ClientSession, resume_command, start_command
from epcore.net.codec import Reader, Writer, is_private
from epcore.net.commands import Command
from epcore.net.conversation import Receive, Refused, Step, Stream, run_blocking, send
from epcore.net.keyexchange import EcdhClientKeyExchange
from epcore.net.sinful import parse_sinful

#: Seconds for the connection and for each answer when STARTD_CONTACT_TIMEOUT is unset.
DEFAULT_TIMEOUT: Final = 5.0
#: The pause after a startd did not answer, doubled while it stays silent, up to MAX_PAUSE.
FIRST_PAUSE: Final = 1.0
MAX_PAUSE: Final = 60.0
#: Seconds a claim's answer waits to be picked up before the claim is given back (a quiet
#: worker looks every epcore.links.worker.SWEEP_EVERY seconds).
ANSWER_KEPT: Final = 120.0
#: condor_commands.h's answers.
OK: Final = 1
#: The answer to an ALIVE for a claim the other side does not know (HTCondor's schedd to a
#: startd's ALIVE, receive_startd_alive; an epcore startd to a schedd's).
UNKNOWN_CLAIM: Final = -1
#: DRAIN_JOBS's HowFast for each of the startd's speeds (htcondor2.DrainType).
HOW_FAST: Final = {"graceful": 0, "quick": 10, "fast": 20}

Answer = TypeVar("Answer")
Body = Callable[[Writer], object]


class RemoteStartd:
    """The startd at ``address`` (a sinful string) over CEDAR (module docstring).

    ``config`` gives the configuration in force; ``subsystem`` names this daemon in the
    handshake; ``background`` is the worker of the unanswered commands (shared between the
    links one connector makes).
    """

    def __init__(
        self,
        address: str,
        config: Callable[[], Config],
        *,
        log: logging.Logger,
        subsystem: str = "SCHEDD",
        background: Background | None = None,
        our_address: Callable[[], tuple[str, int] | None] = lambda: None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        try:
            where = parse_sinful(address)
        except EpError as error:
            raise PeerUnreachable(f"startd at {address!r}: not an address: {error}") from None
        self._address = address
        self.host, self.port = where.host, where.port
        self.config = config
        self.log = log
        self.subsystem = subsystem
        self.background = background if background is not None else Background()
        self.background.sweepers.append(self._release_unclaimed)
        self.our_address = our_address
        #: The local end of the calling thread's current connection.
        self._here = threading.local()
        self.monotonic = monotonic
        self._lock = threading.Lock()
        self._session: ClientSession | None = None
        self._silent_until = 0.0
        self._pause = FIRST_PAUSE
        #: Whether the startd did not answer the last call (logged once until it answers).
        self.down = False
        #: Claims asked and not answered yet, and answers not picked up yet (when, and the
        #: claim id or the refusal), by slot and job.
        self._asking: set[tuple[str, str]] = set()
        self._answers: dict[tuple[str, str], tuple[float, str | EpError]] = {}
        #: Claims the startd answered an ALIVE it does not know, until the schedd takes them
        #: (:meth:`take_unknown`); ``on_unknown`` is called with each (it wakes the schedd).
        self.unknown_claims: set[str] = set()
        self.on_unknown: Callable[[], None] = lambda: None
        #: The slot of each claim found ready (its name no longer changes).
        self._slots: dict[str, str] = {}
        #: Connections made, those that resumed the first one's session, calls that failed.
        self.connections = 0
        self.resumed = 0
        self.failures = 0

    @property
    def address(self) -> str:
        return self._address

    # -- claims ---------------------------------------------------------------------------

    def claim(self, slot: str, job: ClassAd, client: str = "", by_priority: bool = False) -> str:
        """REQUEST_CLAIM, sent by the worker: the first call raises ClaimPending, a later
        one for the same slot and job gets the claim id or raises the startd's refusal."""
        key = (slot, f"{job.evaluate('ClusterId')}.{job.evaluate('ProcId')}")
        now = self.monotonic()
        with self._lock:
            answered = self._answers.pop(key, None)
            if answered is None and key in self._asking:
                raise ClaimPending(f"the claim of {slot} is asked of the startd at {self.address}")
        if answered is not None:
            outcome = answered[1]
            if isinstance(outcome, EpError):
                raise outcome
            return outcome
        if now < self._silent_until:
            raise PeerUnreachable(f"the startd at {self.address} did not answer lately")
        alive = self.config().get_int("ALIVE_INTERVAL", 300)
        sent = job.copy()  # the schedd's next edits are not this claim's

        def body(writer: Writer) -> None:
            writer.put_string(slot).put_classad(sent).put_string(self._schedd_address(client))
            writer.put_int(alive).put_int(0).put_int(1 if by_priority else 0)

        def ask() -> None:
            outcome: str | EpError
            try:
                ok, said = self._call(commands.REQUEST_CLAIM, body, _int_and_string)
            except EpError as error:
                outcome = error
            else:
                refused = f"the startd at {self.address} refused to claim {slot}: {said}"
                outcome = said if ok == OK else EpError(refused)
            with self._lock:
                self._asking.discard(key)
                self._answers[key] = (self.monotonic(), outcome)

        with self._lock:
            self._asking.add(key)
        self.background.submit(ask)
        raise ClaimPending(f"the claim of {slot} is asked of the startd at {self.address}")

    def _schedd_address(self, client: str) -> str:
        """What REQUEST_CLAIM names as the schedd, as HTCondor's schedd does: this process's
        CEDAR address as the startd reaches it (a listener on every interface: the address
        this connection comes from), where the startd sends the job's result; ``client``
        while this process does not listen."""
        where = self.our_address()
        if where is None:
            return client
        host, port = where
        if host in ("0.0.0.0", "::", ""):
            host = str(self._here.local[0])
        return tcp_address(host, port)

    def _release_unclaimed(self) -> None:
        """Give back the claims answered and never picked up (the schedd dropped the match:
        its job was removed or held meanwhile); the worker runs this when quiet."""
        now = self.monotonic()
        with self._lock:
            stale = [key for key, (when, _) in self._answers.items() if now - when > ANSWER_KEPT]
            outcomes = [self._answers.pop(key)[1] for key in stale]
        for outcome in outcomes:
            if isinstance(outcome, str):
                self.release(outcome)

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        def body(writer: Writer) -> None:
            sent = job if job is not None else ClassAd()
            if not writer.encrypted and any(is_private(name) for name in sent):
                # The codec keeps private attributes off a clear stream, as HTCondor does:
                # the starter would miss its TransferKey and fail later, far from here.
                self.log.warning(
                    "the session with the startd at %s is not encrypted: the job's private "
                    "attributes (TransferKey) are not sent (authentication turns AES-GCM on)",
                    self.address,
                )
            writer.put_string(claim_id).put_int(0).put_classad(sent)

        if self._call(commands.ACTIVATE_CLAIM, body, _int) != OK:
            raise EpError(f"the startd at {self.address} refused to activate the claim")

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        self._slots.pop(claim_id, None)

        def body(writer: Writer) -> None:
            writer.put_string(claim_id)
            if removed:
                writer.put_string(RELEASE_REMOVED)

        self._later(commands.RELEASE_CLAIM, body)

    def alive(self, claim_id: str) -> None:
        """ALIVE, sent by the worker; a startd that answers it has no such claim has the
        claim put in ``unknown_claims`` and ``on_unknown`` called (module docstring)."""

        def work() -> None:
            try:
                reply = self._call(
                    commands.ALIVE, lambda writer: writer.put_string(claim_id), _int, optional=True
                )
            except EpError as error:
                self.log.debug("ALIVE to the startd at %s: %s", self.address, error)
                return
            if reply == UNKNOWN_CLAIM:
                self.log.info(
                    "the startd at %s has no claim %s", self.address, claim_id.rsplit("#", 1)[0]
                )
                with self._lock:
                    self.unknown_claims.add(claim_id)
                self.on_unknown()

        self.background.submit(work)

    def take_unknown(self, claim_id: str) -> bool:
        """Whether the startd said it has no ``claim_id`` (then forgotten here)."""
        with self._lock:
            if claim_id not in self.unknown_claims:
                return False
            self.unknown_claims.discard(claim_id)
            return True

    def claim_ready(self, claim_id: str) -> bool:
        # Always asked: a claim is busy while its job runs, and may end with it.
        return self._status(claim_id)[1]

    def slot_of(self, claim_id: str) -> str | None:
        known = self._slots.get(claim_id)
        return known if known is not None else self._status(claim_id)[0]

    def claims(self) -> list[tuple[str, ClassAd]]:
        return []

    def recent_results(self, claim_ids: Iterable[str]) -> list[ClassAd]:
        return []

    def _status(self, claim_id: str) -> tuple[str | None, bool]:
        def answer(reader: Reader) -> tuple[str, int]:
            slot = reader.get_string("the claim's slot")
            return slot, reader.get_int("whether the claim is ready")

        slot, ready = self._call(
            commands.EP_CLAIM_STATUS, lambda writer: writer.put_string(claim_id), answer
        )
        if slot and ready:
            # A ready claim's slot stays its own until the claim ends (release forgets it).
            self._slots[claim_id] = slot
        return (slot or None), bool(slot and ready)

    # -- administration -------------------------------------------------------------------

    def vacate(self, slot: str, fast: bool = False) -> None:
        command = commands.VACATE_CLAIM_FAST if fast else commands.VACATE_CLAIM
        self._later(command, lambda writer: writer.put_string(slot))

    def vacate_slots(self, slot: str | None, fast: bool = False) -> list[str]:
        if slot is not None:
            self.vacate(slot, fast)
            return [slot]
        command = commands.VACATE_ALL_FAST if fast else commands.VACATE_ALL_CLAIMS
        self._later(command, None)
        return []

    def drain(
        self,
        how: str,
        check: str | None = None,
        start: str | None = None,
        *,
        reason: str | None = None,
        resume: bool = False,
    ) -> None:
        if how not in HOW_FAST:
            raise EpError(f"drain {how!r}: not graceful, quick or fast")
        request = ClassAd()
        request["HowFast"] = HOW_FAST[how]
        request["ResumeOnCompletion"] = 1 if resume else 0
        for name, text in (("CheckExpr", check), ("StartExpr", start)):
            if text is not None:
                request[name] = parse_expr(text)
        if reason is not None:
            request["DrainReason"] = reason
        self._result(commands.DRAIN_JOBS, request)

    def cancel_drain(self) -> None:
        self._result(commands.CANCEL_DRAIN_JOBS, ClassAd())

    def query(self, constraint: str | None = None) -> list[ClassAd]:
        raise PeerUnreachable(
            f"the startd at {self.address} is not queried directly: its ads are in the collector"
        )

    def _result(self, command: Command, request: ClassAd) -> None:
        reply = self._call(
            command,
            lambda writer: writer.put_classad(request),
            lambda reader: reader.get_classad("the answer"),
        )
        if reply.evaluate("Result") is not True:
            error = reply.evaluate("ErrorString")
            raise EpError(f"{command.name} at {self.address}: {error or 'refused'}")

    # -- the wire -------------------------------------------------------------------------

    def _later(self, command: Command, body: Body | None) -> None:
        def work() -> None:
            try:
                self._call(command, body, None)
            except EpError as error:
                self.log.debug("%s to the startd at %s: %s", command.name, self.address, error)

        self.background.submit(work)

    def _timeout(self) -> float:
        value = self.config().get_float("STARTD_CONTACT_TIMEOUT", DEFAULT_TIMEOUT)
        return value if value > 0 else DEFAULT_TIMEOUT

    def _call(
        self,
        command: Command,
        body: Body | None,
        answer: Callable[[Reader], Answer] | None,
        *,
        optional: bool = False,
    ) -> Answer:
        """``command`` with ``body``; what ``answer`` reads of the reply (None: no reply is
        read; ``optional``: None when the startd closes without one). PeerUnreachable when
        the startd cannot be asked (module docstring)."""
        if self.monotonic() < self._silent_until:
            raise PeerUnreachable(f"the startd at {self.address} did not answer lately")
        try:
            result = self._converse(command, body, answer, optional)
        except FAILURES as error:
            self._silent(error)
            raise PeerUnreachable(
                f"{command.name} to the startd at {self.address}: {error}"
            ) from None
        if self.down:
            self.down = False
            self.log.info("the startd at %s answers again", self.address)
        self._pause = FIRST_PAUSE
        return result

    def _silent(self, error: BaseException) -> None:
        with self._lock:
            self.failures += 1
            self._silent_until = self.monotonic() + self._pause
            self._pause = min(self._pause * 2, MAX_PAUSE)
            if not self.down:
                self.down = True
                self.log.warning(
                    "the startd at %s does not answer (%s); not asked again for a while",
                    self.address,
                    error,
                )

    def _converse(
        self,
        command: Command,
        body: Body | None,
        answer: Callable[[Reader], Answer] | None,
        optional: bool,
    ) -> Answer:
        session = self._session
        if session is not None:
            resumed: list[bool] = []
            try:
                return self._connect(command, body, answer, optional, session, resumed)
            except Refused:
                if resumed:
                    raise  # the command went: doing it again could claim twice
                # The startd forgot the session (it expired, or the startd restarted).
                with self._lock:
                    self._session = None
        return self._connect(command, body, answer, optional, None, [])

    def _connect(
        self,
        command: Command,
        body: Body | None,
        answer: Callable[[Reader], Answer] | None,
        optional: bool,
        session: ClientSession | None,
        resumed: list[bool],
    ) -> Answer:
        timeout = self._timeout()
        sock, stream = open_connection(self.config(), self.host, self.port)
        self._here.local = stream.local
        with sock:
            sock.settimeout(timeout)
            with self._lock:
                self.connections += 1
            conversation = self._conversation(
                stream, command, body, answer, optional, session, resumed
            )
            return run_blocking(sock, stream, conversation)

    def _conversation(
        self,
        stream: Stream,
        command: Command,
        body: Body | None,
        answer: Callable[[Reader], Answer] | None,
        optional: bool,
        session: ClientSession | None,
        resumed: list[bool],
    ) -> Generator[Step, bytes | None, Answer]:
        if session is not None:
            yield from resume_command(stream, command.number, session)
            resumed.append(True)
            with self._lock:
                self.resumed += 1
        else:
            made = yield from start_command(
                stream,
                command.number,
                self.config(),
                key_exchange=EcdhClientKeyExchange(),
                subsystem=self.subsystem,
            )
            with self._lock:
                self._session = made
        if body is not None:
            writer = stream.writer()
            body(writer)
            yield from send(writer)
        if answer is None:
            return None  # type: ignore[return-value]  # no reply is read: the caller ignores it
        what = f"the answer to {command.name}"
        data = yield Receive(what, may_end=optional)
        if data is None:
            if optional:
                return None  # type: ignore[return-value]  # closed without one: the caller's None
            raise Refused(f"the connection ended before {what}")
        reader = stream.reader(data)
        found = answer(reader)
        reader.expect_end(f"the answer to {command.name}")
        return found


def _int(reader: Reader) -> int:
    return reader.get_int("the answer")


def _int_and_string(reader: Reader) -> tuple[int, str]:
    return reader.get_int("the answer"), reader.get_string("the claim id or the reason")


def remote_startd_connector(
    config: Callable[[], Config],
    *,
    log: logging.Logger,
    subsystem: str = "SCHEDD",
    our_address: Callable[[], tuple[str, int] | None] = lambda: None,
    on_unknown: Callable[[], None] = lambda: None,
) -> Callable[[str], RemoteStartd]:
    """The ``connect`` of a schedd's startd Locator: the link to the startd at an address
    no startd of this process has (PeerUnreachable for one that is no TCP address); the
    links share one worker for their unanswered commands. ``our_address`` is the host and
    port of this process's CEDAR listener once it listens (claims name it as the schedd);
    ``on_unknown`` is each link's (it wakes the schedd, module docstring)."""
    background = Background()

    def connect(address: str) -> RemoteStartd:
        if address.startswith("<unix:"):
            raise PeerUnreachable(f"no startd at {address} in this process")
        link = RemoteStartd(
            address,
            config,
            log=log,
            subsystem=subsystem,
            background=background,
            our_address=our_address,
        )
        link.on_unknown = on_unknown
        return link

    return connect
