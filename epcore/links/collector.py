"""A collector in another process: the :class:`CollectorLink` that speaks HTCondor's
collector commands over CEDAR, for a role running without a collector of its own.

Ads go out as HTCondor's daemons send them: a slot ad with UPDATE_STARTD_AD (the public ad,
then the private ad: its Name and the private attributes such as the ClaimId, which travel
only over an encrypted stream), a schedd's ad with UPDATE_SCHEDD_AD, a submitter's with
UPDATE_SUBMITTOR_AD, any other with UPDATE_AD_GENERIC; a withdrawn ad with the matching
INVALIDATE_* and a query ad naming it.

The first connection starts a session with DAEMON-level credentials (the daemon's token in
SEC_TOKEN_DIRECTORY, as HTCondor's); later connections resume it (UseSession: no second
authentication) until the collector forgets it, then a new one starts. A connection is kept
while updates follow each other within KEEP_IDLE seconds (HTCondor's stashed update socket:
each further command's number and ad on the same connection); one the collector closed is
noticed before it is used and made again.

Nothing here waits in the daemon's loop: :meth:`advertise` and the others only note what is
to be sent (the latest ad of each Name replacing one not yet sent: updates coalesce) and a
worker thread sends it. A collector that is down or refuses costs the worker a growing
pause (1 s doubling to UPDATE_INTERVAL's 5 minutes at most) and the log one warning when it
becomes unreachable and one line when it answers again, not one per attempt.

An ad going out carries the process's network address (its CEDAR port) where it held the
in-process ``<unix:...>`` one (MyAddress, StartdIpAddr, ScheddIpAddr...), so that peers on
other hosts reach the daemon. :meth:`query` is one blocking QUERY_*_ADS bounded by
QUERY_TIMEOUT, for the users' requests of a role running without a collector.
"""

from __future__ import annotations

import logging
import select
import socket
import threading
import time
from collections.abc import Callable, Generator, Sequence
from typing import Final

from epcore.classad import ClassAd, parse_expr
from epcore.config import Config
from epcore.errors import EpError
from epcore.links.connection import (
    CONNECT_TIMEOUT,
    FAILURES,
    collector_address,
    collector_host,
    open_connection,
    tcp_address,
)
from epcore.links.worker import WorkerService
from epcore.net import commands
from epcore.net.client import ClientSession, resume_command, start_command
from epcore.net.codec import Writer, is_private
from epcore.net.commands import Command
from epcore.net.conversation import Refused, Step, Stream, receive, run_blocking, send
from epcore.net.keyexchange import EcdhClientKeyExchange

#: Seconds a query of a remote collector may take in all.
QUERY_TIMEOUT: Final = 10.0
#: The first pause after a failed attempt, doubled after each failure up to MAX_BACKOFF.
FIRST_BACKOFF: Final = 1.0
MAX_BACKOFF: Final = 300.0
#: Seconds a connection is kept with nothing to send (under CEDAR_CLIENT_TIMEOUT's 20).
KEEP_IDLE: Final = 10.0
#: Seconds each step of an update may take once connected (HTCondor's DCCollector starts
#: its TCP updates with 20): a collector taking thousands of hosts' first authentications
#: at once answers late, and a host that gave up after 5 s made it authenticate again.
UPDATE_TIMEOUT: Final = 20.0
#: Seconds the process's end waits for the last updates and invalidations to go out.
CLOSE_WAIT: Final = 5.0
#: The attributes that hold a daemon's own address.
ADDRESS_ATTRIBUTES: Final = (
    "MyAddress",
    "StartdIpAddr",
    "ScheddIpAddr",
    "NegotiatorIpAddr",
    "CollectorIpAddr",
)

#: The update and invalidation command of each MyType (lower case); others go generic.
_COMMANDS: Final[dict[str, tuple[Command, Command]]] = {
    "machine": (commands.UPDATE_STARTD_AD, commands.INVALIDATE_STARTD_ADS),
    "scheduler": (commands.UPDATE_SCHEDD_AD, commands.INVALIDATE_SCHEDD_ADS),
    "submitter": (commands.UPDATE_SUBMITTOR_AD, commands.INVALIDATE_SUBMITTOR_ADS),
    "negotiator": (commands.UPDATE_NEGOTIATOR_AD, commands.INVALIDATE_NEGOTIATOR_ADS),
    "accounting": (commands.UPDATE_ACCOUNTING_AD, commands.INVALIDATE_ACCOUNTING_ADS),
}
_GENERIC: Final = (commands.UPDATE_AD_GENERIC, commands.INVALIDATE_ADS_GENERIC)
#: The query command of each MyType (lower case); others are QUERY_GENERIC_ADS.
_QUERIES: Final[dict[str, Command]] = {
    "machine": commands.QUERY_STARTD_ADS,
    "scheduler": commands.QUERY_SCHEDD_ADS,
    "submitter": commands.QUERY_SUBMITTOR_ADS,
    "negotiator": commands.QUERY_NEGOTIATOR_ADS,
    "collector": commands.QUERY_COLLECTOR_ADS,
    "accounting": commands.QUERY_ACCOUNTING_ADS,
}


