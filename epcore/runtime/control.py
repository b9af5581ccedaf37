"""The startd's local control interface: the same requests in-process and over a Unix socket.

A request is a ClassAd with ``Command`` and its arguments; the answer is a ClassAd with
``Ok`` (true or false), ``Error`` when it is false, and the result (``ClaimId``, ``Ads``).
Requests: ``Claim`` (Slot, Job, optional Client and ByPriority), ``Activate`` (ClaimId,
optional Job: the next job of a reused claim), ``Release`` / ``Alive`` (ClaimId),
``Vacate`` (Slot, optional Fast), ``Drain`` (How, optional Check and Start expressions),
``CancelDrain``, ``Query`` (optional Constraint expression), ``Reconfig``, ``Shutdown``
(optional Fast). Over the socket each request and answer is one line, as between
the startd and its starters (:mod:`epcore.starter.protocol`).

The socket (STARTD_CONTROL_SOCKET, default ``$(LOCK)/startd_control``) is made with mode
0600: only its owner (the startd's user, normally root) may connect; that file permission is
the whole of the access control, as for any local Unix socket service. The startd's loop serves
it with :class:`~epcore.runtime.connections.RequestServer`, within the STARTD_CONTROL_* limits.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from collections.abc import Callable
from typing import Protocol

from epcore.classad import UNDEFINED, ClassAd, ClassAdSyntaxError, parse_ad, parse_expr
from epcore.errors import EpError
from epcore.runtime import framing

COMMANDS = (
    "Claim",
    "Activate",
    "Release",
    "Alive",
    "Vacate",
    "Drain",
    "CancelDrain",
    "Query",
    "Reconfig",
    "Shutdown",
)


class ControlError(EpError):
    """A control request that cannot be carried out; the message says why."""


class StartdControl(Protocol):
    """What the control interface can ask of a startd (the Startd implements it)."""

    def claim(
        self, slot: str, job: ClassAd, client: str = "", by_priority: bool = False
    ) -> str: ...

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None: ...

    def release(self, claim_id: str) -> None: ...

    def alive(self, claim_id: str) -> None: ...

    def vacate(self, slot: str, fast: bool = False) -> None: ...

    def drain(self, how: str, check: str | None = None, start: str | None = None) -> None: ...

    def cancel_drain(self) -> None: ...

    def query(self, constraint: str | None = None) -> list[ClassAd]: ...

    def reconfig(self) -> None: ...

    def shutdown(self, fast: bool = False) -> None: ...


def argument(request: ClassAd, name: str, kind: type, required: bool = True) -> object:
    """Attribute ``name`` of ``request`` as a ``kind`` (ControlError naming it otherwise);
    None when it is absent and not ``required``."""
    value = request.evaluate(name)
    if value is UNDEFINED or name not in request:
        if required:
            raise ControlError(f"request {request.evaluate('Command')!r} needs attribute {name}")
        return None
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is int or kind is float:
        ok = isinstance(value, int | float if kind is float else int) and not isinstance(
            value, bool
        )
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise ControlError(f"attribute {name} must be a {kind.__name__}, not {value!r}")
    return value


def text_argument(request: ClassAd, name: str) -> str:
    value = argument(request, name, str)
    assert isinstance(value, str)
    return value


def optional_text(request: ClassAd, name: str) -> str | None:
    if name not in request:
        return None
    return text_argument(request, name)


def flag(request: ClassAd, name: str) -> bool:
    return name in request and argument(request, name, bool) is True


def expression_argument(request: ClassAd, name: str) -> str | None:
    text = optional_text(request, name)
    if text is not None:
        try:
            parse_expr(text)
        except ClassAdSyntaxError as error:
            raise ControlError(f"attribute {name} is not a ClassAd expression: {error}") from error
    return text


def answer(ok: bool, error: str = "", **results: object) -> ClassAd:
    """A reply ad."""
    ad = ClassAd()
    ad["Ok"] = ok
    if error:
        ad["Error"] = error
    for name, value in results.items():
        ad[name] = value
    return ad


def dispatch(startd: StartdControl, request: ClassAd) -> ClassAd:
    """Carry out ``request`` on ``startd`` and answer; every failure becomes ``Ok = false``."""
    command = request.evaluate("Command")
    try:
        if command == "Claim":
            job = argument(request, "Job", ClassAd)
            assert isinstance(job, ClassAd)
            client = optional_text(request, "Client") or ""
            by_priority = flag(request, "ByPriority")
            slot = text_argument(request, "Slot")
            return answer(True, ClaimId=startd.claim(slot, job, client, by_priority))
        if command == "Activate":
            next_job = argument(request, "Job", ClassAd, required=False)
            assert next_job is None or isinstance(next_job, ClassAd)
            startd.activate(text_argument(request, "ClaimId"), next_job)
        elif command in ("Release", "Alive"):
            actions: dict[object, Callable[[str], None]] = {
                "Release": startd.release,
                "Alive": startd.alive,
            }
            actions[command](text_argument(request, "ClaimId"))
        elif command == "Vacate":
            startd.vacate(text_argument(request, "Slot"), flag(request, "Fast"))
        elif command == "Drain":
            how = text_argument(request, "How")
            startd.drain(
                how, expression_argument(request, "Check"), expression_argument(request, "Start")
            )
        elif command == "CancelDrain":
            startd.cancel_drain()
        elif command == "Query":
            return answer(True, Ads=startd.query(expression_argument(request, "Constraint")))
        elif command == "Reconfig":
            startd.reconfig()
        elif command == "Shutdown":
            startd.shutdown(flag(request, "Fast"))
        else:
            raise ControlError(f"unknown Command {command!r}; known: {', '.join(COMMANDS)}")
    except EpError as error:
        return answer(False, str(error))
    return answer(True)


def request(command: str, **arguments: object) -> ClassAd:
    """A request ad."""
    ad = ClassAd()
    ad["Command"] = command
    for name, value in arguments.items():
        if value is not None:
            ad[name] = value
    return ad


def listen(path: str, backlog: int = 64, mode: int = 0o600) -> socket.socket:
    """A listening control socket at ``path`` with ``mode`` (a stale socket file is replaced;
    one a live daemon answers on is a ControlError)."""
    if os.path.lexists(path):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise ControlError(f"{path} exists and is not a socket; refusing to replace it")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with framing.socket_address(path) as address:
                probe.connect(address)
        except OSError:
            os.unlink(path)
        else:
            raise ControlError(f"another daemon is serving {path}")
        finally:
            probe.close()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o777 & ~mode)
    try:
        with framing.socket_address(path) as address:
            server.bind(address)
    finally:
        os.umask(old_umask)
    # bind() honours the umask only; a mode wider than the umask allows is set explicitly.
    os.chmod(path, mode)
    server.listen(backlog)
    server.setblocking(False)
    return server


class ControlClient:
    """A blocking client of a daemon's control socket (one request ad per line, one answer
    ad per line); :meth:`call` raises ControlError with the daemon's answer when it refuses.
    ``daemon`` names the daemon in messages."""

    daemon = "daemon"

    def __init__(self, path: str, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout

    def call(self, command: str, **arguments: object) -> ClassAd:
        """Send one request and return the answer (ControlError when ``Ok`` is false)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(self.timeout)
            try:
                with framing.socket_address(self.path) as address:
                    sock.connect(address)
                # The daemon may refuse a request before taking all of it (too long, too many
                # connections): then its answer says why.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    sock.sendall(framing.encode(request(command, **arguments)))
                data = framing.read_line(sock)
            except OSError as error:
                why = f"cannot reach the {self.daemon} at {self.path}: {error}"
                raise ControlError(why) from error
        if not data.strip():
            why = f"the {self.daemon} at {self.path} closed the connection without answering"
            raise ControlError(why)
        try:
            reply = parse_ad(data.decode())
        except (UnicodeDecodeError, ClassAdSyntaxError) as error:
            raise ControlError(f"unreadable answer from {self.path}: {data[:80]!r}") from error
        if reply.evaluate("Ok") is not True:
            raise ControlError(str(reply.evaluate("Error")))
        return reply


