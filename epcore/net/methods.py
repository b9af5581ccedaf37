"""Authentication methods: the registry the handshake picks from, with FS and CLAIMTOBE.

A method is an :class:`AuthMethod`: HTCondor's name for it, its bit in the handshake's
bitmask (condor_auth.h), and two conversations, the server's (returning who the peer is,
or None) and the client's (returning whether the server accepted it). The handshake offers
the methods both the level's policy names and the :class:`MethodRegistry` holds; another
module (the token method) registers its own the same way.

- **FS** (condor_auth_fs.cpp): the server names a directory to make (FS_LOCAL_DIR, /tmp by
  default); the client makes it, mode 0700, and the server believes the client is the
  owner of that directory. Since HTCondor 25 (SEC_FS_ENFORCE_CHANNEL_BINDING, on by
  default) the name ends in ``_`` and the client appends the server's ``ip:port`` as it
  connected to it, and says so, so that a directory made for another server's challenge
  cannot be replayed here. root is mapped to the pool's own user (FS_ROOT_TO_CONDOR).
- **CLAIMTOBE** (condor_auth_claim.cpp): the client states a name and the server believes
  it; offered only where SEC_<level>_AUTHENTICATION_METHODS names it, and then limited to
  the level it was negotiated for.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import stat
import tempfile
from collections.abc import Generator, Iterable
from typing import Final, Protocol

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.net.conversation import Step, Stream, receive, send

#: The bits of HTCondor's method bitmask.
BITS: Final = {
    "CLAIMTOBE": 2,
    "FS": 4,
    "FS_REMOTE": 8,
    "KERBEROS": 64,
    "ANONYMOUS": 128,
    "SSL": 256,
    "PASSWORD": 512,
    "MUNGE": 1024,
    "TOKEN": 2048,
    "SCITOKENS": 4096,
}


def bit_of(name: str) -> int:
    """A method's bit (the token method's spellings share TOKEN's); 0 for an unknown one."""
    upper = name.upper()
    if upper in ("TOKENS", "IDTOKENS", "IDTOKEN"):
        upper = "TOKEN"
    return BITS.get(upper, 0)


@attrs.frozen
class Identity:
    """Who authenticated: user, domain, and the method that proved it."""

    user: str
    domain: str
    method: str
    #: The levels the credential is limited to (a token's scopes), empty: no limit.
    limits: tuple[str, ...] = ()

    @property
    def fqu(self) -> str:
        """``user@domain``, as ALLOW/DENY entries and HTCondor's logs name users."""
        return f"{self.user}@{self.domain}"


@attrs.define
class MethodContext:
    """What a method's conversation needs: the stream, the configuration (UID_DOMAIN,
    FS_LOCAL_DIR...) and the pool's own user (for FS_ROOT_TO_CONDOR)."""

    stream: Stream
    config: Config
    pool_user: str = "condor"
    #: Why a method failed, for the log line of a refusal.
    failures: list[str] = attrs.Factory(list)
    #: The server's answer to the client's policy (a client's methods read TrustDomain...).
    server_ad: ClassAd | None = None

    @property
    def uid_domain(self) -> str:
        return uid_domain(self.config)


def uid_domain(config: Config) -> str:
    """The domain of the local users' authenticated names (UID_DOMAIN, else the host)."""
    return config.get("UID_DOMAIN") or config.get("FULL_HOSTNAME") or "localdomain"


class AuthMethod(Protocol):
    """One authentication method (module docstring)."""

    name: str
    bit: int

    def server(self, context: MethodContext) -> Generator[Step, bytes | None, Identity | None]: ...

    def client(self, context: MethodContext) -> Generator[Step, bytes | None, bool]: ...


class MethodRegistry:
    """The methods a process can run, by name."""

    def __init__(self, methods: Iterable[AuthMethod] = ()) -> None:
        self._methods: dict[int, AuthMethod] = {}
        for method in methods:
            self.register(method)

    def register(self, method: AuthMethod) -> None:
        self._methods[method.bit] = method

    def by_bit(self, bit: int) -> AuthMethod | None:
        return self._methods.get(bit)

    def get(self, name: str) -> AuthMethod | None:
        return self._methods.get(bit_of(name))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(method.name for method in self._methods.values())


def default_registry() -> MethodRegistry:
    """FS, CLAIMTOBE and TOKEN (IDTOKENS)."""
    # Imported here: the token method builds on this module's Identity and MethodContext.
    from epcore.net.token_method import TokenMethod

    return MethodRegistry([FileSystemMethod(), ClaimToBeMethod(), TokenMethod()])


def _int_result(stream: Stream, value: int) -> Generator[Step, bytes | None, None]:
    yield from send(stream.writer().put_int(value))


