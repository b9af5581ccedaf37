"""A startd killed with kill -9 while jobs run: the next one takes the jobs back."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.system

JOB = """[ ClusterId = 7; ProcId = {proc}; Owner = "{owner}"; Cmd = "/bin/sh";
  Arguments = "-c 'sleep 3; echo done {proc} > result.{proc}'"; Iwd = "{iwd}";
  RequestCpus = 0.5; RequestMemory = 64; RequestDisk = 1024 ]"""


def _cgroup_dirs(name: str) -> list[Path]:
    found = []
    for controller in ("memory", "cpu", "cpuacct", "freezer", "pids"):
        root = Path("/sys/fs/cgroup") / controller / name
        if root.exists():
            found.extend(p for p in root.rglob("*") if p.is_dir())
    return found


def test_jobs_survive_kill_9_of_the_startd(startd_factory, slot_users, tmp_path) -> None:
    """Five jobs running when the startd is killed with SIGKILL finish under the next startd:
    their slots come back Claimed/Busy, their results are recorded, nothing is left over."""
    startd = startd_factory(cpus=4)
    user = slot_users[0]
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    os.chown(iwd, user.uid, user.gid)
    for proc in range(5):
        startd.run_job(JOB.format(proc=proc, owner=user.name, iwd=iwd))
    busy = {name: place for name, place in startd.places().items() if place == "Claimed/Busy"}
    assert len(busy) == 5
    starters = [p.pid for p in psutil.Process(startd.process.pid).children()]
    assert len(starters) == 5
    startd.kill9()
    assert all(psutil.pid_exists(pid) for pid in starters)
    startd.start()
    places = startd.places()
    assert sorted(p for p in places.values() if p == "Claimed/Busy") == ["Claimed/Busy"] * 5
    startd.wait_for(lambda: len(startd.history()) == 5, 30, "five results in the history")
    results = {ad.evaluate("ProcId"): ad for ad in startd.history()}
    assert sorted(results) == [0, 1, 2, 3, 4]
    assert all(ad.evaluate("JobOutcome") == "exited" for ad in results.values())
    assert all(ad.evaluate("ExitCode") == 0 for ad in results.values())
    for proc in range(5):
        assert (iwd / f"result.{proc}").read_text() == f"done {proc}\n"
    startd.wait_for(lambda: not any(psutil.pid_exists(p) for p in starters), 15, "starters to exit")
    cgroup = startd.config_path.read_text().split("BASE_CGROUP = ", 1)[1].split("\n", 1)[0]
    assert _cgroup_dirs(cgroup) == []
    assert list((startd.directory / "execute").iterdir()) == []


def test_a_dead_starter_is_cleaned_up_after(startd_factory, slot_users, tmp_path) -> None:
    """When a starter is killed with SIGKILL mid-job, the startd records the job as evicted,
    kills what the job left in its cgroups, removes them and the sandbox, and frees the slot."""
    startd = startd_factory(cpus=2)
    user = slot_users[1]
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    os.chown(iwd, user.uid, user.gid)
    job = JOB.format(proc=0, owner=user.name, iwd=iwd).replace("sleep 3", "sleep 300")
    startd.run_job(job)
    startd.wait_for(
        lambda: any(p.username() == user.name for p in psutil.process_iter()), 10, "the job"
    )
    starter = psutil.Process(startd.process.pid).children()[0]
    starter.kill()
    startd.wait_for(lambda: len(startd.history()) == 1, 30, "the lost job's record")
    assert startd.history()[0].evaluate("JobOutcome") == "evicted"
    startd.wait_for(
        lambda: (
            not [
                p
                for p in psutil.process_iter(["username", "status"])
                if p.info["username"] == user.name and p.info["status"] != psutil.STATUS_ZOMBIE
            ]
        ),
        10,
        "the job's processes to be killed",
    )
    cgroup = startd.config_path.read_text().split("BASE_CGROUP = ", 1)[1].split("\n", 1)[0]
    assert _cgroup_dirs(cgroup) == []
    assert list((startd.directory / "execute").iterdir()) == []
    startd.wait_for(
        lambda: all(place != "Claimed/Busy" for place in startd.places().values()),
        10,
        "the slot to be free",
    )
