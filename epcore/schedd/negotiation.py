"""The schedd's side of NEGOTIATE: a negotiator in another process asks for a submitter's
idle jobs and sends the matches of its cycle (the conversation:
:mod:`epcore.net.negotiation`).

The schedd sends one request per kind of job (:class:`Request`), as HTCondor's schedd sends
one per autocluster: jobs told apart by the names the negotiator's slots read
(AutoClusterAttrs) and what the jobs' own expressions name are one request, the ad of the
kind's first job in the schedd's order with ResourceRequestCount, the number of its idle
jobs. Every idle job is offered, as many as MAX_JOBS_RUNNING leaves room for (HTCondor's
"jobs can offer": the requests' counts add up to at most that). One computation serves every
submitter's round of one cycle: the negotiator asks for all of them before it sends any
match, and the answer is computed again once matches were taken or a few seconds passed.
A match names its request (ResourceRequestCluster/Proc): the round hands it to the request's
next job in the schedd's order; a rejection is logged.

The matches of a round are read and taken together at END_NEGOTIATE
(:meth:`Schedd.take_matches`, one queue transaction, as in-process): the negotiator sends
tens of thousands of slot ads in a row, and a schedd that decoded each as it came would
hold the negotiator's sending (TCP's window) for as long as its decoding takes. A round
that ends without END_NEGOTIATE (the negotiator went away, a malformed message) takes none:
their slots are not claimed and the negotiator lets them go after MATCH_TIMEOUT, as when a
claim fails. The connection stays open after END_NEGOTIATE for the negotiator's next
NEGOTIATE, as HTCondor's schedd keeps it.

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

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError
from epcore.interfaces import Match, Significance
from epcore.interfaces.records import REASON_ORDER, Reason
from epcore.net import negotiation as neg
from epcore.net.authz import Authorization
from epcore.net.codec import Reader
from epcore.net.commands import NEGOTIATOR
from epcore.net.conversation import Refused, Step, receive, send
from epcore.net.dispatch import CommandContext, Handler
from epcore.schedd.jobqueue import JobId
from epcore.schedd.schedd import Schedd
from epcore.schedd.schedd_jobs import matching_names

#: How long one computation of the offered jobs serves the rounds of a cycle, in seconds.
OFFER_REUSE = 5.0
#: What a request asks the negotiator to say of a rejection (the reason, the autocluster and
#: the job: HTCondor's level 2), so that the log names them.
MATCH_DIAGNOSTICS = 2

#: Each submitter's kinds of idle jobs: the kind's number and its jobs in the schedd's order.
Kinds = dict[str, list[tuple[int, tuple[JobId, ...]]]]


class ScheddService(Protocol):
    """What the conversation needs of the schedd's service (the one in the loop,
    :class:`epcore.schedd.service.ScheddService`)."""

    schedd: Schedd

    def cycle_started(self) -> None: ...

    def take_matches(self, matches: Sequence[Match], now: float) -> None: ...


@attrs.frozen
class Request:
    """One request of a round: the ``ad`` sent (the first job's, with ResourceRequestCount
    and AutoClusterId) and the ``jobs`` it stands for, in the schedd's order."""

    ad: ClassAd
    jobs: tuple[JobId, ...]

    @property
    def name(self) -> str:
        """``"cluster.proc"`` of the job whose ad the request is (a match names it)."""
        return str(self.jobs[0])


