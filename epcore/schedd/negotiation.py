"""The schedd's side of NEGOTIATE: a negotiator in another process asks for a submitter's
idle jobs and sends the matches of its cycle (the conversation:
:mod:`epcore.net.negotiation`).

The jobs offered are those the in-process negotiator would get (:meth:`Schedd.offer`): told
apart by the names the negotiator's slots read (AutoClusterAttrs) and what the jobs' own
expressions name, each kind at most as many times as the cycle's slots could take
(EpMatchCapacity; all of them when a negotiator does not say). One computation serves every
submitter's round of one cycle: the negotiator asks for all of them before it sends any
match, and the answer is computed again once matches were taken or a few seconds passed.

The matches of a round are taken together at END_NEGOTIATE (:meth:`Schedd.take_matches`,
one queue transaction, as in-process); a round that ends without it (the negotiator went
away, a malformed message) takes none: their slots are not claimed and the negotiator lets
them go after MATCH_TIMEOUT, as when a claim fails. The connection stays open after
END_NEGOTIATE for the negotiator's next NEGOTIATE, as HTCondor's schedd keeps it.

Who may negotiate: the listener lets in a peer ALLOW_NEGOTIATOR admits (NEGOTIATE is a
NEGOTIATOR-level command); ALLOW_NEGOTIATOR_SCHEDD / DENY_NEGOTIATOR_SCHEDD, when set, are
the schedd's own lists of negotiators, as in HTCondor, and are checked here.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Generator, Sequence
from typing import Protocol

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError
from epcore.interfaces import Match, Significance
from epcore.interfaces.records import REASON_ORDER, Reason
from epcore.net import negotiation as neg
from epcore.net.authz import Authorization
from epcore.net.commands import NEGOTIATOR
from epcore.net.conversation import Refused, Step, receive, send
from epcore.net.dispatch import CommandContext, Handler
from epcore.schedd.jobqueue import JobId
from epcore.schedd.schedd import Schedd
from epcore.schedd.schedd_jobs import matching_names

#: The capacity when a negotiator does not say: no bound.
_EVERY_JOB = 2**31 - 1
#: How long one computation of the offered jobs serves the rounds of a cycle, in seconds.
OFFER_REUSE = 5.0


class ScheddService(Protocol):
    """What the conversation needs of the schedd's service (the one in the loop,
    :class:`epcore.schedd.service.ScheddService`)."""

    schedd: Schedd

    def cycle_started(self) -> None: ...

    def take_matches(self, matches: Sequence[Match], now: float) -> None: ...


class Offers:
    """The jobs offered to a negotiator in another process, computed once per cycle
    (module docstring)."""

    def __init__(
        self, service: ScheddService, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self.service = service
        self.monotonic = monotonic
        self._key: tuple[tuple[str, ...] | None, int] | None = None
        self._made = 0.0
        self._by_submitter: dict[str, tuple[ClassAd, ...]] = {}

    def jobs(
        self, submitter: str, names: tuple[str, ...] | None, capacity: int | None
    ) -> list[ClassAd]:
        """``submitter``'s idle jobs to offer, in the schedd's order."""
        schedd = self.service.schedd
        limit = capacity if capacity is not None else _EVERY_JOB
        key = (names, limit)
        if key != self._key or self.monotonic() - self._made > OFFER_REUSE:
            self._key, self._made = key, self.monotonic()
            self._by_submitter = {}
            if schedd.queue_limits().may_start(len(schedd.busy_jobs())):
                wanted = (
                    None
                    if names is None
                    else matching_names(Significance((), names), (), schedd.representative_jobs())
                )
                self._by_submitter = {o.submitter: o.jobs for o in schedd.offer(wanted, limit)}
        return list(self._by_submitter.get(submitter, ()))

    def forget(self) -> None:
        """Matches were taken: the next round computes the offer again."""
        self._key = None


def negotiation_handler(
    service: ScheddService,
    config: Callable[[], Config],
    *,
    log: logging.Logger,
    clock: Callable[[], float],
) -> Handler:
    """NEGOTIATE's handler for the schedd ``service`` (module docstring)."""
    offers = Offers(service)

    def negotiate(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        peer = context.peer
        where = context.stream.peer_description
        decision = Authorization.from_config(config(), "SCHEDD").decide(
            NEGOTIATOR, peer.user, peer.address[0]
        )
        if not decision.allowed:
            log.warning("NEGOTIATE from %s at %s refused: %s", peer.name, where, decision.reason)
            raise Refused(decision.reason, logged=True)
        reader = yield from context.receive("the negotiation's header")
        header = reader.get_classad("the negotiation's header")
        owner = header.evaluate(neg.OWNER)
        if not isinstance(owner, str) or not owner:
            raise Refused(f"NEGOTIATE from {peer.name} at {where} names no submitter (Owner)")
        names = _names(header.evaluate(neg.AUTO_CLUSTER_ATTRS))
        capacity = header.evaluate(neg.MATCH_CAPACITY)
        service.cycle_started()
        waiting: deque[ClassAd] | None = None
        matches: list[Match] = []
        rejected = 0
        stream = context.stream
        try:
            while True:
                message = yield from receive(stream, "the negotiator's next operation")
                operation = neg.read_operation(message)
                if operation.kind in (neg.SEND_JOB_INFO, neg.SEND_RESOURCE_REQUEST_LIST):
                    if waiting is None:
                        limit = capacity if type(capacity) is int and capacity > 0 else None
                        waiting = deque(offers.jobs(owner, names, limit))
                    for _ in range(operation.count):
                        request = _request(waiting.popleft()) if waiting else None
                        yield from send(neg.write_request(stream.writer(), request))
                        if request is None:
                            break
                elif operation.kind == neg.PERMISSION_AND_AD:
                    assert operation.ad is not None  # read_operation saw to it
                    match = _match(service, owner, operation.ad, log)
                    if match is not None:
                        matches.append(match)
                elif operation.kind in (neg.REJECTED, neg.REJECTED_WITH_REASON):
                    rejected += 1
                    words, job = neg.rejection_reason(operation.reason or "Unknown reason")
                    log.debug("negotiator rejected %s's job %s: %s", owner, job or "?", words)
                else:  # END_NEGOTIATE
                    break
        except EpError as error:
            log.warning(
                "negotiation for %s with %s at %s broke off (%s): %d matches not taken",
                owner,
                peer.name,
                where,
                error,
                len(matches),
            )
            raise
        if matches:
            service.take_matches(matches, clock())
            offers.forget()
        log.info(
            "Negotiation for %s with %s ended: %d jobs matched, %d rejected",
            owner,
            peer.name,
            len(matches),
            rejected,
        )
        return True  # the negotiator's next NEGOTIATE may come on this connection

    return negotiate


def _names(value: object) -> tuple[str, ...] | None:
    """AutoClusterAttrs as names (commas or spaces), in lower case as the schedd's kinds
    keep them (HTCondor's negotiator sends them as the ads spell them); None (every name)
    when it is absent."""
    if not isinstance(value, str):
        return None
    return tuple(sorted({name.lower() for name in value.replace(",", " ").split() if name}))


def _request(job: ClassAd) -> ClassAd:
    """A job as the request for one slot (HTCondor's schedd sends an autocluster's job with
    the count of its jobs; epcore's negotiator matches jobs, so each is its own)."""
    request = job.copy()
    request[neg.REQUEST_COUNT] = 1
    return request


def _match(service: ScheddService, owner: str, slot: ClassAd, log: logging.Logger) -> Match | None:
    """The match a PERMISSION_AND_AD carries, as the in-process negotiator would hand it
    over; None (logged) when it names no job of ``owner``."""
    cluster = slot.evaluate(neg.REQUEST_CLUSTER)
    proc = slot.evaluate(neg.REQUEST_PROC)
    name = slot.evaluate("Name")
    if type(cluster) is not int or type(proc) is not int or not isinstance(name, str):
        log.warning("a match for %s names no job (ResourceRequestCluster/Proc) or slot", owner)
        return None
    job_id = f"{cluster}.{proc}"
    schedd = service.schedd
    try:
        job = schedd.queue.get(JobId(cluster, proc))
    except EpError:
        return None  # removed since it was offered: take_matches would skip it too
    if schedd.submitter(job) != owner:
        log.warning(
            "a match for %s names job %s of %s: ignored", owner, job_id, schedd.submitter(job)
        )
        return None
    reason_value = slot.evaluate(neg.MATCH_REASON)
    reason: Reason = "no_preemption"
    if isinstance(reason_value, str) and reason_value in REASON_ORDER:
        reason = reason_value  # type: ignore[assignment]
    preempts = slot.evaluate(neg.PREEMPTS)
    weight = slot.evaluate(neg.MATCH_WEIGHT)
    plain = slot.copy()
    for attribute in neg.MATCH_ATTRIBUTES:
        plain.pop(attribute, None)
    return Match(
        owner,
        job_id,
        job,
        name,
        plain,
        reason,
        tuple(preempts.split()) if isinstance(preempts, str) else (),
        float(weight) if isinstance(weight, int | float) and not isinstance(weight, bool) else 1.0,
    )
