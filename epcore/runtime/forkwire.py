"""The fork server's wire: a message is a 4-byte length and a pickle, with descriptors passed
beside it (SCM_RIGHTS); see :mod:`epcore.runtime.forkserver` for who talks over it and why a
pickle is safe there."""

from __future__ import annotations

import os
import pickle
import select
import socket
import struct
import time
from collections.abc import Sequence

from epcore.errors import EpError

#: The most descriptors one message may carry.
MAX_FDS = 8
#: The largest message (a job ad and a machine ad are tens of kB; a configuration ~100 kB).
MAX_MESSAGE = 64 * 1024 * 1024
_HEADER = struct.Struct("!I")


class ForkServerError(EpError):
    """The fork server failed a request, or is gone."""


def encode(message: object) -> bytes:
    """``message`` as it goes on the wire: its length, then its pickle."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    if len(data) > MAX_MESSAGE:
        raise ForkServerError(f"a fork server message of {len(data)} bytes is too large")
    return _HEADER.pack(len(data)) + data


def send_message(sock: socket.socket, message: object, fds: Sequence[int] = ()) -> None:
    """Send ``message`` (pickled) and ``fds`` on ``sock`` (blocking)."""
    payload = memoryview(encode(message))
    sent = socket.send_fds(sock, [payload], list(fds)) if fds else sock.send(payload)
    while sent < len(payload):
        sent += sock.send(payload[sent:])


def _wait_readable(sock: socket.socket, deadline: float | None) -> None:
    """Return once ``sock`` has something to read (at once without ``deadline``, a
    ``time.monotonic()``); TimeoutError when the deadline passes first."""
    if deadline is None:
        return
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    while not poller.poll(max(deadline - time.monotonic(), 0.0) * 1000):
        if time.monotonic() >= deadline:
            raise TimeoutError("the fork server's socket stayed silent")


def _receive_exactly(sock: socket.socket, size: int, deadline: float | None) -> bytes | None:
    chunks = []
    while size:
        _wait_readable(sock, deadline)
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def receive_message(
    sock: socket.socket, deadline: float | None = None
) -> tuple[object, list[int]] | None:
    """The next message on the blocking ``sock`` and the descriptors that came with it; None
    at the end. With ``deadline`` (a ``time.monotonic()``), TimeoutError when a part of it
    has not come by then.

    The sender writes a whole message at once, so once its first byte is here the rest
    follows at once: a blocking read of the remainder does not wait on the sender's mood.
    """
    _wait_readable(sock, deadline)
    header, fds, _flags, _address = socket.recv_fds(sock, _HEADER.size, MAX_FDS)
    if not header:
        for fd in fds:
            os.close(fd)
        return None
    if len(header) < _HEADER.size:
        rest = _receive_exactly(sock, _HEADER.size - len(header), deadline)
        if rest is None:
            return None
        header += rest
    (size,) = _HEADER.unpack(header)
    if size > MAX_MESSAGE:
        raise ForkServerError(f"a fork server message claims {size} bytes")
    data = _receive_exactly(sock, size, deadline)
    if data is None:
        for fd in fds:
            os.close(fd)
        return None
    return pickle.loads(data), fds
