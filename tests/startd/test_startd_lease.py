"""The claim's lease between a startd and its starters across a ``kill -9`` of the startd:
a startd back within the lease finds its starter and the job's end; past the lease the
starter has ended the job and exited, and the next startd records the job as lost."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

from epcore.runtime.persist import read_claims
from epcore.starter.lifecycle import LEASE_KILL_GRACE
from epcore.testing.system import user_processes

pytestmark = pytest.mark.system

JOB = """[ ClusterId = 9; ProcId = 0; Owner = "{owner}"; Cmd = "/bin/sh";
  Arguments = "-c 'sleep {seconds}; echo done > result'"; Iwd = "{iwd}";
  JobLeaseDuration = {lease}; RequestCpus = 1; RequestMemory = 64; RequestDisk = 1024 ]"""
#: What a loaded machine may add to a wait.
SLACK_SECONDS = 15.0


def _iwd(tmp_path: Path, uid: int, gid: int) -> Path:
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    os.chown(iwd, uid, gid)
    return iwd


def _starter(startd) -> int:
    claims = read_claims(str(startd.directory / "spool" / "startd_claims"))
    assert len(claims) == 1
    return claims[0].pid


def test_a_startd_back_within_the_lease_finds_its_starter(
    startd_factory, slot_users, tmp_path: Path
) -> None:
    """With a 30 s lease, a startd killed and started again at once takes its starter back,
    and the job's end (exited, its output written) reaches it."""
    startd = startd_factory(cpus=2)
    user = slot_users[0]
    iwd = _iwd(tmp_path, user.uid, user.gid)
    startd.run_job(JOB.format(owner=user.name, iwd=iwd, seconds=6, lease=30))
    startd.wait_for(lambda: "Claimed/Busy" in startd.places().values(), 20, "the job to run")
    starter = _starter(startd)
    startd.kill9()
    startd.start()
    startd.wait_for(lambda: len(startd.history()) == 1, 30 + SLACK_SECONDS, "the job's end")
    assert startd.history()[0].evaluate("JobOutcome") == "exited"
    assert (iwd / "result").read_text() == "done\n"
    assert "took back starter" in startd.log()
    starter_log = "".join(p.read_text() for p in (startd.directory / "log").glob("StarterLog*"))
    assert "no reconnect from the startd" not in starter_log
    startd.wait_for(lambda: not psutil.pid_exists(starter), 15, "the starter to exit")


def test_past_the_lease_the_starter_ends_the_job_and_exits(
    startd_factory, slot_users, tmp_path: Path
) -> None:
    """With a 4 s lease and no startd, the starter soft-kills its job, exits saying why,
    and leaves no process; the next startd records the job as lost."""
    startd = startd_factory(cpus=2)
    user = slot_users[1]
    iwd = _iwd(tmp_path, user.uid, user.gid)
    startd.run_job(JOB.format(owner=user.name, iwd=iwd, seconds=300, lease=4))
    startd.wait_for(lambda: "Claimed/Busy" in startd.places().values(), 20, "the job to run")
    startd.wait_for(lambda: bool(user_processes(user.name)), 20, "the job's process")
    startd.kill9()
    within = 4 + LEASE_KILL_GRACE + SLACK_SECONDS
    startd.wait_for(
        lambda: not startd.processes() and not user_processes(user.name),
        within,
        "the starter, its supervisors and the job to be gone",
    )
    starter_log = "".join(p.read_text() for p in (startd.directory / "log").glob("StarterLog*"))
    assert "no reconnect from the startd for 4 s (the claim's lease): ending the job" in starter_log
    startd.start()
    startd.wait_for(lambda: len(startd.history()) == 1, 30, "the lost job's record")
    assert startd.history()[0].evaluate("JobOutcome") == "evicted"
    assert not (iwd / "result").exists()
