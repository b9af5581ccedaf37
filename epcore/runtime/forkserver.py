"""A fork server: one small single-threaded process that forks a daemon's children for it.

A daemon that runs threads (a plugin's Python cron jobs) must not fork children that run
Python: a lock held by another thread at the fork stays held for ever in the child. A daemon
that holds much memory pays for every fork twice: the kernel copies its page tables, and the
daemon then takes a copy-on-write fault on each page it shares with a live child. A fork
server avoids both. :func:`start_fork_server` forks it while the daemon has no other thread
and little memory; from then on the daemon sends it requests over a socket pair, and the
server, which never starts a thread, runs a handler for each (the handlers are the daemon's
functions, inherited at the fork: nothing that matters is serialised but the request's data)
and forks the children.

The wire (:mod:`epcore.runtime.forkwire`): a message is a 4-byte length and a pickle, with
descriptors passed beside it (SCM_RIGHTS). Pickle is safe here because the socket pairs reach
nobody else: they have no name, the server closes the daemon's end and every child closes
the server's. A request is a tuple ``(number, operation, argument)``; its reply ``(number,
result, error)`` carries the same number and the handler's result (or the error it raised,
as text). The server also sends *notes* of its own, ``(0, note, None)``: a reported child
has exited (with its wait status). Plain tuples, not records: a spawn's request and reply
are pickled and unpickled once per job on each side. The server exits when the daemon's end
closes (the daemon exited or closed it); its children are not killed with it (a starter
outlives its startd).

A handler may give the daemon another *client* (:meth:`ServerSide.connect_client`): a socket
pair whose far end the daemon passes on to a process it trusts as itself (a starter the
daemon's zygote forked); that client's requests are served as the daemon's, it gets no
notes, and its end closing ends it alone.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import selectors
import signal
import socket
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import NoReturn

import attrs

from epcore.runtime.forkwire import (
    MAX_FDS,
    MAX_MESSAGE,
    ForkServerError,
    encode,
    receive_message,
    send_message,
)

#: How long a request waits for its reply before the server counts as hung.
REPLY_SECONDS = 30.0
#: Signals whose handling a child of the server gets back to the default.
_DEFAULT_IN_CHILD = (signal.SIGCHLD, signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT)


@attrs.frozen
class ChildExited:
    """A note from the server: its child ``pid`` (one it was asked to report) has exited
    with wait status ``status``."""

    pid: int
    status: int


@attrs.frozen
class WithFds:
    """A handler's reply that carries descriptors: they go with the reply and are closed in
    the server once sent."""

    value: object
    fds: tuple[int, ...]


#: The number of a message that answers no request: a note of the server's own.
_NOTE = 0


# -- the server's side -----------------------------------------------------------------------


#: A request's handler, run in the server: the server, the request's argument and the
#: descriptors that came with it (the handler owns them); its result is the reply.
Handler = Callable[["ServerSide", object, list[int]], object]


class ServerSide:
    """What a handler sees of the fork server: forking children and their ends."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._reported: set[int] = set()
        #: The server's own descriptors besides the socket, closed in every child.
        self.private_fds: list[int] = []
        #: The server's ends of its other clients' sockets (:meth:`connect_client`).
        self.clients: list[socket.socket] = []
        self.selector: selectors.BaseSelector | None = None

    def connect_client(self) -> int:
        """A new client of this server, besides its daemon: a socket pair whose one end the
        server serves as it serves the daemon's (requests and their replies; notes go to the
        daemon alone); the descriptor of the other end is returned, to be sent to whoever
        asked (:class:`WithFds`). The client closing its end ends that client, not the
        server."""
        assert self.selector is not None
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.clients.append(mine)
        self.selector.register(mine, selectors.EVENT_READ)
        return theirs.detach()

    def drop_client(self, client: socket.socket) -> None:
        """A client closed its end: stop serving it."""
        if self.selector is not None:
            self.selector.unregister(client)
        self.clients.remove(client)
        client.close()

    def note(self, message: object) -> None:
        """Send the daemon a note of the server's own (read by :meth:`ForkServer.notes`)."""
        send_message(self._sock, (_NOTE, message, None))

    def fork(self, child: Callable[[], int], *, report: bool = False) -> int:
        """Fork a child that runs ``child()`` and exits with its result; with ``report``, its
        end is sent to the daemon as :class:`ChildExited`. The child has none of the
        server's descriptors to the daemon and default signal handling."""
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                gc.freeze()
                self._sock.close()
                for client in self.clients:
                    client.close()
                signal.set_wakeup_fd(-1)
                for fd in self.private_fds:
                    with contextlib.suppress(OSError):
                        os.close(fd)
                for signum in _DEFAULT_IN_CHILD:
                    signal.signal(signum, signal.SIG_DFL)
                code = child()
            except BaseException:
                traceback.print_exc(file=sys.stderr)
            finally:
                os._exit(code)
        if report:
            self._reported.add(pid)
        return pid

    def reap(self) -> None:
        """Reap every child that has exited; note the reported ones to the daemon."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self._reported:
                self._reported.discard(pid)
                send_message(self._sock, (_NOTE, ChildExited(pid, status), None))


def serve(
    sock: socket.socket,
    handlers: Mapping[str, Handler],
    on_exit: Callable[[ServerSide], None],
) -> NoReturn:
    """The fork server's life: answer requests, reap children, until the daemon goes."""
    code = 0
    server = ServerSide(sock)
    try:
        os.setsid()  # the terminal's ^C is for the daemon, which decides about its children
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
        selector = selectors.DefaultSelector()
        selector.register(sock, selectors.EVENT_READ)
        selector.register(wake_read, selectors.EVENT_READ)
        server.private_fds += [wake_read, wake_write, selector.fileno()]
        server.selector = selector
        # What the daemon held at the fork stays as it is: a collection here would touch
        # every object and copy the daemon's pages into this process one by one.
        gc.freeze()
        while True:
            for key, _events in selector.select():
                if key.fileobj == wake_read:
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake_read, 4096)
                    continue
                peer = key.fileobj
                assert isinstance(peer, socket.socket)
                try:
                    received = receive_message(peer)
                except Exception:
                    # What another client sent cannot end the server: that client is dropped.
                    if peer is sock:
                        raise
                    received = None
                if received is None:
                    if peer is sock:
                        _exit(server, on_exit, code)
                    server.drop_client(peer)
                    continue
                _answer(server, peer, handlers, *received)
            server.reap()
    except BaseException:
        traceback.print_exc(file=sys.stderr)
        code = 1
    _exit(server, on_exit, code)


