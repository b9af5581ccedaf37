"""The bounded request server: limits, fairness and back-off over a real Unix socket."""

from __future__ import annotations

import logging
import os
import resource
import selectors
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from epcore.classad import ClassAd
from epcore.runtime import framing
from epcore.runtime.connection_limits import ConnectionLimits
from epcore.runtime.connections import ACCEPT_BACKOFF, RequestServer
from epcore.runtime.control import ControlClient, ControlError, listen, request


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Harness:
    """A RequestServer on a real socket in a real selector, turned by hand.

    Each new connection belongs to the next uid of ``users`` (then uid 1000); the handler
    records ``(uid, Command)`` and answers ``Ok`` with the command.
    """

    def __init__(self, path: str, limits: ConnectionLimits, users: list[int]) -> None:
        self.path = path
        self.clock = Clock()
        self.users = list(users)
        self.handled: list[tuple[int, object]] = []
        self.selector = selectors.DefaultSelector()
        self.log = logging.getLogger(f"test_connections.{id(self)}")
        self.server: RequestServer[int] = RequestServer(
            self.handle,
            self.identify,
            lambda uid: uid,
            limits=limits,
            log=self.log,
            monotonic=self.clock,
        )
        self.server.open(listen(path), self.selector, "server")

    def identify(self, _sock: socket.socket) -> int:
        return self.users.pop(0) if self.users else 1000

    def handle(self, uid: int, ad: ClassAd) -> ClassAd:
        command = ad.evaluate("Command")
        self.handled.append((uid, command))
        reply = ClassAd()
        reply["Ok"] = True
        reply["Echo"] = command
        if command == "Big":
            reply["Blob"] = "x" * 4000
        return reply

    def turn(self, times: int = 1) -> None:
        for _ in range(times):
            for key, _events in self.selector.select(0.05):
                self.server.ready(key.fileobj)
            self.server.work()
            self.server.flush()

    def connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(5)
        sock.connect(self.path)
        self.turn()
        return sock

    def close(self) -> None:
        self.server.close()
        self.selector.close()


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Callable[..., Harness]]:
    """``make(users, **limits)``: a Harness whose connections belong to ``users`` in turn."""
    made: list[Harness] = []

    def factory(users: list[int] | None = None, **limits: Any) -> Harness:
        path = str(tmp_path / f"s{len(made)}")
        harness = Harness(path, ConnectionLimits(**limits), users or [])
        made.append(harness)
        return harness

    yield factory
    for harness in made:
        harness.close()


def _line(command: str, **arguments: object) -> bytes:
    return framing.encode(request(command, **arguments))


def _answers(sock: socket.socket, count: int) -> list[ClassAd]:
    data = b""
    while data.count(b"\n") < count:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return [framing.decode(line, None) for line in data.split(b"\n") if line.strip()]


def test_pipelined_requests_are_answered_in_order(make) -> None:
    """Several requests sent at once on one connection are each answered, in order."""
    harness = make()
    client = harness.connect()
    client.sendall(b"".join(_line(f"C{n}") for n in range(5)))
    harness.turn(3)
    assert [a.evaluate("Echo") for a in _answers(client, 5)] == [f"C{n}" for n in range(5)]


def test_users_are_served_round_robin(make) -> None:
    """A user whose requests wait is not served again before another user's waiting
    request: requests are taken one per user in turn."""
    harness = make(users=[1, 1, 2])
    flooders = [harness.connect(), harness.connect()]
    other = harness.connect()
    for sock in flooders:
        sock.sendall(b"".join(_line("Flood") for _ in range(20)))
    other.sendall(_line("Mine"))
    for _ in range(3):
        for key, _events in harness.selector.select(0.05):
            harness.server.ready(key.fileobj)
    harness.server.work()
    order = [uid for uid, _ in harness.handled]
    assert 2 in order[:2], order
    assert len(order) == 41


def test_an_over_long_request_gets_an_error_naming_the_knob(make) -> None:
    """A request longer than max_request is answered with an error naming
    POOL_MAX_REQUEST_SIZE and the connection is closed; nothing is handled."""
    harness = make(max_request=4096)
    client = harness.connect()
    client.sendall(b'[ Command = "x"; Blob = "' + b"y" * 10000)
    harness.turn(3)
    (reply,) = _answers(client, 1)
    assert reply.evaluate("Ok") is False
    assert "longer than 4096 bytes (POOL_MAX_REQUEST_SIZE)" in str(reply.evaluate("Error"))
    assert client.recv(100) == b""
    assert harness.handled == []
    assert harness.server.unread_total == 0


