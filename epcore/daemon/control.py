"""The startd's local control interface: the same requests in-process and over a Unix socket.

A request is a ClassAd with ``Command`` and its arguments; the answer is a ClassAd with
``Ok`` (true or false), ``Error`` when it is false, and the result (``ClaimId``, ``Ads``).
Requests: ``Claim`` (Slot, Job, optional Client), ``Activate`` / ``Release`` / ``Alive``
(ClaimId), ``Vacate`` (Slot, optional Fast), ``Drain`` (How, optional Check and Start
expressions), ``CancelDrain``, ``Query`` (optional Constraint expression), ``Reconfig``,
``Shutdown`` (optional Fast). Over the socket each request and answer is one line, as between
the startd and its starters (:mod:`epcore.starter.protocol`).

The socket (STARTD_CONTROL_SOCKET, default ``$(LOCK)/startd_control``) is made with mode
0600: only its owner (the startd's user, normally root) may connect; that file permission is
the whole of the access control, as for any local Unix socket service.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable
from typing import Protocol

from epcore.classad import UNDEFINED, ClassAd, ClassAdSyntaxError, parse_ad, parse_expr
from epcore.errors import EpError
from epcore.starter import protocol

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

    def claim(self, slot: str, job: ClassAd, client: str = "") -> str: ...

    def activate(self, claim_id: str) -> None: ...

    def release(self, claim_id: str) -> None: ...

    def alive(self, claim_id: str) -> None: ...

    def vacate(self, slot: str, fast: bool = False) -> None: ...

    def drain(self, how: str, check: str | None = None, start: str | None = None) -> None: ...

    def cancel_drain(self) -> None: ...

    def query(self, constraint: str | None = None) -> list[ClassAd]: ...

    def reconfig(self) -> None: ...

    def shutdown(self, fast: bool = False) -> None: ...


def _argument(request: ClassAd, name: str, kind: type, required: bool = True) -> object:
    value = request.evaluate(name)
    if value is UNDEFINED or name not in request:
        if required:
            raise ControlError(f"request {request.evaluate('Command')!r} needs attribute {name}")
        return None
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is str:
        ok = isinstance(value, str)
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise ControlError(f"attribute {name} must be a {kind.__name__}, not {value!r}")
    return value


def _text(request: ClassAd, name: str) -> str:
    value = _argument(request, name, str)
    assert isinstance(value, str)
    return value


def _optional_text(request: ClassAd, name: str) -> str | None:
    if name not in request:
        return None
    return _text(request, name)


def _flag(request: ClassAd, name: str) -> bool:
    return name in request and _argument(request, name, bool) is True


def _expression(request: ClassAd, name: str) -> str | None:
    text = _optional_text(request, name)
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
            job = _argument(request, "Job", ClassAd)
            assert isinstance(job, ClassAd)
            client = _optional_text(request, "Client") or ""
            return answer(True, ClaimId=startd.claim(_text(request, "Slot"), job, client))
        if command in ("Activate", "Release", "Alive"):
            actions: dict[object, Callable[[str], None]] = {
                "Activate": startd.activate,
                "Release": startd.release,
                "Alive": startd.alive,
            }
            actions[command](_text(request, "ClaimId"))
        elif command == "Vacate":
            startd.vacate(_text(request, "Slot"), _flag(request, "Fast"))
        elif command == "Drain":
            how = _text(request, "How")
            startd.drain(how, _expression(request, "Check"), _expression(request, "Start"))
        elif command == "CancelDrain":
            startd.cancel_drain()
        elif command == "Query":
            return answer(True, Ads=startd.query(_expression(request, "Constraint")))
        elif command == "Reconfig":
            startd.reconfig()
        elif command == "Shutdown":
            startd.shutdown(_flag(request, "Fast"))
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


def listen(path: str, backlog: int = 64) -> socket.socket:
    """A listening control socket at ``path``, mode 0600 (a stale socket file is replaced;
    one a live startd answers on is a ControlError)."""
    if os.path.lexists(path):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise ControlError(f"{path} exists and is not a socket; refusing to replace it")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with protocol.socket_address(path) as address:
                probe.connect(address)
        except OSError:
            os.unlink(path)
        else:
            raise ControlError(f"another startd is serving {path}")
        finally:
            probe.close()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        with protocol.socket_address(path) as address:
            server.bind(address)
    finally:
        os.umask(old_umask)
    server.listen(backlog)
    server.setblocking(False)
    return server


class StartdClient:
    """A blocking client of a startd's control socket; each method raises ControlError with the
    startd's answer when it refuses."""

    def __init__(self, path: str, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout

    def call(self, command: str, **arguments: object) -> ClassAd:
        """Send one request and return the answer (ControlError when ``Ok`` is false)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(self.timeout)
            try:
                with protocol.socket_address(self.path) as address:
                    sock.connect(address)
                sock.sendall(protocol.encode(request(command, **arguments)))
                data = protocol.read_line(sock)
            except OSError as error:
                raise ControlError(f"cannot reach the startd at {self.path}: {error}") from error
        if not data.strip():
            raise ControlError(f"the startd at {self.path} closed the connection without answering")
        try:
            reply = parse_ad(data.decode())
        except (UnicodeDecodeError, ClassAdSyntaxError) as error:
            raise ControlError(f"unreadable answer from {self.path}: {data[:80]!r}") from error
        if reply.evaluate("Ok") is not True:
            raise ControlError(str(reply.evaluate("Error")))
        return reply

    def claim(self, slot: str, job: ClassAd, client: str = "") -> str:
        claim_id = self.call("Claim", Slot=slot, Job=job, Client=client).evaluate("ClaimId")
        assert isinstance(claim_id, str)
        return claim_id

    def activate(self, claim_id: str) -> None:
        self.call("Activate", ClaimId=claim_id)

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
