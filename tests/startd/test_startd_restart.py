"""A startd killed with kill -9 while jobs run: the next one takes the jobs back."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import psutil
import pytest

from epcore.classad import parse_ad
from epcore.runtime.persist import read_claims
from epcore.testing.system import user_processes

pytestmark = pytest.mark.system

JOB = """[ ClusterId = 7; ProcId = {proc}; Owner = "{owner}"; Cmd = "/bin/sh";
  Arguments = "-c 'sleep 8; echo done {proc} > result.{proc}'"; Iwd = "{iwd}";
  RequestCpus = 0.5; RequestMemory = 64; RequestDisk = 1024 ]"""


def _cgroup_dirs(name: str) -> list[Path]:
    """The job groups under BASE_CGROUP ``name`` (the startd's zygote may be removing some
    while they are listed)."""
    found = []
    for controller in ("memory", "cpu", "cpuacct", "freezer", "pids"):
        root = Path("/sys/fs/cgroup") / controller / name
        with contextlib.suppress(FileNotFoundError):
            found.extend(p for p in root.iterdir() if p.is_dir())
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
    # The starters and the job supervisors prepared for them are the startd's zygote's children.
    claims = read_claims(str(startd.directory / "spool" / "startd_claims"))
    starters = [entry.pid for entry in claims]
    assert len(starters) == 5
    (zygote,) = startd.zygote_pids()
    assert set(starters) <= {p.pid for p in psutil.Process(zygote).children()}
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
    # The claims stay (a schedd would run more jobs on them): give them back.
    for ad in results.values():
        startd.client.release(ad.evaluate("ClaimId"))
    startd.wait_for(
        lambda: all(p == "Unclaimed/Idle" for p in startd.places().values()), 15, "free slots"
    )
    cgroup = startd.config_path.read_text().split("BASE_CGROUP = ", 1)[1].split("\n", 1)[0]
    # The zygote removes the next jobs' prepared groups as it gets to the startd's word.
    startd.wait_for(lambda: _cgroup_dirs(cgroup) == [], 10, "the prepared groups to go")
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
    claim_id = startd.run_job(job)
    startd.wait_for(
        # process_iter's attribute form: a process that ends meanwhile is no error.
        lambda: any(p.info["username"] == user.name for p in psutil.process_iter(["username"])),
        10,
        "the job",
    )
    (entry,) = read_claims(str(startd.directory / "spool" / "startd_claims"))
    psutil.Process(entry.pid).kill()
    startd.wait_for(lambda: len(startd.history()) == 1, 30, "the lost job's record")
    assert startd.history()[0].evaluate("JobOutcome") == "evicted"
    startd.wait_for(
        lambda: user_processes(user.name) == [],
        10,
        "the job's processes to be killed",
    )
    cgroup = startd.config_path.read_text().split("BASE_CGROUP = ", 1)[1].split("\n", 1)[0]
    # The claim stays, with its next job's groups prepared; once it is given back, none is left.
    startd.client.release(claim_id)
    startd.wait_for(lambda: _cgroup_dirs(cgroup) == [], 10, "every job group to go")
    assert list((startd.directory / "execute").iterdir()) == []
    startd.wait_for(
        lambda: all(place != "Claimed/Busy" for place in startd.places().values()),
        10,
        "the slot to be free",
    )


def test_a_claim_is_prepared_and_stale_groups_are_swept(
    startd_factory, slot_users, tmp_path
) -> None:
    """A claim gets its job's cgroups and a supervisor inside them before activation (the
    job then starts inside them); groups left by a startd killed with its zygote are
    removed by the next startd. (A starter per job: a kept starter makes its claim's next
    job ready itself, and removes those groups when its startd goes; test_kept_starters.)"""
    startd = startd_factory("STARTER_KEEP_FOR_CLAIM = False\n", cpus=2)
    user = slot_users[2]
    cgroup = startd.config_path.read_text().split("BASE_CGROUP = ", 1)[1].split("\n", 1)[0]
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    os.chown(iwd, user.uid, user.gid)
    job = (
        f'[ ClusterId = 8; ProcId = 0; Owner = "{user.name}"; Cmd = "/bin/sh";'
        f' Arguments = "-c \'cat /proc/self/cgroup > groups\'"; Iwd = "{iwd}";'
        " RequestCpus = 1; RequestMemory = 64; RequestDisk = 1024 ]"
    )
    claim_id = startd.client.claim("slot1", parse_ad(job))
    startd.wait_for(lambda: len(_cgroup_dirs(cgroup)) == 5, 10, "the prepared groups")
    startd.client.activate(claim_id)
    startd.wait_for(lambda: len(startd.history()) == 1, 30, "the job")
    memory_group = next(
        line.split(":", 2)[2]
        for line in (iwd / "groups").read_text().splitlines()
        if ":memory:" in line
    )
    assert "_c" in memory_group.rsplit("/", 1)[-1]  # a prepared group
    # The next job of the claim is prepared again; a startd and zygote killed now leave its
    # groups.
    startd.wait_for(lambda: len(_cgroup_dirs(cgroup)) == 5, 10, "the next preparation")
    startd.kill9(with_zygote=True)
    assert len(_cgroup_dirs(cgroup)) == 5
    startd.start()
    startd.wait_for(lambda: _cgroup_dirs(cgroup) == [], 10, "the stale groups to go")
    assert "removed the stale job group" in startd.log()


def test_a_startd_killed_alone_leaves_its_zygote_to_remove_the_prepared_groups(
    startd_factory, slot_users
) -> None:
    """The zygote of a startd killed with SIGKILL gives up the jobs it prepared (their
    supervisors and groups) and exits."""
    startd = startd_factory(cpus=2)
    user = slot_users[2]
    cgroup = startd.config_path.read_text().split("BASE_CGROUP = ", 1)[1].split("\n", 1)[0]
    job = (
        f'[ ClusterId = 9; ProcId = 0; Owner = "{user.name}"; Cmd = "/bin/true";'
        " RequestCpus = 1; RequestMemory = 64; RequestDisk = 1024 ]"
    )
    startd.client.claim("slot1", parse_ad(job))
    startd.wait_for(lambda: len(_cgroup_dirs(cgroup)) == 5, 10, "the prepared groups")
    (zygote,) = startd.zygote_pids()
    startd.kill9()
    startd.wait_for(lambda: not psutil.pid_exists(zygote), 10, "the zygote to exit")
    assert _cgroup_dirs(cgroup) == []


def test_killing_timeout_kills_a_hung_starter(startd_factory, slot_users, tmp_path) -> None:
    """A starter that does not act on a hard kill (stopped here) is killed with its job by
    the startd when KILLING_TIMEOUT runs out, and the slot is free again."""
    startd = startd_factory("KILLING_TIMEOUT = 2\n", cpus=2)
    user = slot_users[3]
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    os.chown(iwd, user.uid, user.gid)
    job = JOB.format(proc=0, owner=user.name, iwd=iwd).replace("sleep 3", "sleep 300")
    startd.run_job(job)
    startd.wait_for(
        # process_iter's attribute form: a process that ends meanwhile is no error.
        lambda: any(p.info["username"] == user.name for p in psutil.process_iter(["username"])),
        10,
        "the job",
    )
    (entry,) = read_claims(str(startd.directory / "spool" / "startd_claims"))
    starter = psutil.Process(entry.pid)
    starter.suspend()
    slot = next(n for n, p in startd.places().items() if p == "Claimed/Busy")
    startd.client.vacate(slot, fast=True)
    startd.wait_for(
        lambda: not starter.is_running() or starter.status() == "zombie", 15, "the kill"
    )
    startd.wait_for(lambda: len(startd.history()) == 1, 15, "the job's record")
    assert "KILLING_TIMEOUT ran out" in startd.log()
    startd.wait_for(
        lambda: all(p != "Preempting/Killing" for p in startd.places().values()), 10, "the slot"
    )
    startd.wait_for(
        lambda: user_processes(user.name) == [],
        10,
        "the job's processes to be killed",
    )


def test_stale_sandboxes_are_removed_at_startup(startd_factory) -> None:
    """Sandboxes no running job holds (left by a machine that went down) are removed when the
    startd starts; other files in EXECUTE are left alone."""
    startd = startd_factory(start=False)
    execute = startd.directory / "execute"
    stale = execute / "dir_4242" / "deep"
    stale.mkdir(parents=True)
    (stale / "output").write_text("left behind")
    stale.chmod(0o500)
    (execute / "keep_me").write_text("not a sandbox")
    startd.start()
    assert not (execute / "dir_4242").exists()
    assert (execute / "keep_me").read_text() == "not a sandbox"
    assert "removed the stale sandbox" in startd.log()


def test_a_busy_claim_has_its_next_job_prepared(startd_factory, slot_users, tmp_path) -> None:
    """While a claim's job runs, the startd prepares the claim's next job; a schedd reusing
    the claim at once gets a job born in the groups prepared during the first one."""
    startd = startd_factory(cpus=2)
    user = slot_users[2]
    cgroup = startd.config_path.read_text().split("BASE_CGROUP = ", 1)[1].split("\n", 1)[0]
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    os.chown(iwd, user.uid, user.gid)

    def job(proc: int, command: str) -> str:
        return (
            f'[ ClusterId = 9; ProcId = {proc}; Owner = "{user.name}"; Cmd = "/bin/sh";'
            f' Arguments = "-c \'{command}\'"; Iwd = "{iwd}";'
            " RequestCpus = 1; RequestMemory = 64; RequestDisk = 1024 ]"
        )

    first_job = job(0, "cat /proc/self/cgroup > first; sleep 2")
    claim_id = startd.client.claim("slot1", parse_ad(first_job))
    startd.wait_for(lambda: len(_cgroup_dirs(cgroup)) == 5, 10, "the prepared groups")
    startd.client.activate(claim_id)
    startd.wait_for(lambda: len(_cgroup_dirs(cgroup)) == 10, 10, "the next job's groups")
    running = set(_cgroup_dirs(cgroup))
    startd.wait_for(lambda: len(startd.history()) == 1, 30, "the first job")
    startd.client.activate(claim_id, parse_ad(job(1, "cat /proc/self/cgroup > groups")))
    startd.wait_for(lambda: len(startd.history()) == 2, 30, "the second job")
    first, second = (
        next(
            line.split(":", 2)[2].rsplit("/", 1)[-1]
            for line in (iwd / name).read_text().splitlines()
            if ":memory:" in line
        )
        for name in ("first", "groups")
    )
    assert first != second
    assert any(path.name == second for path in running)  # made while the first job ran
    startd.client.release(claim_id)
    startd.wait_for(lambda: _cgroup_dirs(cgroup) == [], 10, "every job group to go")


def test_a_group_left_frozen_by_a_dead_startd_is_thawed_killed_and_removed(
    startd_factory, slot_users
) -> None:
    """A prepared job group left FROZEN by a startd and zygote that died (a killer that died
    between its freeze and its thaw) is thawed by the next startd: the supervisor frozen
    in it is gone and its groups are removed."""
    startd = startd_factory(cpus=2)
    user = slot_users[2]
    cgroup = startd.config_path.read_text().split("BASE_CGROUP = ", 1)[1].split("\n", 1)[0]
    job = (
        f'[ ClusterId = 10; ProcId = 0; Owner = "{user.name}"; Cmd = "/bin/true";'
        " RequestCpus = 1; RequestMemory = 64; RequestDisk = 1024 ]"
    )
    startd.client.claim("slot1", parse_ad(job))
    held = _frozen_preparation(startd, cgroup)
    startd.kill9(with_zygote=True)
    # Frozen, the supervisor cannot see its zygote go: it stays, and so do its groups.
    assert psutil.pid_exists(held)
    startd.start()
    startd.wait_for(lambda: _cgroup_dirs(cgroup) == [], 20, "the frozen groups to go")
    startd.wait_for(lambda: not _alive(held), 10, "the frozen supervisor to go")


def test_a_zygote_left_alone_thaws_a_frozen_preparation_to_give_it_up(
    startd_factory, slot_users
) -> None:
    """The zygote of a startd killed with SIGKILL gives up a prepared job whose group was
    left FROZEN: it thaws the group, so its supervisor dies and the groups are removed at
    once (no startd comes after it here)."""
    startd = startd_factory(cpus=2)
    user = slot_users[2]
    cgroup = startd.config_path.read_text().split("BASE_CGROUP = ", 1)[1].split("\n", 1)[0]
    job = (
        f'[ ClusterId = 11; ProcId = 0; Owner = "{user.name}"; Cmd = "/bin/true";'
        " RequestCpus = 1; RequestMemory = 64; RequestDisk = 1024 ]"
    )
    startd.client.claim("slot1", parse_ad(job))
    held = _frozen_preparation(startd, cgroup)
    (zygote,) = startd.zygote_pids()
    startd.kill9()
    # Well within the zygote's 10 s wait for a supervisor that does not go.
    startd.wait_for(lambda: not psutil.pid_exists(zygote), 5, "the zygote to exit")
    assert not _alive(held)
    assert _cgroup_dirs(cgroup) == []


def _frozen_preparation(startd, cgroup: str) -> int:
    """Freeze the prepared group of the startd's one claim; the PID of the supervisor in it."""
    startd.wait_for(lambda: len(_cgroup_dirs(cgroup)) == 5, 10, "the prepared groups")
    (group,) = (p for p in _cgroup_dirs(cgroup) if p.parts[4] == "freezer")
    startd.wait_for(lambda: (group / "cgroup.procs").read_text().split() != [], 10, "its joiner")
    (held,) = (int(pid) for pid in (group / "cgroup.procs").read_text().split())
    (group / "freezer.state").write_text("FROZEN")
    startd.wait_for(
        lambda: (group / "freezer.state").read_text().strip() == "FROZEN", 10, "the freeze"
    )
    return held


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
