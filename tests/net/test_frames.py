"""CEDAR framing: packets with a 5-byte header, messages ending at the end-of-message flag."""

from __future__ import annotations

import contextlib
import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.net.frames import MAX_PACKET, SEND_PACKET, FrameError, Framer, Transcript, header


def test_message_is_one_packet_with_the_end_flag() -> None:
    """A short message is sent as one packet: end byte 1, its length big-endian, its bytes."""
    assert Framer().frame(b"abc") == b"\x01\x00\x00\x00\x03abc"


def test_empty_message_is_one_empty_packet() -> None:
    """An empty message is a header alone, ending the message."""
    assert Framer().frame(b"") == b"\x01\x00\x00\x00\x00"


def test_long_message_spans_packets() -> None:
    """A message longer than SEND_PACKET is cut; only the last packet ends it."""
    data = bytes(range(256)) * (SEND_PACKET // 128)
    framed = Framer().frame(data)
    assert framed[0] == 0
    assert Framer().feed(framed) == [data]


def test_messages_complete_byte_by_byte() -> None:
    """Bytes fed one at a time complete each message exactly when its last byte arrives."""
    framer = Framer()
    stream = header(False, 2) + b"ab" + header(True, 1) + b"c" + header(True, 0)
    got: list[bytes] = []
    for index in range(len(stream)):
        got += framer.feed(stream[index : index + 1])
        if index == 12:
            assert got == [b"abc"]
    assert got == [b"abc", b""]
    assert not framer.mid_message


def test_partial_packet_is_held_and_reported() -> None:
    """A packet cut short is held (pending, mid_message) until the rest comes."""
    framer = Framer()
    assert framer.feed(header(True, 10) + b"12345") == []
    assert framer.mid_message
    assert framer.pending == 10


def test_bad_end_byte_is_refused() -> None:
    """A header whose first byte is neither 0 nor 1 is refused, naming the header."""
    with pytest.raises(FrameError, match="unrecognized packet header 47 45 54"):
        Framer().feed(b"GET / HTTP/1.1\r\n")


def test_oversized_packet_is_refused_from_its_header() -> None:
    """A packet announcing more than MAX_PACKET bytes is refused before any body arrives."""
    with pytest.raises(FrameError, match="the most a packet may hold"):
        Framer().feed(header(True, MAX_PACKET + 1))


def test_oversized_message_is_refused() -> None:
    """Packets adding up beyond max_message are refused, though each one is small."""
    framer = Framer(max_message=100)
    framer.feed(header(False, 60) + bytes(60))
    with pytest.raises(FrameError, match="longer than the 100 bytes"):
        framer.feed(header(False, 60))


def test_transcript_hashes_clear_packets_both_ways() -> None:
    """Every packet sent and received in the clear goes into the SHA-256 transcripts."""
    framer = Framer()
    sent = framer.frame(b"hello")
    framer.feed(header(True, 2) + b"ok")
    assert framer.transcript.sent.digest() == hashlib.sha256(sent).digest()
    assert framer.transcript.received.digest() == hashlib.sha256(header(True, 2) + b"ok").digest()


class _Xor:
    """A stand-in protection: XOR with a byte and a 1-byte tag, to exercise the seam."""

    def sealed_size(self, size: int) -> int:
        return size + 1

    def seal(self, head: bytes, body: bytes, transcript: Transcript) -> bytes:
        return bytes(b ^ 0x5A for b in body) + bytes((head[0],))

    def open(self, head: bytes, body: bytes, transcript: Transcript) -> bytes:
        if body[-1:] != bytes((head[0],)):
            raise FrameError("tag does not match")
        return bytes(b ^ 0x5A for b in body[:-1])


def test_protection_seals_and_opens_every_packet() -> None:
    """After protect(), packets carry sealed bodies, headers count them, the peer opens them."""
    sender, receiver = Framer(), Framer()
    sender.protect(_Xor())
    receiver.protect(_Xor())
    framed = sender.frame(b"secret")
    assert b"secret" not in framed
    assert framed[:5] == header(True, 7)
    assert receiver.feed(framed) == [b"secret"]
    with pytest.raises(FrameError, match="tag does not match"):
        receiver.feed(header(True, 2) + b"x\x00")


@given(st.lists(st.binary(max_size=3 * SEND_PACKET // 2), max_size=4), st.integers(1, 4096))
def test_frame_then_feed_round_trips_in_any_chunks(messages: list[bytes], chunk: int) -> None:
    """Any messages, framed and fed back in chunks of any size, come out whole and in order."""
    stream = b"".join(Framer().frame(message) for message in messages)
    framer = Framer()
    got: list[bytes] = []
    for start in range(0, len(stream), chunk):
        got += framer.feed(stream[start : start + chunk])
    assert got == messages
    assert framer.pending == 0


@given(st.binary(max_size=64))
def test_random_bytes_never_crash_the_framer(data: bytes) -> None:
    """Random bytes are messages, held, or a FrameError: never another exception."""
    with contextlib.suppress(FrameError):
        Framer(max_message=1000).feed(data)
