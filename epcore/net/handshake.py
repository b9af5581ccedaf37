"""The server's side of a command's start: DC_AUTHENTICATE, sessions, authorization.

A client opens with the command number. A raw command (the client's negotiation NEVER)
is authorized as an unauthenticated peer, if the level's policy lets it go without
negotiation, and its payload follows in the same message. Otherwise it is DC_AUTHENTICATE
(daemon_command.cpp and condor_secman.cpp give the exchange):

1. the client's policy ad names the real command (Command; AuthCommand for DC_SEC_QUERY);
   an unknown command ends the connection there, as HTCondor's does;
2. resuming a session (UseSession, Sid): an unknown or expired id is answered
   SID_NOT_FOUND when the client wants an answer; a known one AUTHORIZED, and the
   session's identity, key and policy apply without a new authentication;
3. a new session: the policies are reconciled (:mod:`epcore.net.policy`) and the actions
   sent back unless the client already enacted them; then, if Authentication is YES, the
   methods are tried in the server's order (each round the client sends its bitmask and
   the server the method it picks, 0 when none is left) until one proves an identity;
   then the key exchange's key (if any) protects the stream; then authorization (ALLOW /
   DENY, and the limit a CLAIMTOBE identity carries) and the post-authentication ad
   (ReturnCode AUTHORIZED or DENIED, Sid, User, ValidCommands); a denied peer is told
   and the connection ends.

Every refusal is logged with who (the identity, or unauthenticated), where (the peer's
address), what (the command) and why.
"""

from __future__ import annotations

import base64
import itertools
import logging
import os
import re
import secrets
import socket
import time
from collections.abc import Callable, Generator, Mapping
from typing import Final, Protocol

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.net import policy as pol
from epcore.net.authz import Authorization, Decision
from epcore.net.codec import Reader
from epcore.net.commands import (
    ALLOW,
    DC_AUTHENTICATE,
    DC_SEC_QUERY,
    describe,
    implied,
)
from epcore.net.conversation import Refused, Step, Stream, receive, send
from epcore.net.frames import PacketProtection
from epcore.net.methods import Identity, MethodContext, MethodRegistry, bit_of
from epcore.net.policy import LevelPolicy, PolicyError
from epcore.net.token_method import TokenMethod
from epcore.net.tokens import authorization_bounds
from epcore.runtime.connection_limits import ThrottledLog

#: Sessions kept at most; the least recently used go first beyond it (memory stays bounded
#: whatever clients do).
MAX_SESSIONS: Final = 10_000
#: Seconds a session outlives its negotiated duration (SEC_SESSION_DURATION_SLOP).
SESSION_SLOP: Final = 20
_NUMBERS: Final = re.compile(r"\d+")
#: Rounds of the method handshake at most (one per method a client may try).
MAX_METHOD_ROUNDS: Final = 16


class KeyExchange(Protocol):
    """The crypto layer's seam (see :mod:`epcore.net`): ``start`` takes the client's
    ECDHPublicKey and the crypto method agreed, and returns the server's public key and a
    function that, once authentication is over, gives the stream's protection (None when
    neither encryption nor integrity is on) and whether strings are then coded encrypted."""

    methods: tuple[str, ...]

    def start(
        self, client_public_key: str, method: str
    ) -> tuple[str, Callable[[bool, bool], PacketProtection | None]]: ...


@attrs.frozen
class Session:
    """A negotiated session: who, the policy enacted, its protection maker, its expiry."""

    sid: str
    identity: Identity | None
    policy: ClassAd
    level: str
    expires: float
    lease: float
    protection: Callable[[bool, bool], PacketProtection | None] | None = None


@attrs.frozen
class Peer:
    """Who a command comes from once its start is done, and the command it runs."""

    address: tuple[str, int]
    identity: Identity | None
    command: int
    session: str | None = None

    @property
    def user(self) -> str | None:
        return None if self.identity is None else self.identity.fqu

    @property
    def name(self) -> str:
        return self.user or "unauthenticated"


