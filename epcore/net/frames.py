"""CEDAR's framing over TCP: messages cut into packets, each behind a 5-byte header.

A packet is one byte saying whether it ends its message (1) or not (0), the length of its
body as a 4-byte big-endian integer, then the body. A message is the bodies of its packets
up to and including the one that ends it; an empty message is one empty packet ending it.
HTCondor refuses a packet longer than :data:`MAX_PACKET` and any other end byte, and so does
:class:`Framer`, which also bounds a whole message (``max_message``) so that a peer cannot
make the daemon hold more than that for one message. Everything is sans-I/O: bytes in,
messages out, and messages in, bytes out.

After the key exchange a :class:`PacketProtection` (the crypto layer's AES-GCM) seals each
packet's body and opens each one received; the header then counts the sealed bytes. Until
protection begins, :class:`Transcript` hashes every packet each way (SHA-256 of the headers
and bodies, the first MiB), the digests HTCondor binds into the first sealed packet so that
nothing sent in the clear before can have been altered.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Final, Protocol

from epcore.errors import EpError

#: Bytes of a packet header: the end-of-message byte and the body's length.
HEADER_SIZE: Final = 5
#: The longest packet body HTCondor accepts (reli_sock.cpp refuses longer ones).
MAX_PACKET: Final = 1024 * 1024
#: The longest body epcore sends in one packet.
SEND_PACKET: Final = 64 * 1024
#: Transcript hashing stops after this many bytes each way, as HTCondor's does.
TRANSCRIPT_LIMIT: Final = 1024 * 1024
#: The longest message a Framer takes unless told otherwise.
DEFAULT_MAX_MESSAGE: Final = 16 * 1024 * 1024


class FrameError(EpError):
    """Bytes that are not CEDAR packets, or exceed a bound: the connection must end."""


class PacketProtection(Protocol):
    """Seals and opens packet bodies once the session's key is agreed (the seam of the
    crypto layer; see :mod:`epcore.net`)."""

    def sealed_size(self, size: int) -> int:
        """How long a body of ``size`` bytes is once sealed."""
        ...

    def seal(self, header: bytes, body: bytes | memoryview, transcript: Transcript) -> bytes:
        """``body`` sealed; ``header`` (already counting the sealed size) is authenticated
        with it."""
        ...

    def open(self, header: bytes, body: bytes, transcript: Transcript) -> bytes:
        """The plain body of a sealed packet; FrameError when it does not authenticate."""
        ...


class Transcript:
    """SHA-256 of the packets sent and received in the clear (module docstring)."""

    def __init__(self) -> None:
        self.sent = hashlib.sha256()
        self.received = hashlib.sha256()
        self.sent_bytes = 0
        self.received_bytes = 0

    def add_sent(self, header: bytes, body: bytes | memoryview) -> None:
        if self.sent_bytes < TRANSCRIPT_LIMIT:
            self.sent.update(header)
            self.sent.update(body)
        self.sent_bytes += len(body)

    def add_received(self, header: bytes, body: bytes) -> None:
        if self.received_bytes < TRANSCRIPT_LIMIT:
            self.received.update(header)
            self.received.update(body)
        self.received_bytes += len(body)


def header(end: bool, size: int) -> bytes:
    """A packet header: the end-of-message flag and the body's length."""
    return bytes((1 if end else 0,)) + size.to_bytes(4, "big")


