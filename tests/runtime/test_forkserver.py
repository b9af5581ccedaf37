"""The fork server: requests and replies, descriptors, children's ends, and its own end."""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.runtime.forkserver import (
    ChildExited,
    ForkServer,
    ForkServerError,
    ServerSide,
    WithFds,
    receive_message,
    send_message,
    start_fork_server,
)


def _wait_exit(server: ForkServer, pid: int, seconds: float = 10.0) -> ChildExited:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for note in server.notes():
            if isinstance(note, ChildExited) and note.pid == pid:
                return note
        time.sleep(0.01)
    raise AssertionError(f"no end reported for child {pid}")


def _gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ForkServer]:
    def echo(side: ServerSide, argument: object, fds: list[int]) -> object:
        for fd in fds:
            os.close(fd)
        return ("echo", argument, len(fds))

    def fail(side: ServerSide, argument: object, fds: list[int]) -> object:
        raise ValueError(f"bad argument {argument!r}")

    def run(side: ServerSide, argument: object, fds: list[int]) -> object:
        assert isinstance(argument, int)

        def child() -> int:
            # What the child holds: none of the server's descriptors to the daemon.
            (tmp_path / f"fds.{os.getpid()}").write_text(" ".join(os.listdir("/proc/self/fd")))
            return argument

        return side.fork(child, report=True)

    def write_to(side: ServerSide, argument: object, fds: list[int]) -> object:
        with os.fdopen(fds[0], "w") as handle:
            handle.write(str(argument))
        return None

    def connect(side: ServerSide, argument: object, fds: list[int]) -> object:
        return WithFds(None, (side.connect_client(),))

    (tmp_path / "before").write_text(" ".join(os.listdir("/proc/self/fd")))
    made = start_fork_server(
        {"echo": echo, "fail": fail, "run": run, "write_to": write_to, "connect": connect},
        on_exit=lambda side: (tmp_path / "ended").write_text("yes"),
    )
    try:
        yield made
    finally:
        made.close()


def test_a_request_gets_its_handlers_reply(server: ForkServer) -> None:
    """A call returns what the handler returned for the argument sent."""
    assert server.call("echo", {"a": [1, 2]}) == ("echo", {"a": [1, 2]}, 0)


def test_a_failing_handler_is_an_error_reply_and_the_server_goes_on(server: ForkServer) -> None:
    """A handler's exception reaches the caller as ForkServerError naming it; the server
    answers the next request."""
    with pytest.raises(ForkServerError, match="ValueError: bad argument 7"):
        server.call("fail", 7)
    with pytest.raises(ForkServerError, match="no operation 'nope'"):
        server.call("nope", None)
    assert server.call("echo", 1) == ("echo", 1, 0)


def test_descriptors_travel_with_a_request(server: ForkServer) -> None:
    """A descriptor sent with a request is the handler's to use (here: a pipe's write end)."""
    read, write = os.pipe()
    server.call("write_to", "through the pipe", [write])
    os.close(write)
    with os.fdopen(read) as handle:
        assert handle.read() == "through the pipe"


def test_a_reported_child_s_end_comes_as_a_note(server: ForkServer, tmp_path: Path) -> None:
    """A child forked with ``report`` is reaped by the server, and its exit status comes
    to the daemon; the child holds no descriptor of the server's socket."""
    pid = server.call("run", 3)
    assert isinstance(pid, int)
    note = _wait_exit(server, pid)
    assert os.waitstatus_to_exitcode(note.status) == 3
    fds = set((tmp_path / f"fds.{pid}").read_text().split())
    before = set((tmp_path / "before").read_text().split())
    # What the test process had before the server existed, and the one listdir opened: not
    # the socket pair's ends, not the server's own pipe and selector.
    assert len(fds - before) <= 1, fds - before


def _client(server: ForkServer) -> ForkServer:
    _value, (fd,) = server.call_with_fds("connect", None)
    return ForkServer(server.pid, socket.socket(fileno=fd), owner=False)


def test_another_client_is_served_as_the_daemon_and_its_end_is_its_own(
    server: ForkServer,
) -> None:
    """A client the server connected gets replies to its own requests; closing (or
    "killing") its end leaves the server serving the daemon."""
    client = _client(server)
    assert client.call("echo", "from the client") == ("echo", "from the client", 0)
    with pytest.raises(ForkServerError, match="ValueError"):
        client.call("fail", 1)
    assert server.call("echo", "from the daemon") == ("echo", "from the daemon", 0)
    client.kill()
    client.close()
    assert not client.alive
    assert server.call("echo", "still here") == ("echo", "still here", 0)
    assert _client(server).call("echo", 2) == ("echo", 2, 0)


def test_a_child_holds_no_client_s_socket(server: ForkServer, tmp_path: Path) -> None:
    """A child forked after a client connected holds none of the server's descriptors."""
    client = _client(server)
    pid = client.call("run", 0)
    assert isinstance(pid, int)
    _wait_exit(server, pid)  # its end is noted to the daemon, not to the client
    fds = set((tmp_path / f"fds.{pid}").read_text().split())
    before = set((tmp_path / "before").read_text().split())
    assert len(fds - before) <= 1, fds - before
    client.close()


