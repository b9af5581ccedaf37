"""Starting starters from a fork server: a starter runs nothing until the startd has
recorded it, and its end is reported by the fork server."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from epcore.runtime.forkserver import ChildExited, ForkServer, ServerSide, start_fork_server
from epcore.startd.starters import StarterHandle, StarterPool, wait_for_go


def _pool(tmp_path: Path) -> StarterPool:
    return StarterPool(str(tmp_path / "startd_starters"), logging.getLogger("test.starters"))


def _server(run: Callable[[], int]) -> ForkServer:
    """A fork server whose ``start`` forks a starter that runs ``run`` once told to go."""

    def start(side: ServerSide, argument: object, fds: list[int]) -> object:
        go_read = fds[0]
        try:
            return side.fork(lambda: run() if wait_for_go(go_read) else 1, report=True)
        finally:
            os.close(go_read)

    return start_fork_server({"start": start})


def _starting(server: ForkServer) -> Callable[[int], int]:
    def start(go_read: int) -> int:
        pid = server.call("start", None, [go_read])
        assert isinstance(pid, int)
        return pid

    return start


def _end(server: ForkServer, pid: int) -> int:
    """The exit code of ``pid`` as its fork server reports it."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for note in server.notes():
            if isinstance(note, ChildExited) and note.pid == pid:
                return os.waitstatus_to_exitcode(note.status)
        time.sleep(0.01)
    raise AssertionError(f"no end reported for starter {pid}")


def test_a_starter_runs_once_it_is_recorded(tmp_path: Path) -> None:
    """The starter's work starts only after ``record`` returned, which saw its PID."""
    marker = tmp_path / "ran"
    seen: list[int] = []

    def record(handle: StarterHandle) -> None:
        time.sleep(0.2)
        assert not marker.exists()
        seen.append(handle.pid)

    def run() -> int:
        marker.write_text(str(os.getpid()))
        return 0

    server = _server(run)
    try:
        handle = _pool(tmp_path).spawn("claim", "slot1", _starting(server), server.pid, record)
        assert _end(server, handle.pid) == 0
    finally:
        server.close()
    assert seen == [handle.pid] and marker.read_text() == str(handle.pid)


def test_a_starter_s_reported_end_is_seen_once(tmp_path: Path) -> None:
    """The end its fork server reports makes the starter gone, once."""
    server = _server(lambda: 0)
    starters = _pool(tmp_path)
    try:
        handle = starters.spawn("claim", "slot1", _starting(server), server.pid)
        _end(server, handle.pid)
    finally:
        server.close()
    starters.child_exited(handle.pid)
    assert starters.exited() == [handle] and handle.gone
    assert starters.exited() == []


def test_an_orphaned_starter_is_watched_by_its_pid(tmp_path: Path) -> None:
    """When its fork server is gone, a starter still running is not taken for ended; once
    it exits, its PID shows it."""
    release = tmp_path / "release"

    def run() -> int:
        while not release.exists():
            time.sleep(0.01)
        return 0

    server = _server(run)
    starters = _pool(tmp_path)
    handle = starters.spawn("claim", "slot1", _starting(server), server.pid)
    server.kill()
    starters.orphan(server.pid)
    assert handle.parent is None
    assert starters.exited() == []
    release.write_text("go")
    deadline = time.monotonic() + 10
    while not starters.exited() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert handle.gone


def test_a_starter_whose_record_fails_runs_nothing(tmp_path: Path) -> None:
    """When ``record`` raises, the error reaches the caller, the forked starter exits
    without running its work, and the pool does not know it."""
    marker = tmp_path / "ran"
    starters = _pool(tmp_path)
    forked: list[int] = []

    def record(handle: StarterHandle) -> None:
        forked.append(handle.pid)
        raise OSError(28, "No space left on device")

    def run() -> int:
        marker.write_text("ran")
        return 0

    server = _server(run)
    try:
        with pytest.raises(OSError, match="No space"):
            starters.spawn("claim", "slot1", _starting(server), server.pid, record)
        assert _end(server, forked[0]) == 1
    finally:
        server.close()
    assert not marker.exists()
    assert starters.handles == {}


def test_a_starter_whose_startd_dies_before_recording_it_runs_nothing(tmp_path: Path) -> None:
    """A startd that dies (here: exits at once) between the fork and its record leaves a
    starter that exits without running its work."""
    marker = tmp_path / "ran"
    pid_file = tmp_path / "starter_pid"

    def record(handle: StarterHandle) -> None:
        pid_file.write_text(str(handle.pid))
        os._exit(0)  # the startd is gone before its record is written

    def run() -> int:
        marker.write_text("ran")
        return 0

    startd = os.fork()
    if startd == 0:  # pragma: no cover - the short-lived startd
        try:
            server = _server(run)
            _pool(tmp_path).spawn("claim", "slot1", _starting(server), server.pid, record)
        finally:
            os._exit(1)
    _, status = os.waitpid(startd, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    starter = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{starter}").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not marker.exists()
