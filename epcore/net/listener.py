"""The process's one CEDAR port: a Service of the runtime's loop, for every role in it.

Each accepted connection gets a :class:`~epcore.net.frames.Framer` and a conversation
(:mod:`epcore.net.conversation`): the command's start (:class:`~epcore.net.handshake.
SecurityServer`), then the handler the command table names. The loop hands the listener
its ready sockets; the listener reads what is there without blocking, feeds whole messages
to the conversation one at a time, and sends what it yields as far as the peer takes it.
So a slow or hostile client costs its own connection only:

- a message longer than CEDAR_MAX_REQUEST_SIZE (16 MiB), a packet HTCondor would refuse,
  or bytes that are not packets end the connection;
- a connection that makes no progress (no byte either way) for CEDAR_CLIENT_TIMEOUT
  seconds, or that lasts beyond CEDAR_CONVERSATION_LIMIT seconds in all, is closed;
- beyond CEDAR_MAX_CONNECTIONS connections, new ones are accepted and closed at once;
- at most :data:`READ_PER_TURN` bytes are read from a connection per turn, and
  :data:`WRITE_PER_TURN` written.

An answer is sent as it is sealed: the listener seals a few packets, hands them to the kernel
in one ``sendmsg``, and goes on until the socket is full, so that a client reads (and
decrypts) the first packets of a 3 MB answer while the last ones are sealed, and nothing is
copied into one big buffer first. Accepted sockets set TCP_NODELAY as HTCondor's do: the
listener writes whole packets itself, and Nagle's wait for an ACK would only hold back
an answer's last packet.

Every refusal is logged with the peer's address and the reason (through
:class:`~epcore.runtime.connection_limits.ThrottledLog`: each kind of reason from each host
gets its line, and a flood of one kind costs a line per period, which counts the rest), and
the handshake's refusals also name who and which command.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import itertools
import logging
import os
import re
import selectors
import socket
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Final

import attrs

from epcore.config import Config
from epcore.errors import EpError
from epcore.net.commands import DC_AUTHENTICATE, DC_NOP, DC_SEC_QUERY, describe
from epcore.net.conversation import Receive, Refused, Send, Step, Stream, receive, what
from epcore.net.dispatch import CommandContext, CommandTable
from epcore.net.frames import Framer
from epcore.net.handshake import SecurityServer
from epcore.net.sinful import Sinful
from epcore.runtime.connection_limits import ConnectionLimits, ThrottledLog
from epcore.runtime.loop import LoopHandle, ReadyEvent

#: Bytes read at most from one connection per turn of the loop.
READ_PER_TURN: Final = 256 * 1024
#: Bytes written at most to one connection per turn (the rest on the next turns).
WRITE_PER_TURN: Final = 4 * 1024 * 1024
#: Bytes of packets handed to the kernel in one sendmsg (the rest are sealed after it).
SEND_BATCH: Final = 256 * 1024
#: Buffers in one sendmsg at most (well under every system's IOV_MAX).
_IOV_MAX: Final = 64
#: Connections accepted at most per turn (the rest wait in the kernel's backlog).
ACCEPTS_PER_TURN: Final = 64
#: The largest message a peer may send unless CEDAR_MAX_REQUEST_SIZE says otherwise.
MAX_MESSAGE: Final = 16 * 1024 * 1024
# Numbers, and the hex bytes a bad packet header is quoted by: random bytes must not make
# every connection a kind of its own.
_NUMBERS: Final = re.compile(r"\b[0-9a-f]{2}\b|\d+")
#: Seconds a whole connection may last unless CEDAR_CONVERSATION_LIMIT says otherwise.
CONVERSATION_LIMIT: Final = 300.0


@attrs.frozen
class ListenerLimits:
    """The listener's bounds (module docstring)."""

    max_message: int = MAX_MESSAGE
    max_connections: int = 512
    client_timeout: float = 20.0
    conversation_limit: float = CONVERSATION_LIMIT

    @classmethod
    def from_config(cls, config: Config) -> ListenerLimits:
        base = ConnectionLimits.from_config(config, "CEDAR")
        return cls(
            max_message=config.get_int("CEDAR_MAX_REQUEST_SIZE", MAX_MESSAGE, minimum=4096),
            max_connections=base.max_connections,
            client_timeout=config.get_float("CEDAR_CLIENT_TIMEOUT", 20.0, minimum=0.1),
            conversation_limit=config.get_float(
                "CEDAR_CONVERSATION_LIMIT", CONVERSATION_LIMIT, minimum=1.0
            ),
        )


