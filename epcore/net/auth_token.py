"""The TOKEN (IDTOKENS) authentication method: HTCondor's AKEP2 exchange keyed by a token.

The client proves it holds a token's signature without sending it. Three messages, each one
CEDAR message (integers 8 bytes, strings NUL-terminated, byte fields raw after their length):

1. :class:`ClientHello`, client to server: status, len(a), a (the token's subject), the token's
   ``header.payload`` (never its signature), len(ra), ra (256 random bytes).
2. :class:`ServerReply`, server to client: status, len(a), a, len(b), b (the server's name),
   len(ra), ra, len(rb), rb (256 random bytes), len(hkt), hkt = HMAC-SHA1(K, "a b" NUL ra rb).
3. :class:`ClientProof`, client to server: status, len(a), a, len(rb), rb, len(hk),
   hk = HMAC-SHA1(K, a NUL rb).

K and K' come from the token's signature S: HKDF-SHA256(S, salt = SEED || header.payload,
info ``master ka`` / ``master kb``), 32 bytes each, where SEED is one of two fixed 256-byte
strings of HTCondor's protocol. The client has S from its token file; the server recomputes it
by signing ``header.payload`` with the key the header's ``kid`` names, after checking the claims
(expiry, revocation...). A forged or altered token gives the server another S, so the client's
hk does not match. Both sides then derive the method's own session key, HKDF-SHA256(rb, salt
``session key``, info ``htcondor``); the connection's AES key comes from the ECDH exchange.

A status is 0 (ok), -1 (error: the peer still answers, with empty fields) or 1 (abort). The
classes here are sans-I/O: they turn received records into the records to send and a result.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from typing import Protocol

import attrs

from epcore.errors import EpError
from epcore.net import tokens
from epcore.net.tokens import Token, TokenError, TokenSettings

OK = 0
ERROR = -1
ABORT = 1
#: Bytes of ra and rb (AUTH_PW_KEY_LEN).
NONCE_BYTES = 256
#: Longest name a peer may send (AUTH_PW_MAX_NAME_LEN) and longest HMAC (EVP_MAX_MD_SIZE).
MAX_NAME = 1024
MAX_MAC = 64
#: Longest ``header.payload`` accepted; real tokens are a few hundred bytes.
MAX_TOKEN = 64 * 1024
#: The name a server gives itself in the exchange (HTCondor's CONDOR_PASSWORD_FQU).
SERVER_NAME = "condor@password"

_SEED_KA = bytes.fromhex(
    "3e4a502047d5f4e5dc7c69bb5210cbb6167add8084f7dd9ef3ad2cca71d283dd"
    "114a4fbb7b1ee90adfa862c44304de5473a3172f735c2cbb6e775b5d40d39fac"
    "e873182523f9252b623be0d4b167a3a8040cacfee9ee3da02c0abbf4d9d8b11f"
    "89004c943923ce5d9508bb3f04bc66a3fa20a13a416c5e6f4e0d3187d45fc783"
    "35c5e485db2c5a3717970cc26e7b6b9d1965b47a67df77a31f22f08a6c0ba570"
    "97a21a9ca7c60424f72739ab5cb915a4185bd109828e35e42108ab851c08a3df"
    "fde0e3b06f3d3938cdad6df6ef9a6f6dc2cb74f0228512eb7a3d6823010684b0"
    "15c12ac3014c4f9f938e384dad1e3bd745ff8c141fd70b465ba8af5d1b98b4b1"
)
_SEED_KB = bytes.fromhex(
    "010026ad75dfc6c190a5a266b0d1b5d860f7cfa38467205501cd460d4a88d473"
    "fa52e0b3e9141e33c97d851eee2dd33632f3886768ef010ec8dfdd668ade92d5"
    "c34308bb243895d84ed785e27268cc5ee7560de49828fab766c2ad8c0b2c0afb"
    "435c382db5d2ff36a8aead5820470a9ad45d79856f5e2ece894bd2507929dcf2"
    "6f7d09f0028f1ac4d971f4820c5f54717e9dcdabeb215f61655dead4b72c3d3b"
    "5f66fa4b30b85888d62facd4129c1304919f69ad6d8c2c43d9ce5cdb31d45803"
    "52c7362b8d80b7ef1bba5d676660a944764502f91d1d3c54910c088bccb72b11"
    "948a5e1a1dcd04369c17d298804c216e7a2690b8c0e970363300d092df24fb8c"
)


class AuthTokenError(EpError):
    """The TOKEN exchange failed; the message says why (for the daemon's log)."""


class FieldWriter(Protocol):
    """What a message is written into (the CEDAR codec's writer)."""

    def put_int(self, value: int) -> object: ...
    def put_string(self, value: str) -> object: ...
    def put_bytes(self, value: bytes) -> object: ...


class FieldReader(Protocol):
    """What a message is read from (the CEDAR codec's reader)."""

    def get_int(self, what: str = ...) -> int: ...
    def get_string(self, what: str = ...) -> str: ...
    def get_bytes(self, size: int, what: str = ...) -> bytes: ...


def _length(reader: FieldReader, what: str, limit: int) -> int:
    size = reader.get_int(f"the length of {what}")
    if not 0 <= size <= limit:
        raise AuthTokenError(f"{what}: length {size} is out of range")
    return size


def _name(reader: FieldReader, what: str) -> str:
    """A length then a string; the length must be the string's (HTCondor checks it too)."""
    size = _length(reader, what, MAX_NAME)
    name = reader.get_string(what)
    if len(name) > MAX_NAME:
        raise AuthTokenError(f"{what} is longer than {MAX_NAME} bytes")
    if size != len(name.encode()):
        raise AuthTokenError(f"{what}: announced {size} bytes, sent {len(name.encode())}")
    return name


def _blob(reader: FieldReader, what: str, limit: int) -> bytes:
    return reader.get_bytes(_length(reader, what, limit), what)


@attrs.frozen
class ClientHello:
    """Message 1 (client_send_one)."""

    status: int
    name: str
    token: str
    ra: bytes

    def write(self, writer: FieldWriter) -> None:
        writer.put_int(self.status)
        writer.put_int(len(self.name.encode()))
        writer.put_string(self.name)
        writer.put_string(self.token)
        writer.put_int(len(self.ra))
        writer.put_bytes(self.ra)

    @classmethod
    def read(cls, reader: FieldReader) -> ClientHello:
        status = reader.get_int("the client's status")
        name = _name(reader, "the client's name")
        token = reader.get_string("the token")
        if len(token) > MAX_TOKEN:
            raise AuthTokenError("the token is too long")
        return cls(status, name, token, _blob(reader, "ra", NONCE_BYTES))


@attrs.frozen
class ServerReply:
    """Message 2 (server_send)."""

    status: int
    client_name: str = ""
    server_name: str = ""
    ra: bytes = b""
    rb: bytes = b""
    hkt: bytes = b""

    def write(self, writer: FieldWriter) -> None:
        writer.put_int(self.status)
        writer.put_int(len(self.client_name.encode()))
        writer.put_string(self.client_name)
        writer.put_int(len(self.server_name.encode()))
        writer.put_string(self.server_name)
        for blob in (self.ra, self.rb, self.hkt):
            writer.put_int(len(blob))
            writer.put_bytes(blob)

    @classmethod
    def read(cls, reader: FieldReader) -> ServerReply:
        status = reader.get_int("the server's status")
        client_name = _name(reader, "the client's name")
        server_name = _name(reader, "the server's name")
        ra = _blob(reader, "ra", NONCE_BYTES)
        rb = _blob(reader, "rb", NONCE_BYTES)
        return cls(status, client_name, server_name, ra, rb, _blob(reader, "hkt", MAX_MAC))


@attrs.frozen
class ClientProof:
    """Message 3 (client_send_two)."""

    status: int
    name: str = ""
    rb: bytes = b""
    hk: bytes = b""

    def write(self, writer: FieldWriter) -> None:
        writer.put_int(self.status)
        writer.put_int(len(self.name.encode()))
        writer.put_string(self.name)
        for blob in (self.rb, self.hk):
            writer.put_int(len(blob))
            writer.put_bytes(blob)

    @classmethod
    def read(cls, reader: FieldReader) -> ClientProof:
        status = reader.get_int("the client's status")
        name = _name(reader, "the client's name")
        rb = _blob(reader, "rb", NONCE_BYTES)
        return cls(status, name, rb, _blob(reader, "hk", MAX_MAC))


# -- the keys --------------------------------------------------------------------------------


@attrs.frozen
class SharedKeys:
    """K and K' of the exchange, derived from a token's signature."""

    k: bytes = attrs.field(repr=False)
    k_prime: bytes = attrs.field(repr=False)


def shared_keys(signature: bytes, signed_part: str) -> SharedKeys:
    """K = HKDF(S, SEED_KA || header.payload, "master ka"), K' likewise with SEED_KB."""
    text = signed_part.encode()
    return SharedKeys(
        tokens.hkdf(signature, salt=_SEED_KA + text, info=b"master ka", length=32),
        tokens.hkdf(signature, salt=_SEED_KB + text, info=b"master kb", length=32),
    )


def hkt(keys: SharedKeys, client: str, server: str, ra: bytes, rb: bytes) -> bytes:
    """The server's proof: HMAC-SHA1(K, client " " server NUL ra rb)."""
    message = f"{client} {server}".encode() + b"\0" + ra + rb
    return hmac.new(keys.k, message, "sha1").digest()


def hk(keys: SharedKeys, client: str, rb: bytes) -> bytes:
    """The client's proof: HMAC-SHA1(K, client NUL rb)."""
    return hmac.new(keys.k, client.encode() + b"\0" + rb, "sha1").digest()


def session_key(rb: bytes) -> bytes:
    """The method's own session key: HKDF(rb, salt "session key", info "htcondor")."""
    return tokens.hkdf(rb, salt=b"session key", info=b"htcondor", length=32)


# -- the two sides ---------------------------------------------------------------------------


@attrs.frozen
class TokenIdentity:
    """Who the server authenticated, and what the token allows."""

    user: str
    domain: str | None
    token: Token
    session_key: bytes = attrs.field(repr=False)

    @property
    def authorizations(self) -> tuple[str, ...]:
        """The levels the token limits the connection to (LimitAuthorization); empty: none."""
        return self.token.authorizations

    @property
    def fully_qualified(self) -> str:
        return f"{self.user}@{self.domain}" if self.domain is not None else self.user


def _split_identity(name: str) -> tuple[str, str | None]:
    user, at, domain = name.rpartition("@")
    return (user, domain) if at else (name, None)


class TokenServer:
    """The server side: :meth:`hello` answers message 1, :meth:`proof` checks message 3.

    ``read_key`` maps a key id to the signing key (tokens.read_signing_key by default); ``now``
    is the time claims are checked against. A refusal raises AuthTokenError only from
    :meth:`proof`: after a bad hello the server still answers (status ERROR), as HTCondor does,
    and remembers why, so the client hears the failure and the daemon logs the reason.
    """

    def __init__(
        self,
        settings: TokenSettings,
        *,
        now: int,
        read_key: Callable[[str], bytes] | None = None,
        random_bytes: Callable[[int], bytes] = secrets.token_bytes,
        name: str = SERVER_NAME,
    ) -> None:
        self._settings = settings
        self._now = now
        self._read_key = read_key or (lambda kid: tokens.read_signing_key(settings, kid))
        self._random = random_bytes
        self._name = name
        self._failure: str | None = None
        self._hello: ClientHello | None = None
        self._reply: ServerReply | None = None
        self._keys: SharedKeys | None = None
        self._token: Token | None = None

    def _check(self, hello: ClientHello) -> tuple[Token, SharedKeys]:
        if hello.status != OK:
            raise AuthTokenError("the client reported an error before the exchange")
        if len(hello.ra) != NONCE_BYTES:
            raise AuthTokenError(f"bad length on ra: {len(hello.ra)}")
        if not hello.token:
            raise AuthTokenError("the client sent no token")
        try:
            token = tokens.decode_token(hello.token, signed=False)
            if not token.key_id:
                raise TokenError("the client's token has no key id (kid)")
            key = tokens.jwt_key(self._read_key(token.key_id))
            tokens.check_claims(
                token,
                now=self._now,
                revocation_expr=self._settings.revocation_expr,
                max_age=self._settings.max_age,
            )
            signature = tokens.sign(token.signed_part, key, token.algorithm)
        except TokenError as error:
            raise AuthTokenError(str(error)) from error
        return token, shared_keys(signature, token.signed_part)

    def hello(self, hello: ClientHello) -> ServerReply:
        """Message 2 for message 1 (status ERROR, empty fields, when the token is refused)."""
        if self._hello is not None:
            raise AuthTokenError("the exchange has already begun")
        self._hello = hello
        try:
            self._token, self._keys = self._check(hello)
        except AuthTokenError as error:
            self._failure = str(error)
            self._reply = ServerReply(ERROR)
            return self._reply
        rb = self._random(NONCE_BYTES)
        proof = hkt(self._keys, hello.name, self._name, hello.ra, rb)
        self._reply = ServerReply(OK, hello.name, self._name, hello.ra, rb, proof)
        return self._reply

    def proof(self, proof: ClientProof) -> TokenIdentity:
        """The authenticated identity for message 3, or AuthTokenError saying why not."""
        hello, reply, keys, token = self._hello, self._reply, self._keys, self._token
        if hello is None or reply is None:
            raise AuthTokenError("the client's proof came before its hello")
        if self._failure is not None:
            raise AuthTokenError(self._failure)
        if keys is None or token is None:
            raise AuthTokenError("the exchange has no keys")
        if proof.status != OK:
            # The client checks the server's hkt first: a token not signed by this server's
            # key (forged, altered, or another pool's) fails there.
            raise AuthTokenError(
                "the client refused the server's proof: its token does not match this"
                " server's signing key (forged, altered, or signed by another pool)"
            )
        if proof.name != hello.name or proof.rb != reply.rb:
            raise AuthTokenError("the client's proof does not match the exchange")
        if not hmac.compare_digest(proof.hk, hk(keys, hello.name, reply.rb)):
            raise AuthTokenError(
                "the client's proof does not match the token's signature"
                " (a forged or altered token, or another signing key)"
            )
        expected = token.subject or token.jti
        if hello.name != expected:
            raise AuthTokenError(f"client ID ({hello.name}) and token ({expected}) do not match")
        user, domain = _split_identity(expected)
        return TokenIdentity(user, domain, token, session_key(reply.rb))


@attrs.frozen
class ServerIdentity:
    """What a client learns: the server's name and the method's session key."""

    name: str
    session_key: bytes = attrs.field(repr=False)


class TokenClient:
    """The client side: :meth:`hello` makes message 1, :meth:`reply` answers message 2."""

    def __init__(
        self, token: Token, random_bytes: Callable[[int], bytes] = secrets.token_bytes
    ) -> None:
        if not token.signature:
            raise AuthTokenError("the client's token has no signature")
        self._token = token
        self._name = token.subject or token.jti
        self._ra = random_bytes(NONCE_BYTES)
        self._keys = shared_keys(token.signature, token.signed_part)

    def hello(self) -> ClientHello:
        return ClientHello(OK, self._name, self._token.signed_part, self._ra)

    def reply(self, reply: ServerReply) -> tuple[ClientProof, ServerIdentity | None]:
        """Message 3, and the server's identity when the server proved it knows the key (None:
        the proof sent reports an error and the exchange has failed)."""
        if reply.status != OK or len(reply.ra) != NONCE_BYTES or len(reply.rb) != NONCE_BYTES:
            return ClientProof(ERROR), None
        valid = (
            reply.client_name == self._name
            and reply.ra == self._ra
            and bool(reply.server_name)
            and hmac.compare_digest(
                reply.hkt, hkt(self._keys, self._name, reply.server_name, reply.ra, reply.rb)
            )
        )
        if not valid:
            return ClientProof(ERROR), None
        proof = ClientProof(OK, self._name, reply.rb, hk(self._keys, self._name, reply.rb))
        return proof, ServerIdentity(reply.server_name, session_key(reply.rb))
