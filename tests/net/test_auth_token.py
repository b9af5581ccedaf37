"""The TOKEN method's AKEP2 exchange: message layouts, the keys, both sides, and refusals."""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.net import auth_token, tokens
from epcore.net.auth_token import (
    ERROR,
    OK,
    AuthTokenError,
    ClientHello,
    ClientProof,
    ServerReply,
    TokenClient,
    TokenServer,
)
from epcore.net.codec import CodecError, Reader
from epcore.net.token_method import CedarFields
from epcore.net.tokens import TokenSettings

NOW = 1_700_000_000
POOL_KEY = bytes(range(64)) * 2  # the POOL key as read: the file's bytes twice


class Wire:
    """CEDAR in the clear, as the method's messages travel: 8-byte big-endian integers,
    NUL-terminated strings, raw bytes."""

    def __init__(self, data: bytes = b"") -> None:
        self.data = bytearray(data)
        self.offset = 0

    def put_int(self, value: int) -> None:
        self.data += value.to_bytes(8, "big", signed=True)

    def put_string(self, value: str) -> None:
        self.data += value.encode() + b"\0"

    def put_bytes(self, value: bytes) -> None:
        self.data += value

    def _take(self, size: int) -> bytes:
        if self.offset + size > len(self.data):
            raise AuthTokenError("the message ends early")
        chunk = bytes(self.data[self.offset : self.offset + size])
        self.offset += size
        return chunk

    def get_int(self, what: str = "") -> int:
        return int.from_bytes(self._take(8), "big", signed=True)

    def get_string(self, what: str = "") -> str:
        end = self.data.index(b"\0", self.offset)
        return self._take(end - self.offset + 1)[:-1].decode()

    def get_bytes(self, size: int, what: str = "") -> bytes:
        return self._take(size)


def _through_wire(message: ClientHello | ServerReply | ClientProof) -> object:
    wire = Wire()
    message.write(wire)
    copy = type(message).read(Wire(bytes(wire.data)))
    return copy


def _settings(tmp_path: Path, **changes: object) -> TokenSettings:
    return attrs.evolve(
        TokenSettings(
            password_directory=str(tmp_path),
            pool_key_file=str(tmp_path / "POOL"),
            trust_domain="pool.example",
            system_token_directory=str(tmp_path / "tokens.d"),
        ),
        **changes,
    )


def _token(key: bytes = POOL_KEY, **claims: object) -> tokens.Token:
    options: dict[str, object] = {
        "key_id": "POOL",
        "issuer": "pool.example",
        "subject": "alice@pool.example",
        "now": NOW,
    }
    options.update(claims)
    return tokens.decode_token(tokens.create_token(key, **options))  # type: ignore[arg-type]


def _server(tmp_path: Path, **changes: object) -> TokenServer:
    keys = {"POOL": POOL_KEY}

    def read_key(kid: str) -> bytes:
        if kid not in keys:
            raise tokens.TokenError(f"cannot read {tmp_path / kid}: No such file or directory")
        return keys[kid]

    return TokenServer(_settings(tmp_path, **changes), now=NOW, read_key=read_key)


def _exchange(
    server: TokenServer, client: TokenClient
) -> tuple[auth_token.TokenIdentity, auth_token.ServerIdentity | None]:
    """Run the three messages through the wire encoding; the server's verdict last."""
    reply = _through_wire(server.hello(_through_wire(client.hello())))  # type: ignore[arg-type]
    proof, seen = client.reply(reply)  # type: ignore[arg-type]
    return server.proof(_through_wire(proof)), seen  # type: ignore[arg-type]


def test_a_good_token_authenticates_both_ways(tmp_path: Path) -> None:
    """The server learns alice@pool.example and the token's limits; the client learns the
    server's name; both hold the same method session key."""
    token = _token(authorizations=("READ", "WRITE"))
    identity, server_seen = _exchange(_server(tmp_path), TokenClient(token))
    assert (identity.user, identity.domain) == ("alice", "pool.example")
    assert identity.authorizations == ("READ", "WRITE")
    assert server_seen is not None and server_seen.name == "condor@password"
    assert identity.session_key == server_seen.session_key and len(identity.session_key) == 32


def test_the_hello_layout_is_status_name_token_and_ra() -> None:
    """Message 1 on the wire: 0, len(a), a NUL, header.payload NUL, 256, ra."""
    wire = Wire()
    ClientHello(OK, "a@b", "h.p", b"r" * 256).write(wire)
    expected = (0).to_bytes(8, "big") + (3).to_bytes(8, "big") + b"a@b\0" + b"h.p\0"
    assert bytes(wire.data) == expected + (256).to_bytes(8, "big") + b"r" * 256


