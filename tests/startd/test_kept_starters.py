"""Starters that run their claims' successive jobs, through a real startd with cgroups v1."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import psutil
import pytest

from epcore.classad import parse_ad
from epcore.testing.startd import BASE_CONFIG, InProcessStartd, StartdProcess
from epcore.testing.system import SlotUser, open_up

pytestmark = pytest.mark.system

#: A job that writes where it ran: its sandbox (named for its starter) and its memory group.
JOB = """[ ClusterId = 12; ProcId = {proc}; Owner = "{owner}"; Cmd = "/bin/sh";
  Arguments = "-c 'echo $_CONDOR_SCRATCH_DIR > w.{proc}; cat /proc/self/cgroup >> w.{proc}'";
  Iwd = "{iwd}"; RequestCpus = 1; RequestMemory = 64; RequestDisk = 1024 ]"""


def _cgroup_dirs(name: str) -> list[str]:
    """The names of the job groups under BASE_CGROUP ``name``, in every v1 hierarchy."""
    found = []
    for controller in ("memory", "cpu", "cpuacct", "freezer", "pids"):
        root = Path("/sys/fs/cgroup") / controller / name
        with contextlib.suppress(FileNotFoundError):
            found.extend(p.name for p in root.iterdir() if p.is_dir())
    return found


def _base_cgroup(startd: StartdProcess) -> str:
    return startd.config_path.read_text().split("BASE_CGROUP = ", 1)[1].split("\n", 1)[0]


def _iwd(tmp_path: Path, user: SlotUser) -> Path:
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    os.chown(iwd, user.uid, user.gid)
    return iwd


def _where(iwd: Path, proc: int) -> tuple[str, str]:
    """The sandbox and the memory group job ``proc`` ran in."""
    lines = (iwd / f"w.{proc}").read_text().splitlines()
    memory = next(line.split(":", 2)[2] for line in lines if ":memory:" in line)
    return lines[0], memory.rsplit("/", 1)[-1]


def _first_job(startd: StartdProcess, user: SlotUser, iwd: Path) -> tuple[str, int]:
    """Claim slot1 for job 0 and run it to its end (the claim then idle); the ClaimId and
    the PID of the starter that ran it."""
    claim_id = startd.client.claim("slot1", parse_ad(JOB.format(proc=0, owner=user.name, iwd=iwd)))
    startd.client.activate(claim_id)
    startd.wait_for(lambda: len(startd.history()) == 1, 30, "the first job")
    startd.wait_for(lambda: "Claimed/Idle" in startd.places().values(), 10, "the claim idle")
    return claim_id, _starter_pid(_where(iwd, 0)[0])


def _run_two_jobs(startd: StartdProcess, user: SlotUser, iwd: Path) -> str:
    """Run jobs 0 and 1 one after the other on one claim of slot1; the ClaimId."""
    claim_id, _starter = _first_job(startd, user, iwd)
    startd.client.activate(claim_id, parse_ad(JOB.format(proc=1, owner=user.name, iwd=iwd)))
    startd.wait_for(lambda: len(startd.history()) == 2, 30, "the second job")
    return claim_id


def _starter_pid(sandbox: str) -> int:
    return int(sandbox.rsplit("_", 1)[1])


def test_a_claim_s_jobs_run_in_one_starter_each_in_groups_made_ahead(
    startd_factory, slot_users, tmp_path
) -> None:
    """The second job of a claim runs in the first job's starter (the same sandbox name),
    in groups of its own that the starter made while the first job ran; releasing the
    claim retires the starter, which leaves no group and no sandbox."""
    startd = startd_factory(cpus=2)
    user = slot_users[2]
    iwd = _iwd(tmp_path, user)
    claim_id = _run_two_jobs(startd, user, iwd)
    first_sandbox, first_group = _where(iwd, 0)
    second_sandbox, second_group = _where(iwd, 1)
    assert first_sandbox == second_sandbox
    starter = _starter_pid(first_sandbox)
    assert first_group != second_group
    assert second_group.endswith(f"_{starter}r1")  # made by the starter, not the zygote
    assert [r.evaluate("ExitCode") for r in startd.history()] == [0, 0]
    startd.client.release(claim_id)
    startd.wait_for(lambda: not psutil.pid_exists(starter), 10, "the starter to be retired")
    startd.wait_for(lambda: _cgroup_dirs(_base_cgroup(startd)) == [], 10, "no group left")
    assert list((startd.directory / "execute").iterdir()) == []
    assert "retiring starter" in startd.log()


def test_without_kept_starters_each_job_has_a_starter_of_its_own(
    startd_factory, slot_users, tmp_path
) -> None:
    """STARTER_KEEP_FOR_CLAIM = False: each job of a claim gets a new starter, as HTCondor's."""
    startd = startd_factory("STARTER_KEEP_FOR_CLAIM = False\n", cpus=2)
    user = slot_users[2]
    iwd = _iwd(tmp_path, user)
    _run_two_jobs(startd, user, iwd)
    assert _where(iwd, 0)[0] != _where(iwd, 1)[0]