class Offers:
    """The requests offered to a negotiator in another process, the kinds of idle jobs
    worked out once per cycle (module docstring)."""

    def __init__(
        self, service: ScheddService, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self.service = service
        self.monotonic = monotonic
        self._names: tuple[str, ...] | None = None
        self._made: float | None = None
        self._kinds: Kinds = {}

    def requests(self, submitter: str, names: tuple[str, ...] | None) -> list[Request]:
        """``submitter``'s requests, in the schedd's order of their first jobs; their counts
        add up to what MAX_JOBS_RUNNING leaves room for, at most."""
        schedd = self.service.schedd
        now = self.monotonic()
        if self._made is None or names != self._names or now - self._made > OFFER_REUSE:
            self._names, self._made = names, now
            self._kinds = _kinds(schedd, names)
        room = schedd.queue_limits().max_jobs_running - len(schedd.busy_jobs())
        requests: list[Request] = []
        for kind, ids in self._kinds.get(submitter, ()):
            if room <= 0:
                break
            present = tuple(job_id for job_id in ids if job_id in schedd.queue)[:room]
            if not present:
                continue
            room -= len(present)
            ad = schedd.queue.get(present[0]).copy()
            ad[neg.REQUEST_COUNT] = len(present)
            ad[neg.AUTO_CLUSTER_ID] = kind
            ad[neg.WANT_MATCH_DIAGNOSTICS] = MATCH_DIAGNOSTICS
            requests.append(Request(ad, present))
        return requests

    def forget(self) -> None:
        """Matches were taken: the next round computes the offer again."""
        self._made = None


def _kinds(schedd: Schedd, names: tuple[str, ...] | None) -> Kinds:
    """Each submitter's idle jobs by kind: told apart by ``names`` and what the jobs'
    expressions name (None: every job a kind of its own), in the order of their first."""
    wanted = (
        None
        if names is None
        else matching_names(Significance((), names), (), schedd.representative_jobs())
    )
    schedd.kinds.distinguish(wanted)
    found: Kinds = {}
    for submitter, group in schedd.kinds.by_submitter(schedd.idle_ids(), schedd.queue.get).items():
        kinds: dict[int, list[JobId]] = {}
        for facts, job_id in group:
            kinds.setdefault(facts.kind, []).append(job_id)
        found[submitter] = [(kind, tuple(ids)) for kind, ids in kinds.items()]
    return found


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
        service.cycle_started()
        waiting: deque[ClassAd] | None = None
        # The jobs each request still has for a match, by the request's name.
        remaining: dict[str, deque[JobId]] = {}
        matches: list[Match] = []
        # The matches' messages, past their number, read at END_NEGOTIATE (see _take).
        offered: list[Reader] = []
        rejected: list[tuple[str, str | None]] = []  # the reasons and the requests named
        stream = context.stream
        try:
            while True:
                message = yield from receive(stream, "the negotiator's next operation")
                kind = message.get_int("the negotiator's operation")
                if kind == neg.PERMISSION_AND_AD:
                    offered.append(message)
                    continue
                operation = neg.read_payload(kind, message)
                if operation.kind in (neg.SEND_JOB_INFO, neg.SEND_RESOURCE_REQUEST_LIST):
                    if waiting is None:
                        requests = offers.requests(owner, names)
                        remaining = {r.name: deque(r.jobs) for r in requests}
                        waiting = deque(r.ad for r in requests)
                    for _ in range(operation.count):
                        request = waiting.popleft() if waiting else None
                        yield from send(neg.write_request(stream.writer(), request))
                        if request is None:
                            break
                elif operation.kind in (neg.REJECTED, neg.REJECTED_WITH_REASON):
                    rejected.append(neg.rejection_reason(operation.reason or "Unknown reason"))
                else:  # END_NEGOTIATE
                    break
            for message in offered:
                operation = neg.read_payload(neg.PERMISSION_AND_AD, message)
                assert operation.ad is not None  # read_payload saw to it
                match = _match(service, owner, operation.ad, remaining, log)
                if match is not None:
                    matches.append(match)
        except EpError as error:
            log.warning(
                "negotiation for %s with %s at %s broke off (%s): %d matches not taken",
                owner,
                peer.name,
                where,
                error,
                len(offered),
            )
            raise
        for words, job in rejected:
            log.debug(
                "negotiator rejected %s's request %s (%d jobs without a match): %s",
                owner,
                job or "?",
                len(remaining.get(job, ())) if job is not None else 0,
                words,
            )
        if matches:
            service.take_matches(matches, clock())
            offers.forget()
        log.info(
            "Negotiation for %s with %s ended: %d jobs matched, %d requests rejected",
            owner,
            peer.name,
            len(matches),
            len(rejected),
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


def _match(
    service: ScheddService,
    owner: str,
    slot: ClassAd,
    remaining: dict[str, deque[JobId]],
    log: logging.Logger,
) -> Match | None:
    """The match a PERMISSION_AND_AD carries, as the in-process negotiator would hand it
    over, for the next job still queued of the request it names (``remaining``: the jobs of
    ``owner``'s requests; a negotiator that names a job it was not sent as a request matches
    that job, if it is ``owner``'s); None (logged) when it names no such job or its request
    has no job left. ``slot`` was decoded for this match: the protocol's attributes are
    taken out of it."""
    cluster = slot.evaluate(neg.REQUEST_CLUSTER)
    proc = slot.evaluate(neg.REQUEST_PROC)
    name = slot.evaluate("Name")
    if type(cluster) is not int or type(proc) is not int or not isinstance(name, str):
        log.warning("a match for %s names no job (ResourceRequestCluster/Proc) or slot", owner)
        return None
    jobs = remaining.get(f"{cluster}.{proc}")
    requested = jobs is not None
    if jobs is None:
        jobs = deque([JobId(cluster, proc)])
    elif not jobs:
        log.warning(
            "a match for %s names request %d.%d, whose jobs all have a match: ignored",
            owner,
            cluster,
            proc,
        )
        return None
    schedd = service.schedd
    while True:
        if not jobs:
            return None  # removed since they were offered: take_matches would skip them too
        job_id = jobs.popleft()
        try:
            job = schedd.queue.get(job_id)
        except EpError:
            continue
        break
    if not requested and schedd.submitter(job) != owner:
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
    for attribute in neg.MATCH_ATTRIBUTES:
        slot.pop(attribute, None)
    return Match(
        owner,
        str(job_id),
        job,
        name,
        slot,
        reason,
        tuple(preempts.split()) if isinstance(preempts, str) else (),
        float(weight) if isinstance(weight, int | float) and not isinstance(weight, bool) else 1.0,
    )
