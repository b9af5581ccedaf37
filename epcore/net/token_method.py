"""TOKEN (IDTOKENS) in the DC_AUTHENTICATE handshake: the conversations that carry
:mod:`epcore.net.auth_token`'s three messages, and what a server announces for it.

The server's side reads the client's hello, answers, reads the proof and returns the
authenticated :class:`~epcore.net.methods.Identity` (with the token's scopes as its limits), or
None with the reason in the context's failures, which the handshake logs with the peer's
address. A malformed message ends the connection (the exchange is out of step). The client's
side finds its token for the server's TrustDomain and IssuerKeys (``ep status -pool``...).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from epcore.config import Config
from epcore.net import tokens
from epcore.net.auth_token import (
    ERROR,
    AuthTokenError,
    ClientHello,
    ClientProof,
    ServerReply,
    TokenClient,
    TokenServer,
)
from epcore.net.codec import CodecError, Reader, Writer
from epcore.net.conversation import Conversation, Refused, Stream, receive, send
from epcore.net.methods import Identity, MethodContext
from epcore.net.tokens import TokenSettings

_M = TypeVar("_M", ClientHello, ServerReply, ClientProof)


class CedarFields:
    """The codec's reader and writer under the names the messages use."""

    def __init__(self, writer: Writer | None = None, reader: Reader | None = None) -> None:
        self.writer = writer or Writer()
        self.reader = reader or Reader(b"")

    def put_int(self, value: int) -> object:
        return self.writer.put_int(value)

    def put_string(self, value: str) -> object:
        return self.writer.put_string(value)

    def put_bytes(self, value: bytes) -> object:
        return self.writer.put_bytes(value)

    def get_int(self, what: str = "an integer") -> int:
        return self.reader.get_int(what)

    def get_string(self, what: str = "a string") -> str:
        return self.reader.get_string(what)

    def get_bytes(self, size: int, what: str = "bytes") -> bytes:
        return self.reader.get_bytes(size, what)


def _send(stream: Stream, message: ClientHello | ServerReply | ClientProof) -> Conversation[None]:
    fields = CedarFields(stream.writer())
    message.write(fields)
    yield from send(fields.writer)


def _receive(stream: Stream, kind: type[_M], what: str) -> Conversation[_M]:
    reader = yield from receive(stream, what)
    try:
        message = kind.read(CedarFields(reader=reader))
        reader.expect_end(what)
    except (AuthTokenError, CodecError) as error:
        # A malformed message leaves the exchange out of step: the connection ends.
        raise Refused(f"TOKEN: {what}: {error}") from error
    return message


class TokenMethod:
    """TOKEN (IDTOKENS) as the handshake runs it: :meth:`server` authenticates a client by
    its token; :meth:`client` presents this user's token; :meth:`metadata` is what a server
    announces so that a client can pick a token (TrustDomain, IssuerKeys)."""

    name = "TOKEN"
    bit = 2048
    #: Seconds the names of the readable signing keys are remembered.
    KEY_NAMES_TTL = 60.0

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._key_names: tuple[tuple[str, str], float, tuple[str, ...]] | None = None

    def metadata(self, config: Config, methods: str) -> dict[str, str]:
        """TrustDomain always, and IssuerKeys when TOKEN is among ``methods``, as HTCondor's
        server puts them in its answer to the client's policy."""
        settings = TokenSettings.from_lookup(config.get)
        announced = {"TrustDomain": settings.trust_domain} if settings.trust_domain else {}
        if "TOKEN" in {_token_alias(name) for name in methods.split(",")}:
            names = self._names(settings)
            if names:
                announced["IssuerKeys"] = ", ".join(names)
        return announced

    def _names(self, settings: TokenSettings) -> tuple[str, ...]:
        where = (settings.password_directory, settings.pool_key_file)
        now = self.clock()
        cached = self._key_names
        if cached is not None and cached[0] == where and now - cached[1] < self.KEY_NAMES_TTL:
            return cached[2]
        names = tokens.key_names(settings)
        self._key_names = (where, now, names)
        return names

    def server(self, context: MethodContext) -> Conversation[Identity | None]:
        stream = context.stream
        settings = TokenSettings.from_lookup(context.config.get)
        exchange = TokenServer(settings, now=int(self.clock()))
        hello = yield from _receive(stream, ClientHello, "the TOKEN client's hello")
        yield from _send(stream, exchange.hello(hello))
        proof = yield from _receive(stream, ClientProof, "the TOKEN client's proof")
        try:
            found = exchange.proof(proof)
        except AuthTokenError as error:
            context.failures.append(f"TOKEN: {error} (token presented for {hello.name!r})")
            return None
        return Identity(
            found.user,
            found.domain if found.domain is not None else context.uid_domain,
            self.name,
            limits=found.authorizations,
        )

    def client(self, context: MethodContext) -> Conversation[bool]:
        settings = TokenSettings.from_lookup(context.config.get)
        announced = context.server_ad
        issuer = announced.evaluate("TrustDomain") if announced is not None else None
        keys = announced.evaluate("IssuerKeys") if announced is not None else None
        found = tokens.find_client_token(
            settings,
            issuer=issuer if isinstance(issuer, str) else "",
            server_keys=frozenset(
                k.strip() for k in (keys if isinstance(keys, str) else "").split(",") if k.strip()
            ),
        )
        if found is None:
            context.failures.append("TOKEN: no token for this server in the token directory")
            # HTCondor's client still runs the exchange, reporting its error.
            yield from _send(context.stream, ClientHello(ERROR, "", "", b""))
            yield from _receive(context.stream, ServerReply, "the TOKEN server's reply")
            yield from _send(context.stream, ClientProof(ERROR))
            return False
        exchange = TokenClient(found.token)
        yield from _send(context.stream, exchange.hello())
        reply = yield from _receive(context.stream, ServerReply, "the TOKEN server's reply")
        proof, server = exchange.reply(reply)
        yield from _send(context.stream, proof)
        if server is None:
            context.failures.append("TOKEN: the server did not prove it holds the signing key")
        return server is not None


def _token_alias(name: str) -> str:
    upper = name.strip().upper()
    return "TOKEN" if upper in ("TOKEN", "TOKENS", "IDTOKEN", "IDTOKENS") else upper