def test_garbage_from_a_client_ends_that_client_alone(server: ForkServer) -> None:
    """A client that sends what is not a message is dropped; the daemon is still served."""
    client = _client(server)
    client.sock.sendall(b"\x00\x00\x00\x05junk!")
    with pytest.raises(ForkServerError):
        client.call("echo", 1)
    assert server.call("echo", "daemon") == ("echo", "daemon", 0)


def test_notes_that_come_during_a_call_are_kept(server: ForkServer) -> None:
    """A child's end that arrives while a call waits for its reply is not lost."""
    pid = server.call("run", 0)
    assert isinstance(pid, int)
    time.sleep(0.3)  # the child has ended and its note is on the socket
    assert server.call("echo", "after") == ("echo", "after", 0)
    assert server.notes_waiting
    assert _wait_exit(server, pid).pid == pid


def test_the_server_ends_when_the_daemons_end_closes(server: ForkServer, tmp_path: Path) -> None:
    """Closing the daemon's end makes the server run its ``on_exit`` and exit."""
    server.close()
    assert (tmp_path / "ended").read_text() == "yes"
    assert not server.alive
    with pytest.raises(ForkServerError, match="gone"):
        server.call("echo", 1)


def test_a_killed_server_is_noticed(server: ForkServer) -> None:
    """A server killed from outside shows as not alive once its notes are read, and a call
    to it fails with ForkServerError."""
    os.kill(server.pid, signal.SIGKILL)
    assert _gone(server.pid)
    assert list(server.notes()) == []
    assert not server.alive
    with pytest.raises(ForkServerError):
        server.call("echo", 1)


def test_a_server_started_before_a_thread_takes_a_lock_forks_children_that_can_use_it(
    tmp_path: Path,
) -> None:
    """The point of a fork server: a lock another thread of the daemon holds (here the
    logging handler's, held for the whole test) is free in the server's children, which
    were forked from a copy of the daemon made before the thread ran."""
    log_path = tmp_path / "log"
    handler = logging.FileHandler(log_path)
    log = logging.getLogger(f"test.forkserver.{os.getpid()}")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False

    def logs(side: ServerSide, argument: object, fds: list[int]) -> object:
        def child() -> int:
            log.info("the child logged")
            return 0

        return side.fork(child, report=True)

    server = start_fork_server({"logs": logs})
    holding = threading.Event()
    release = threading.Event()

    def hold() -> None:
        handler.acquire()
        holding.set()
        release.wait(30)
        handler.release()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert holding.wait(10)
        pid = server.call("logs", None)
        assert isinstance(pid, int)
        note = _wait_exit(server, pid)
        assert os.waitstatus_to_exitcode(note.status) == 0
        assert "the child logged" in log_path.read_text()
    finally:
        release.set()
        thread.join()
        server.close()
        handler.close()


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00\x00", b"\x00\x00\x00\x05abc", b"\xff\xff\xff\xff"],
    ids=["empty", "short header", "short body", "huge length"],
)
def test_a_truncated_or_oversized_message_is_the_end_or_an_error(data: bytes) -> None:
    """A message cut short reads as the end of the stream; a length over the limit is a
    ForkServerError, never an allocation of that size."""
    left, right = socket.socketpair()
    with left, right:
        left.sendall(data)
        left.shutdown(socket.SHUT_WR)
        if data.startswith(b"\xff"):
            with pytest.raises(ForkServerError, match="claims"):
                receive_message(right)
        else:
            assert receive_message(right) is None


def test_a_message_round_trips_with_its_descriptors() -> None:
    """What is sent is what is received, descriptors included."""
    left, right = socket.socketpair()
    read, write = os.pipe()
    with left, right:
        send_message(left, {"x": (1, "two")}, [write])
        received = receive_message(right)
    os.close(write)
    assert received is not None
    message, fds = received
    assert message == {"x": (1, "two")} and len(fds) == 1
    os.write(fds[0], b"!")
    os.close(fds[0])
    assert os.read(read, 1) == b"!"
    os.close(read)


def test_neither_side_waits_for_the_other_when_both_sockets_are_full() -> None:
    """A server blocked sending notes the daemon has not read, while the daemon sends it more
    requests than its socket holds, does not deadlock: the daemon takes the notes in while it
    waits to send, and none is lost."""
    chunk = b"x" * 100_000

    def flood(side: ServerSide, argument: object, fds: list[int]) -> object:
        assert isinstance(argument, int)
        for number in range(argument):
            side.note(("note", number, chunk))
        return None

    def swallow(side: ServerSide, argument: object, fds: list[int]) -> object:
        return None

    server = start_fork_server({"flood": flood, "swallow": swallow})
    previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the two sides deadlocked"))
    signal.alarm(60)
    try:
        server.post("flood", 40)
        for _ in range(40):
            server.post("swallow", chunk)
        assert server.call("swallow", None) is None
        numbers = [note[1] for note in server.notes() if isinstance(note, tuple)]
        assert numbers == list(range(40))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        server.close()