def _kind(ad: ClassAd) -> str:
    my_type = ad.evaluate("MyType")
    return my_type.lower() if isinstance(my_type, str) else ""


class RemoteCollector(WorkerService):
    """The collector at COLLECTOR_HOST, reached over CEDAR (module docstring).

    It is also a service of the loop, placed after the daemons it carries the ads of: its
    :meth:`close` waits (CLOSE_WAIT at most) for their last invalidations to go out.
    ``address`` gives the process's CEDAR host and port once it listens (None before);
    ``subsystem`` names the daemon to the collector (STARTD, SCHEDD).
    """

    thread_name = "collector-link"
    close_wait = CLOSE_WAIT
    left_behind = "the last updates for the collector were not all sent"

    name = "collector-link"

    def __init__(
        self,
        config: Callable[[], Config],
        *,
        address: Callable[[], tuple[str, int] | None],
        subsystem: str,
        log: logging.Logger,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.address = address
        self.subsystem = subsystem
        self.log = log
        self.monotonic = monotonic
        self._lock = threading.Condition()
        #: What is to be sent, by (command number, Name): the latest ad or invalidation.
        self._pending: dict[tuple[int, str], tuple[Command, ClassAd]] = {}
        self._stopping = False
        #: Whether the worker is sending a batch it took from ``_pending``.
        self._busy = False
        #: Set by a reconfiguration: the worker connects anew before its next update.
        self._reconnect = False
        self._thread: threading.Thread | None = None
        self._last_address: tuple[str, int] | None = None
        self._sock: socket.socket | None = None
        self._stream: Stream | None = None
        #: Whether the last attempt failed (the failure is logged once, until one succeeds).
        self.down = False
        self.backoff = FIRST_BACKOFF
        #: Updates and invalidations sent, and attempts that failed (for tests and logs).
        self.sent = 0
        #: Connections made (one serves a burst of updates), and those that resumed the
        #: session the first one made instead of authenticating again.
        self.connections = 0
        self.resumed = 0
        self._session: ClientSession | None = None
        #: Whether the kept connection's command started (its handshake is over).
        self._started = False
        self.failures = 0

    # -- the CollectorLink ----------------------------------------------------------------

    def advertise(self, ads: Sequence[ClassAd], now: float) -> None:
        self.update(ads, now)

    def update(self, ads: Sequence[ClassAd], now: float) -> None:
        entries = []
        for ad in ads:
            update, _ = _COMMANDS.get(_kind(ad), _GENERIC)
            name = ad.evaluate("Name")
            # A copy: the daemon builds its next ads while the worker sends these.
            entries.append(((update.number, str(name)), (update, ad.copy())))
        self._queue(entries)

    def invalidate(self, names: Sequence[str], now: float) -> None:
        self.invalidate_ads("Machine", names, now)

    def invalidate_ads(self, my_type: str, names: Sequence[str], now: float) -> None:
        update, invalidation = _COMMANDS.get(my_type.lower(), _GENERIC)
        entries = []
        for name in names:
            query = ClassAd()
            query["MyType"] = "Query"
            query["TargetType"] = my_type
            query["Name"] = name
            # An invalidation supersedes an update of the same ad not yet sent.
            entries.append(((update.number, name), (invalidation, query)))
        self._queue(entries)

    def query(
        self,
        my_type: str | None,
        constraint: str | None = None,
        projection: Sequence[str] | None = None,
        *,
        now: float,
        absent: bool = False,
    ) -> list[ClassAd]:
        """One QUERY_*_ADS (blocking, QUERY_TIMEOUT at most); ``absent`` asks for the absent
        ads alone, as ``condor_status -absent`` does (a constraint naming Absent). EpError
        when the collector cannot be asked."""
        if absent:
            constraint = f"(Absent =?= true) && ({constraint})" if constraint else "Absent =?= true"
        command = commands.QUERY_ANY_ADS if my_type is None else _QUERIES.get(my_type.lower())
        query = ClassAd()
        query["Requirements"] = parse_expr(constraint) if constraint else True
        if projection:
            query["Projection"] = " ".join(projection)
        if command is None:
            command = commands.QUERY_GENERIC_ADS
            query["TargetType"] = my_type or "Any"
        wanted = command

        def conversation(stream: Stream) -> Generator[Step, bytes | None, list[ClassAd]]:
            yield from self._start(stream, wanted)
            yield from send(stream.writer().put_classad(query))
            reader = yield from receive(stream, "the query's answer")
            ads: list[ClassAd] = []
            while reader.get_int("whether an ad follows"):
                ads.append(reader.get_classad(f"ad {len(ads) + 1} of the answer"))
            return ads

        host, port = self.collector()
        try:
            sock, stream = open_connection(self.config(), host, port)
            with sock:
                sock.settimeout(QUERY_TIMEOUT)
                return run_blocking(sock, stream, conversation(stream))
        except FAILURES as error:
            raise EpError(f"the collector at {host}:{port} did not answer: {error}") from None

    def collector(self) -> tuple[str, int]:
        """The collector's host and port (EpError when no knob names one)."""
        return collector_address(self.config())

    # -- the loop's service ---------------------------------------------------------------

    def reconfig(self) -> None:
        # COLLECTOR_HOST may name another collector: the next batch connects anew, in a new
        # session.
        with self._lock:
            self._reconnect = True
            self.backoff = FIRST_BACKOFF
            self._lock.notify()

    def close_in_child(self) -> None:
        if self._sock is not None:
            self._sock.close()

    def wait_sent(self, timeout: float) -> bool:
        """Whether everything queued so far went out within ``timeout`` seconds (tests)."""
        deadline = self.monotonic() + timeout
        with self._lock:
            while self._pending or self._busy:
                left = deadline - self.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(min(left, 0.1))
        return True

    # -- the worker -----------------------------------------------------------------------

    def _queue(self, entries: list[tuple[tuple[int, str], tuple[Command, ClassAd]]]) -> None:
        if not entries:
            return
        with self._lock:
            for key, entry in entries:
                self._pending.pop(key, None)  # the newest goes last, in order of change
                self._pending[key] = entry
            self._lock.notify()

    def _work(self) -> None:
        pause = 0.0
        while True:
            with self._lock:
                # New updates wake the worker but do not cut the pause after a failure.
                retry_at = self.monotonic() + pause
                while not self._stopping and (left := retry_at - self.monotonic()) > 0:
                    self._lock.wait(left)
                while not self._pending and not self._stopping:
                    if self._sock is None:
                        self._lock.wait()
                    elif not self._lock.wait(KEEP_IDLE):
                        # Ended (DC_NOP) before the collector's CEDAR_CLIENT_TIMEOUT would
                        # drop it as making no progress.
                        self._drop()
                if not self._pending:
                    self._drop()
                    return
                if self._reconnect:
                    self._reconnect = False
                    self._drop()
                    self._session = None
                batch = list(self._pending.items())
                self._pending.clear()
                self._busy = True
                last = self._stopping
            try:
                done = self._send_batch([entry for _, entry in batch])
            finally:
                with self._lock:
                    # What did not go out goes again, unless something newer replaced it.
                    for key, entry in batch[done:]:
                        self._pending.setdefault(key, entry)
                    self._busy = False
                    self._lock.notify_all()
            if done == len(batch):
                pause = 0.0
            elif last:
                return  # the end: one attempt, not a wait for a collector that is down
            else:
                pause = self.backoff
                self.backoff = min(self.backoff * 2, MAX_BACKOFF)

    def _send_batch(self, batch: list[tuple[Command, ClassAd]]) -> int:
        """How many of ``batch`` went out; a failure is logged once until one succeeds."""
        done = 0
        try:
            for command, ad in batch:
                self._send_one(command, ad)
                done += 1
                self.sent += 1
        except FAILURES as error:
            self.failures += 1
            self._drop()
            if not self.down:
                self.down = True
                where = collector_host(self.config()) or "unset"
                self.log.warning(
                    "cannot send ads to the collector at %s (%s); retrying, updates coalesce",
                    where,
                    error,
                )
            return done
        if self.down:
            self.down = False
            self.log.info("the collector answers again; ads sent")
        self.backoff = FIRST_BACKOFF
        return done

    def _our_address(self, stream: Stream) -> str:
        """The process's CEDAR address as peers elsewhere reach it: a listener on every
        interface is reached at the address this connection to the collector came from."""
        deadline = self.monotonic() + CONNECT_TIMEOUT
        while (address := self.address() or self._last_address) is None:
            # The listener opens in the loop's first turn, just after the first ads.
            if self.monotonic() > deadline:
                raise EpError("this process has no CEDAR address to give its peers")
            time.sleep(0.05)
        # Kept: at the end the listener closes before the last invalidations go out.
        self._last_address = address
        host, port = address
        if host in ("0.0.0.0", "::", ""):
            host = stream.local[0]
        return tcp_address(host, port)

    @staticmethod
    def _reachable(ad: ClassAd, here: str) -> ClassAd:
        shown = ad
        for name in ADDRESS_ATTRIBUTES:
            value = ad.evaluate(name) if name in ad else None
            if isinstance(value, str) and value.startswith("<unix:"):
                if shown is ad:
                    shown = ad.copy()
                shown[name] = here
        return shown

    def _send_one(self, command: Command, ad: ClassAd) -> None:
        sock, stream = self._sock, self._stream
        if sock is not None and self._closed_by_peer(sock):
            self._drop()
            sock = stream = None
        if sock is None or stream is None:
            if self._session is not None:
                try:
                    self._connect_and_send(command, ad, self._session)
                    self.resumed += 1
                    return
                except Refused:
                    # The collector forgot the session (it expired, or it restarted).
                    self._drop()
                    self._session = None
            self._connect_and_send(command, ad, None)
            return
        writer = stream.writer().put_int(command.number)
        self._put_ads(writer, command, self._reachable(ad, self._our_address(stream)))
        sock.settimeout(UPDATE_TIMEOUT)
        sock.sendall(stream.framer.frame(writer.bytes()))

    def _connect_and_send(
        self, command: Command, ad: ClassAd, session: ClientSession | None
    ) -> None:
        """A new connection, its command started in ``session`` (None: a new session, kept
        for the next connections), and the ad."""
        host, port = self.collector()
        sock, stream = open_connection(self.config(), host, port)
        self._sock, self._stream = sock, stream
        self._started = False
        self.connections += 1
        shown = self._reachable(ad, self._our_address(stream))
        sock.settimeout(UPDATE_TIMEOUT)
        run_blocking(sock, stream, self._first(stream, command, shown, session))
        self._started = True

    def _first(
        self, stream: Stream, command: Command, ad: ClassAd, session: ClientSession | None
    ) -> Generator[Step, bytes | None, None]:
        if session is not None:
            yield from resume_command(stream, command.number, session)
        else:
            self._session = yield from self._start(stream, command)
        writer = stream.writer()
        self._put_ads(writer, command, ad)
        yield from send(writer)

    def _start(
        self, stream: Stream, command: Command
    ) -> Generator[Step, bytes | None, ClientSession]:
        return (
            yield from start_command(
                stream,
                command.number,
                self.config(),
                key_exchange=EcdhClientKeyExchange(),
                subsystem=self.subsystem,
            )
        )

    @staticmethod
    def _put_ads(writer: Writer, command: Command, ad: ClassAd) -> None:
        writer.put_classad(ad, private=False)
        if command is commands.UPDATE_STARTD_AD:
            # The private ad, as HTCondor's startd sends it: the negotiator's claim ids.
            private = ClassAd()
            for name in ("MyType", "Name", "MyAddress"):
                expr = ad.lookup(name)
                if expr is not None:
                    private[name] = expr
            for name, expr in ad.items():
                if is_private(name):
                    private[name] = expr
            writer.put_classad(private)

    @staticmethod
    def _closed_by_peer(sock: socket.socket) -> bool:
        # The collector never writes on an update connection: readable means closed.
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def _drop(self) -> None:
        if self._sock is not None:
            try:
                # DC_NOP ends a connection whose command started; one cut short in its
                # handshake is closed (its protection may differ from the collector's).
                if self._stream is not None and self._started:
                    writer = self._stream.writer().put_int(commands.DC_NOP.number)
                    self._sock.sendall(self._stream.framer.frame(writer.bytes()))
            except OSError:
                pass
            self._sock.close()
        self._sock = self._stream = None
