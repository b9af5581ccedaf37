"""Forking starters: a starter runs nothing until the startd has recorded it."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from epcore.startd.starters import StarterHandle, StarterPool


def _pool(tmp_path: Path) -> StarterPool:
    return StarterPool(str(tmp_path / "startd_starters"), logging.getLogger("test.starters"))


def _reap(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


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

    handle = _pool(tmp_path).spawn("claim", "slot1", run, lambda: None, record)
    assert _reap(handle.pid) == 0
    assert seen == [handle.pid] and marker.read_text() == str(handle.pid)


def test_a_starter_whose_record_fails_runs_nothing(tmp_path: Path) -> None:
    """When ``record`` raises, the error reaches the caller, the forked starter exits
    without running its work and is reaped, and the pool does not know it."""
    marker = tmp_path / "ran"
    starters = _pool(tmp_path)
    forked: list[int] = []

    def record(handle: StarterHandle) -> None:
        forked.append(handle.pid)
        raise OSError(28, "No space left on device")

    def run() -> int:
        marker.write_text("ran")
        return 0

    with pytest.raises(OSError, match="No space"):
        starters.spawn("claim", "slot1", run, lambda: None, record)
    assert not marker.exists()
    assert starters.handles == {}
    with pytest.raises(ChildProcessError):
        os.waitpid(forked[0], os.WNOHANG)


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
            _pool(tmp_path).spawn("claim", "slot1", run, lambda: None, record)
        finally:
            os._exit(1)
    assert _reap(startd) == 0
    starter = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{starter}").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not marker.exists()
