"""Line framing: one ClassAd per line over a socket, for every channel between epcore's processes.

Each message is a ClassAd in new syntax on one line, with ``Command`` naming it; the rest of
the ad is the message's payload. :class:`Channel` frames a non-blocking socket into messages
(bounded lines, a queue of what the socket has not taken yet); :func:`read_line` reads one
from a blocking socket; :func:`socket_address` makes a long Unix socket path usable. The
vocabularies (the starter's, the control sockets') live with their owners.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections import deque
from collections.abc import Iterator

from epcore.classad import ClassAd, ClassAdSyntaxError, parse_ad
from epcore.errors import EpError

#: A message longer than this is refused: a job ad is a few KB, a runaway peer is not.
MAX_LINE = 4 * 1024 * 1024

#: AF_UNIX socket paths are limited to 107 bytes on Linux.
_MAX_SOCKET_PATH = 100


class ProtocolError(EpError):
    """A message that is not a one-line ClassAd with a known Command."""


def message(command: str, payload: ClassAd | None = None) -> ClassAd:
    """A message ad: ``payload``'s attributes (copied) with ``Command`` set."""
    ad = ClassAd()
    if payload is not None:
        for name in payload:
            ad[name] = payload.lookup(name)
    ad["Command"] = command
    return ad


def encode(ad: ClassAd) -> bytes:
    """One message as a line of bytes."""
    return str(ad).encode() + b"\n"


def decode(line: bytes, known: tuple[str, ...] | None) -> ClassAd:
    """The message on ``line`` (any Command when ``known`` is None); raises ProtocolError
    naming what is wrong with it."""
    try:
        ad = parse_ad(line.decode())
    except (UnicodeDecodeError, ClassAdSyntaxError) as error:
        raise ProtocolError(f"unreadable message {line[:80]!r}: {error}") from error
    command = ad.evaluate("Command")
    if known is not None and command not in known:
        raise ProtocolError(f"message with unknown Command {command!r}: {line[:80]!r}")
    return ad


@contextlib.contextmanager
def socket_address(path: str) -> Iterator[str]:
    """``path`` in a form AF_UNIX accepts, for a bind or connect inside the block: a long
    path goes through a /proc/self/fd link to its directory, open for the block only."""
    if len(path.encode()) <= _MAX_SOCKET_PATH:
        yield path
        return
    directory, name = os.path.split(path)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{name}"
    finally:
        os.close(fd)


def read_line(sock: socket.socket) -> bytes:
    """One message from a blocking socket: the bytes up to a newline, or up to the end when
    the peer closes first (empty when it sent nothing)."""
    chunks: list[bytes] = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return b"".join(chunks)


class Channel:
    """A connected socket carrying messages: :meth:`send` queues, :meth:`flush` writes what the
    socket takes, :meth:`receive` reads what arrived. Closed when the peer goes away.

    A server that must stay fair to many peers reads with :meth:`fill` (at most so many bytes
    at a time) and takes one message at a time with :meth:`next_message`. Input is kept in one
    buffer scanned once for newlines, output as a queue of the encoded messages: neither is
    copied again as more arrives or is queued. A line longer than ``max_line`` is refused
    (``limit_name`` names the limit in the message: a knob, say).
    """

    def __init__(
        self,
        sock: socket.socket,
        known: tuple[str, ...] | None,
        *,
        max_line: int = MAX_LINE,
        limit_name: str = "",
    ) -> None:
        self.sock = sock
        self.sock.setblocking(False)
        # Kept after close, so that a selector can still unregister a closed channel.
        self._fd = sock.fileno()
        self._known = known
        self.max_line = max_line
        self.limit_name = limit_name
        self._inbox = bytearray()
        # The first bytes of the inbox known to hold no newline: each byte is scanned once.
        self._scanned = 0
        self._outbox: deque[memoryview] = deque()
        self._outbox_size = 0
        self.closed = False

    def fileno(self) -> int:
        return self._fd

    def send(self, ad: ClassAd) -> None:
        """Queue ``ad`` and write as much as the socket takes now."""
        data = encode(ad)
        self._outbox.append(memoryview(data))
        self._outbox_size += len(data)
        self.flush()

    @property
    def pending(self) -> bool:
        """True while queued bytes wait for the socket."""
        return self._outbox_size > 0

    @property
    def unsent(self) -> int:
        """How many queued bytes wait for the socket."""
        return self._outbox_size

    @property
    def unread(self) -> int:
        """How many received bytes wait to be taken as messages."""
        return len(self._inbox)

    def flush(self) -> int:
        """Write what the socket takes now; how many bytes went."""
        written = 0
        while self._outbox and not self.closed:
            head = self._outbox[0]
            try:
                sent = self.sock.send(head)
            except BlockingIOError:
                break
            except OSError:
                self.close()
                break
            written += sent
            self._outbox_size -= sent
            if sent < len(head):
                self._outbox[0] = head[sent:]
                break
            self._outbox.popleft()
        return written

    def _too_long(self) -> ProtocolError:
        self._inbox.clear()
        self._scanned = 0
        limit = f" ({self.limit_name})" if self.limit_name else ""
        return ProtocolError(f"message longer than {self.max_line} bytes{limit}")

    def _newline(self) -> int:
        """Where the first newline of the inbox is (-1: none yet)."""
        found = self._inbox.find(b"\n", self._scanned)
        self._scanned = len(self._inbox) if found < 0 else found
        return found

    def fill(self, limit: int | None = None) -> int:
        """Read what has arrived (about ``limit`` bytes at most); how many bytes came. The
        channel closes when the peer has gone; a line longer than ``max_line`` raises
        ProtocolError (the channel stays open, so that the refusal can be sent)."""
        taken = 0
        while not self.closed and (limit is None or taken < limit):
            try:
                chunk = self.sock.recv(65536 if limit is None else min(65536, limit - taken))
            except BlockingIOError:
                break
            except OSError:
                self.close()
                break
            if not chunk:
                self.close()
                break
            taken += len(chunk)
            self._inbox += chunk
            found = self._newline()
            if found > self.max_line or (found < 0 and len(self._inbox) > self.max_line):
                raise self._too_long()
            if found >= 0 and limit is not None:
                break  # a whole message to take: the rest can wait for its turn
        return taken

    @property
    def has_message(self) -> bool:
        """True when a whole line waits in the inbox."""
        return self._newline() >= 0

    def next_message(self) -> ClassAd | None:
        """The next whole message received (None: none yet); ProtocolError for a malformed
        one or one longer than ``max_line``."""
        while True:
            found = self._newline()
            if found < 0:
                return None
            if found > self.max_line:
                raise self._too_long()
            line = bytes(self._inbox[:found])
            if found + 1 == len(self._inbox):
                self._inbox = bytearray()  # give back the memory of a long message
            else:
                del self._inbox[: found + 1]
            self._scanned = 0
            if line.strip():
                return decode(line, self._known)

    def receive(self) -> Iterator[ClassAd]:
        """Every whole message that has arrived; a malformed one raises ProtocolError."""
        try:
            self.fill()
        except ProtocolError:
            self.close()
            raise
        while (ad := self.next_message()) is not None:
            yield ad

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._outbox.clear()
            self._outbox_size = 0
            self.sock.close()