def _kind(what: str, connection: _Connection, reason: str) -> str:
    """A refusal's kind for the throttled log: the peer's host and the reason with its
    numbers (and quoted bytes) left out, so that each different reason is logged, and a
    flood of one costs a line per period."""
    return f"{what} {connection.stream.peer[0]} {_NUMBERS.sub('N', reason)[:60]}"


class _Outbox:
    """What a connection has yet to send: buffers ready, and the packet iterators of the
    messages framed after them, taken in order as the socket takes what is ready."""

    def __init__(self) -> None:
        self.ready: collections.deque[bytes | memoryview] = collections.deque()
        self.ready_bytes = 0
        self.messages: collections.deque[Iterator[bytes | memoryview]] = collections.deque()

    def __bool__(self) -> bool:
        return bool(self.ready or self.messages)

    def add(self, packets: Iterator[bytes | memoryview]) -> None:
        self.messages.append(packets)

    def fill(self, wanted: int) -> None:
        """Take packets until ``wanted`` bytes are ready or none are left."""
        while self.ready_bytes < wanted and self.messages:
            buffer = next(self.messages[0], None)
            if buffer is None:
                self.messages.popleft()
            elif len(buffer):
                self.ready.append(buffer)
                self.ready_bytes += len(buffer)

    def batch(self) -> list[bytes | memoryview]:
        return list(itertools.islice(self.ready, _IOV_MAX))

    def sent(self, count: int) -> None:
        """Forget the first ``count`` bytes ready (the kernel took them)."""
        self.ready_bytes -= count
        while count:
            first = self.ready[0]
            if count < len(first):
                self.ready[0] = memoryview(first)[count:]
                return
            count -= len(first)
            self.ready.popleft()


@attrs.define(eq=False)
class _Connection:
    sock: socket.socket
    stream: Stream
    conversation: Generator[Step, bytes | None, None]
    started: float
    last_progress: float
    waiting: Step | None = None
    out: _Outbox = attrs.Factory(_Outbox)
    done: bool = False


