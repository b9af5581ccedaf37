"""A small fork server of job supervisors: a fresh interpreter holding only the launch code.

A supervisor forks its job, and a prepared one is itself forked ahead of its job (see
:mod:`epcore.startd.prepare`). Forked from the startd's zygote, each would be a copy of a
process holding the whole startd (45 MB here), and both forks, the copy-on-write faults after
them and the teardown at exit cost in proportion. This server is exec'd, not forked: it holds
the launch code and little else (about half the zygote's memory), and it forks the
supervisors. Its one request, ``prepare``, forks a supervisor that joins the given cgroups
and waits for its job (:func:`epcore.starter.launch_child.prepared_main`); the reply carries
the supervisor's PID and its two pipes (the spec pipe's write end, the report pipe's read
end), which become a :class:`~epcore.starter.launch.PreparedSupervisor`. The server reaps
the supervisors; it exits when its owner's end of the socket closes.

``connect`` gives its owner a socket of another client, served as the owner's: the zygote
asks for one for each starter that runs its claim's successive jobs, which then has its
next jobs' supervisors made here too (:mod:`epcore.starter.claim_loop`).
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import sys
import time

import attrs

from epcore.runtime.forkserver import (
    ForkServer,
    ForkServerError,
    Handler,
    ServerSide,
    WithFds,
    serve,
)
from epcore.starter.launch import PreparedSupervisor
from epcore.starter.launch_child import Libc, prepared_main

#: The descriptor the server's end of the socket pair has in the new process.
SERVER_FD = 3
_ENTRY = "from epcore.starter.supervisor_server import main; main()"
#: What the server's command line says before its owner's.
SERVER_MARK = "--supervisor-server-of"
#: How long giving up a supervisor waits for it to be gone (its groups can go only then).
GONE_SECONDS = 10.0


@attrs.frozen
class PrepareRequest:
    """Fork a supervisor that joins ``join_files`` now and moves to ``leave_files`` once its
    job runs."""

    join_files: tuple[str, ...]
    leave_files: tuple[str, ...]


def _prepare(libc: Libc, max_fd: int) -> Handler:
    def prepare(side: ServerSide, request: object, fds: list[int]) -> object:
        assert isinstance(request, PrepareRequest)
        for fd in fds:
            os.close(fd)
        spec_r, spec_w = os.pipe()
        report_r, report_w = os.pipe()
        try:

            def supervisor() -> int:
                os.close(spec_w)
                os.close(report_r)
                prepared_main(
                    request.join_files, request.leave_files, libc, report_w, spec_r, max_fd
                )

            pid = side.fork(supervisor)
        except BaseException:
            for fd in (spec_r, spec_w, report_r, report_w):
                os.close(fd)
            raise
        os.close(spec_r)
        os.close(report_w)
        return WithFds(pid, (spec_w, report_r))

    return prepare


def main() -> None:
    """The server's process (started by :class:`SupervisorServer`)."""
    libc = Libc()
    max_fd = os.sysconf("SC_OPEN_MAX")
    sock = socket.socket(fileno=SERVER_FD)
    handlers = {"prepare": _prepare(libc, max_fd), "connect": _connect}
    serve(sock, handlers, lambda side: None)


def _connect(side: ServerSide, request: object, fds: list[int]) -> object:
    for fd in fds:
        os.close(fd)
    return WithFds(None, (side.connect_client(),))


class SupervisorServer:
    """The owner's end: started on first use, started again when it died. ``attached``: the
    end of another client of a server someone else owns (:meth:`client`)."""

    def __init__(self, attached: ForkServer | None = None) -> None:
        self._server = attached

    def client(self) -> SupervisorServer:
        """Another client of this server (started first if need be), for a process forked
        from the owner: its requests are served as the owner's, and it never ends the
        server. OSError or ForkServerError when there is none to be had."""
        if self._server is None or not self._server.alive:
            self._server = self._start()
        _value, fds = self._server.call_with_fds("connect", None)
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise ForkServerError("the supervisor server gave no client socket")
        os.set_inheritable(fds[0], False)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fds[0])
        return SupervisorServer(ForkServer(self._server.pid, sock, owner=False))

    def _start(self) -> ForkServer:
        owner_end, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        if server_end.fileno() == SERVER_FD:
            # dup2 onto itself keeps close-on-exec: the descriptor must survive the exec.
            os.set_inheritable(SERVER_FD, True)
        try:
            pid = os.posix_spawn(
                sys.executable,
                # Not ``-m``: run as __main__, the module's classes would not be the ones
                # its requests unpickle to. The owner's command line follows, unused, so
                # that ps shows whose server it is (and its daemon's configuration file).
                [sys.executable, "-c", _ENTRY, SERVER_MARK, *sys.argv],
                os.environ,
                file_actions=[(os.POSIX_SPAWN_DUP2, server_end.fileno(), SERVER_FD)],
            )
        except OSError:
            owner_end.close()
            raise
        finally:
            server_end.close()
        return ForkServer(pid, owner_end)

    def prepare(
        self, join_files: tuple[str, ...], leave_files: tuple[str, ...]
    ) -> PreparedSupervisor:
        """A supervisor inside ``join_files``' groups, waiting for its job (OSError or
        ForkServerError when none can be made)."""
        request = PrepareRequest(join_files, leave_files)
        for attempt in (1, 2):
            if self._server is None or not self._server.alive:
                self._server = self._start()
            try:
                pid, fds = self._server.call_with_fds("prepare", request)
            except ForkServerError:
                if attempt == 2 or self._server.alive:
                    raise
                continue
            if not isinstance(pid, int) or len(fds) != 2:
                for fd in fds:
                    os.close(fd)
                raise ForkServerError(f"the supervisor server answered {pid!r}")
            for fd in fds:
                os.set_inheritable(fd, False)
            return PreparedSupervisor(pid, fds[0], fds[1])
        raise AssertionError("unreachable")

    def close_in_child(self) -> None:
        """In a process forked from the owner: the socket is the owner's alone (the server
        must see it close when the owner goes)."""
        if self._server is not None and not self._server.closed:
            self._server.sock.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None


def wait_gone(pid: int, seconds: float = GONE_SECONDS) -> bool:
    """Wait until process ``pid`` (not a child of ours) is gone or a zombie; False when it
    is still running after ``seconds``."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except OSError:
        pidfd = -1
    try:
        if pidfd >= 0:
            readable, _, _ = select.select([pidfd], [], [], seconds)
            return bool(readable)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
                    if handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                        return True
                time.sleep(0.005)
                continue
            return True
        return False
    finally:
        if pidfd >= 0:
            os.close(pidfd)
