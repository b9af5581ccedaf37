"""The collector's CEDAR commands: queries, updates and invalidations as HTCondor's clients
send them (condor_collector.V6/collector.cpp), answered by the same collector the pool's
local requests reach (:mod:`epcore.collector.requests`).

- QUERY_*_ADS: one query ad (Requirements, Projection, LimitResults; TargetType for the
  generic and any-type queries); the answer is one message of ``1, ad`` per ad and a
  final ``0``. Private attributes go only over an encrypted stream, and only for
  QUERY_STARTD_PVT_ADS. A daemon of this process, reached in-process, is given the address
  the client came in by as its MyAddress.
- UPDATE_*_AD: the daemon's public ad, optionally its private ad, in one message; the
  collector stamps who sent it (AuthenticatedIdentity, AuthenticationMethod) and keeps the
  connection for the next update (the command number and ad again) until DC_NOP.
- INVALIDATE_*_ADS: a query ad naming the ads to drop (Requirements, or Name).

The levels each needs (READ for queries, DAEMON for the rest) are in
:mod:`epcore.net.commands`; the handshake has checked them before a handler runs.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

from epcore.classad import ClassAd
from epcore.errors import EpError
from epcore.net import commands
from epcore.net.codec import Writer
from epcore.net.commands import AD_TYPES, Command
from epcore.net.conversation import Step, send
from epcore.net.dispatch import CommandContext, Handler

if TYPE_CHECKING:
    from epcore.collector.service import CollectorService

_QUERIES = (
    commands.QUERY_STARTD_ADS,
    commands.QUERY_STARTD_PVT_ADS,
    commands.QUERY_SCHEDD_ADS,
    commands.QUERY_MASTER_ADS,
    commands.QUERY_SUBMITTOR_ADS,
    commands.QUERY_COLLECTOR_ADS,
    commands.QUERY_NEGOTIATOR_ADS,
    commands.QUERY_ACCOUNTING_ADS,
    commands.QUERY_ANY_ADS,
    commands.QUERY_GENERIC_ADS,
)
_UPDATES = (
    commands.UPDATE_STARTD_AD,
    commands.UPDATE_SCHEDD_AD,
    commands.UPDATE_MASTER_AD,
    commands.UPDATE_SUBMITTOR_AD,
    commands.UPDATE_COLLECTOR_AD,
    commands.UPDATE_NEGOTIATOR_AD,
    commands.UPDATE_ACCOUNTING_AD,
    commands.UPDATE_AD_GENERIC,
)
_INVALIDATIONS = (
    commands.INVALIDATE_STARTD_ADS,
    commands.INVALIDATE_SCHEDD_ADS,
    commands.INVALIDATE_MASTER_ADS,
    commands.INVALIDATE_SUBMITTOR_ADS,
    commands.INVALIDATE_COLLECTOR_ADS,
    commands.INVALIDATE_NEGOTIATOR_ADS,
    commands.INVALIDATE_ACCOUNTING_ADS,
    commands.INVALIDATE_ADS_GENERIC,
)
#: HTCondor's names for "every type" in a query's TargetType.
_ANY = {"any", ""}


def _my_type(command: int, ad: ClassAd, attribute: str) -> str | None:
    """The MyType a command is about: the command's own, else the ad's ``attribute``."""
    fixed = AD_TYPES.get(command)
    if fixed is not None:
        return fixed
    named = ad.evaluate(attribute)
    if isinstance(named, str) and named.lower() not in _ANY:
        return named
    return None


def _projection(query: ClassAd) -> list[str] | None:
    text = query.evaluate("Projection")
    if not isinstance(text, str) or not text.strip():
        return None
    return text.replace(",", " ").split()


def _constraint(query: ClassAd) -> str | None:
    expr = query.lookup("Requirements")
    return None if expr is None else str(expr)


#: The attributes that hold a daemon's address (a submitter ad names its schedd's).
_ADDRESSES = ("MyAddress", "StartdIpAddr", "ScheddIpAddr")


def _in_process(ad: ClassAd) -> bool:
    """Whether the ad holds an in-process (``<unix:...>``) address."""
    for name in _ADDRESSES:
        if name in ad:
            address = ad.evaluate(name)
            if isinstance(address, str) and address.startswith("<unix:"):
                return True
    return False


def _reachable(ad: ClassAd, here: tuple[str, int]) -> None:
    """A daemon of this process is reached in-process (``<unix:...>``); a CEDAR client
    reaches it at the port it came in by, which every role of the process answers."""
    host, port = here
    for name in _ADDRESSES:
        address = ad.evaluate(name) if name in ad else None
        if isinstance(address, str) and address.startswith("<unix:"):
            ad[name] = f"<[{host}]:{port}>" if ":" in host else f"<{host}:{port}>"


class AnswerCache:
    """Each stored ad's part of a query's answer (``1`` and the ad in the clear or encrypted
    coding, MyAddress made reachable, no private attribute), kept while the collector keeps
    that very ad: an update stores a new ad, so an entry is never stale, only unused. A
    1,000-slot answer is then the stored parts joined, not 1,000 ads encoded again."""

    def __init__(self) -> None:
        self._parts: dict[tuple[int, bool, tuple[str, int]], tuple[ClassAd, bytes]] = {}

    def encoded(self, ad: ClassAd, encrypted: bool, here: tuple[str, int]) -> bytes:
        key = (id(ad), encrypted, here)
        kept = self._parts.get(key)
        if kept is not None and kept[0] is ad:
            return kept[1]
        shown = ad
        if _in_process(ad):
            shown = ad.copy()  # the stored ad is never changed
            _reachable(shown, here)
        part = Writer(encrypted=encrypted).put_int(1).put_classad(shown, private=False).bytes()
        self._parts[key] = (ad, part)
        return part

    def prune(self, service: CollectorService) -> None:
        """Forget the parts of ads the collector no longer holds, once they outnumber the
        ads it holds (so that the cache stays within twice the answer it speeds up)."""
        if len(self._parts) <= 2 * len(service.collector) + 64:
            return
        held = {id(ad) for ad in service.query_stored(None, now=service.clock())}
        self._parts = {key: kept for key, kept in self._parts.items() if key[0] in held}


def cedar_handlers(service: CollectorService) -> dict[Command, Handler]:
    """The collector's handlers by command (module docstring)."""

    answers = AnswerCache()

    def query(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the query ad")
        ad = reader.get_classad("the query ad")
        reader.expect_end("the query ad")
        command = context.peer.command
        limit = ad.evaluate("LimitResults")
        most = limit if type(limit) is int and limit > 0 else None
        projection = _projection(ad)
        private = command == commands.QUERY_STARTD_PVT_ADS.number and context.stream.encrypted
        here = context.stream.local
        writer = context.stream.writer()
        try:
            if projection is None and not private:
                # Every attribute: each stored ad's encoding is kept until it is replaced.
                stored = service.query_stored(
                    _my_type(command, ad, "TargetType"), _constraint(ad), now=service.clock()
                )
                encrypted = context.stream.encrypted
                for ad_found in stored[:most]:
                    writer.put_bytes(answers.encoded(ad_found, encrypted, here))
                answers.prune(service)
            else:
                found = service.query(
                    _my_type(command, ad, "TargetType"),
                    _constraint(ad),
                    projection,
                    now=service.clock(),
                )
                for ad_found in found[:most]:
                    _reachable(ad_found, here)
                    writer.put_int(1).put_classad(ad_found, private=private)
        except EpError as error:
            service.log.warning(
                "query from %s at %s refused: %s",
                context.peer.name,
                context.stream.peer_description,
                error,
            )
            writer = context.stream.writer()
        writer.put_int(0)
        yield from send(writer)
        return None

    def update(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the ad")
        ad = reader.get_classad("the ad")
        if not reader.at_end:
            for name, expr in reader.get_classad("the private ad").items():
                ad[name] = expr
        reader.expect_end("the ad")
        my_type = _my_type(context.peer.command, ad, "MyType")
        if my_type is not None:
            ad["MyType"] = my_type
        identity = context.peer.identity
        for name in ("AuthenticatedIdentity", "AuthenticationMethod"):
            if name in ad:
                del ad[name]
        if identity is not None:
            ad["AuthenticatedIdentity"] = identity.fqu
            ad["AuthenticationMethod"] = identity.method
        try:
            service.update([ad], service.clock())
        except EpError as error:
            service.log.warning(
                "update from %s at %s ignored: %s",
                context.peer.name,
                context.stream.peer_description,
                error,
            )
        return True

    def invalidate(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the invalidation")
        ad = reader.get_classad("the invalidation")
        reader.expect_end("the invalidation")
        my_type = _my_type(context.peer.command, ad, "TargetType") or _my_type(
            context.peer.command, ad, "MyType"
        )
        now = service.clock()
        constraint = _constraint(ad)
        named = ad.evaluate("Name")
        try:
            if constraint is not None:
                matching = service.query_stored(my_type, constraint, now=now)
            elif my_type is not None and isinstance(named, str):
                # As HTCondor's collector: the invalidation ad's own key (a submitter
                # invalidation's Name with its ScheddName) names the one ad to drop.
                probe = ad.copy()
                probe["MyType"] = my_type
                matching = [probe]
            elif isinstance(named, str):
                stored = service.query_stored(None, None, now=now)
                matching = [found for found in stored if found.evaluate("Name") == named]
            else:
                matching = []
            service.collector.invalidate_ads(matching, now)
        except EpError as error:
            service.log.warning(
                "invalidation from %s at %s ignored: %s",
                context.peer.name,
                context.stream.peer_description,
                error,
            )
        return True

    table: dict[Command, Handler] = {}
    table.update({command: query for command in _QUERIES})
    table.update({command: update for command in _UPDATES})
    table.update({command: invalidate for command in _INVALIDATIONS})
    return table