def _exit(server: ServerSide, on_exit: Callable[[ServerSide], None], code: int) -> NoReturn:
    try:
        on_exit(server)
    except BaseException:
        traceback.print_exc(file=sys.stderr)
        code = 1
    os._exit(code)


def _answer(
    server: ServerSide,
    sock: socket.socket,
    handlers: Mapping[str, Handler],
    request: object,
    fds: list[int],
) -> None:
    if not (isinstance(request, tuple) and len(request) == 3):
        for fd in fds:
            os.close(fd)
        return
    number, operation, argument = request
    handler = handlers.get(operation)
    value: object = None
    error = None
    if handler is None:
        error = f"the fork server has no operation {operation!r}"
        for fd in fds:
            os.close(fd)
    else:
        try:
            value = handler(server, argument, fds)
        except Exception as failure:  # a request's failure is its reply, not the server's end
            error = f"{type(failure).__name__}: {failure}"
    fds_out: tuple[int, ...] = ()
    if isinstance(value, WithFds):
        fds_out = value.fds
        value = value.value
    try:
        if number:
            send_message(sock, (number, value, error), fds_out)
    finally:
        for fd in fds_out:
            os.close(fd)


# -- the daemon's side -----------------------------------------------------------------------


class ForkServer:
    """The daemon's end of one fork server (:func:`start_fork_server` makes it)."""

    def __init__(self, pid: int, sock: socket.socket, *, owner: bool = True) -> None:
        self.pid = pid
        self.sock = sock
        #: False for another client of a server its daemon owns (:meth:`ServerSide.
        #: connect_client`): it neither kills nor reaps the server, and gets no notes.
        self.owner = owner
        self._numbers = 0
        self._notes: deque[object] = deque()
        self.closed = False

    def fileno(self) -> int:
        """The socket's descriptor (for a selector: readable when notes arrive)."""
        return self.sock.fileno()

    def post(self, operation: str, argument: object, fds: Sequence[int] = ()) -> None:
        """Send a request whose reply nobody waits for (a failure is the server's to log)."""
        self._send((_NOTE, operation, argument), fds)

    def call(self, operation: str, argument: object, fds: Sequence[int] = ()) -> object:
        """Send a request and wait for its reply; ForkServerError when the handler failed
        or the server is gone. Notes that arrive meanwhile are kept for :meth:`notes`."""
        value, extra = self.call_with_fds(operation, argument, fds)
        for fd in extra:
            os.close(fd)
        return value

    def call_with_fds(
        self, operation: str, argument: object, fds: Sequence[int] = ()
    ) -> tuple[object, list[int]]:
        """As :meth:`call`, and the descriptors that came with the reply (the caller's)."""
        self._numbers += 1
        number = self._numbers
        self._send((number, operation, argument), fds)
        while True:
            received = self._receive(REPLY_SECONDS)
            if received is None:
                self._gone()
                raise ForkServerError(f"the fork server {self.pid} went away during {operation}")
            (answers, value, error), extra = received
            if answers == number:
                if error is not None:
                    for fd in extra:
                        os.close(fd)
                    raise ForkServerError(f"{operation}: {error}")
                return value, extra
            for fd in extra:
                os.close(fd)
            self._notes.append(value)

    def notes(self) -> Iterator[object]:
        """The notes waiting (children's ends), without blocking; a server that went away
        ends them and marks this end closed."""
        while self._notes:
            yield self._notes.popleft()
        while not self.closed:
            try:
                ready = self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except OSError:
                ready = b""
            if not ready:
                self._gone()
                return
            received = self._receive(REPLY_SECONDS)
            if received is None:
                self._gone()
                return
            (_number, note, _error), extra = received
            for fd in extra:
                os.close(fd)
            yield note

    def _send(self, request: tuple[int, str, object], fds: Sequence[int]) -> None:
        """Send ``request``, taking in the server's notes whenever the socket is full: the
        server may be blocked sending them, and neither side must wait for the other.

        The socket stays blocking; each send alone does not wait (MSG_DONTWAIT), which saves
        switching the socket's mode twice per request."""
        if self.closed:
            raise ForkServerError(f"the fork server {self.pid} is gone")
        payload = memoryview(encode(request))
        extra = list(fds)
        try:
            while payload:
                try:
                    sent = (
                        socket.send_fds(self.sock, [payload], extra, socket.MSG_DONTWAIT)
                        if extra
                        else self.sock.send(payload, socket.MSG_DONTWAIT)
                    )
                except BlockingIOError:
                    self._take_notes_while_full()
                    continue
                extra = []
                payload = payload[sent:]
        except OSError as error:
            self._gone()
            raise ForkServerError(f"the fork server {self.pid} is gone: {error}") from error

    def _take_notes_while_full(self) -> None:
        """Wait until the socket takes more or a note comes; keep the notes that came."""
        poller = select.poll()
        poller.register(self.sock, select.POLLIN | select.POLLOUT)
        events = poller.poll(1000)
        if not events or events[0][1] & select.POLLOUT or not events[0][1] & select.POLLIN:
            return
        received = self._receive(REPLY_SECONDS)
        if received is None:
            raise BrokenPipeError("the fork server closed its end")
        (_number, note, _error), unexpected = received
        for fd in unexpected:
            os.close(fd)
        self._notes.append(note)

    def _receive(self, timeout: float) -> tuple[tuple[int, object, str | None], list[int]] | None:
        """The server's next message: a reply or a note, ``(number, value, error)``."""
        try:
            received = receive_message(self.sock, time.monotonic() + timeout)
        except TimeoutError as error:
            self.kill()
            raise ForkServerError(
                f"the fork server {self.pid} did not answer within {timeout:g} s"
            ) from error
        except OSError:
            return None
        if received is None:
            return None
        message, fds = received
        if not (isinstance(message, tuple) and len(message) == 3):
            for fd in fds:
                os.close(fd)
            raise ForkServerError(f"the fork server {self.pid} sent {message!r}")
        return message, fds

    def _gone(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()
            self._reap(block=False)

    def _reap(self, block: bool) -> bool:
        if not self.owner:
            return True
        try:
            pid, _status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return True
        return pid == self.pid

    @property
    def alive(self) -> bool:
        return not self.closed

    @property
    def notes_waiting(self) -> bool:
        """Whether notes that came during a :meth:`call` wait (the socket may show nothing)."""
        return bool(self._notes)

    def kill(self) -> None:
        """End the server at once (its children live on); another client only closes its
        end."""
        if self.owner:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        self._gone()
        self._reap(block=True)

    def close(self, timeout: float = 10.0) -> None:
        """Close the daemon's end: the server cleans up and exits; killed after ``timeout``."""
        if self.closed:
            self._reap(block=True)
            return
        self.closed = True
        self.sock.close()
        if not self.owner:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._reap(block=False):
                return
            time.sleep(0.005)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self._reap(block=True)


def start_fork_server(
    handlers: Mapping[str, Handler],
    *,
    close_in_server: Callable[[], None] = lambda: None,
    on_exit: Callable[[ServerSide], None] = lambda server: None,
) -> ForkServer:
    """Fork a fork server that answers ``handlers``; ``close_in_server`` runs in it first
    (closing what the daemon holds that its children must not), ``on_exit`` when it ends.

    Fork it early, before the daemon starts any thread: the server and every child it forks
    are copies of the daemon as it is now. OSError when no process can be forked.
    """
    daemon_end, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        try:
            daemon_end.close()
            close_in_server()
        except BaseException:
            traceback.print_exc(file=sys.stderr)
            os._exit(1)
        serve(server_end, handlers, on_exit)
    server_end.close()
    return ForkServer(pid, daemon_end)


__all__ = [
    "MAX_FDS",
    "MAX_MESSAGE",
    "ChildExited",
    "ForkServer",
    "ForkServerError",
    "Handler",
    "ServerSide",
    "WithFds",
    "encode",
    "receive_message",
    "send_message",
    "serve",
    "start_fork_server",
]