def test_a_kept_starter_killed_between_jobs_leaves_its_next_groups_to_the_startd(
    startd_factory, slot_users, tmp_path
) -> None:
    """A kept starter killed with SIGKILL while it waits for the claim's next job leaves the
    groups it made for that job; the startd removes them, and the claim's next job gets a
    new starter."""
    startd = startd_factory(cpus=2)
    user = slot_users[2]
    iwd = _iwd(tmp_path, user)
    claim_id, starter = _first_job(startd, user, iwd)
    mark = f"_{starter}r"
    base = _base_cgroup(startd)
    startd.wait_for(lambda: any(mark in g for g in _cgroup_dirs(base)), 10, "the next groups")
    os.kill(starter, signal.SIGKILL)
    startd.wait_for(lambda: not any(mark in g for g in _cgroup_dirs(base)), 10, "groups gone")
    startd.client.activate(claim_id, parse_ad(JOB.format(proc=1, owner=user.name, iwd=iwd)))
    startd.wait_for(lambda: len(startd.history()) == 2, 30, "the second job")
    assert _starter_pid(_where(iwd, 1)[0]) != starter
    assert startd.history()[1].evaluate("ExitCode") == 0


def test_a_kept_starter_whose_startd_dies_exits_and_removes_its_next_groups(
    startd_factory, slot_users, tmp_path
) -> None:
    """A kept starter waiting for its claim's next job exits when its startd (and zygote)
    are killed, and removes the groups it made for that job itself."""
    startd = startd_factory(cpus=2)
    user = slot_users[2]
    iwd = _iwd(tmp_path, user)
    startd.run_job(JOB.format(proc=0, owner=user.name, iwd=iwd))
    startd.wait_for(lambda: len(startd.history()) == 1, 30, "the job")
    starter = _starter_pid(_where(iwd, 0)[0])
    base = _base_cgroup(startd)
    startd.wait_for(lambda: any(f"_{starter}r" in g for g in _cgroup_dirs(base)), 10, "groups")
    startd.kill9(with_zygote=True)
    startd.wait_for(lambda: not psutil.pid_exists(starter), 10, "the starter to exit")
    assert not any(f"_{starter}r" in g for g in _cgroup_dirs(base))


