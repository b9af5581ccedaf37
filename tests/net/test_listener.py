"""The CEDAR listener with real sockets: good clients served while hostile ones are cut off."""

from __future__ import annotations

import logging
import random
import selectors
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Generator
from pathlib import Path

import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.net import commands
from epcore.net.client import query_collector
from epcore.net.codec import Writer
from epcore.net.conversation import Step, send
from epcore.net.dispatch import CommandContext, CommandTable
from epcore.net.frames import HEADER_SIZE, MAX_PACKET, header
from epcore.net.handshake import SecurityServer
from epcore.net.listener import CedarListener
from epcore.net.methods import default_registry

SERVER = """
ALLOW_READ = *
CEDAR_CLIENT_TIMEOUT = 0.5
CEDAR_MAX_CONNECTIONS = 48
CEDAR_MAX_REQUEST_SIZE = 65536
"""
SLOTS = [ClassAd({"Name": f"slot{n}@test", "Cpus": n}) for n in range(1, 6)]


class _Loop:
    """What a service sees of a loop: a selector (the test turns it by hand)."""

    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()

    def close_in_child(self) -> None:
        pass


def _answer(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
    reader = yield from context.receive("the query")
    query = reader.get_classad("the query")
    wanted = query.evaluate("Requirements")
    writer = context.stream.writer()
    for ad in SLOTS:
        if wanted is True:
            writer.put_int(1).put_classad(ad)
    writer.put_int(0)
    yield from send(writer)
    return None


def _listener(extra: str = "") -> tuple[CedarListener, _Loop]:
    config = Config.from_text(SERVER + extra, subsystem="COLLECTOR")
    table = CommandTable()
    table.register(commands.QUERY_STARTD_ADS, _answer)
    log = logging.getLogger("test.cedar.listener")
    security = SecurityServer(lambda: config, table.levels, methods=default_registry(), log=log)
    listener = CedarListener("127.0.0.1", 0, table, security, config=lambda: config, log=log)
    listener.throttled.period = 0.0  # every refusal reaches the log in a test
    loop = _Loop()
    listener.open(loop)
    return listener, loop


def _turn(listener: CedarListener, loop: _Loop) -> None:
    ready = loop.selector.select(min(0.05, listener.timeout()))
    listener.ready([(key.fileobj, key.data) for key, _ in ready])
    listener.tick()
    listener.flush()


def _send_and_linger(port: int, data: bytes, linger: float) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        try:
            sock.sendall(data)
            time.sleep(linger)
            sock.recv(4096)
        except OSError:
            pass


def _deep_ad() -> bytes:
    line = "A = " + "[ B = " * 3000 + "1" + " ]" * 3000
    body = (
        commands.DC_AUTHENTICATE.number.to_bytes(8, "big")
        + (1).to_bytes(8, "big")
        + line.encode()
        + b"\0\0\0"
    )
    return header(True, len(body)) + body


def _hostile(port: int, kind: int, rng: random.Random) -> None:
    if kind == 0:  # random bytes
        _send_and_linger(port, rng.randbytes(rng.randint(1, 200)), 0.1)
    elif kind == 1:  # an absurd length
        _send_and_linger(port, header(True, 2**31 - 1), 0.1)
    elif kind == 2:  # a truncated frame, then silence
        _send_and_linger(port, header(True, 100) + b"x" * 10, 1.0)
    elif kind == 3:  # a deeply nested ClassAd in the security policy
        _send_and_linger(port, _deep_ad(), 0.2)
    elif kind == 4:  # a half-finished handshake: the policy, then silence
        policy = ClassAd({"Command": 5, "AuthMethods": "FS", "Authentication": "REQUIRED"})
        body = Writer().put_int(commands.DC_AUTHENTICATE.number).put_classad(policy).bytes()
        _send_and_linger(port, header(True, len(body)) + body, 1.0)
    else:  # a message longer than the server takes, in small packets
        packets = b"".join(header(False, 4096) + bytes(4096) for _ in range(20))
        _send_and_linger(port, packets, 0.2)


def test_hostile_clients_never_stop_good_ones(caplog: pytest.LogCaptureFixture) -> None:
    """Random bytes, absurd lengths, truncated frames, deep ads and half handshakes from many
    connections at once: every good query is answered, held input stays bounded, every
    refusal is logged with its reason, and every connection ends."""
    listener, loop = _listener()
    port = listener.port
    client_config = Config.from_text("", subsystem="TOOL")
    answers: list[int] = []
    failures: list[BaseException] = []

    def good() -> None:
        for _ in range(15):
            try:
                ads = query_collector("127.0.0.1", port, 5, client_config)
                answers.append(len(ads))
            except BaseException as error:
                failures.append(error)

    rng = random.Random(22)
    threads = [threading.Thread(target=good)]
    threads += [
        threading.Thread(target=_hostile, args=(port, kind % 6, random.Random(rng.random())))
        for kind in range(60)
    ]
    bound = listener.limits.max_connections * (
        listener.limits.max_message + MAX_PACKET + HEADER_SIZE
    )
    with caplog.at_level(logging.INFO, logger="test.cedar.listener"):
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while any(thread.is_alive() for thread in threads) and time.monotonic() < deadline:
            _turn(listener, loop)
            held = sum(c.stream.framer.pending for c in listener.connections.values())
            assert held <= bound
            assert len(listener.connections) <= listener.limits.max_connections
        settle = time.monotonic() + 5
        while listener.connections and time.monotonic() < settle:
            _turn(listener, loop)
    listener.close()
    assert not failures, failures
    assert answers == [len(SLOTS)] * 15
    assert not listener.connections
    text = caplog.text
    assert "unrecognized packet header" in text
    assert "the most a packet may hold" in text
    assert "no progress for 0.5 s while waiting for" in text
    assert "nested too deeply" in text
    assert "message longer than the 65536 bytes allowed" in text


def test_connection_cap_refuses_the_excess(caplog: pytest.LogCaptureFixture) -> None:
    """Beyond CEDAR_MAX_CONNECTIONS a new connection is closed at once, and that is logged."""
    listener, loop = _listener("CEDAR_CLIENT_TIMEOUT = 60")
    socks = [socket.create_connection(("127.0.0.1", listener.port)) for _ in range(50)]
    try:
        with caplog.at_level(logging.WARNING, logger="test.cedar.listener"):
            for _ in range(20):
                _turn(listener, loop)
        assert len(listener.connections) == listener.limits.max_connections
        assert "(CEDAR_MAX_CONNECTIONS)" in caplog.text
    finally:
        for sock in socks:
            sock.close()
        listener.close()


def test_stashed_connection_runs_several_commands_until_dc_nop() -> None:
    """After a handler keeps the connection, more commands of the session follow, each number
    raw before its payload, until DC_NOP ends it."""
    config = Config.from_text(SERVER + "ALLOW_DAEMON = *", subsystem="COLLECTOR")
    seen: list[str] = []

    def update(context: CommandContext) -> Generator[Step, bytes | None, bool | None]:
        reader = yield from context.receive("the ad")
        seen.append(str(reader.get_classad().evaluate("Name")))
        return True

    table = CommandTable()
    table.register(commands.UPDATE_STARTD_AD, update)
    log = logging.getLogger("test.cedar.listener")
    security = SecurityServer(lambda: config, table.levels, methods=default_registry(), log=log)
    listener = CedarListener("127.0.0.1", 0, table, security, config=lambda: config, log=log)
    loop = _Loop()
    listener.open(loop)
    messages = [
        Writer().put_int(0).put_classad(ClassAd({"Name": "a"})).bytes(),
        Writer().put_int(0).put_classad(ClassAd({"Name": "b"})).bytes(),
        Writer().put_int(commands.DC_NOP.number).bytes(),
    ]
    with socket.create_connection(("127.0.0.1", listener.port)) as sock:
        for body in messages:
            sock.sendall(header(True, len(body)) + body)
        for _ in range(20):
            _turn(listener, loop)
    listener.close()
    assert seen == ["a", "b"]


def test_a_port_in_use_is_logged_and_the_process_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    """A port another process holds is an error in the log; the listener then serves nothing
    and the rest of the process runs on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        config = Config.from_text(SERVER, subsystem="COLLECTOR")
        table = CommandTable()
        log = logging.getLogger("test.cedar.listener")
        security = SecurityServer(lambda: config, table.levels, methods=default_registry(), log=log)
        port = holder.getsockname()[1]
        listener = CedarListener("127.0.0.1", port, table, security, config=lambda: config, log=log)
        with caplog.at_level(logging.ERROR, logger="test.cedar.listener"):
            listener.open(_Loop())
        assert listener.sock is None
        assert f"CEDAR: cannot listen on 127.0.0.1:{port}" in caplog.text
        listener.tick()
        listener.close()


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss to read the listen queue")
@pytest.mark.parametrize(("extra", "backlog"), [("", 4096), ("SOCKET_LISTEN_BACKLOG = 64\n", 64)])
def test_the_listen_queue_is_socket_listen_backlog(extra: str, backlog: int) -> None:
    """The listening socket's queue is SOCKET_LISTEN_BACKLOG, HTCondor's 4096 by default (a
    burst of thousands of hosts' connections waits there while the loop is busy)."""
    listener, _ = _listener(extra)
    try:
        shown = subprocess.run(
            ["ss", "-ltnH", f"sport = :{listener.port}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        # State, Recv-Q, Send-Q (the backlog of a listening socket), local address...
        assert int(shown[2]) == min(backlog, int(Path("/proc/sys/net/core/somaxconn").read_text()))
    finally:
        listener.close()
