"""AES-GCM packets as ReliSock lays them out: IV once, counter nonces, handshake digests in the
first packet's AAD; tampered, replayed, reordered and foreign packets refused."""

from __future__ import annotations

import hashlib

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given
from hypothesis import strategies as st

from epcore.net import aesgcm
from epcore.net.aesgcm import AesGcmError, AesGcmStream, Transcript

KEY = bytes(range(32))
IV = bytes(range(16))


def _split(packet: bytes) -> tuple[bytes, bytes]:
    return packet[:5], packet[5:]


def _pair(
    client_digests: tuple[bytes, bytes] = (b"", b""),
    server_digests: tuple[bytes, bytes] = (b"", b""),
) -> tuple[AesGcmStream, AesGcmStream]:
    return AesGcmStream(KEY, client_digests, IV), AesGcmStream(KEY, server_digests, IV[::-1])


def test_the_first_packet_is_header_iv_ciphertext_tag_with_the_digests_in_the_aad() -> None:
    """Packet 0: header 01 00000025, the IV, then AES-GCM(key, IV, AAD = sent digest ||
    received digest || header); built here by hand from ReliSock's layout."""
    sent, received = hashlib.sha256(b"out").digest(), hashlib.sha256(b"in").digest()
    stream = AesGcmStream(KEY, (sent, received), IV)
    packet = stream.seal(b"hello", end=True)
    header = bytes.fromhex("0100000025")
    assert packet[:5] == header
    assert packet[5:21] == IV
    assert packet[21:] == AESGCM(KEY).encrypt(IV, b"hello", sent + received + header)


def test_later_packets_carry_no_iv_and_count_in_its_first_four_bytes() -> None:
    """Packet n uses the IV with n added to its first four bytes (big-endian, wrapping) and
    only the header as AAD; a packet that is not the end of a message has flag 0."""
    iv = bytes.fromhex("fffffffe") + IV[4:]
    stream = AesGcmStream(KEY, (b"", b""), iv)
    stream.seal(b"zero", end=True)
    one = stream.seal(b"one", end=False)
    two = stream.seal(b"two", end=True)
    assert one[:5] == bytes.fromhex("0000000013")  # 3 + 16, no IV
    assert one[5:] == AESGCM(KEY).encrypt(bytes.fromhex("ffffffff") + IV[4:], b"one", one[:5])
    assert two[5:] == AESGCM(KEY).encrypt(bytes.fromhex("00000000") + IV[4:], b"two", two[:5])


def test_a_pinned_first_packet_stays_the_same() -> None:
    """Known answer for key 00..1f, IV 00..0f, no cleartext before, plaintext "hello": header,
    IV, 5 bytes of ciphertext, 16 of tag."""
    packet = AesGcmStream(KEY, (b"", b""), IV).seal(b"hello", end=True)
    assert packet.hex() == (
        "0100000025000102030405060708090a0b0c0d0e0f0f09cc1a56b4745fdbf455a3db8d3ac2ad714dbfa0"
    )


def test_the_two_ends_exchange_messages_both_ways() -> None:
    """Each side opens what the other sealed, in order, for many packets."""
    client, server = _pair()
    for n in range(5):
        assert server.open(*_split(client.seal(b"ping %d" % n, end=True))) == b"ping %d" % n
        assert client.open(*_split(server.seal(b"pong %d" % n, end=n % 2 == 0))) == b"pong %d" % n


def test_matching_transcripts_agree_and_a_different_handshake_fails() -> None:
    """The client's sent digest is the server's received one; one byte changed in the cleartext
    handshake (a man in the middle) makes the first encrypted packet fail."""
    client_log, server_log = Transcript(), Transcript()
    for packet in (b"\x01\x00\x00\x00\x04ping", b"\x01\x00\x00\x00\x02ad"):
        client_log.sent(packet)
        server_log.received(packet)
    server_log.sent(b"\x01\x00\x00\x00\x05reply")
    client_log.received(b"\x01\x00\x00\x00\x05reply")
    client, server = _pair(client_log.digests(), server_log.digests())
    assert server.open(*_split(client.seal(b"secret", end=True))) == b"secret"
    assert client.open(*_split(server.seal(b"answer", end=True))) == b"answer"

    altered = Transcript()
    altered.received(b"\x01\x00\x00\x00\x04pong")
    altered.received(b"\x01\x00\x00\x00\x02ad")
    altered.sent(b"\x01\x00\x00\x00\x05reply")
    client = AesGcmStream(KEY, client_log.digests(), IV)
    victim = AesGcmStream(KEY, altered.digests(), IV)
    with pytest.raises(AesGcmError, match="failed authentication"):
        victim.open(*_split(client.seal(b"secret", end=True)))