class SessionCache:
    """Sessions by id, expiring (duration) and lapsing unused (lease), at most MAX_SESSIONS."""

    def __init__(self, clock: Callable[[], float] = time.time, limit: int = MAX_SESSIONS) -> None:
        self.clock = clock
        self.limit = limit
        self._sessions: dict[str, Session] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def add(self, session: Session) -> None:
        self._sessions.pop(session.sid, None)
        self._sessions[session.sid] = session
        while len(self._sessions) > self.limit:
            del self._sessions[next(iter(self._sessions))]

    def find(self, sid: str) -> Session | None:
        """The live session ``sid`` (its lease renewed), or None."""
        session = self._sessions.get(sid)
        now = self.clock()
        if session is None or now > session.expires or now > session.lease:
            self._sessions.pop(sid, None)
            return None
        lease = session.lease if session.lease == float("inf") else now + _lease_of(session)
        renewed = attrs.evolve(session, lease=lease)
        del self._sessions[sid]
        self._sessions[sid] = renewed
        return renewed


def _lease_of(session: Session) -> float:
    value = session.policy.evaluate(pol.SESSION_LEASE_ATTR)
    return float(value) + SESSION_SLOP if type(value) is int and value > 0 else float("inf")


#: Numbers the sessions of this process (the last part of their ids).
_SESSION_NUMBERS = itertools.count(1)


def new_session_id() -> str:
    """``host:pid:time:counter``, HTCondor's form."""
    number = next(_SESSION_NUMBERS)
    return f"{socket.gethostname()}:{os.getpid()}:{int(time.time())}:{number}"