def test_unfinished_input_over_the_total_refuses_the_largest(make) -> None:
    """When all connections' unfinished input exceeds max_unread, the connection holding
    the most is refused naming POOL_MAX_UNREAD_INPUT; the others stay."""
    harness = make(max_unread=20000, max_request=100000)
    small = harness.connect()
    large = harness.connect()
    small.sendall(b'[ Command = "x"; A = "' + b"a" * 5000)
    harness.turn(2)
    large.sendall(b'[ Command = "x"; A = "' + b"a" * 18000)
    harness.turn(3)
    (reply,) = _answers(large, 1)
    assert "POOL_MAX_UNREAD_INPUT" in str(reply.evaluate("Error"))
    assert len(harness.server.connections) == 1
    small.sendall(b'"; ]\n')
    harness.turn(3)
    assert [a.evaluate("Echo") for a in _answers(small, 1)] == ["x"]


def test_connections_over_the_limits_are_refused_politely(make) -> None:
    """A user's connection beyond max_connections_per_user, and any beyond max_connections,
    is accepted, told why (naming the knob) and closed."""
    harness = make(users=[1, 1, 1, 2, 3], max_connections_per_user=2, max_connections=3)
    kept = [harness.connect(), harness.connect()]
    third = harness.connect()
    (reply,) = _answers(third, 1)
    assert "POOL_MAX_CONNECTIONS_PER_USER" in str(reply.evaluate("Error"))
    fourth = harness.connect()  # uid 2: within its own limit
    fifth = harness.connect()  # uid 3: over the total
    (reply,) = _answers(fifth, 1)
    assert "too many connections" in str(reply.evaluate("Error"))
    fourth.sendall(_line("Hi"))
    harness.turn(2)
    assert [a.evaluate("Echo") for a in _answers(fourth, 1)] == ["Hi"]
    assert len(kept) == 2 and harness.server.per_user == {1: 2, 2: 1}


def test_a_peer_that_does_not_read_is_held_back_then_dropped(make) -> None:
    """Requests of a connection whose unsent answers exceed max_unsent are not read; when
    its peer takes nothing for client_timeout seconds the connection is closed."""
    harness = make(max_unsent=1024, client_timeout=30.0)
    client = harness.connect()
    client.sendall(b"".join(_line("Big") for _ in range(500)))
    harness.turn(20)
    handled = len(harness.handled)
    assert 0 < handled < 500
    harness.turn(5)
    assert len(harness.handled) == handled
    harness.clock.now += 31
    harness.turn(2)
    assert harness.server.connections == {}


def test_an_idle_connection_is_closed_after_the_timeout(make) -> None:
    """A connection that sends nothing (or half a request) for client_timeout is closed."""
    harness = make(client_timeout=10.0)
    idle = harness.connect()
    idle.sendall(b'[ Command = "hal')
    harness.turn()
    harness.clock.now += 5
    harness.turn()
    assert len(harness.server.connections) == 1
    harness.clock.now += 6
    harness.turn()
    assert harness.server.connections == {}
    assert idle.recv(100) == b""


def test_out_of_descriptors_refuses_with_the_reserve_and_rests(make) -> None:
    """When accept fails with EMFILE, one waiting peer is refused through the reserved
    descriptor, the listener is not polled for ACCEPT_BACKOFF seconds, and afterwards the
    waiting peers are accepted."""
    harness = make()
    clients = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(6)]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    used = len(os.listdir("/proc/self/fd"))
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (used + 2, hard))
        for sock in clients:
            sock.settimeout(5)
            sock.connect(harness.path)
        harness.turn(2)
        assert not harness.server.listening
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    answers = []
    for sock in clients:
        sock.setblocking(False)
        try:
            answers.append(sock.recv(1000))
        except BlockingIOError:
            continue
    assert any(b"out of file descriptors" in a for a in answers), answers
    assert harness.server.timeout() <= ACCEPT_BACKOFF
    harness.clock.now += ACCEPT_BACKOFF + 0.1
    harness.turn(3)
    assert harness.server.listening
    assert len(harness.server.connections) == 5


def test_a_client_sending_an_over_long_request_reads_the_refusal(make) -> None:
    """A blocking ControlClient whose request is cut short by the server's refusal raises
    ControlError with the server's reason (naming the knob), not a broken pipe."""
    harness = make(max_request=64 * 1024)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            harness.turn()

    server = threading.Thread(target=serve)
    server.start()
    try:
        client = ControlClient(harness.path, timeout=10)
        with pytest.raises(ControlError, match=r"POOL_MAX_REQUEST_SIZE"):
            client.call("Query", Blob="x" * (4 * 1024 * 1024))
    finally:
        stop.set()
        server.join(10)
