"""The pool's socket: every local user may connect; the kernel says who they are.

Each connection's user comes from SO_PEERCRED when it is accepted, so a request cannot
claim to come from someone else. Requests and answers are one ClassAd per line
(:mod:`epcore.runtime.framing`); the socket is served by the process's loop (the pool's
router service, :mod:`epcore.pool.router`) within the POOL_* limits of
:class:`~epcore.runtime.connections.ConnectionLimits`, so that no user can take the loop from
the others.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import selectors
import socket
import struct
from collections.abc import Callable, Collection

import attrs

from epcore.classad import ClassAd
from epcore.runtime.connection_limits import ConnectionLimits
from epcore.runtime.connections import RequestServer
from epcore.runtime.control import listen


@attrs.frozen
class Requester:
    """Who sent a request: their uid and user name, and whether they may act on every job
    and administer the pool (QUEUE_SUPER_USERS, root, the pool's own user)."""

    uid: int
    name: str
    super_user: bool


def user_name(uid: int) -> str:
    """The login name of ``uid`` (the number itself when the account has no name)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


Handler = Callable[[Requester, ClassAd], ClassAd]


class PoolServer:
    """Listens on ``path`` (mode 0666), and answers each request with ``handler``, within
    ``limits`` (:class:`~epcore.runtime.connections.RequestServer`: one user's connections
    and requests cannot take the pool from the others)."""

    def __init__(
        self,
        path: str,
        handler: Handler,
        *,
        super_users: Collection[str],
        log: logging.Logger,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.path = path
        self.handler = handler
        self.super_users = frozenset(super_users) | {"root", user_name(os.getuid())}
        self.log = log
        self.requests: RequestServer[Requester] = RequestServer(
            handler, peer_uid, self._requester, limits=limits or ConnectionLimits(), log=log
        )

    @property
    def limits(self) -> ConnectionLimits:
        return self.requests.limits

    @limits.setter
    def limits(self, limits: ConnectionLimits) -> None:
        self.requests.limits = limits

    def _requester(self, uid: int) -> Requester:
        name = user_name(uid)
        return Requester(uid, name, uid == 0 or name in self.super_users)

    def open(self, selector: selectors.BaseSelector, data: object) -> None:
        self.requests.open(listen(self.path, mode=0o666), selector, data)

    def ready(self, fileobj: object) -> None:
        """``fileobj`` (the listener or a connection) is ready."""
        self.requests.ready(fileobj)

    def work(self) -> None:
        """Answer the requests waiting for their turn."""
        self.requests.work()

    def timeout(self) -> float:
        return self.requests.timeout()

    def flush(self) -> None:
        """Send what the connections did not take yet; forget the closed ones."""
        self.requests.flush()

    def close(self) -> None:
        self.requests.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
