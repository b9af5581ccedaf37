"""The client's side: starting a command on a CEDAR daemon, and the collector's queries.

:func:`start_command` is condor_secman.cpp's client half as a conversation: it sends
DC_AUTHENTICATE with the CLIENT level's policy ad (a new session each time), takes the
server's actions, authenticates with the methods both sides offer (trying the next one when
one fails, as HTCondor does), reads the post-authentication ad, and returns who the server
says the client is; a DENIED (or any answer but AUTHORIZED) raises
:class:`~epcore.net.conversation.Refused` with the server's words. Encryption or integrity
need the crypto layer's key exchange; without it a server that requires them is refused
here, naming why; with one (:class:`ClientKeyExchange`, the crypto layer's seam) the stream
is protected after authentication as the server's is.

:func:`query_collector` runs one QUERY_*_ADS over a blocking socket (``ep status -pool``).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Generator, Sequence
from typing import Protocol

import attrs

from epcore.classad import ClassAd, parse_expr
from epcore.config import Config
from epcore.errors import EpError
from epcore.net import policy as pol
from epcore.net.commands import DC_AUTHENTICATE, describe
from epcore.net.conversation import Refused, Step, Stream, receive, run_blocking, send
from epcore.net.frames import Framer, PacketProtection
from epcore.net.keyexchange import EcdhClientKeyExchange
from epcore.net.methods import MethodContext, MethodRegistry, bit_of, default_registry

#: Seconds a client waits for each step of a daemon's answer.
CLIENT_TIMEOUT = 20.0


@attrs.frozen
class ClientSession:
    """What the server said at the end of the start: the session id and who we are."""

    sid: str
    user: str | None
    method: str | None
    #: What protects a stream of this session, and whether it encrypts or checks integrity:
    #: a resumed session (:func:`resume_command`) protects its new stream the same way.
    protection: Callable[[bool, bool], PacketProtection | None] | None = None
    encrypt: bool = False
    integrity: bool = False


class ClientKeyExchange(Protocol):
    """The crypto layer's client seam (see :mod:`epcore.net`): ``public_key`` goes in the
    policy ad (ECDHPublicKey); ``finish`` takes the server's public key and the crypto method
    it chose and returns what makes the stream's protection once authentication is over
    (given whether encryption and integrity are on; None when neither is)."""

    methods: tuple[str, ...]

    def public_key(self) -> str: ...

    def finish(
        self, server_public_key: str, method: str
    ) -> Callable[[bool, bool], PacketProtection | None]: ...


def start_command(
    stream: Stream,
    command: int,
    config: Config,
    *,
    methods: MethodRegistry | None = None,
    key_exchange: ClientKeyExchange | None = None,
    subsystem: str = "TOOL",
) -> Generator[Step, bytes | None, ClientSession]:
    """Start ``command`` on the server at the other end of ``stream`` (module docstring)."""
    registry = methods if methods is not None else default_registry()
    crypto = key_exchange.methods if key_exchange is not None else ()
    # A daemon's sessions last a day: a startd resumes its session with the collector at
    # each UPDATE_INTERVAL rather than authenticating again (HTCondor: tools and submit 60 s).
    tool = subsystem.upper() in ("TOOL", "SUBMIT")
    ours = pol.client_policy(config, methods=registry.names, crypto=crypto, tool=tool)
    auth_info = ours.ad(subsystem=subsystem)
    if key_exchange is not None:
        auth_info["ECDHPublicKey"] = key_exchange.public_key()
    auth_info["Command"] = command
    auth_info["NewSession"] = "YES"
    auth_info["NegotiatedSession"] = True
    auth_info["RemoteVersion"] = pol.VERSION
    auth_info["ServerPid"] = os.getpid()
    host, port = stream.peer
    auth_info["ConnectSinful"] = f"<{host}:{port}>"
    writer = stream.writer().put_int(DC_AUTHENTICATE.number).put_classad(auth_info)
    yield from send(writer)
    reader = yield from receive(stream, "the server's security actions")
    actions = reader.get_classad("the server's security actions", literals_only=True)
    encrypt = pol.is_yes(actions, pol.ENCRYPTION)
    integrity = pol.is_yes(actions, pol.INTEGRITY)
    server_key = actions.evaluate("ECDHPublicKey")
    method = actions.evaluate(pol.CRYPTO_METHODS)
    protection = None
    if key_exchange is not None and isinstance(server_key, str) and isinstance(method, str):
        try:
            protection = key_exchange.finish(server_key, method.split(",")[0])
        except EpError as error:  # a key that is no key, a method not offered
            raise Refused(f"{describe(command)}: key exchange failed: {error}") from error
    if (encrypt or integrity) and protection is None:
        raise Refused(
            f"{describe(command)}: the server wants encryption or integrity, which needs a "
            "key exchange this client does not have"
        )
    method_used: str | None = None
    if pol.is_yes(actions, pol.AUTHENTICATION):
        method_used = yield from _authenticate(stream, config, registry, actions)
        if method_used is None and actions.evaluate(pol.AUTH_REQUIRED) is not False:
            raise Refused(f"{describe(command)}: no authentication method succeeded")
    made = protection(encrypt, integrity) if protection is not None else None
    if made is not None:
        # As the server does after authentication: every later packet is sealed.
        stream.framer.protect(made)
        stream.encrypted = encrypt
    reader = yield from receive(stream, "the server's verdict")
    verdict = reader.get_classad("the server's verdict", literals_only=True)
    code = verdict.evaluate("ReturnCode")
    user = verdict.evaluate("User")
    if code != "AUTHORIZED":
        raise Refused(
            f"{describe(command)}: received {code!r} from the server for user "
            f"{user if isinstance(user, str) else 'unauthenticated'}"
        )
    sid = verdict.evaluate("Sid")
    return ClientSession(
        sid if isinstance(sid, str) else "",
        user if isinstance(user, str) else None,
        method_used,
        protection=protection,
        encrypt=encrypt,
        integrity=integrity,
    )


def resume_command(
    stream: Stream, command: int, session: ClientSession
) -> Generator[Step, bytes | None, ClientSession]:
    """Start ``command`` in a session an earlier :func:`start_command` made (UseSession
    with its Sid, asking for the server's answer), without authenticating again; the new
    stream is protected as the session's first was. Refused when the server no longer
    knows the session (SID_NOT_FOUND: it expired or the server restarted), which ends the
    connection: the caller starts a new session on a new one."""
    auth_info = ClassAd()
    auth_info["Command"] = command
    auth_info["UseSession"] = "YES"
    auth_info["Sid"] = session.sid
    auth_info["ResumeResponse"] = True
    auth_info["RemoteVersion"] = pol.VERSION
    auth_info["ServerPid"] = os.getpid()
    yield from send(stream.writer().put_int(DC_AUTHENTICATE.number).put_classad(auth_info))
    reader = yield from receive(stream, "the server's answer to the resumption")
    answer = reader.get_classad("the server's answer to the resumption", literals_only=True)
    code = answer.evaluate("ReturnCode")
    if code != "AUTHORIZED":
        raise Refused(f"{describe(command)}: session {session.sid} not resumed: {code!r}")
    made = (
        session.protection(session.encrypt, session.integrity)
        if session.protection is not None
        else None
    )
    if made is not None:
        stream.framer.protect(made)
        stream.encrypted = session.encrypt
    return session


def _authenticate(
    stream: Stream, config: Config, registry: MethodRegistry, actions: ClassAd
) -> Generator[Step, bytes | None, str | None]:
    listed = actions.evaluate(pol.METHODS_LIST) or actions.evaluate(pol.METHODS)
    remaining = [
        name for name in str(listed or "").split(",") if name and registry.get(name) is not None
    ]
    context = MethodContext(stream, config, server_ad=actions)
    while True:
        mask = 0
        for name in remaining:
            mask |= bit_of(name)
        yield from send(stream.writer().put_int(mask))
        reader = yield from receive(stream, "the method the server picked")
        chosen = reader.get_int32("the method the server picked")
        method = registry.by_bit(chosen) if chosen else None
        if method is None:
            return None
        if (yield from method.client(context)):
            reader = yield from receive(stream, "the key the method exchanges")
            if reader.get_int32("whether a key follows") != 0:
                raise Refused("the server sent a session key by the method; not supported")
            return method.name
        remaining = [name for name in remaining if bit_of(name) != chosen]


def connect(host: str, port: int, timeout: float = CLIENT_TIMEOUT) -> tuple[socket.socket, Stream]:
    """A connected socket to ``host:port`` and its stream."""
    sock = socket.create_connection((host, port), timeout=timeout)
    local = sock.getsockname()
    peer = sock.getpeername()
    stream = Stream(Framer(), (str(local[0]), int(local[1])), (str(peer[0]), int(peer[1])))
    return sock, stream


def query_collector(
    host: str,
    port: int,
    command: int,
    config: Config,
    *,
    constraint: str | None = None,
    projection: Sequence[str] | None = None,
    target_type: str | None = None,
) -> list[ClassAd]:
    """The ads a collector answers a QUERY_*_ADS ``command`` with (module docstring)."""
    query = ClassAd()
    query["Requirements"] = _constraint_expr(constraint)
    if projection:
        query["Projection"] = " ".join(projection)
    if target_type is not None:
        query["TargetType"] = target_type

    def conversation() -> Generator[Step, bytes | None, list[ClassAd]]:
        # A new session each time, sealed with AES-GCM when the collector agrees.
        yield from start_command(stream, command, config, key_exchange=EcdhClientKeyExchange())
        yield from send(stream.writer().put_classad(query))
        reader = yield from receive(stream, "the query's answer")
        ads: list[ClassAd] = []
        while reader.get_int("whether an ad follows"):
            ads.append(reader.get_classad(f"ad {len(ads) + 1} of the answer"))
        return ads

    sock, stream = connect(host, port)
    with sock:
        return run_blocking(sock, stream, conversation())


def _constraint_expr(constraint: str | None) -> object:
    return parse_expr(constraint) if constraint else True
