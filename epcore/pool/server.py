"""The pool's socket: every local user may connect; the kernel says who they are.

Each connection's user comes from SO_PEERCRED when it is accepted, so a request cannot
claim to come from someone else. Requests and answers are one ClassAd per line
(:mod:`epcore.starter.protocol`); the socket is served by the startd's loop (the central
manager is its :class:`~epcore.daemon.loop.LoopCompanion`).
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
from epcore.daemon.control import listen, serve
from epcore.daemon.loop import register_channel
from epcore.starter import protocol


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
    """Listens on ``path`` (mode 0666), and answers each request with ``handler``."""

    def __init__(
        self,
        path: str,
        handler: Handler,
        *,
        super_users: Collection[str],
        log: logging.Logger,
    ) -> None:
        self.path = path
        self.handler = handler
        self.super_users = frozenset(super_users) | {"root", user_name(os.getuid())}
        self.log = log
        self.listener: socket.socket | None = None
        self.channels: dict[protocol.Channel, Requester] = {}

    def open(self, selector: selectors.BaseSelector, data: object) -> None:
        self.listener = listen(self.path, mode=0o666)
        selector.register(self.listener, selectors.EVENT_READ, data)
        self.selector = selector
        self.data = data

    def ready(self, fileobj: object) -> None:
        """``fileobj`` (the listener or a connection) is readable."""
        if fileobj is self.listener:
            self._accept()
        elif isinstance(fileobj, protocol.Channel) and fileobj in self.channels:
            self._serve(fileobj)

    def _accept(self) -> None:
        assert self.listener is not None
        while True:
            try:
                sock, _ = self.listener.accept()
            except BlockingIOError:
                return
            uid = peer_uid(sock)
            name = user_name(uid)
            requester = Requester(uid, name, uid == 0 or name in self.super_users)
            channel = protocol.Channel(sock, None)
            self.channels[channel] = requester
            register_channel(self.selector, channel, self.data)

    def _serve(self, channel: protocol.Channel) -> None:
        requester = self.channels[channel]
        serve(channel, lambda request: self.handler(requester, request), self.log)
        if channel.closed:
            self._drop(channel)

    def _drop(self, channel: protocol.Channel) -> None:
        key = self.selector.get_map().get(channel.fileno())
        if key is not None and key.fileobj is channel:
            self.selector.unregister(channel)
        channel.close()
        self.channels.pop(channel, None)

    def flush(self) -> None:
        """Send what the connections did not take yet; forget the closed ones."""
        for channel in list(self.channels):
            if channel.pending:
                channel.flush()
            if channel.closed:
                self._drop(channel)

    def close(self) -> None:
        for channel in list(self.channels):
            self._drop(channel)
        if self.listener is not None:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(self.listener)
            self.listener.close()
            self.listener = None
            with contextlib.suppress(OSError):
                os.unlink(self.path)
