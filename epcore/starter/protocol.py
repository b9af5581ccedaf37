"""What the startd and its starters say to each other: one ClassAd per line over a Unix socket.

Each message is a ClassAd in new syntax on one line, with ``Command`` naming it; the rest of
the ad is the message's payload in HTCondor's own attribute names (ExitCode, ImageSize...), so
a log of the traffic reads like HTCondor's. The starter is the client: it connects to the
startd's starter socket when it starts and again whenever the connection breaks (the startd was
restarted), says :data:`HELLO` with everything the startd needs to take it back, and keeps its
final :data:`FINISHED` message until the startd answers :data:`ACK`.

:class:`Channel` frames a non-blocking socket into messages for both sides.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator

from epcore.classad import ClassAd, ClassAdSyntaxError, parse_ad
from epcore.errors import EpError

# starter -> startd
HELLO = "Hello"
STARTED = "Started"
UPDATE = "Update"
FINISHED = "Finished"
# startd -> starter
SUSPEND = "Suspend"
CONTINUE = "Continue"
SOFT_KILL = "SoftKill"
HARD_KILL = "HardKill"
ACK = "Ack"

STARTER_COMMANDS = (HELLO, STARTED, UPDATE, FINISHED)
STARTD_COMMANDS = (SUSPEND, CONTINUE, SOFT_KILL, HARD_KILL, ACK)

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
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


class Channel:
    """A connected socket carrying messages: :meth:`send` queues, :meth:`flush` writes what the
    socket takes, :meth:`receive` reads what arrived. Closed when the peer goes away."""

    def __init__(self, sock: socket.socket, known: tuple[str, ...] | None) -> None:
        self.sock = sock
        self.sock.setblocking(False)
        # Kept after close, so that a selector can still unregister a closed channel.
        self._fd = sock.fileno()
        self._known = known
        self._inbox = b""
        self._outbox = b""
        self.closed = False

    def fileno(self) -> int:
        return self._fd

    def send(self, ad: ClassAd) -> None:
        """Queue ``ad`` and write as much as the socket takes now."""
        self._outbox += encode(ad)
        self.flush()

    @property
    def pending(self) -> bool:
        """True while queued bytes wait for the socket."""
        return bool(self._outbox)

    def flush(self) -> None:
        while self._outbox and not self.closed:
            try:
                sent = self.sock.send(self._outbox)
            except BlockingIOError:
                return
            except OSError:
                self.close()
                return
            self._outbox = self._outbox[sent:]

    def receive(self) -> Iterator[ClassAd]:
        """Every whole message that has arrived; a malformed one raises ProtocolError."""
        while not self.closed:
            try:
                chunk = self.sock.recv(65536)
            except BlockingIOError:
                break
            except OSError:
                self.close()
                break
            if not chunk:
                self.close()
                break
            self._inbox += chunk
            if len(self._inbox) > MAX_LINE and b"\n" not in self._inbox:
                self.close()
                raise ProtocolError(f"message longer than {MAX_LINE} bytes")
        while b"\n" in self._inbox:
            line, self._inbox = self._inbox.split(b"\n", 1)
            if line.strip():
                yield decode(line, self._known)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()