class StartdClient(ControlClient):
    """A client of a startd's control socket, with a method per request."""

    daemon = "startd"

    def claim(self, slot: str, job: ClassAd, client: str = "", by_priority: bool = False) -> str:
        reply = self.call("Claim", Slot=slot, Job=job, Client=client, ByPriority=by_priority)
        claim_id = reply.evaluate("ClaimId")
        assert isinstance(claim_id, str)
        return claim_id

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        self.call("Activate", ClaimId=claim_id, Job=job)

    def release(self, claim_id: str) -> None:
        self.call("Release", ClaimId=claim_id)

    def alive(self, claim_id: str) -> None:
        self.call("Alive", ClaimId=claim_id)

    def vacate(self, slot: str, fast: bool = False) -> None:
        self.call("Vacate", Slot=slot, Fast=fast)

    def drain(self, how: str, check: str | None = None, start: str | None = None) -> None:
        self.call("Drain", How=how, Check=check, Start=start)

    def cancel_drain(self) -> None:
        self.call("CancelDrain")

    def query(self, constraint: str | None = None) -> list[ClassAd]:
        ads = self.call("Query", Constraint=constraint).evaluate("Ads")
        return [ad for ad in ads if isinstance(ad, ClassAd)] if isinstance(ads, list) else []

    def reconfig(self) -> None:
        self.call("Reconfig")

    def shutdown(self, fast: bool = False) -> None:
        self.call("Shutdown", Fast=fast)
