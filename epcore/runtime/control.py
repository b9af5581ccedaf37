"""Request helpers every daemon's socket shares: one request ad in, one answer ad out.

A request is a ClassAd with ``Command`` and its arguments; the answer is a ClassAd with
``Ok`` (true or false), ``Error`` when it is false, and the result. :func:`argument` and its
kin read a request's arguments (a ControlError naming the attribute when one is wrong),
:func:`answer` builds the answer, :func:`request` a request, :func:`listen` a daemon's Unix
socket, and :class:`ControlClient` is the blocking client of such a socket; over the socket
each request and answer is one line (:mod:`epcore.runtime.framing`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import time

from epcore.classad import (
    UNDEFINED,
    ClassAd,
    ClassAdSyntaxError,
    FunctionTable,
    Value,
    parse_ad,
    parse_expr,
)
from epcore.errors import EpError
from epcore.runtime import framing

#: Procs per Submit request a client sends at most (a request is one line). Defined here, in
#: the request helpers both sides import, so that ``ep submit`` reaches it without importing
#: the roles' interfaces and the pool's server.
SUBMIT_CHUNK = 500


#: The functions an answer's attributes are evaluated with: none. An answer is data (literals,
#: lists, nested ads), and importing the full table cost a short-lived client such as ``ep
#: submit`` 7% of its instructions (about 10 ms).
_NO_FUNCTIONS: FunctionTable = {}


def reply_value(reply: ClassAd, name: str) -> Value:
    """Attribute ``name`` of a daemon's answer (a call in it evaluates to an error)."""
    return reply.evaluate(name, functions=_NO_FUNCTIONS)


class ControlError(EpError):
    """A control request that cannot be carried out; the message says why."""


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


def projection_argument(request: ClassAd) -> list[str] | None:
    """The request's optional ``Projection``: a list of attribute names (None: every one)."""
    values = argument(request, "Projection", list, required=False)
    if values is None:
        return None
    assert isinstance(values, list)
    if not all(isinstance(v, str) for v in values):
        raise ControlError("Projection must be a list of attribute names")
    return [str(v) for v in values]


def answer(ok: bool, error: str = "", **results: object) -> ClassAd:
    """A reply ad."""
    ad = ClassAd()
    ad["Ok"] = ok
    if error:
        ad["Error"] = error
    for name, value in results.items():
        ad[name] = value
    return ad


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


#: The first and the longest pause between tries to connect to a socket whose backlog is full.
FIRST_RETRY = 0.01
LONGEST_RETRY = 0.2


def _connect(sock: socket.socket, address: str, deadline: float) -> None:
    """Connect, waiting until ``deadline`` while the daemon's backlog is full.

    A Unix socket with a timeout refuses at once with EAGAIN when the listener's backlog is
    full (a daemon busy with a flood of connections, or resting when out of descriptors);
    a blocking client should wait for its turn as a TCP client would, not fail.
    """
    pause = FIRST_RETRY
    while True:
        try:
            sock.connect(address)
            return
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            time.sleep(min(pause, left))
            pause = min(pause * 2, LONGEST_RETRY)


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
                    _connect(sock, address, time.monotonic() + self.timeout)
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
        if reply_value(reply, "Ok") is not True:
            raise ControlError(str(reply_value(reply, "Error")))
        return reply
