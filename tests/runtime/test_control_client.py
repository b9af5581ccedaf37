"""The blocking control client: it waits for a daemon whose listen backlog is full, and
reads answers as data."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from epcore.classad import ERROR, parse_ad
from epcore.runtime import framing
from epcore.runtime.control import ControlClient, ControlError, answer, reply_value


def _fill_backlog(path: Path) -> tuple[socket.socket, list[socket.socket]]:
    """A listener that accepts nothing, and enough connections to fill its backlog."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(0)
    waiting: list[socket.socket] = []
    while True:
        extra = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        extra.setblocking(False)
        try:
            extra.connect(str(path))
        except BlockingIOError:
            extra.close()
            return server, waiting
        waiting.append(extra)


def _serve_one_after(server: socket.socket, queued: list[socket.socket], delay: float) -> None:
    """After ``delay`` seconds, drop the queued connections and answer the next request."""
    threading.Event().wait(delay)
    for _ in queued:
        server.accept()[0].close()
    for extra in queued:
        extra.close()
    conn, _ = server.accept()
    with conn:
        request = parse_ad(framing.read_line(conn).decode())
        conn.sendall(framing.encode(answer(True, Seen=request.evaluate("Command"))))


def test_a_full_backlog_is_waited_for_until_the_daemon_accepts(tmp_path: Path) -> None:
    """A request to a daemon whose backlog is full succeeds once the daemon accepts again."""
    server, queued = _fill_backlog(tmp_path / "daemon.sock")
    worker = threading.Thread(target=_serve_one_after, args=(server, queued, 0.5))
    worker.start()
    try:
        reply = ControlClient(str(tmp_path / "daemon.sock"), timeout=10).call("Query")
    finally:
        worker.join(10)
        server.close()
    assert reply.evaluate("Seen") == "Query"


def test_a_backlog_full_past_the_timeout_is_a_control_error(tmp_path: Path) -> None:
    """A daemon that never accepts within the client's timeout gives a ControlError."""
    server, queued = _fill_backlog(tmp_path / "daemon.sock")
    try:
        with pytest.raises(ControlError, match="cannot reach the daemon"):
            ControlClient(str(tmp_path / "daemon.sock"), timeout=0.3).call("Query")
    finally:
        for extra in queued:
            extra.close()
        server.close()


def test_an_answer_is_read_as_data_without_the_function_table() -> None:
    """reply_value reads an answer's literals, lists and nested ads, and a function call in an
    answer is an error rather than a reason to load the built-in functions."""
    reply = parse_ad('[Ok = true; Ids = {"1.0", "1.1"}; Ads = {[A = 1]}; Call = strcat("a")]')
    assert reply_value(reply, "Ok") is True
    assert reply_value(reply, "Ids") == ["1.0", "1.1"]
    ads = reply_value(reply, "Ads")
    assert isinstance(ads, list) and ads[0].evaluate("A") == 1
    assert reply_value(reply, "Call") is ERROR
    assert reply.evaluate("Call") == "a"
