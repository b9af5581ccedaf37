"""A schedd in another process as its negotiator sees it: the :class:`JobSource` that speaks
HTCondor's negotiation protocol (:mod:`epcore.net.negotiation`) over CEDAR.

The negotiator learns a remote schedd's submitters from the Submitter ads in its collector
(ScheddIpAddr names the schedd; ``submitters`` gives them). A cycle is in two halves, as the
negotiator's cycle asks: :meth:`RemoteJobSource.negotiable_jobs` opens one round per
submitter (a connection, NEGOTIATE with DAEMON-level credentials as the NEGOTIATOR
subsystem, the header ad) and fetches its requests with SEND_RESOURCE_REQUEST_LIST until
NO_MORE_JOBS, keeping the rounds open; :meth:`RemoteJobSource.take_matches` sends each round
its matches (PERMISSION_AND_AD), a rejection for each request not matched in full and
END_NEGOTIATE, and closes it. A request stands for as many jobs as its ResourceRequestCount
(one per autocluster): the cycle sees it that many times (:func:`as_jobs`), so that it
matches and accounts for each as it does for the jobs of a schedd in its process. A round
with no jobs ends at once; rounds a cycle left open (it failed between the halves) end at
the next :meth:`cycle_started`.

A schedd that cannot be reached, is slow or answers nonsense costs the cycle at most
NEGOTIATOR_TIMEOUT for each wait (the connection's too) and NEGOTIATOR_MAX_TIME_PER_SCHEDD
for each half of the cycle (HTCondor's knobs, defaults 30 s and 120 s): its rounds are
closed and :class:`PeerUnreachable` names it, which the negotiator logs and reports while
the other schedds' cycle goes on. A central manager whose schedds are all elsewhere runs
its cycles in a thread (:mod:`epcore.negotiator.background`): those bounds are how long a
schedd can hold a cycle, never the loop; the Submitter ads are read in the loop as the
cycle begins (:class:`SubmitterDirectory`).

What epcore's in-process schedd tells its negotiator and HTCondor's protocol has no place
for is left out: a remote schedd never asks for a cycle sooner (:meth:`wants_negotiation`:
cycles come every NEGOTIATOR_INTERVAL) and holds no slots back (:meth:`reserved_slots`).
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable, Generator, Mapping, Sequence

import attrs

from epcore.classad import ClassAd
from epcore.classad.references import ReferenceIndex
from epcore.config import Config
from epcore.errors import EpError
from epcore.interfaces import AdQuery, Match, PeerUnreachable, Significance, SubmitterJobs
from epcore.net import negotiation as neg
from epcore.net.client import connect, start_command
from epcore.net.commands import NEGOTIATE
from epcore.net.conversation import (
    Conversation,
    Refused,
    Result,
    Step,
    Stream,
    receive,
    run_blocking,
    send,
)
from epcore.net.keyexchange import EcdhClientKeyExchange
from epcore.net.sinful import parse_sinful

#: HTCondor's defaults: seconds for each wait on a schedd, for all of one schedd's rounds
#: in a cycle, and how many requests one SEND_RESOURCE_REQUEST_LIST asks for.
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_TIME = 120.0
DEFAULT_LIST_SIZE = 200
#: Where a Submitter ad says its schedd is (HTCondor's ATTR_SCHEDD_IP_ADDR).
SCHEDD_ADDRESS = "ScheddIpAddr"


@attrs.define(eq=False)
class Round:
    """One submitter's open negotiation: its connection, stream and the requests it sent."""

    submitter: str
    sock: socket.socket
    stream: Stream
    requests: list[ClassAd] = attrs.field(factory=list)


