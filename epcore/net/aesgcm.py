"""AES-256-GCM protection of CEDAR packets, laid out byte for byte as HTCondor's ReliSock does.

A CEDAR packet is a 5-byte header (one byte: 1 at the end of a message, else 0; four bytes:
the body's length, big-endian) and its body. Once encryption is on, every body is sealed::

    first packet each way:  IV (16) || ciphertext || tag (16)
    every later packet:             ciphertext || tag (16)

and the header's length counts those bytes. The IV is drawn at random per connection and
direction and sent once; packet ``n`` (from 0) is sealed with that IV whose first four bytes,
read as a big-endian number, have ``n`` added (mod 2**32). The additional authenticated data is
the packet's header; for the first packet each way it is preceded by two SHA-256 digests of the
cleartext that crossed the connection before encryption began (header and body of every packet,
up to the first MiB): the sender puts the digest of what it sent first and of what it received
second, so both ends must have seen the same handshake, byte for byte, or the first packet
fails. A direction with no cleartext contributes 32 zero bytes.

Because the nonce follows the packet count, a packet replayed, dropped, reordered or moved to
another connection fails authentication; a failed packet leaves the counters as they were and
the connection must be closed. Sans-I/O: the caller reads and writes the bytes.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from epcore.errors import EpError

HEADER_SIZE = 5
IV_SIZE = 16
TAG_SIZE = 16
DIGEST_SIZE = 32
KEY_SIZE = 32
#: The packet count at which HTCondor stops rather than reuse a nonce.
MAX_PACKETS = 0xFFFFFFFF
#: Cleartext past this many bytes each way is left out of the handshake digests.
DIGEST_LIMIT = 1024 * 1024
_ZERO_DIGEST = bytes(DIGEST_SIZE)


class AesGcmError(EpError):
    """A packet that cannot be sealed or opened: tampered, replayed, reordered, or malformed."""


def packet_header(end: bool, length: int) -> bytes:
    """The 5-byte CEDAR packet header: end-of-message flag and body length."""
    if not 0 <= length < 2**31:
        raise AesGcmError(f"packet length {length} does not fit a CEDAR header")
    return bytes((1 if end else 0,)) + length.to_bytes(4, "big")


def nonce(iv: bytes, count: int) -> bytes:
    """The IV of packet ``count``: the first four bytes of ``iv`` plus ``count``, mod 2**32."""
    base = int.from_bytes(iv[:4], "big")
    return ((base + count) % 2**32).to_bytes(4, "big") + iv[4:IV_SIZE]


class Transcript:
    """SHA-256 of the cleartext packets each way, kept until encryption starts."""

    def __init__(self) -> None:
        self._sent: hashlib._Hash | None = None
        self._received: hashlib._Hash | None = None
        self._bytes_sent = 0
        self._bytes_received = 0

    def sent(self, packet: bytes) -> None:
        """Count a cleartext packet (header and body, as written) this side sent."""
        if self._bytes_sent < DIGEST_LIMIT:
            self._sent = self._sent or hashlib.sha256()
            self._sent.update(packet)
        self._bytes_sent += len(packet)

    def received(self, packet: bytes) -> None:
        """Count a cleartext packet (header and body, as read) this side received."""
        if self._bytes_received < DIGEST_LIMIT:
            self._received = self._received or hashlib.sha256()
            self._received.update(packet)
        self._bytes_received += len(packet)

    def digests(self) -> tuple[bytes, bytes]:
        """(what this side sent, what it received); zeros for a direction with nothing."""
        sent = self._sent.digest() if self._sent else _ZERO_DIGEST
        received = self._received.digest() if self._received else _ZERO_DIGEST
        return sent, received


class AesGcmStream:
    """Both directions of one connection's AES-GCM state: seal outgoing bodies, open incoming.

    ``digests`` are the transcript's (sent, received) at the moment encryption starts; ``iv``
    is this side's outgoing IV (random unless a test pins it).
    """

    def __init__(
        self, key: bytes, digests: tuple[bytes, bytes] = (b"", b""), iv: bytes | None = None
    ) -> None:
        if len(key) != KEY_SIZE:
            raise AesGcmError(f"an AES-GCM key is {KEY_SIZE} bytes, not {len(key)}")
        sent, received = (d or _ZERO_DIGEST for d in digests)
        if len(sent) != DIGEST_SIZE or len(received) != DIGEST_SIZE:
            raise AesGcmError("handshake digests are SHA-256 digests")
        self._cipher = AESGCM(key)
        self._sent_digest = sent
        self._received_digest = received
        self._iv_out = iv if iv is not None else secrets.token_bytes(IV_SIZE)
        if len(self._iv_out) != IV_SIZE:
            raise AesGcmError(f"the IV is {IV_SIZE} bytes")
        self._iv_in: bytes | None = None
        self.packets_sealed = 0
        self.packets_opened = 0

    def sealed_size(self, plaintext_size: int) -> int:
        """The body length a plaintext of this size will have once sealed (next packet)."""
        return plaintext_size + TAG_SIZE + (IV_SIZE if self.packets_sealed == 0 else 0)

    def seal(self, plaintext: bytes, *, end: bool) -> bytes:
        """The next outgoing packet (header and sealed body) carrying ``plaintext``."""
        header = packet_header(end, self.sealed_size(len(plaintext)))
        return header + self.seal_body(header, plaintext)

    def seal_body(self, header: bytes, plaintext: bytes | memoryview) -> bytes:
        """The sealed body of the next outgoing packet, whose ``header`` (made by the caller,
        counting :meth:`sealed_size` bytes) is authenticated with it."""
        if self.packets_sealed >= MAX_PACKETS:
            raise AesGcmError("hit the maximum number of packets per connection")
        if len(header) != HEADER_SIZE:
            raise AesGcmError(f"a packet header is {HEADER_SIZE} bytes")
        first = self.packets_sealed == 0
        aad = self._sent_digest + self._received_digest + header if first else header
        body = self._cipher.encrypt(nonce(self._iv_out, self.packets_sealed), plaintext, aad)
        self.packets_sealed += 1
        return (self._iv_out if first else b"") + body

    def open(self, header: bytes, body: bytes) -> bytes:
        """The plaintext of an incoming packet; AesGcmError (state unchanged) when it is not
        the next packet this connection's peer sealed."""
        if len(header) != HEADER_SIZE:
            raise AesGcmError(f"a packet header is {HEADER_SIZE} bytes")
        if int.from_bytes(header[1:], "big") != len(body):
            raise AesGcmError("the packet's length does not match its header")
        if self.packets_opened >= MAX_PACKETS:
            raise AesGcmError("hit the maximum number of packets per connection")
        first = self.packets_opened == 0
        if len(body) < TAG_SIZE + (IV_SIZE if first else 0):
            raise AesGcmError(f"encrypted packet of {len(body)} bytes is too small")
        iv_in = body[:IV_SIZE] if first or self._iv_in is None else self._iv_in
        sealed = body[IV_SIZE:] if first else body
        # The peer's view is the mirror of ours: what it sent is what we received.
        aad = self._received_digest + self._sent_digest + header if first else header
        try:
            plaintext = self._cipher.decrypt(nonce(iv_in, self.packets_opened), sealed, aad)
        except InvalidTag as error:
            raise AesGcmError(
                f"packet {self.packets_opened} failed authentication"
                " (tampered, replayed, out of order, or a different handshake)"
            ) from error
        self._iv_in = iv_in
        self.packets_opened += 1
        return plaintext