def test_a_transcript_with_nothing_one_way_gives_zeros() -> None:
    """No packet in a direction: that digest is 32 zero bytes, as ReliSock sends it."""
    log = Transcript()
    log.sent(b"x")
    assert log.digests() == (hashlib.sha256(b"x").digest(), bytes(32))


def test_a_transcript_stops_counting_after_a_mebibyte() -> None:
    """Cleartext past the first MiB each way is left out of the digest."""
    log = Transcript()
    log.sent(b"a" * aesgcm.DIGEST_LIMIT)
    log.sent(b"ignored")
    assert log.digests()[0] == hashlib.sha256(b"a" * aesgcm.DIGEST_LIMIT).digest()


@pytest.mark.parametrize("position", [0, 2, 4, 5, 12, 20, 21, 30, -1])
def test_a_tampered_packet_is_refused(position: int) -> None:
    """A bit flipped anywhere (header flag or length, IV, ciphertext, tag) is refused."""
    client, server = _pair()
    packet = bytearray(client.seal(b"confidential bytes", end=True))
    packet[position] ^= 0x01
    with pytest.raises(AesGcmError):
        server.open(*_split(bytes(packet)))


def test_replayed_and_reordered_packets_are_refused_without_harm() -> None:
    """Opening a packet twice, or packet 2 before 1, fails; the stream then still opens the
    right next packet, because a failure changes no counter."""
    client, server = _pair()
    packets = [_split(client.seal(b"m%d" % n, end=True)) for n in range(3)]
    assert server.open(*packets[0]) == b"m0"
    with pytest.raises(AesGcmError, match="packet 1 failed"):
        server.open(*packets[0])
    with pytest.raises(AesGcmError):
        server.open(*packets[2])
    assert server.open(*packets[1]) == b"m1"
    assert server.open(*packets[2]) == b"m2"


def test_a_packet_from_another_connection_is_refused() -> None:
    """Same key, another connection's IV: its packets do not open here."""
    client, server = _pair()
    other = AesGcmStream(KEY, (b"", b""), bytes(16))
    server.open(*_split(client.seal(b"first", end=True)))
    other.seal(b"first", end=True)
    with pytest.raises(AesGcmError):
        server.open(*_split(other.seal(b"second", end=True)))


@pytest.mark.parametrize(
    ("header", "body", "reason"),
    [
        (b"\x01\x00\x00", b"", "header is 5"),
        (b"\x01\x00\x00\x00\x09", b"short", "does not match"),
        (b"\x01\x00\x00\x00\x05", b"short", "too small"),
        (b"\x01\x00\x00\x00\x1f", bytes(31), "too small"),
    ],
)
def test_malformed_packets_are_refused(header: bytes, body: bytes, reason: str) -> None:
    """Short headers, lying lengths and bodies too small for IV and tag are refused."""
    with pytest.raises(AesGcmError, match=reason):
        AesGcmStream(KEY).open(header, body)


def test_a_wrong_size_key_or_iv_is_refused() -> None:
    """Only 32-byte keys and 16-byte IVs make a stream."""
    with pytest.raises(AesGcmError, match="32 bytes"):
        AesGcmStream(bytes(16))
    with pytest.raises(AesGcmError, match="16 bytes"):
        AesGcmStream(KEY, (b"", b""), bytes(12))