def test_a_hard_kill_sent_right_behind_the_next_job_stops_it(
    tmp_path, base_cgroup, slot_users
) -> None:
    """A hard kill the startd sends just after NEXT (the kept starter reads both at once)
    stops the next job at once, not when the startd next says something."""
    local = tmp_path / "local"
    local.mkdir()
    local.chmod(0o755)
    open_up(tmp_path)
    config = tmp_path / "condor_config"
    cgroup = f"{base_cgroup}/kept_hard_kill"
    config.write_text(BASE_CONFIG.format(local=local, cpus=2, memory=4096, cgroup=cgroup))
    user = slot_users[2]
    iwd = _iwd(tmp_path, user)
    embedded = InProcessStartd.open(str(config))
    try:
        startd = embedded.startd
        claim_id = startd.claim("slot1", parse_ad(JOB.format(proc=0, owner=user.name, iwd=iwd)))
        startd.activate(claim_id)
        embedded.turn_until(lambda: len(startd.results) == 1, 30, "the first job")
        handle = startd.starters.handles[claim_id]
        embedded.turn_until(lambda: handle.stage == "ready", 10, "the starter's READY")
        sleeper = JOB.format(proc=1, owner=user.name, iwd=iwd).replace(
            "cat /proc/self/cgroup >> w.1", "sleep 300"
        )
        # Stopped meanwhile, the starter finds both messages waiting and reads them at once.
        os.kill(handle.pid, signal.SIGSTOP)
        try:
            startd.activate(claim_id, parse_ad(sleeper))
            startd.vacate(handle.slot, fast=True)
        finally:
            os.kill(handle.pid, signal.SIGCONT)
        embedded.turn_until(lambda: len(startd.results) == 2, 20, "the killed job's end")
        assert startd.results[1].evaluate("JobOutcome") == "evicted"
        assert startd.results[1].evaluate("ExitSignal") == 9
        # The kept starter ran it (the job may be killed before it writes anything itself).
        starter_log = Path(f"{startd.paths.starter_log}.{handle.slot}").read_text()
        assert f"(pid:{handle.pid}) next job on the claim: 12.1" in starter_log
    finally:
        embedded.close()


def test_a_kept_starter_s_next_job_survives_a_restart_of_its_startd(
    startd_factory, slot_users, tmp_path
) -> None:
    """The second job of a kept starter, running when its startd is killed with SIGKILL,
    finishes under the next startd, which adopts the starter and retires it afterwards;
    once the claim is given back nothing of either job is left."""
    startd = startd_factory(cpus=2)
    user = slot_users[2]
    iwd = _iwd(tmp_path, user)
    claim_id, starter = _first_job(startd, user, iwd)
    slow = JOB.format(proc=1, owner=user.name, iwd=iwd).replace("-c 'echo", "-c 'sleep 3; echo")
    startd.client.activate(claim_id, parse_ad(slow))
    startd.wait_for(
        lambda: [entry.pid for entry in startd.saved_claims()] == [starter], 10, "the record"
    )
    startd.kill9()
    startd.start()
    startd.wait_for(lambda: len(startd.history()) == 2, 30, "the second job under the new startd")
    second = startd.history()[1]
    assert (second.evaluate("JobOutcome"), second.evaluate("ExitCode")) == ("exited", 0)
    assert _starter_pid(_where(iwd, 1)[0]) == starter
    startd.wait_for(lambda: not psutil.pid_exists(starter), 15, "the adopted starter to retire")
    startd.client.release(claim_id)
    startd.wait_for(lambda: _cgroup_dirs(_base_cgroup(startd)) == [], 10, "no group left")
    assert list((startd.directory / "execute").iterdir()) == []


def test_after_a_reconfiguration_the_claim_s_next_job_gets_a_new_starter(
    startd_factory, slot_users, tmp_path
) -> None:
    """A kept starter holds the configuration it was forked with: after ``reconfig`` it is
    retired and the claim's next job runs in a new starter."""
    startd = startd_factory(cpus=2)
    user = slot_users[2]
    iwd = _iwd(tmp_path, user)
    claim_id, first = _first_job(startd, user, iwd)
    startd.client.reconfig()
    startd.wait_for(lambda: not psutil.pid_exists(first), 10, "the kept starter to retire")
    startd.client.activate(claim_id, parse_ad(JOB.format(proc=1, owner=user.name, iwd=iwd)))
    startd.wait_for(lambda: len(startd.history()) == 2, 30, "the second job")
    assert _starter_pid(_where(iwd, 1)[0]) != first
    assert f"retiring starter {first} (the configuration changed)" in startd.log()