class HandshakeTranscript(Protocol):
    """What the framing keeps of the cleartext each way (SHA-256 so far, and byte counts)."""

    @property
    def sent(self) -> _Digest: ...
    @property
    def received(self) -> _Digest: ...
    @property
    def sent_bytes(self) -> int: ...
    @property
    def received_bytes(self) -> int: ...


class _Digest(Protocol):
    def digest(self) -> bytes: ...


class AesGcmProtection:
    """An :class:`AesGcmStream` behind the framing's packet-protection seam: the framer makes
    the headers, and hands its cleartext transcript over with every packet. The digests are
    taken at the first sealed or opened packet, as ReliSock finalizes them then."""

    def __init__(self, key: bytes, iv: bytes | None = None) -> None:
        if len(key) != KEY_SIZE:
            raise AesGcmError(f"an AES-GCM key is {KEY_SIZE} bytes, not {len(key)}")
        self._key = key
        self._iv = iv
        self._stream: AesGcmStream | None = None

    def _of(self, transcript: HandshakeTranscript) -> AesGcmStream:
        if self._stream is None:
            # A direction nothing crossed in the clear counts as zeros, as in HTCondor.
            sent = transcript.sent.digest() if transcript.sent_bytes else b""
            received = transcript.received.digest() if transcript.received_bytes else b""
            self._stream = AesGcmStream(self._key, (sent, received), self._iv)
        return self._stream

    def sealed_size(self, size: int) -> int:
        first = self._stream is None or self._stream.packets_sealed == 0
        return size + TAG_SIZE + (IV_SIZE if first else 0)

    def seal(
        self, header: bytes, body: bytes | memoryview, transcript: HandshakeTranscript
    ) -> bytes:
        return self._of(transcript).seal_body(header, body)

    def open(self, header: bytes, body: bytes, transcript: HandshakeTranscript) -> bytes:
        return self._of(transcript).open(header, body)