def test_a_failed_reply_is_status_minus_one_and_empty_fields() -> None:
    """Message 2 after a refusal: -1, then zero lengths and empty strings, as HTCondor sends."""
    wire = Wire()
    ServerReply(ERROR).write(wire)
    zero = (0).to_bytes(8, "big")
    assert bytes(wire.data) == (-1).to_bytes(8, "big", signed=True) + zero + b"\0" + zero + (
        b"\0" + zero * 3
    )


def test_the_keys_and_proofs_are_derived_as_the_protocol_says() -> None:
    """K is HKDF-SHA256(signature, SEED_KA || header.payload, "master ka") (RFC 5869 by hand);
    hkt = HMAC-SHA1(K, "a b" NUL ra rb) and hk = HMAC-SHA1(K, a NUL rb)."""
    token = _token()
    keys = auth_token.shared_keys(token.signature, token.signed_part)
    salt = bytes.fromhex("3e4a502047d5f4e5") + auth_token._SEED_KA[8:] + token.signed_part.encode()
    prk = hmac.new(salt, token.signature, hashlib.sha256).digest()
    assert keys.k == hmac.new(prk, b"master ka\x01", hashlib.sha256).digest()
    assert auth_token._SEED_KB[:4] == bytes.fromhex("010026ad") and len(auth_token._SEED_KB) == 256
    ra, rb = b"a" * 256, b"b" * 256
    assert (
        auth_token.hkt(keys, "x@y", "srv", ra, rb)
        == hmac.new(keys.k, b"x@y srv\0" + ra + rb, hashlib.sha1).digest()
    )
    assert auth_token.hk(keys, "x@y", rb) == hmac.new(keys.k, b"x@y\0" + rb, hashlib.sha1).digest()


def _refused(server: TokenServer, client: TokenClient, reason: str) -> None:
    """The exchange fails at the server with ``reason``; the client got no server identity
    whenever the server had already refused at the hello."""
    with pytest.raises(AuthTokenError, match=reason):
        _exchange(server, client)


def test_a_token_signed_with_another_key_is_refused(tmp_path: Path) -> None:
    """The server's signature differs from the client's: the client refuses the server's hkt
    and the server logs why."""
    _refused(
        _server(tmp_path), TokenClient(_token(key=os.urandom(64))), "does not match this server"
    )


def test_an_altered_token_is_refused(tmp_path: Path) -> None:
    """The client keeps the signature but changes the subject: the keys differ, refused."""
    good = _token()
    forged = tokens.decode_token(
        tokens.create_token(b"x", key_id="POOL", issuer="pool.example", subject="root@pool.example",
                            now=NOW)
    )  # fmt: skip
    client = TokenClient(attrs.evolve(forged, signature=good.signature))
    _refused(_server(tmp_path), client, "does not match this server")


def test_an_expired_token_is_refused_at_the_hello(tmp_path: Path) -> None:
    """An expired token gets an ERROR reply; the client answers ERROR and the server says why."""
    server = _server(tmp_path)
    client = TokenClient(_token(now=NOW - 100, lifetime=10))
    reply = server.hello(client.hello())
    assert reply == ServerReply(ERROR)
    proof, seen = client.reply(reply)
    assert (proof, seen) == (ClientProof(ERROR), None)
    with pytest.raises(AuthTokenError, match="expired for 90 seconds"):
        server.proof(proof)


def test_a_revoked_token_is_refused(tmp_path: Path) -> None:
    """SEC_TOKEN_REVOCATION_EXPR naming the token's jti refuses it."""
    token = _token(jti="deadbeef")
    server = _server(tmp_path, revocation_expr='jti == "deadbeef"')
    _refused(server, TokenClient(token), "revoked")


def test_an_unknown_signing_key_is_refused(tmp_path: Path) -> None:
    """A kid the server has no key for is refused with the key's path in the reason."""
    _refused(_server(tmp_path), TokenClient(_token(key_id="OTHER")), "OTHER")


def test_a_client_claiming_another_name_is_refused(tmp_path: Path) -> None:
    """A valid token presented under another name (a in the hello) is refused."""
    server = _server(tmp_path)
    token = _token()
    keys = auth_token.shared_keys(token.signature, token.signed_part)
    ra = b"r" * 256
    reply = server.hello(ClientHello(OK, "root@pool.example", token.signed_part, ra))
    proof = ClientProof(OK, "root@pool.example", reply.rb, auth_token.hk(keys, "root@pool.example",
                                                                           reply.rb))  # fmt: skip
    with pytest.raises(AuthTokenError, match="do not match"):
        server.proof(proof)