class FileSystemMethod:
    """FS (module docstring)."""

    name = "FS"
    bit = BITS["FS"]

    def server(self, context: MethodContext) -> Generator[Step, bytes | None, Identity | None]:
        stream = context.stream
        parent = (context.config.get("FS_LOCAL_DIR") or "/tmp").rstrip("/") or "/"
        host, port = stream.local
        try:
            handle, path = tempfile.mkstemp(prefix=f"FS_{host}_{port}_", dir=parent)
            os.close(handle)
            os.unlink(path)
            challenge = path + "_"
        except OSError:
            challenge = ""  # the client reads this as "check the server's log"
        yield from send(stream.writer().put_string(challenge))
        reader = yield from receive(stream, "the FS client's result")
        client_result = reader.get_int32("the FS client's result")
        extension = "" if reader.at_end else reader.get_string("the FS channel binding")
        reader.expect_end("the FS client's result")
        owner = self._owner(context, challenge, client_result, extension)
        yield from _int_result(stream, 0 if owner is not None else -1)
        if owner is None:
            return None
        return Identity(owner, context.uid_domain, self.name)

    def _owner(
        self, context: MethodContext, challenge: str, client_result: int, extension: str
    ) -> str | None:
        if not challenge or client_result == -1:
            context.failures.append("FS: the client could not make the directory")
            return None
        if extension:
            host, port = context.stream.local
            expected = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            if "/" in extension or extension != expected:
                context.failures.append(
                    f"FS: the client's channel binding {extension!r} is not this "
                    f"server's endpoint {expected}"
                )
                return None
        try:
            info = os.lstat(challenge + extension)
        except OSError as error:
            context.failures.append(f"FS: cannot lstat {challenge + extension}: {error.strerror}")
            return None
        if not (
            stat.S_ISDIR(info.st_mode)
            and info.st_nlink in (1, 2)
            and stat.S_IMODE(info.st_mode) == 0o700
        ):
            context.failures.append(f"FS: {challenge + extension} is not a mode 0700 directory")
            return None
        try:
            owner = pwd.getpwuid(info.st_uid).pw_name
        except KeyError:
            context.failures.append(f"FS: uid {info.st_uid} has no user name")
            return None
        if owner == "root" and (context.config.get("FS_ROOT_TO_CONDOR") or "true").lower() in (
            "true",
            "1",
            "yes",
        ):
            owner = context.pool_user
        return owner

    def client(self, context: MethodContext) -> Generator[Step, bytes | None, bool]:
        stream = context.stream
        reader = yield from receive(stream, "the FS directory to make")
        directory = reader.get_string("the FS directory to make")
        extension = ""
        result = -1
        if directory:
            if directory.endswith("_"):
                host, port = stream.peer
                extension = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            try:
                os.mkdir(directory + extension, 0o700)
                result = 0
            except OSError:
                result = -1
        writer = stream.writer().put_int(result)
        if extension:
            writer.put_string(extension)
        try:
            yield from send(writer)
            reader = yield from receive(stream, "the FS server's verdict")
            return reader.get_int32("the FS server's verdict") == 0
        finally:
            if result == 0:
                with contextlib.suppress(OSError):
                    os.rmdir(directory + extension)


class ClaimToBeMethod:
    """CLAIMTOBE (module docstring)."""

    name = "CLAIMTOBE"
    bit = BITS["CLAIMTOBE"]

    def server(self, context: MethodContext) -> Generator[Step, bytes | None, Identity | None]:
        reader = yield from receive(context.stream, "the claimed name")
        if reader.get_int32("the CLAIMTOBE flag") != 1:
            context.failures.append("CLAIMTOBE: the client claimed no name")
            return None
        claimed = reader.get_string("the claimed name")
        reader.expect_end("the claimed name")
        user, at, domain = claimed.rpartition("@")
        if not at:
            user, domain = claimed, context.uid_domain
        if not user:
            context.failures.append("CLAIMTOBE: an empty user name")
            yield from _int_result(context.stream, 0)
            return None
        yield from _int_result(context.stream, 1)
        return Identity(user, domain or context.uid_domain, self.name)

    def client(self, context: MethodContext) -> Generator[Step, bytes | None, bool]:
        name = context.config.get("SEC_CLAIMTOBE_USER") or pwd.getpwuid(os.getuid()).pw_name
        claimed = f"{name}@{context.uid_domain}" if "@" not in name else name
        yield from send(context.stream.writer().put_int(1).put_string(claimed))
        reader = yield from receive(context.stream, "the CLAIMTOBE verdict")
        return reader.get_int32("the CLAIMTOBE verdict") == 1