class SecurityServer:
    """The server's half of every command's start (module docstring).

    ``levels`` gives the level of every command this process answers (by number);
    ``methods`` the authentication methods it can run; ``key_exchange`` the crypto layer
    (None: no encryption or integrity). ``pool_user`` is who root maps to under FS.
    """

    def __init__(
        self,
        config: Callable[[], Config],
        levels: Callable[[], Mapping[int, str]],
        *,
        methods: MethodRegistry,
        log: logging.Logger,
        key_exchange: KeyExchange | None = None,
        pool_user: str = "condor",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.levels = levels
        self.methods = methods
        self.log = log
        self.key_exchange = key_exchange
        self.pool_user = pool_user
        self.clock = clock
        self.sessions = SessionCache(clock)
        self.throttled = ThrottledLog(log)

    # -- policy ---------------------------------------------------------------------------

    def level_policy(self, level: str) -> LevelPolicy:
        crypto = self.key_exchange.methods if self.key_exchange is not None else ()
        return LevelPolicy.from_config(
            self.config(), level, methods=self.methods.names, crypto=crypto
        )

    def authorize(self, level: str, identity: Identity | None, ip: str) -> Decision:
        return Authorization.from_config(self.config()).decide(
            level, None if identity is None else identity.fqu, ip
        )

    def _refuse(self, stream: Stream, who: str, command: int, why: str) -> Refused:
        # Each kind (who, from which host, what, why) gets its line; a flood of one kind
        # costs a line per period, which counts the rest.
        kind = f"{who} {stream.peer[0]} {command} {_NUMBERS.sub('N', why)[:60]}"
        self.throttled.warning(
            kind,
            "refused %s from %s at %s: %s",
            describe(command),
            who,
            stream.peer_description,
            why,
        )
        return Refused(why, logged=True)

    # -- the start of a command -------------------------------------------------------------

    def start(self, stream: Stream) -> Generator[Step, bytes | None, tuple[Peer, Reader | None]]:
        """Read the command and run its start; the peer, and the rest of the first
        message when the command's payload came in it. Refused when it may not run."""
        reader = yield from receive(stream, "the command")
        number = reader.get_int32("the command number")
        if number != DC_AUTHENTICATE.number:
            peer = self._raw(stream, number)
            return peer, reader
        auth_info = reader.get_classad("the client's security policy", literals_only=True)
        reader.expect_end("the client's security policy")
        peer = yield from self._authenticate(stream, auth_info)
        return peer, None

    def _raw(self, stream: Stream, number: int) -> Peer:
        level = self.levels().get(number)
        if level is None:
            raise self._refuse(stream, "unauthenticated", number, "no such command here")
        if level != ALLOW and self.level_policy(level).negotiation == pol.REQUIRED:
            raise self._refuse(
                stream, "unauthenticated", number, f"SEC_{level}_NEGOTIATION is REQUIRED"
            )
        decision = self.authorize(level, None, stream.peer[0])
        if not decision.allowed:
            raise self._refuse(stream, "unauthenticated", number, decision.reason)
        return Peer(stream.peer, None, number)

    def _authenticate(
        self, stream: Stream, auth_info: ClassAd
    ) -> Generator[Step, bytes | None, Peer]:
        real = auth_info.evaluate("Command")
        if type(real) is not int:
            raise self._refuse(stream, "unauthenticated", 0, "the security policy names no Command")
        command = real
        if real in (DC_AUTHENTICATE.number, DC_SEC_QUERY.number):
            inner = auth_info.evaluate("AuthCommand")
            command = inner if type(inner) is int else 0
        level = self.levels().get(command)
        if level is None:
            raise self._refuse(stream, "unauthenticated", command, "no such command here")
        if pol.is_yes(auth_info, "UseSession"):
            return (yield from self._resume(stream, auth_info, real, command, level))
        return (yield from self._new_session(stream, auth_info, real, command, level))

    def _resume(
        self, stream: Stream, auth_info: ClassAd, real: int, command: int, level: str
    ) -> Generator[Step, bytes | None, Peer]:
        sid = auth_info.evaluate("Sid")
        session = self.sessions.find(sid) if isinstance(sid, str) else None
        wants_answer = auth_info.evaluate("ResumeResponse") is True
        if session is None:
            if wants_answer:
                answer = ClassAd({"ReturnCode": "SID_NOT_FOUND"})
                yield from send(stream.writer().put_classad(answer))
            raise self._refuse(stream, "unauthenticated", command, f"no session {sid!r}")
        if wants_answer:
            answer = ClassAd(
                {
                    "ReturnCode": "AUTHORIZED",
                    "RemoteVersion": pol.VERSION,
                    "Nonce": base64.b64encode(secrets.token_bytes(33)).decode(),
                }
            )
            yield from send(stream.writer().put_classad(answer))
        self._protect(stream, session.policy, session.protection)
        who = session.identity.fqu if session.identity is not None else "unauthenticated"
        decision = self._decide(level, session.identity, stream.peer[0], session.policy)
        if not decision.allowed:
            raise self._refuse(stream, who, command, decision.reason)
        if real == DC_SEC_QUERY.number:
            yield from self._sec_query_answer(stream)
        return Peer(stream.peer, session.identity, real, session.sid)

    def _new_session(
        self, stream: Stream, auth_info: ClassAd, real: int, command: int, level: str
    ) -> Generator[Step, bytes | None, Peer]:
        try:
            ours = self.level_policy(level)
            actions = pol.reconcile(auth_info, ours.ad(subsystem="COLLECTOR"))
        except PolicyError as error:
            raise self._refuse(
                stream, "unauthenticated", command, f"security negotiation failed: {error}"
            ) from None
        actions["NegotiatedSession"] = True
        actions["RemoteVersion"] = pol.VERSION
        token = self.methods.get("TOKEN")
        if isinstance(token, TokenMethod):
            # What a client needs to pick its token (TrustDomain, IssuerKeys).
            methods = actions.evaluate(pol.METHODS_LIST)
            listed = methods if isinstance(methods, str) else ""
            for name, value in token.metadata(self.config(), listed).items():
                actions[name] = value
        authenticate = pol.is_yes(actions, pol.AUTHENTICATION)
        sid = new_session_id()
        protection = self._key_exchange(auth_info, actions, authenticate)
        if not pol.is_yes(auth_info, pol.ENACT):
            yield from send(stream.writer().put_classad(actions))
        identity: Identity | None = None
        if authenticate:
            identity = yield from self._run_methods(stream, actions)
            if identity is None and actions.evaluate(pol.AUTH_REQUIRED) is not False:
                raise self._refuse(
                    stream, "unauthenticated", command, "authentication failed (it is required)"
                )
        if identity is not None:
            actions[pol.METHODS] = identity.method
            if identity.method == "CLAIMTOBE":
                actions["LimitAuthorization"] = ",".join(implied(level))
            elif identity.limits:
                # A token's scopes, with the levels they imply (HTCondor's bounding set).
                bounds = authorization_bounds(identity.limits) or frozenset()
                actions["LimitAuthorization"] = ",".join(sorted(bounds))
        self._protect(stream, actions, protection)
        who = identity.fqu if identity is not None else "unauthenticated"
        decision = self._decide(level, identity, stream.peer[0], actions)
        post_auth = ClassAd()
        if identity is not None:
            post_auth["User"] = identity.fqu
        post_auth["TriedAuthentication"] = authenticate
        post_auth["Sid"] = sid
        post_auth["ValidCommands"] = self._valid_commands(level)
        post_auth["ReturnCode"] = "AUTHORIZED" if decision.allowed else "DENIED"
        yield from send(stream.writer().put_classad(post_auth))
        if not decision.allowed:
            raise self._refuse(stream, who, command, decision.reason)
        now = self.clock()
        duration = int(str(actions.evaluate(pol.SESSION_DURATION) or "0") or 0)
        lease = actions.evaluate(pol.SESSION_LEASE_ATTR)
        self.sessions.add(
            Session(
                sid,
                identity,
                actions,
                level,
                expires=now + duration + SESSION_SLOP,
                lease=now + lease + SESSION_SLOP
                if type(lease) is int and lease > 0
                else float("inf"),
                protection=protection,
            )
        )
        if real == DC_SEC_QUERY.number:
            yield from self._sec_query_answer(stream)
        return Peer(stream.peer, identity, real, sid)

    def _key_exchange(
        self, auth_info: ClassAd, actions: ClassAd, authenticate: bool
    ) -> Callable[[bool, bool], PacketProtection | None] | None:
        client_key = auth_info.evaluate("ECDHPublicKey")
        crypto = actions.evaluate(pol.CRYPTO_METHODS)
        if (
            self.key_exchange is None
            or not isinstance(client_key, str)
            or not isinstance(crypto, str)
            or not crypto
        ):
            for name in (pol.CRYPTO_METHODS, pol.CRYPTO_METHODS_LIST):
                if name in actions:
                    del actions[name]
            return None
        method = crypto.split(",")[0]
        server_key, protection = self.key_exchange.start(client_key, method)
        actions["ECDHPublicKey"] = server_key
        actions[pol.CRYPTO_METHODS] = method
        return protection

    def _protect(
        self,
        stream: Stream,
        actions: ClassAd,
        protection: Callable[[bool, bool], PacketProtection | None] | None,
    ) -> None:
        encrypt = pol.is_yes(actions, pol.ENCRYPTION)
        integrity = pol.is_yes(actions, pol.INTEGRITY)
        if (encrypt or integrity) and protection is None:
            raise Refused("encryption or integrity agreed but no key to give them")
        made = protection(encrypt, integrity) if protection is not None else None
        if made is not None:
            stream.framer.protect(made)
            stream.encrypted = encrypt

    def _run_methods(
        self, stream: Stream, actions: ClassAd
    ) -> Generator[Step, bytes | None, Identity | None]:
        listed = actions.evaluate(pol.METHODS_LIST)
        order = [name for name in str(listed or "").split(",") if name]
        context = MethodContext(stream, self.config(), self.pool_user)
        for _ in range(MAX_METHOD_ROUNDS):
            reader = yield from receive(stream, "the client's authentication methods")
            offered = reader.get_int32("the client's method bitmask")
            reader.expect_end("the client's method bitmask")
            chosen = next(
                (
                    self.methods.by_bit(bit_of(name))
                    for name in order
                    if bit_of(name) & offered and self.methods.by_bit(bit_of(name))
                ),
                None,
            )
            yield from send(stream.writer().put_int(chosen.bit if chosen else 0))
            if chosen is None:
                break
            identity = yield from chosen.server(context)
            if identity is not None:
                # HTCondor's key exchange by the method (Authentication::exchangeKey): the
                # session key comes from ECDH instead, so "no key" (0) is all it sends.
                yield from send(stream.writer().put_int(0))
                return identity
            order = [name for name in order if bit_of(name) != chosen.bit]
        if context.failures:
            # Throttled as every other refusal is: a client failing over and over from one
            # host costs a line per period (which counts the rest), not a line per attempt.
            reasons = "; ".join(context.failures)
            self.throttled.warning(
                f"authentication {stream.peer[0]} {_NUMBERS.sub('N', reasons)[:80]}",
                "authentication of %s failed: %s",
                stream.peer_description,
                reasons,
            )
        return None

    def _decide(self, level: str, identity: Identity | None, ip: str, actions: ClassAd) -> Decision:
        limit = actions.evaluate("LimitAuthorization")
        if isinstance(limit, str) and level != ALLOW:
            allowed_levels = {item.strip().upper() for item in limit.split(",")}
            if level not in allowed_levels:
                return Decision(False, f"the session is limited to {limit}")
        return self.authorize(level, identity, ip)

    def _valid_commands(self, level: str) -> str:
        granted = set(implied(level)) | {ALLOW}
        numbers = sorted(number for number, need in self.levels().items() if need in granted)
        return ",".join(str(number) for number in numbers)

    def _sec_query_answer(self, stream: Stream) -> Generator[Step, bytes | None, None]:
        yield from send(stream.writer().put_classad(ClassAd({"AuthorizationSucceeded": True})))
