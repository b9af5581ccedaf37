"""A request server that one user cannot take over: one request ad per line, within limits.

A daemon's socket served by its single loop must keep answering everyone whatever one local
user does to it. :class:`RequestServer` accepts connections on a listening Unix socket and
answers each request ad with a handler, one line each way (:mod:`epcore.starter.protocol`),
with these bounds (:class:`~epcore.runtime.connection_limits.ConnectionLimits`):

- a request longer than ``max_request`` bytes is answered with an error ad naming the limit,
  and the connection closed; when the unfinished requests of all connections together hold
  more than ``max_unread`` bytes, the connection holding the most is refused the same way;
- a connection whose answers wait unsent beyond ``max_unsent`` bytes is not read from until
  its peer takes them (the kernel's buffer then stops the peer), and one whose peer neither
  sends nor takes anything for ``client_timeout`` seconds is closed;
- at most ``max_connections`` connections (and half the process's descriptor limit), and
  ``max_connections_per_user`` of one user, are kept: the excess is accepted, told why in an
  error ad and closed;
- out of descriptors (EMFILE, ENFILE), the listener is not polled for :data:`ACCEPT_BACKOFF`
  seconds, and a descriptor held in reserve lets the daemon accept-and-refuse meanwhile;
- requests are taken one at a time, round robin between users (and between the connections
  of one user), for at most :data:`TURN_BUDGET` seconds per turn of the loop; the loop comes
  straight back (:meth:`RequestServer.timeout` is 0) while requests wait.

Every error path logs through :class:`~epcore.runtime.connection_limits.ThrottledLog`: at most
one line per kind of event per LOG_PERIOD seconds, with the count of those it held back.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import resource
import selectors
import socket
import time
from collections.abc import Callable
from typing import Final, Generic, TypeVar

import attrs

from epcore.classad import ClassAd
from epcore.runtime import framing
from epcore.runtime.connection_limits import ConnectionLimits, ThrottledLog

#: How long the listener rests after the daemon ran out of descriptors, in seconds.
ACCEPT_BACKOFF: Final = 1.0
#: Connections accepted at most per turn of the loop (the rest wait in the backlog).
ACCEPTS_PER_TURN: Final = 64
#: Bytes read at most from one connection per turn.
READ_PER_TURN: Final = 256 * 1024
#: Seconds of a turn the server may spend answering before the loop's other work.
TURN_BUDGET: Final = 0.2

_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)

Requester = TypeVar("Requester")


@attrs.define(eq=False)
class Connection(Generic[Requester]):
    """One accepted connection: its channel, who is at the other end, and when it last
    made progress (sent a byte or took one)."""

    channel: framing.Channel
    user: int
    requester: Requester
    last_progress: float
    served: int = 0
    counted_unread: int = 0


def refuse(sock: socket.socket, reason: str) -> None:
    """Tell the peer of ``sock`` why it is not served (as far as its buffer takes it) and
    close it."""
    with contextlib.suppress(OSError):
        sock.setblocking(False)
        sock.send(framing.encode(_refusal(reason)))
    sock.close()


def _refusal(reason: str) -> ClassAd:
    ad = ClassAd()
    ad["Ok"] = False
    ad["Error"] = reason
    return ad


class RequestServer(Generic[Requester]):
    """Serves request ads on ``listener`` with ``handle`` within ``limits`` (module docstring).

    ``identify`` says who a new connection's peer is (their uid: connections are counted per
    uid), and ``describe`` what ``handle`` gets with each request of an admitted one.
    ``prefix`` is how the limits' knobs start, for messages. The loop calls :meth:`open` once,
    :meth:`ready` for each of the server's sockets the selector reports, :meth:`work` once per
    turn, and :meth:`timeout` to know how long it may wait.
    """

    def __init__(
        self,
        handle: Callable[[Requester, ClassAd], ClassAd],
        identify: Callable[[socket.socket], int],
        describe: Callable[[int], Requester],
        *,
        limits: ConnectionLimits,
        log: logging.Logger,
        prefix: str = "POOL",
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.handle = handle
        self.identify = identify
        self.describe = describe
        self.limits = limits
        self.log = log
        self.throttled = ThrottledLog(log, monotonic=monotonic)
        self.prefix = prefix
        self.monotonic = monotonic
        self.listener: socket.socket | None = None
        self.selector: selectors.BaseSelector | None = None
        self.data: object = None
        self.connections: dict[framing.Channel, Connection[Requester]] = {}
        self.per_user: dict[int, int] = {}
        self.unread_total = 0
        self.resume_accepting = 0.0
        self.listening = False
        self._reserve: int | None = None
        # Half the descriptors the process may open, whatever the knob says: the rest are
        # for its starters, files and the jobs it watches.
        self.descriptor_cap = limits.max_connections
        self._served = 0
        self._next_sweep = 0.0

    # -- setup ------------------------------------------------------------------------------

    def open(self, listener: socket.socket, selector: selectors.BaseSelector, data: object) -> None:
        """Serve ``listener`` (listening, non-blocking) in ``selector`` with ``data``."""
        self.listener = listener
        self.selector = selector
        self.data = data
        selector.register(listener, selectors.EVENT_READ, data)
        self.listening = True
        self._hold_reserve()
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft != resource.RLIM_INFINITY:
            self.descriptor_cap = max(soft // 2, 1)

    def _hold_reserve(self) -> None:
        if self._reserve is None:
            with contextlib.suppress(OSError):
                self._reserve = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)

    def close(self) -> None:
        for channel in list(self.connections):
            self._drop(channel)
        if self.listener is not None:
            if self.listening and self.selector is not None:
                with contextlib.suppress(KeyError, ValueError):
                    self.selector.unregister(self.listener)
            self.listener.close()
            self.listener = None
            self.listening = False
        self.close_in_child()

    def close_in_child(self) -> None:
        """Give back the descriptor held in reserve (in a forked child, say)."""
        if self._reserve is not None:
            with contextlib.suppress(OSError):
                os.close(self._reserve)
            self._reserve = None

    # -- the loop's calls -----------------------------------------------------------------

    def ready(self, fileobj: object) -> None:
        """``fileobj`` (the listener or a connection) is ready."""
        if fileobj is self.listener:
            self._accept()
        elif isinstance(fileobj, framing.Channel) and fileobj in self.connections:
            self._progress(self.connections[fileobj])

    def timeout(self) -> float:
        """How long the loop may wait: 0 while requests wait for their turn."""
        if any(self._waiting(c) for c in self.connections.values()):
            return 0.0
        if not self.listening and self.listener is not None:
            return max(self.resume_accepting - self.monotonic(), 0.0)
        return self.limits.client_timeout

    def work(self) -> None:
        """Answer waiting requests round robin between users, for at most TURN_BUDGET
        seconds; resume a resting listener; close connections that timed out."""
        now = self.monotonic()
        if not self.listening and now >= self.resume_accepting:
            self._listen_again()
        deadline = now + TURN_BUDGET
        while self.monotonic() < deadline:
            turn = self._next_of_each_user()
            if not turn:
                break
            for connection in turn:
                self._serve_one(connection)
                if self.monotonic() >= deadline:
                    break
        if now >= self._next_sweep:
            self._next_sweep = now + 0.5
            self._sweep(now)

    def flush(self) -> None:
        """Send what the connections did not take yet; forget the closed ones."""
        for connection in list(self.connections.values()):
            if connection.channel.pending:
                self._write(connection)
            if connection.channel.closed:
                self._drop(connection.channel)

    # -- accepting ------------------------------------------------------------------------

    def _accept(self) -> None:
        assert self.listener is not None
        for _ in range(ACCEPTS_PER_TURN):
            try:
                sock, _ = self.listener.accept()
            except BlockingIOError:
                return
            except OSError as error:
                if error.errno in _OUT_OF_DESCRIPTORS:
                    self._out_of_descriptors(error)
                    return
                continue  # a peer that left before it was accepted (ECONNABORTED)
            self._admit(sock)

    def _admit(self, sock: socket.socket) -> None:
        try:
            user = self.identify(sock)
        except OSError:
            sock.close()
            return
        limits = self.limits
        if len(self.connections) >= min(limits.max_connections, self.descriptor_cap):
            self.throttled.warning(
                "connections",
                "refusing a connection of uid %d: %d connections are open (%s)",
                user,
                len(self.connections),
                limits.knob("max_connections", self.prefix),
            )
            count = len(self.connections)
            refuse(sock, f"the daemon has too many connections ({count}); try again later")
            return
        if self.per_user.get(user, 0) >= limits.max_connections_per_user:
            knob = limits.knob("max_connections_per_user", self.prefix)
            self.throttled.warning(
                f"user {user}",
                "refusing a connection of uid %d: it has %d open (%s)",
                user,
                self.per_user[user],
                knob,
            )
            refuse(
                sock,
                f"you have {self.per_user[user]} connections open to the daemon, the most "
                f"{knob} allows; close some first",
            )
            return
        channel = framing.Channel(
            sock,
            None,
            max_line=limits.max_request,
            limit_name=limits.knob("max_request", self.prefix),
        )
        connection = Connection(channel, user, self.describe(user), self.monotonic())
        self.connections[channel] = connection
        self.per_user[user] = self.per_user.get(user, 0) + 1
        self._register(channel, selectors.EVENT_READ)

    def _out_of_descriptors(self, error: OSError) -> None:
        """Refuse one waiting peer with the reserved descriptor, then rest the listener."""
        assert self.listener is not None and self.selector is not None
        if self._reserve is not None:
            os.close(self._reserve)
            self._reserve = None
            with contextlib.suppress(OSError):
                sock, _ = self.listener.accept()
                refuse(sock, "the daemon is out of file descriptors; try again later")
            self._hold_reserve()
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(self.listener)
        self.listening = False
        self.resume_accepting = self.monotonic() + ACCEPT_BACKOFF
        self.throttled.warning(
            "descriptors",
            "cannot accept connections (%s, %d open): not listening for %.0f s",
            error.strerror,
            len(self.connections),
            ACCEPT_BACKOFF,
        )

    def _listen_again(self) -> None:
        assert self.listener is not None and self.selector is not None
        self._hold_reserve()
        self.selector.register(self.listener, selectors.EVENT_READ, self.data)
        self.listening = True

    # -- reading, answering, writing ------------------------------------------------------

    def _waiting(self, connection: Connection[Requester]) -> bool:
        channel = connection.channel
        return (
            not channel.closed and channel.unsent <= self.limits.max_unsent and channel.has_message
        )

    def _progress(self, connection: Connection[Requester]) -> None:
        """Take what the connection's peer sent (unless a request of it already waits) and
        write what it can take."""
        channel = connection.channel
        if channel.pending:
            self._write(connection)
        if channel.closed or channel.has_message or channel.unsent > self.limits.max_unsent:
            self._check(connection)
            return
        try:
            if channel.fill(READ_PER_TURN):
                connection.last_progress = self.monotonic()
        except framing.ProtocolError as error:
            self._refuse_connection(connection, str(error), "too long")
            return
        self._count_unread(connection)
        if self.unread_total > self.limits.max_unread:
            self._shed_unread()
        self._check(connection)

    def _count_unread(self, connection: Connection[Requester]) -> None:
        unread = 0 if connection.channel.closed else connection.channel.unread
        self.unread_total += unread - connection.counted_unread
        connection.counted_unread = unread

    def _shed_unread(self) -> None:
        """Refuse the connections holding the most unfinished input until the total is back
        within its limit."""
        knob = self.limits.knob("max_unread", self.prefix)
        while self.unread_total > self.limits.max_unread and self.connections:
            largest = max(self.connections.values(), key=lambda c: c.counted_unread)
            self._refuse_connection(
                largest,
                f"the daemon holds too much unfinished input ({self.unread_total} bytes, "
                f"{knob} = {self.limits.max_unread}); send a shorter request",
                "unread",
            )

    def _refuse_connection(self, connection: Connection[Requester], reason: str, kind: str) -> None:
        self.throttled.warning(
            f"{kind} {connection.user}", "refusing uid %d: %s", connection.user, reason
        )
        connection.channel.send(_refusal(reason))
        self._drop(connection.channel)

    def _next_of_each_user(self) -> list[Connection[Requester]]:
        """One waiting connection per user (the one served longest ago), users in the order
        they were last served."""
        chosen: dict[int, Connection[Requester]] = {}
        for connection in self.connections.values():
            if not self._waiting(connection):
                continue
            other = chosen.get(connection.user)
            if other is None or connection.served < other.served:
                chosen[connection.user] = connection
        return sorted(chosen.values(), key=lambda c: c.served)

    def _serve_one(self, connection: Connection[Requester]) -> None:
        channel = connection.channel
        self._served += 1
        connection.served = self._served
        try:
            request = channel.next_message()
        except framing.ProtocolError as error:
            self._refuse_connection(connection, str(error), "unreadable")
            return
        except Exception as error:  # a line the parser chokes on costs only its connection
            self._refuse_connection(connection, f"unreadable request: {error!r}", "unreadable")
            return
        finally:
            self._count_unread(connection)
        if request is None:
            return
        try:
            reply = self.handle(connection.requester, request)
        except Exception as error:  # one bad request must not take the daemon down
            self.throttled.warning(
                f"failed {connection.user}",
                "a request of uid %d failed",
                connection.user,
                exc_info=True,
            )
            reply = _refusal(f"internal error: {error!r}")
        channel.send(reply)
        self._check(connection)

    def _write(self, connection: Connection[Requester]) -> None:
        if connection.channel.flush():
            connection.last_progress = self.monotonic()
        self._check(connection)

    def _check(self, connection: Connection[Requester]) -> None:
        """Watch the connection for what it may do next: reading while its unsent answers are
        within bounds, writing while any wait."""
        channel = connection.channel
        if channel.closed:
            self._drop(channel)
            return
        events = 0
        if channel.unsent <= self.limits.max_unsent:
            events |= selectors.EVENT_READ
        if channel.pending:
            events |= selectors.EVENT_WRITE
        self._register(channel, events)

    def _register(self, channel: framing.Channel, events: int) -> None:
        assert self.selector is not None
        key = self.selector.get_map().get(channel.fileno())
        if key is not None and key.fileobj is not channel:
            self.selector.unregister(key.fileobj)  # a closed one whose number was reused
            key = None
        if key is None:
            self.selector.register(channel, events, self.data)
        elif key.events != events:
            self.selector.modify(channel, events, self.data)

    def _sweep(self, now: float) -> None:
        """Close connections whose peer neither sent nor took anything for a while."""
        timeout = self.limits.client_timeout
        for connection in list(self.connections.values()):
            if connection.channel.closed:
                self._drop(connection.channel)
            elif now - connection.last_progress > timeout:
                what = "did not read its answers" if connection.channel.pending else "was idle"
                self.throttled.warning(
                    f"timeout {connection.user}",
                    "closing a connection of uid %d: it %s for %.0f s (%s)",
                    connection.user,
                    what,
                    timeout,
                    self.limits.knob("client_timeout", self.prefix),
                )
                self._drop(connection.channel)

    def _drop(self, channel: framing.Channel) -> None:
        connection = self.connections.pop(channel, None)
        if connection is not None:
            self.unread_total -= connection.counted_unread
            left = self.per_user.get(connection.user, 1) - 1
            if left > 0:
                self.per_user[connection.user] = left
            else:
                self.per_user.pop(connection.user, None)
        if self.selector is not None:
            key = self.selector.get_map().get(channel.fileno())
            if key is not None and key.fileobj is channel:
                self.selector.unregister(channel)
        channel.close()