class Framer:
    """One connection's framing both ways (module docstring). :meth:`feed` takes received
    bytes and returns the messages they complete; :meth:`frame` makes the bytes of one
    message to send. FrameError on a malformed packet or one beyond the bounds."""

    def __init__(self, max_message: int = DEFAULT_MAX_MESSAGE) -> None:
        self.max_message = max_message
        self.protection: PacketProtection | None = None
        self.transcript = Transcript()
        self._buffer = bytearray()
        self._message = bytearray()

    @property
    def pending(self) -> int:
        """Bytes received and held: a partial packet and the message it belongs to."""
        return len(self._buffer) + len(self._message)

    @property
    def mid_message(self) -> bool:
        """Whether bytes of an unfinished message are held (the peer stopped mid-way)."""
        return bool(self._buffer or self._message)

    def protect(self, protection: PacketProtection) -> None:
        """Seal and open every later packet with ``protection``."""
        self.protection = protection

    def receive(self, data: bytes) -> None:
        """Hold received bytes until :meth:`next_message` takes them (packets are opened
        only then, so that a protection turned on between two messages applies to the
        second). FrameError when more is held than one message may take."""
        self._buffer += data
        if len(self._buffer) > self.max_message + MAX_PACKET + HEADER_SIZE:
            raise FrameError(
                f"{len(self._buffer)} bytes sent ahead of the conversation; at most "
                f"{self.max_message} bytes may wait"
            )

    def next_message(self) -> bytes | None:
        """The next whole message held, or None until its last packet has come."""
        while len(self._buffer) >= HEADER_SIZE:
            head = bytes(self._buffer[:HEADER_SIZE])
            end, size = head[0], int.from_bytes(head[1:], "big")
            if end not in (0, 1):
                raise FrameError(f"unrecognized packet header {head.hex(' ')}: end byte {end}")
            if size > MAX_PACKET:
                raise FrameError(
                    f"packet of {size} bytes announced; the most a packet may hold is {MAX_PACKET}"
                )
            if len(self._message) + size > self.max_message + self._overhead(size):
                raise FrameError(
                    f"message longer than the {self.max_message} bytes allowed "
                    f"({len(self._message) + size} bytes so far)"
                )
            if len(self._buffer) < HEADER_SIZE + size:
                return None
            body = bytes(self._buffer[HEADER_SIZE : HEADER_SIZE + size])
            del self._buffer[: HEADER_SIZE + size]
            if self.protection is not None:
                body = self.protection.open(head, body, self.transcript)
            else:
                self.transcript.add_received(head, body)
            self._message += body
            if end:
                message = bytes(self._message)
                self._message.clear()
                return message
        return None

    def feed(self, data: bytes) -> list[bytes]:
        """Receive ``data`` and take every message it completes, in order."""
        self.receive(data)
        messages: list[bytes] = []
        while (message := self.next_message()) is not None:
            messages.append(message)
        return messages

    def _overhead(self, size: int) -> int:
        if self.protection is None:
            return 0
        return self.protection.sealed_size(size) - size

    def frame(self, message: bytes) -> bytes:
        """The packets of one whole message, the last one ending it."""
        return b"".join(self.packets(message))

    def packets(self, message: bytes) -> Iterator[bytes | memoryview]:
        """The buffers of one whole message's packets (headers and bodies), in order.

        Once protection is on, each packet is sealed only when the iterator reaches it, so
        that a listener can send the first ones while the rest of a long answer is sealed;
        the packets must then be taken, in order, before the next message is framed. In the
        clear they are made now (the transcript must count them before protection starts),
        as views of ``message``: nothing is copied."""
        view = memoryview(message)
        protection = self.protection
        if protection is not None:
            return self._sealed(view, protection)
        parts: list[bytes | memoryview] = []
        for body, end in _bodies(view):
            head = header(end, len(body))
            self.transcript.add_sent(head, body)
            parts += (head, body)
        return iter(parts)

    def _sealed(
        self, view: memoryview, protection: PacketProtection
    ) -> Iterator[bytes | memoryview]:
        for body, end in _bodies(view):
            head = header(end, protection.sealed_size(len(body)))
            yield head
            yield protection.seal(head, body, self.transcript)


def _bodies(view: memoryview) -> Iterator[tuple[memoryview, bool]]:
    """The bodies of a message's packets (an empty message is one empty packet), each with
    whether it ends the message."""
    offset = 0
    while True:
        body = view[offset : offset + SEND_PACKET]
        offset += len(body)
        end = offset >= len(view)
        yield body, end
        if end:
            return