class RemoteJobSource:
    """The schedd at ``address`` (a sinful string) over CEDAR (module docstring).

    ``submitters`` gives the Submitter ads that name this schedd now; ``config`` the
    negotiator's configuration in force; ``name`` is the negotiator's name for the header.
    """

    def __init__(
        self,
        address: str,
        submitters: Callable[[], Sequence[ClassAd]],
        config: Callable[[], Config],
        *,
        name: str,
        log: logging.Logger,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.address = address
        self.submitters = submitters
        self.config = config
        self.name = name
        self.log = log
        self.monotonic = monotonic
        self.rounds: dict[str, Round] = {}
        #: Why the cycle left jobs without a match, by job id (:meth:`note_rejections`).
        self.reasons: Mapping[str, str] = {}
        #: The idle jobs the requests of the last :meth:`negotiable_jobs` stood for.
        self.requested = 0
        self._deadline = 0.0

    # -- JobSource ------------------------------------------------------------------------

    def wants_negotiation(self) -> bool:
        return False

    def cycle_started(self) -> None:
        self._end_rounds()

    def reserved_slots(self) -> set[str]:
        return set()

    def negotiable_jobs(
        self, slots: Sequence[ClassAd], significance: Significance, now: float
    ) -> list[SubmitterJobs]:
        config = self.config()
        self._start_clock()
        self._end_rounds()
        names = ReferenceIndex(slots).closure(significance.expressions, significance.always_read)
        header = ClassAd()
        if names.names is not None:
            header[neg.AUTO_CLUSTER_ATTRS] = ",".join(names.names)
        header[neg.NEGOTIATOR_NAME] = self.name
        header["MatchCaps"] = "MatchDiag3"
        size = max(config.get_int("NEGOTIATOR_RESOURCE_REQUEST_LIST_SIZE", DEFAULT_LIST_SIZE), 1)
        capacity = neg.match_capacity(slots)
        counts = config.get_bool("USE_RESOURCE_REQUEST_COUNTS", True)
        offered: list[SubmitterJobs] = []
        self.requested = 0
        try:
            for ad in sorted(self.submitters(), key=lambda ad: str(ad.evaluate("Name"))):
                submitter = ad.evaluate("Name")
                if not isinstance(submitter, str) or submitter in self.rounds:
                    continue
                mine = header.copy()
                mine[neg.OWNER] = submitter
                tag = ad.evaluate(neg.SUBMITTER_TAG)
                mine[neg.SUBMITTER_TAG] = tag if isinstance(tag, str) else ""
                requests = self._fetch(submitter, mine, size)
                if requests:
                    self.requested += sum(neg.request_count(r) for r in requests)
                    jobs = as_jobs(requests, capacity, counts=counts)
                    offered.append(SubmitterJobs(submitter, tuple(jobs)))
        except (OSError, EpError) as error:
            raise self._failed("asking for its jobs", error) from error
        return offered

    def note_rejections(self, reasons: Mapping[str, str]) -> None:
        """Why the cycle's jobs have no match, by job id: the reasons of the rejections
        :meth:`take_matches` sends next."""
        self.reasons = reasons

    def take_matches(self, matches: Sequence[Match], now: float) -> None:
        self._start_clock()  # the matching in between is the negotiator's time, not the schedd's
        by_submitter: dict[str, list[Match]] = {}
        for match in matches:
            by_submitter.setdefault(match.submitter, []).append(match)
        for submitter in by_submitter.keys() - self.rounds.keys():
            self.log.warning(
                "schedd %s: %d matches for %s, whose negotiation is not open: not sent",
                self.address,
                len(by_submitter[submitter]),
                submitter,
            )
        try:
            while self.rounds:
                submitter, current = next(iter(self.rounds.items()))
                mine = by_submitter.get(submitter, [])
                offers = [offer_ad(match) for match in mine]
                rejections = unmatched(current.requests, mine, self.reasons)
                self._run(current, finish(current.stream, offers, rejections))
                self._close(submitter)
        except (OSError, EpError) as error:
            raise self._failed("sending its matches", error) from error

    # -- the rounds -----------------------------------------------------------------------

    def _fetch(self, submitter: str, header: ClassAd, size: int) -> list[ClassAd]:
        """Open ``submitter``'s round and fetch its requests (kept open when there are)."""
        sinful = parse_sinful(self.address)
        sock, stream = connect(sinful.host, sinful.port, self._timeout())
        current = self.rounds[submitter] = Round(submitter, sock, stream)
        requests = current.requests = self._run(
            current,
            fetch(stream, self.config(), header, size, self._check_time),
        )
        if not requests:
            self._run(current, finish(stream, ()))
            self._close(submitter)
        return requests

    def _run(self, current: Round, conversation: Conversation[Result]) -> Result:
        current.sock.settimeout(self._timeout())
        return run_blocking(current.sock, current.stream, conversation)

    def _start_clock(self) -> None:
        """Each half of the cycle has NEGOTIATOR_MAX_TIME_PER_SCHEDD for this schedd."""
        limit = self.config().get_float(
            "NEGOTIATOR_MAX_TIME_PER_SCHEDD", DEFAULT_MAX_TIME, minimum=1.0
        )
        self._deadline = self.monotonic() + limit

    def _timeout(self) -> float:
        """The wait for one step: NEGOTIATOR_TIMEOUT, within what is left of the schedd's
        time (at least a moment, so that the step fails as out of time)."""
        wait = self.config().get_float("NEGOTIATOR_TIMEOUT", DEFAULT_TIMEOUT, minimum=0.01)
        return max(min(wait, self._deadline - self.monotonic()), 0.01)

    def _check_time(self) -> None:
        if self.monotonic() > self._deadline:
            raise Refused("NEGOTIATOR_MAX_TIME_PER_SCHEDD ran out")

    def _failed(self, doing: str, error: Exception) -> PeerUnreachable:
        """Close every round; the error naming the schedd (logged by the negotiator)."""
        for submitter in list(self.rounds):
            self._close(submitter)
        why = "timed out" if isinstance(error, TimeoutError) else str(error) or type(error).__name__
        return PeerUnreachable(f"schedd at {self.address}: {doing}: {why}")

    def _end_rounds(self) -> None:
        """End the rounds an earlier cycle left open (best effort: they are closed anyway)."""
        for submitter, current in list(self.rounds.items()):
            try:
                self._run(current, finish(current.stream, ()))
            except (OSError, EpError) as error:
                self.log.info("schedd %s: ending %s's round: %s", self.address, submitter, error)
            self._close(submitter)

    def _close(self, submitter: str) -> None:
        current = self.rounds.pop(submitter, None)
        if current is not None:
            current.sock.close()


def fetch(
    stream: Stream,
    config: Config,
    header: ClassAd,
    size: int,
    check_time: Callable[[], None] = lambda: None,
) -> Generator[Step, bytes | None, list[ClassAd]]:
    """Start NEGOTIATE, send ``header`` and ask for requests ``size`` at a time until the
    schedd has no more; its requests, in its order. ``check_time`` raises when the schedd's
    time is over."""
    yield from start_command(
        stream,
        NEGOTIATE.number,
        config,
        key_exchange=EcdhClientKeyExchange(),
        subsystem="NEGOTIATOR",
    )
    yield from send(stream.writer().put_classad(header))
    jobs: list[ClassAd] = []
    while True:
        check_time()
        ask = stream.writer().put_int(neg.SEND_RESOURCE_REQUEST_LIST).put_int(size)
        yield from send(ask)
        for _ in range(size):
            reader = yield from receive(stream, "the schedd's next request")
            request = neg.read_request(reader)
            if request is None:
                return jobs
            jobs.append(request)


def finish(
    stream: Stream,
    offers: Sequence[ClassAd],
    rejections: Sequence[tuple[ClassAd, str]] = (),
) -> Generator[Step, bytes | None, None]:
    """Send each match (``offers``: :func:`offer_ad`), each rejection (a request and the
    reason: :func:`unmatched`), then END_NEGOTIATE."""
    for offer in offers:
        claim = offer.evaluate("ClaimId")
        writer = stream.writer().put_int(neg.PERMISSION_AND_AD)
        writer.put_string(claim if isinstance(claim, str) and claim else "null")
        yield from send(writer.put_classad(offer, private=False))
    for request, reason in rejections:
        yield from send(neg.write_rejection(stream.writer(), request, reason))
    yield from send(stream.writer().put_int(neg.END_NEGOTIATE))


def as_jobs(requests: Sequence[ClassAd], capacity: int, *, counts: bool = True) -> list[ClassAd]:
    """The jobs a cycle matches for ``requests``: each request as many times as it asks for
    matches (its ResourceRequestCount; once without ``counts``, USE_RESOURCE_REQUEST_COUNTS
    false), at most ``capacity`` times (:func:`~epcore.net.negotiation.match_capacity`) when
    its jobs ask for a CPU or more. The cycle matches each as a job of its own: its
    accounting, limits and order are the in-process cycle's, and every match of a request
    names it (the same ad, the same ClusterId and ProcId)."""
    jobs: list[ClassAd] = []
    for request in requests:
        count = neg.request_count(request) if counts else 1
        cpus = request.evaluate("RequestCpus")
        if isinstance(cpus, int | float) and not isinstance(cpus, bool) and cpus >= 1:
            count = min(count, capacity)
        jobs.extend([request] * count)
    return jobs


def unmatched(
    requests: Sequence[ClassAd], matches: Sequence[Match], reasons: Mapping[str, str]
) -> list[tuple[ClassAd, str]]:
    """The rejections of a round: each request the cycle matched fewer times than its
    ResourceRequestCount, with the reason ``reasons`` gives for its job (HTCondor's "no
    match found" when none)."""
    matched: dict[str, int] = {}
    for match in matches:
        matched[match.job_id] = matched.get(match.job_id, 0) + 1
    rejections: list[tuple[ClassAd, str]] = []
    for request in requests:
        name = f"{request.evaluate('ClusterId')}.{request.evaluate('ProcId')}"
        if matched.get(name, 0) < neg.request_count(request):
            rejections.append((request, reasons.get(name, "no match found")))
    return rejections


def offer_ad(match: Match) -> ClassAd:
    """The slot ad PERMISSION_AND_AD sends for ``match``: the request it answers, and what
    epcore's schedd takes a match with (:mod:`epcore.net.negotiation`)."""
    cluster, _, proc = match.job_id.partition(".")
    offer = match.slot.copy()
    offer.pop("ClaimId", None)  # it travels as the claim id, never in the ad
    offer[neg.REQUEST_CLUSTER] = int(cluster)
    offer[neg.REQUEST_PROC] = int(proc)
    offer[neg.MATCH_REASON] = match.reason
    if match.preempts:
        offer[neg.PREEMPTS] = " ".join(match.preempts)
    offer[neg.MATCH_WEIGHT] = match.weight
    return offer


def _submitter_ads(collector: AdQuery, now: float) -> list[ClassAd]:
    return collector.query("Submitter", projection=SUBMITTER_ATTRIBUTES, now=now)


#: What the negotiator reads of a Submitter ad to find and negotiate with its schedd.
SUBMITTER_ATTRIBUTES = ("Name", SCHEDD_ADDRESS, neg.SUBMITTER_TAG)


class SubmitterDirectory:
    """The Submitter ads in ``collector``, read again by each :meth:`addresses` (in the
    central manager's loop, as a cycle begins) and kept for :meth:`naming`, which the
    links call in the cycle, perhaps from the cycle's thread: the collector's store is the
    loop's alone."""

    def __init__(self, collector: AdQuery, clock: Callable[[], float]) -> None:
        self.collector = collector
        self.clock = clock
        self.ads: list[ClassAd] = []

    def addresses(self) -> list[str]:
        """The schedds the Submitter ads name now (ScheddIpAddr), each once."""
        self.ads = _submitter_ads(self.collector, self.clock())
        found = (ad.evaluate(SCHEDD_ADDRESS) for ad in self.ads)
        return sorted({address for address in found if isinstance(address, str) and address})

    def naming(self, address: str) -> list[ClassAd]:
        """The Submitter ads of the last :meth:`addresses` that name the schedd ``address``."""
        return [ad for ad in self.ads if ad.evaluate(SCHEDD_ADDRESS) == address]


def remote_schedd_addresses(
    collector: AdQuery, clock: Callable[[], float]
) -> Callable[[], list[str]]:
    """The schedds the Submitter ads in ``collector`` name (ScheddIpAddr), each once: the
    schedds a negotiator negotiates with when none runs in its process."""
    return SubmitterDirectory(collector, clock).addresses


def remote_schedd_connector(
    collector: AdQuery,
    config: Callable[[], Config],
    *,
    name: str,
    log: logging.Logger,
    clock: Callable[[], float],
    directory: SubmitterDirectory | None = None,
) -> Callable[[str], RemoteJobSource]:
    """The ``connect`` of a negotiator's schedd Locator: the link to the schedd at an
    address, whose submitters are the Submitter ads in ``collector`` naming it (those
    ``directory`` read last, when given: links used outside the loop)."""

    def connect(address: str) -> RemoteJobSource:
        try:
            parse_sinful(address)
        except EpError as error:
            raise PeerUnreachable(f"schedd at {address!r}: not an address: {error}") from error

        def submitters() -> list[ClassAd]:
            if directory is not None:
                return directory.naming(address)
            ads = _submitter_ads(collector, clock())
            return [ad for ad in ads if ad.evaluate(SCHEDD_ADDRESS) == address]

        return RemoteJobSource(address, submitters, config, name=name, log=log)

    return connect