class CedarListener:
    """Listens on ``host:port`` (port 0: any free one; :attr:`sinful` says which once open)
    and serves every command of ``table`` (module docstring)."""

    name = "cedar"

    def __init__(
        self,
        host: str,
        port: int,
        table: CommandTable,
        security: SecurityServer,
        *,
        config: Callable[[], Config],
        log: logging.Logger,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.host = host
        self.port = port
        self.table = table
        self.security = security
        self.current_config = config
        self.limits = ListenerLimits.from_config(config())
        self.log = log
        self.throttled = ThrottledLog(log, monotonic=monotonic)
        self.monotonic = monotonic
        self.sock: socket.socket | None = None
        self.selector: selectors.BaseSelector | None = None
        self.connections: dict[socket.socket, _Connection] = {}
        #: The connections with something left to send, by id (what flush looks at).
        self._unsent: dict[int, _Connection] = {}
        #: When tick next looks at the connections' time limits (none is due before).
        self._next_check = 0.0
        self.stopping = False

    @property
    def sinful(self) -> Sinful:
        """The address clients reach (the bound port once open)."""
        return Sinful(self.host, self.port)

    # -- the loop's calls -----------------------------------------------------------------

    def open(self, loop: LoopHandle) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            # HTCondor's SOCKET_LISTEN_BACKLOG (4096, reli_sock.cpp): a collector's thousands
            # of hosts connect in bursts, and a short queue drops their SYNs (seconds of
            # retries each) while the loop is busy.
            sock.listen(self.current_config().get_int("SOCKET_LISTEN_BACKLOG", 4096, minimum=1))
            sock.setblocking(False)
        except OSError as error:
            # The process's other work (its local socket, its jobs) goes on without the
            # network face; the reason is in the log for whoever cannot reach it.
            sock.close()
            self.log.error(
                "CEDAR: cannot listen on %s:%d: %s; HTCondor's clients cannot reach this process",
                self.host,
                self.port,
                error.strerror,
            )
            return
        self.sock = sock
        self.port = sock.getsockname()[1]
        self.selector = loop.selector
        loop.selector.register(sock, selectors.EVENT_READ, self)
        self.log.info("CEDAR: listening on %s", self.sinful)

    def ready(self, events: Sequence[ReadyEvent]) -> None:
        for fileobj, data in events:
            if data is not self:
                continue
            if fileobj is self.sock:
                self._accept()
            elif isinstance(fileobj, socket.socket) and fileobj in self.connections:
                self._service(self.connections[fileobj])

    def timeout(self) -> float:
        if not self.connections:
            return 60.0
        return max(0.0, self._next_check - self.monotonic())

    def tick(self) -> None:
        now = self.monotonic()
        if now < self._next_check:
            # Progress only moves a deadline later and an accepted connection's is noted
            # as it comes: no connection is due before the soonest the last look found (a
            # collector holds thousands, and the loop turns hundreds of times a second).
            return
        soonest = now + 60.0
        for connection in list(self.connections.values()):
            if now - connection.last_progress > self.limits.client_timeout:
                self._drop(
                    connection,
                    f"no progress for {self.limits.client_timeout:g} s while "
                    f"{self._state(connection)}",
                )
            elif now - connection.started > self.limits.conversation_limit:
                self._drop(
                    connection, f"the conversation lasted over {self.limits.conversation_limit:g} s"
                )
            else:
                soonest = min(
                    soonest,
                    connection.last_progress + self.limits.client_timeout,
                    connection.started + self.limits.conversation_limit,
                )
        self._next_check = soonest

    def flush(self) -> None:
        for key, connection in list(self._unsent.items()):
            if connection.sock in self.connections and connection.out:
                self._send(connection)
            if connection.sock not in self.connections or not connection.out:
                self._unsent.pop(key, None)

    def reconfig(self) -> None:
        self.limits = ListenerLimits.from_config(self.current_config())
        self._next_check = 0.0  # the time limits may be shorter now

    def shutdown(self, fast: bool) -> None:
        self.stopping = True
        if self.sock is not None and self.selector is not None:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(self.sock)
            self.sock.close()
            self.sock = None

    @property
    def finished(self) -> bool:
        return self.stopping

    def close(self) -> None:
        for connection in list(self.connections.values()):
            self._close(connection)
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def close_in_child(self) -> None:
        for sock in [self.sock, *self.connections]:
            if sock is not None:
                with contextlib.suppress(OSError):
                    os.close(sock.fileno())

    # -- connections ----------------------------------------------------------------------

    def _accept(self) -> None:
        assert self.sock is not None and self.selector is not None
        for _ in range(ACCEPTS_PER_TURN):
            try:
                sock, address = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:
                if error.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self.throttled.warning("accept", "CEDAR: cannot accept: %s", error.strerror)
                    return
                raise
            peer = (str(address[0]), int(address[1]))
            if len(self.connections) >= self.limits.max_connections:
                self.throttled.warning(
                    "cap",
                    "CEDAR: refused a connection from <%s:%d>: %d connections already "
                    "(CEDAR_MAX_CONNECTIONS)",
                    *peer,
                    len(self.connections),
                )
                sock.close()
                continue
            sock.setblocking(False)
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            local = sock.getsockname()
            stream = Stream(Framer(self.limits.max_message), (str(local[0]), int(local[1])), peer)
            now = self.monotonic()
            connection = _Connection(sock, stream, self._serve(stream), now, now)
            self.connections[sock] = connection
            self._next_check = min(self._next_check, now + self.limits.client_timeout)
            self.selector.register(sock, selectors.EVENT_READ, self)
            self._advance(connection, first=True)

    def _serve(self, stream: Stream) -> Generator[Step, bytes | None, None]:
        peer, first = yield from self.security.start(stream)
        if peer.command in (DC_AUTHENTICATE.number, DC_SEC_QUERY.number):
            return  # the start was the whole exchange (a session made, or a ping answered)
        handler = self.table.handler(peer.command)
        if handler is None:
            raise Refused(f"{describe(peer.command)}: no such command here")
        keep = yield from handler(CommandContext(stream, peer, first))
        while keep:
            # A stashed connection: more commands of the same session, each number sent
            # raw before its payload, until DC_NOP.
            reader = yield from receive(stream, "the next command")
            number = reader.get_int32("the next command number")
            if number == DC_NOP.number:
                return
            level = self.table.levels().get(number)
            handler = self.table.handler(number)
            if level is None or handler is None:
                raise Refused(f"{describe(number)}: no such command here")
            decision = self.security.authorize(level, peer.identity, stream.peer[0])
            if not decision.allowed:
                self.log.warning(
                    "refused %s from %s at %s: %s",
                    describe(number),
                    peer.name,
                    stream.peer_description,
                    decision.reason,
                )
                raise Refused(decision.reason, logged=True)
            peer = attrs.evolve(peer, command=number)
            keep = yield from handler(CommandContext(stream, peer, reader))

    def _service(self, connection: _Connection) -> None:
        if connection.out:
            self._send(connection)
        if connection.sock not in self.connections:
            return
        try:
            data = connection.sock.recv(READ_PER_TURN)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as error:
            self._drop(connection, f"receive failed: {error.strerror}")
            return
        if not data:
            if connection.done:
                self._close(connection)
            elif connection.stream.framer.mid_message:
                self._drop(
                    connection, f"the peer closed mid-message while {self._state(connection)}"
                )
            else:
                self._close(connection)  # a peer may hang up between messages
            return
        connection.last_progress = self.monotonic()
        if connection.done:
            return  # after the exchange, what the peer sends is not read
        try:
            connection.stream.framer.receive(data)
        except EpError as error:
            self._drop(connection, str(error))
            return
        if isinstance(connection.waiting, Receive):
            self._advance(connection)

    def _advance(self, connection: _Connection, *, first: bool = False) -> None:
        """Run the conversation until it waits for a message not yet here, or ends."""
        conversation = connection.conversation
        try:
            step = next(conversation) if first else None
            while True:
                if step is None or isinstance(step, Receive):
                    if step is not None:
                        connection.waiting = step
                    message = connection.stream.framer.next_message()
                    if message is None:
                        return
                    step = conversation.send(message)
                elif isinstance(step, Send):
                    connection.out.add(connection.stream.framer.packets(step.message))
                    self._unsent[id(connection)] = connection
                    step = conversation.send(None)
        except StopIteration:
            connection.done = True
            connection.waiting = None
        except Refused as refusal:
            if not refusal.logged:
                self.throttled.warning(
                    _kind("refused", connection, str(refusal)),
                    "CEDAR: ended the connection from %s: %s",
                    connection.stream.peer_description,
                    refusal,
                )
            connection.done = True
        except EpError as error:
            self._drop(connection, str(error))
            return
        except Exception:
            # A fault on one connection's data must not take the loop or the others down.
            self.log.exception(
                "CEDAR: the conversation with %s failed", connection.stream.peer_description
            )
            self._close(connection)
            return
        finally:
            if connection.sock in self.connections and connection.out:
                self._send(connection)
        if connection.done and not connection.out:
            self._close(connection)

    def _send(self, connection: _Connection) -> None:
        out = connection.out
        written = 0
        while written < WRITE_PER_TURN:
            try:
                out.fill(SEND_BATCH)
            except EpError as error:
                # Sealing failed (the packet counter ran out): the answer cannot go on.
                self._drop(connection, str(error))
                return
            batch = out.batch()
            if not batch:
                break
            try:
                sent = connection.sock.sendmsg(batch)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as error:
                self._drop(connection, f"send failed: {error.strerror}")
                return
            out.sent(sent)
            written += sent
            connection.last_progress = self.monotonic()
            if sent < sum(len(buffer) for buffer in batch):
                break  # the socket is full: on when it can take more
        assert self.selector is not None
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if connection.out else 0)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.modify(connection.sock, events, self)
        if connection.done and not connection.out:
            self._close(connection)

    def _state(self, connection: _Connection) -> str:
        if connection.waiting is not None:
            return f"waiting for {what(connection.waiting)}"
        return "sending" if connection.out else "idle"

    def _drop(self, connection: _Connection, reason: str) -> None:
        self.throttled.warning(
            _kind("dropped", connection, reason),
            "CEDAR: closed the connection from %s: %s",
            connection.stream.peer_description,
            reason,
        )
        self._close(connection)

    def _close(self, connection: _Connection) -> None:
        self.connections.pop(connection.sock, None)
        if self.selector is not None:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(connection.sock)
        connection.conversation.close()
        connection.sock.close()
