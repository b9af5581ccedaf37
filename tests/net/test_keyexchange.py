"""The ECDH exchange of the security handshake: key encoding, session key derivation, refusals."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import given, settings
from hypothesis import strategies as st

from epcore.net import aesgcm, keyexchange
from epcore.net.keyexchange import KeyExchangeError

# Curve P-256 (FIPS 186-4, D.1.2.3), for computing the shared secret by hand below.
P = 2**256 - 2**224 + 2**192 + 2**96 - 1
A = P - 3
G = (
    0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
    0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5,
)


def _add(p1: tuple[int, int] | None, p2: tuple[int, int] | None) -> tuple[int, int] | None:
    if p1 is None:
        return p2
    if p2 is None:
        return p1
    if p1[0] == p2[0] and (p1[1] + p2[1]) % P == 0:
        return None
    if p1 == p2:
        slope = (3 * p1[0] * p1[0] + A) * pow(2 * p1[1], -1, P) % P
    else:
        slope = (p2[1] - p1[1]) * pow(p2[0] - p1[0], -1, P) % P
    x = (slope * slope - p1[0] - p2[0]) % P
    return x, (slope * (p1[0] - x) - p1[1]) % P


def _multiply(k: int, point: tuple[int, int]) -> tuple[int, int]:
    result: tuple[int, int] | None = None
    addend: tuple[int, int] | None = point
    while k:
        if k & 1:
            result = _add(result, addend)
        addend = _add(addend, addend)
        k >>= 1
    assert result is not None
    return result


def _hkdf(secret: bytes, salt: bytes, info: bytes) -> bytes:
    prk = hmac.new(salt, secret, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


def _pair(scalar: int) -> keyexchange.KeyPair:
    return keyexchange.from_private(ec.derive_private_key(scalar, ec.SECP256R1()))


def test_the_session_key_is_hkdf_of_the_x_coordinate_of_the_shared_point() -> None:
    """With pinned scalars, the key is HKDF-SHA256(x(a*b*G), "htcondor", "keygen"), computed
    here with plain integer arithmetic on the curve."""
    a, b = 0x1234567890ABCDEF, 0xFEDCBA0987654321
    client, server = _pair(a), _pair(b)
    x, y = _multiply(a, G)
    assert base64.b64decode(client.public_text) == b"\x04" + x.to_bytes(32, "big") + y.to_bytes(
        32, "big"
    )
    shared_x = _multiply(a * b, G)[0].to_bytes(32, "big")
    expected = _hkdf(shared_x, b"htcondor", b"keygen")
    assert keyexchange.session_key(client, server.public_text) == expected
    assert keyexchange.session_key(server, client.public_text) == expected


def test_a_public_key_is_the_uncompressed_point_in_base64() -> None:
    """The ad carries 65 bytes (04 || X || Y) as 88 base64 characters, one line."""
    text = keyexchange.generate().public_text
    assert len(text) == 88 and "\n" not in text
    assert base64.b64decode(text)[0] == 4


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=1, max_value=2**200), st.integers(min_value=1, max_value=2**200))
def test_both_sides_always_derive_the_same_key(a: int, b: int) -> None:
    """Any two key pairs agree on the 32-byte session key."""
    client, server = _pair(a), _pair(b)
    key = keyexchange.session_key(client, server.public_text)
    assert len(key) == 32
    assert key == keyexchange.session_key(server, client.public_text)


def test_a_compressed_point_is_accepted_too() -> None:
    """OpenSSL reads compressed points as well, so epcore does."""
    client, server = keyexchange.generate(), keyexchange.generate()
    point = base64.b64decode(server.public_text)
    compressed = bytes((2 + (point[64] & 1),)) + point[1:33]
    assert keyexchange.session_key(
        client, base64.b64encode(compressed).decode()
    ) == keyexchange.session_key(client, server.public_text)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("not base64!", "not base64"),
        ("", "not a point"),
        (base64.b64encode(b"\x04" + bytes(64)).decode(), "not a point"),
        (base64.b64encode(b"\x04" + b"\x01" * 64).decode(), "not a point"),
        (base64.b64encode(b"\x05" + bytes(32)).decode(), "not a point"),
        ("A" * 4000, "too long"),
    ],
    ids=["not base64", "empty", "zero point", "off the curve", "bad prefix", "huge"],
)
def test_a_bad_peer_key_is_refused(text: str, reason: str) -> None:
    """Whatever the peer puts in ECDHPublicKey, a bad key raises KeyExchangeError."""
    with pytest.raises(KeyExchangeError, match=reason):
        keyexchange.session_key(keyexchange.generate(), text)


def test_only_p256_keys_are_used() -> None:
    """A key of another curve cannot start an exchange."""
    with pytest.raises(KeyExchangeError, match="P-256"):
        keyexchange.from_private(ec.generate_private_key(ec.SECP384R1()))


def test_the_server_half_answers_with_its_key_and_makes_aes_gcm() -> None:
    """EcdhKeyExchange returns a P-256 key the client derives the same session key from, and
    makes AES-GCM protection when encryption or integrity is on, none otherwise."""
    client = keyexchange.generate()
    server_text, make = keyexchange.EcdhKeyExchange().start(client.public_text, "AES")
    key = keyexchange.session_key(client, server_text)
    assert make(False, False) is None
    protection = make(True, True)
    assert protection is not None and make(False, True) is not None
    mine = aesgcm.AesGcmProtection(key)
    header = aesgcm.packet_header(True, mine.sealed_size(2))
    log = _Log()
    assert protection.open(header, mine.seal(header, b"hi", log), log) == b"hi"


def test_the_server_half_refuses_other_crypto_methods_and_bad_keys() -> None:
    """BLOWFISH and 3DES are not offered; a client key that is no key is refused."""
    with pytest.raises(KeyExchangeError, match="BLOWFISH"):
        keyexchange.EcdhKeyExchange().start(keyexchange.generate().public_text, "BLOWFISH")
    with pytest.raises(KeyExchangeError):
        keyexchange.EcdhKeyExchange().start("garbage", "AES")


class _Log:
    """An empty transcript both ways."""

    sent = hashlib.sha256()
    received = hashlib.sha256()
    sent_bytes = 0
    received_bytes = 0


def test_the_client_half_agrees_with_the_server_half() -> None:
    """EcdhClientKeyExchange's key in the policy ad and the server's answer give both sides
    protections that open each other's packets; only AES is offered."""
    client = keyexchange.EcdhClientKeyExchange()
    server_text, server_make = keyexchange.EcdhKeyExchange().start(client.public_key(), "AES")
    client_make = client.finish(server_text, "AES")
    assert client_make(False, False) is None
    sealer, opener = client_make(True, True), server_make(True, True)
    assert sealer is not None and opener is not None
    header = aesgcm.packet_header(True, sealer.sealed_size(4))
    log = _Log()
    assert opener.open(header, sealer.seal(header, b"ping", log), log) == b"ping"
    with pytest.raises(KeyExchangeError, match="3DES"):
        client.finish(server_text, "3DES")