def test_a_proof_replayed_into_a_new_exchange_is_refused(tmp_path: Path) -> None:
    """A recorded proof is bound to that exchange's rb: a second server refuses it."""
    client = TokenClient(_token())
    first = _server(tmp_path)
    proof, _ = client.reply(first.hello(client.hello()))
    first.proof(proof)
    second = _server(tmp_path)
    second.hello(client.hello())
    with pytest.raises(AuthTokenError, match="does not match the exchange"):
        second.proof(proof)


def test_a_server_that_cannot_prove_the_key_is_refused_by_the_client() -> None:
    """A reply with a wrong hkt, another ra, or a missing name makes the client answer ERROR."""
    token = _token()
    client = TokenClient(token)
    hello = client.hello()
    keys = auth_token.shared_keys(token.signature, hello.token)
    rb = b"b" * 256
    good = ServerReply(OK, hello.name, "srv", hello.ra, rb,
                       auth_token.hkt(keys, hello.name, "srv", hello.ra, rb))  # fmt: skip
    assert client.reply(good)[1] is not None
    for bad in (
        attrs.evolve(good, hkt=bytes(20)),
        attrs.evolve(good, ra=b"x" * 256),
        attrs.evolve(good, client_name="mallory"),
        attrs.evolve(good, server_name=""),
        attrs.evolve(good, rb=b"short"),
    ):
        assert client.reply(bad) == (ClientProof(ERROR), None)


def test_out_of_order_messages_are_refused(tmp_path: Path) -> None:
    """A proof before the hello, or a second hello, is refused."""
    server = _server(tmp_path)
    with pytest.raises(AuthTokenError, match="before its hello"):
        server.proof(ClientProof(OK))
    client = TokenClient(_token())
    server.hello(client.hello())
    with pytest.raises(AuthTokenError, match="already begun"):
        server.hello(client.hello())


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (Wire().data + (0).to_bytes(8, "big") + (2000).to_bytes(8, "big"), "out of range"),
        (bytearray((0).to_bytes(8, "big") + (5).to_bytes(8, "big") + b"ab\0"), "announced 5"),
        (
            bytearray((0).to_bytes(8, "big") + (1).to_bytes(8, "big") + b"a\0t\0")
            + (257).to_bytes(8, "big"),
            "ra: length 257",
        ),
        (bytearray((0).to_bytes(8, "big") + (1).to_bytes(8, "big") + b"a\0t\0"), "ends early"),
    ],
    ids=["absurd name length", "lying name length", "ra too long", "truncated"],
)
def test_malformed_hellos_are_refused(message: bytearray, reason: str) -> None:
    """Bad lengths and truncated messages raise AuthTokenError naming the field."""
    with pytest.raises(AuthTokenError, match=reason):
        ClientHello.read(Wire(bytes(message)))


def test_a_token_without_signature_cannot_start_a_client() -> None:
    """A client needs the signature (it is the secret)."""
    with pytest.raises(AuthTokenError, match="no signature"):
        TokenClient(attrs.evolve(_token(), signature=b""))


names = st.text(st.characters(blacklist_characters="\0", codec="utf-8"), max_size=50)
blobs = st.binary(max_size=256)


@given(
    st.one_of(
        st.builds(ClientHello, st.integers(-1, 1), names, names, blobs),
        st.builds(ServerReply, st.integers(-1, 1), names, names, blobs, blobs,
                  st.binary(max_size=64)),
        st.builds(ClientProof, st.integers(-1, 1), names, blobs, st.binary(max_size=64)),
    )
)  # fmt: skip
def test_every_message_round_trips_through_the_wire(
    message: ClientHello | ServerReply | ClientProof,
) -> None:
    """Any message written and read back is the same record."""
    assert _through_wire(message) == message


@given(st.binary(max_size=600), st.sampled_from([ClientHello, ServerReply, ClientProof]))
def test_any_bytes_read_as_a_message_or_a_refusal(
    data: bytes, kind: type[ClientHello | ServerReply | ClientProof]
) -> None:
    """Random bytes where a message belongs, read through the CEDAR codec, give that message
    or AuthTokenError / CodecError, nothing else."""
    try:
        message = kind.read(CedarFields(reader=Reader(data)))
    except (AuthTokenError, CodecError):
        return
    assert isinstance(message, kind)
