"""The supervisor server: supervisors forked from a small process of their own."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from epcore.starter.launch import LaunchSpec
from epcore.starter.supervisor_server import SupervisorServer, wait_gone
from epcore.testing.system import wait_until

PATIENCE = 10.0
PATH_ENV = (("PATH", "/usr/bin:/bin"),)


@pytest.fixture
def supervisors() -> Iterator[SupervisorServer]:
    server = SupervisorServer()
    try:
        yield server
    finally:
        server.close()


def _spec(script: str, cwd: Path) -> LaunchSpec:
    return LaunchSpec(argv=("/bin/sh", "-c", script), environment=PATH_ENV, cwd=str(cwd))


@pytest.mark.system
def test_a_prepared_supervisor_runs_its_job(supervisors: SupervisorServer, tmp_path: Path) -> None:
    """A supervisor the server prepared starts the job it is handed and reports its exit;
    it is not a child of the process that asked for it, and is much smaller than this one."""
    prepared = supervisors.prepare((), ())
    assert prepared.pid not in {p.pid for p in psutil.Process().children()}
    size = psutil.Process(prepared.pid).memory_info().rss
    assert size < psutil.Process().memory_info().rss
    job = prepared.launch(_spec("echo ran > out; exit 3", tmp_path))
    status = job.wait(PATIENCE)
    assert status is not None and status.code == 3
    assert (tmp_path / "out").read_text() == "ran\n"
    job.close()
    assert wait_gone(prepared.pid)


@pytest.mark.system
def test_a_dead_server_is_started_again(supervisors: SupervisorServer, tmp_path: Path) -> None:
    """When the server was killed, the next request starts a new one."""
    first = supervisors.prepare((), ())
    first.abandon()
    server = supervisors._server
    assert server is not None
    os.kill(server.pid, signal.SIGKILL)
    assert wait_gone(server.pid)
    second = supervisors.prepare((), ())
    assert supervisors._server is not None and supervisors._server.pid != server.pid
    job = second.launch(_spec("exit 0", tmp_path))
    status = job.wait(PATIENCE)
    assert status is not None and status.code == 0
    job.close()


@pytest.mark.system
def test_an_abandoned_supervisor_is_gone_and_reaped(supervisors: SupervisorServer) -> None:
    """A supervisor given up unused exits, and its server reaps it (no zombie is left)."""
    prepared = supervisors.prepare((), ())
    prepared.abandon()
    assert wait_gone(prepared.pid)
    assert wait_until(lambda: not psutil.pid_exists(prepared.pid), PATIENCE)


@pytest.mark.system
def test_the_supervisors_of_a_closed_server_end(supervisors: SupervisorServer) -> None:
    """Closing the owner's end ends the server, and a supervisor still waiting for its job
    exits (its spec pipe's writer, the owner, is gone)."""
    prepared = supervisors.prepare((), ())
    prepared.forget()
    supervisors.close()
    assert wait_until(lambda: not psutil.pid_exists(prepared.pid), PATIENCE)


def test_wait_gone_of_no_such_process() -> None:
    """A process that does not exist is gone."""
    assert wait_gone(2**22 + 12345, 0.1)