def test_the_packet_counter_stops_before_reusing_a_nonce() -> None:
    """At 2**32 - 1 packets the stream refuses to seal or open more."""
    stream = AesGcmStream(KEY)
    stream.packets_sealed = stream.packets_opened = aesgcm.MAX_PACKETS
    with pytest.raises(AesGcmError, match="maximum"):
        stream.seal(b"x", end=True)
    with pytest.raises(AesGcmError, match="maximum"):
        stream.open(b"\x01\x00\x00\x00\x20", bytes(32))


@given(
    st.lists(
        st.tuples(st.booleans(), st.binary(max_size=300), st.booleans()), min_size=1, max_size=12
    )
)
def test_any_conversation_round_trips(messages: list[tuple[bool, bytes, bool]]) -> None:
    """Any interleaving of packets either way opens to exactly what was sealed, and the body
    length in each header is the plaintext plus the tag (and the IV the first time)."""
    client, server = _pair()
    for from_client, data, end in messages:
        sender, receiver = (client, server) if from_client else (server, client)
        first = sender.packets_sealed == 0
        packet = sender.seal(data, end=end)
        assert packet[0] == (1 if end else 0)
        assert int.from_bytes(packet[1:5], "big") == len(data) + 16 + (16 if first else 0)
        assert receiver.open(*_split(packet)) == data


class _Log:
    """The framing's transcript as the protection sees it."""

    def __init__(self, sent: bytes = b"", received: bytes = b"") -> None:
        self.sent = hashlib.sha256(sent)
        self.received = hashlib.sha256(received)
        self.sent_bytes = len(sent)
        self.received_bytes = len(received)


def test_the_framing_seam_seals_under_its_headers_with_the_transcript_digests() -> None:
    """AesGcmProtection seals a body under the framer's header, binding the transcript as
    ReliSock does; the peer's protection, with the mirrored transcript, opens it."""
    client = aesgcm.AesGcmProtection(KEY, IV)
    server = aesgcm.AesGcmProtection(KEY)
    size = client.sealed_size(5)
    assert size == 5 + 16 + 16
    header = aesgcm.packet_header(True, size)
    body = client.seal(header, b"hello", _Log(b"request", b"answer"))
    aad = hashlib.sha256(b"request").digest() + hashlib.sha256(b"answer").digest() + header
    assert body == IV + AESGCM(KEY).encrypt(IV, b"hello", aad)
    assert client.sealed_size(5) == 5 + 16
    assert server.open(header, body, _Log(b"answer", b"request")) == b"hello"


def test_the_framing_seam_uses_zeros_for_a_silent_direction() -> None:
    """A transcript with no bytes one way contributes zeros, not the digest of nothing."""
    client = aesgcm.AesGcmProtection(KEY, IV)
    header = aesgcm.packet_header(True, client.sealed_size(1))
    body = client.seal(header, b"x", _Log(b"request", b""))
    aad = hashlib.sha256(b"request").digest() + bytes(32) + header
    assert body == IV + AESGCM(KEY).encrypt(IV, b"x", aad)


def test_the_framing_seam_refuses_a_packet_from_another_handshake() -> None:
    """Transcripts that differ (a byte changed in the clear) make the first packet fail."""
    client, server = aesgcm.AesGcmProtection(KEY), aesgcm.AesGcmProtection(KEY)
    header = aesgcm.packet_header(True, client.sealed_size(3))
    body = client.seal(header, b"abc", _Log(b"request", b"answer"))
    with pytest.raises(AesGcmError):
        server.open(header, body, _Log(b"answer", b"requesT"))


@given(st.binary(min_size=5, max_size=5), st.binary(max_size=200), st.booleans())
def test_random_packets_are_refused_and_leave_the_stream_usable(
    header: bytes, body: bytes, after_first: bool
) -> None:
    """A forged packet (any header, any body) never opens, and the stream still opens the
    peer's real next packet afterwards."""
    client, server = _pair()
    if after_first:
        server.open(*_split(client.seal(b"first", end=True)))
    with pytest.raises(AesGcmError):
        server.open(header, body)
    assert server.open(*_split(client.seal(b"next", end=True))) == b"next"
