"""The supervisor server: supervisors forked from a small process of their own."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from launch_support import PATIENCE, fake_starter, gone, kill_starter_and_check_the_job_ends, shell

from epcore.starter.supervisor_server import SupervisorServer, wait_gone
from epcore.testing.system import wait_until


@pytest.fixture
def supervisors() -> Iterator[SupervisorServer]:
    server = SupervisorServer()
    try:
        yield server
    finally:
        server.close()


@pytest.mark.system
def test_a_prepared_supervisor_runs_its_job(supervisors: SupervisorServer, tmp_path: Path) -> None:
    """A supervisor the server prepared starts the job it is handed and reports its exit;
    it is not a child of the process that asked for it, and is much smaller than this one."""
    prepared = supervisors.prepare((), ())
    assert prepared.pid not in {p.pid for p in psutil.Process().children()}
    size = psutil.Process(prepared.pid).memory_info().rss
    assert size < psutil.Process().memory_info().rss
    job = prepared.launch(shell("echo ran > out; exit 3", tmp_path))
    status = job.wait(PATIENCE)
    assert status is not None and status.code == 3
    assert (tmp_path / "out").read_text() == "ran\n"
    job.close()
    assert wait_gone(prepared.pid)


@pytest.mark.system
def test_a_client_of_the_server_has_supervisors_made_for_it(
    supervisors: SupervisorServer, tmp_path: Path
) -> None:
    """Another client of the owner's server (a kept starter's) has supervisors prepared by
    the same server; its end closing leaves the server to its owner."""
    client = supervisors.client()
    prepared = client.prepare((), ())
    owner = supervisors._server
    assert owner is not None and client._server is not None
    assert client._server.pid == owner.pid
    job = prepared.launch(shell("exit 4", tmp_path))
    status = job.wait(PATIENCE)
    assert status is not None and status.code == 4
    job.close()
    client.close()
    assert owner.alive and psutil.pid_exists(owner.pid)
    again = supervisors.prepare((), ())
    again.abandon()
    assert wait_gone(again.pid)


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
    job = second.launch(shell("exit 0", tmp_path))
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


@pytest.mark.system
def test_a_killed_starter_leaves_nothing_of_a_prepared_supervisor(
    supervisors: SupervisorServer, tmp_path: Path
) -> None:
    """A prepared supervisor handed to a starter kills the job and exits when that starter is
    killed, though the process that asked for it and the server that forked it live on."""
    prepared = supervisors.prepare((), ())
    starter = fake_starter(tmp_path, prepared.launch)
    prepared.forget()  # as the startd does once the starter has it
    assert kill_starter_and_check_the_job_ends(tmp_path, starter) == prepared.pid
    assert supervisors._server is not None and supervisors._server.alive


@pytest.mark.system
def test_a_prepared_supervisor_ends_with_its_owner_killed(tmp_path: Path) -> None:
    """A prepared supervisor whose owner (a startd) is killed before handing it to a starter
    exits: the owner held its spec pipe's only writer."""
    pipe_r, pipe_w = os.pipe()
    startd = os.fork()
    if startd == 0:  # pragma: no cover - the fake startd
        try:
            os.close(pipe_r)
            os.write(pipe_w, str(SupervisorServer().prepare((), ()).pid).encode())
            signal.pause()
        finally:
            os._exit(1)
    os.close(pipe_w)
    supervisor = int(os.read(pipe_r, 64))
    os.close(pipe_r)
    assert not gone(supervisor)
    os.kill(startd, signal.SIGKILL)
    os.waitpid(startd, 0)
    assert wait_until(lambda: gone(supervisor), PATIENCE), "the supervisor outlived its owner"


def test_wait_gone_of_no_such_process() -> None:
    """A process that does not exist is gone."""
    assert wait_gone(2**22 + 12345, 0.1)
