"""Real jobs through a real startd, as real slot users, in real cgroups v1: what isolation
must guarantee (seed 000 "Job isolation" and the out-of-memory rule)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from epcore.testing.system import user_processes

pytestmark = pytest.mark.system


def _iwd(tmp_path: Path, user) -> Path:
    iwd = tmp_path / "iwd"
    iwd.mkdir(exist_ok=True)
    os.chown(iwd, user.uid, user.gid)
    return iwd


def _job(
    owner: str, iwd: Path, script: str, memory: int = 64, proc: int = 0, shell: str = "/bin/sh"
) -> str:
    path = iwd / f"job{proc}.sh"
    path.write_text(f"#!{shell}\n" + script)
    path.chmod(0o755)
    return (
        f'[ ClusterId = 3; ProcId = {proc}; Owner = "{owner}"; Cmd = "{path}"; Iwd = "{iwd}";'
        f' Out = "out{proc}.txt"; Err = "err{proc}.txt"; UserLog = "job.log";'
        f" RequestCpus = 1; RequestMemory = {memory}; RequestDisk = 1024 ]"
    )


def _result(startd, count: int = 1):
    startd.wait_for(lambda: len(startd.history()) >= count, 60, f"{count} job results")
    return startd.history()[-1]


def _pids_file_processes(path: Path) -> list[int]:
    if not path.exists():
        return []
    return [int(p) for p in path.read_text().split() if p.strip()]


def _none_alive(pids: list[int]) -> bool:
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.Error:
            continue
    return True


ESCAPES = """\
( sleep 1000 & echo $! >> pids ) &
setsid sh -c 'echo $$ >> pids; exec sleep 1000' &
sh -c 'sleep 1000 & echo $! >> pids; exit 0'
sleep 1
echo started
"""


@pytest.mark.parametrize(
    "mode",
    [
        "",
        "USE_PID_NAMESPACES = True\n",
        "USE_GID_PROCESS_TRACKING = True\nMIN_TRACKING_GID = {low}\nMAX_TRACKING_GID = {high}\n",
    ],
    ids=["cgroup", "pid-namespace", "gid-tracking"],
)
def test_escaped_processes_die_with_the_job(
    startd_factory, slot_users, tracking_gids, tmp_path, mode
) -> None:
    """A double-forking daemon, a setsid escapee and an orphan a job leaves behind are all
    killed when the job's first process exits, in each tracking mode."""
    low, high = tracking_gids
    startd = startd_factory(mode.format(low=low, high=high))
    user = slot_users[0]
    iwd = _iwd(tmp_path, user)
    startd.run_job(_job(user.name, iwd, ESCAPES))
    result = _result(startd)
    assert result.evaluate("JobOutcome") == "exited"
    escaped = _pids_file_processes(iwd / "pids")
    if "PID_NAMESPACES" in mode:
        assert escaped and all(pid < 100 for pid in escaped)  # namespace PIDs, not ours
        assert "USE_PID_NAMESPACES" in startd.config_path.read_text()
    else:
        assert len(escaped) == 3
        assert _none_alive(escaped)
    assert user_processes(user.name) == []


def _job_pids_groups(startd) -> list[Path]:
    base = startd.config_path.read_text().split("BASE_CGROUP = ", 1)[1].split("\n", 1)[0]
    root = Path("/sys/fs/cgroup/pids") / base
    return [p for p in root.rglob("*") if p.is_dir()] if root.exists() else []


def test_fork_bomb_is_capped(startd_factory, slot_users, tmp_path) -> None:
    """With CGROUP_PIDS_LIMIT a fork bomb never has more processes than the limit (its forks
    fail at the cap), and all of them are gone when the job ends."""
    startd = startd_factory("CGROUP_PIDS_LIMIT = 40\n")
    user = slot_users[1]
    iwd = _iwd(tmp_path, user)
    # Each copy forks two more and then lingers, so the bomb sits at the cap until killed
    # (bash: dash gives up at its first failed fork). The timer is forked before the bomb:
    # once the bomb holds every process the cap allows, the job's own shell cannot fork
    # either (bash then exits with 254), and wait and kill are built in.
    bomb = (
        "sleep 3 & timer=$!\nbomb() { bomb & bomb & sleep 5; }\n( bomb ) 2>/dev/null &\n"
        "wait $timer\nkill -9 0\n"
    )
    claim_id = startd.run_job(_job(user.name, iwd, bomb, shell="/bin/bash"))
    peak = 0
    failed_forks = 0
    while not startd.history():
        for group in _job_pids_groups(startd):
            try:
                peak = max(peak, int((group / "pids.current").read_text()))
                events = (group / "pids.events").read_text().split()
                failed_forks = max(failed_forks, int(events[1]))
            except (OSError, ValueError, IndexError):
                continue
        time.sleep(0.02)
    assert _result(startd).evaluate("ExitSignal") == 9
    assert failed_forks > 0
    assert 30 < peak <= 40
    assert user_processes(user.name) == []
    # The claim stays, with its next job's groups prepared; once it is given back, none is left.
    startd.client.release(claim_id)
    startd.wait_for(lambda: _job_pids_groups(startd) == [], 10, "every job group to go")


def test_job_over_its_memory_is_held(startd_factory, slot_users, tmp_path) -> None:
    """A job that allocates more than its slot's memory is killed by its cgroup and held with
    the out-of-resources code (34) and a reason naming the limit (the dynamic slot's 128 MB:
    MODIFY_REQUEST_EXPR_REQUESTMEMORY rounds the 64 MB request up to a multiple of 128)."""
    startd = startd_factory("CGROUP_MEMORY_LIMIT_POLICY = hard\n")
    user = slot_users[2]
    iwd = _iwd(tmp_path, user)
    hog = "exec python3 -c 'x = bytearray(400 * 1024 * 1024); import time; time.sleep(30)'\n"
    startd.run_job(_job(user.name, iwd, hog, memory=64))
    result = _result(startd)
    assert result.evaluate("JobOutcome") == "held"
    assert result.evaluate("HoldReasonCode") == 34
    assert "memory limit of 128 megabytes" in result.evaluate("HoldReason")
    log = (iwd / "job.log").read_text()
    assert "Job was held." in log


def test_suspended_job_uses_no_cpu(startd_factory, slot_users, tmp_path) -> None:
    """When the policy suspends a job, its processes get no CPU until it continues."""
    startd = startd_factory(
        "WANT_SUSPEND = True\n"
        'SUSPEND = Activity == "Busy" && (time() - EnteredCurrentActivity) > 1\n'
        "CONTINUE = False\nPREEMPT = False\n"
    )
    user = slot_users[3]
    iwd = _iwd(tmp_path, user)
    startd.run_job(_job(user.name, iwd, "while :; do :; done\n"))
    startd.wait_for(lambda: "Claimed/Suspended" in startd.places().values(), 20, "suspension")
    time.sleep(0.5)
    processes = [psutil.Process(pid) for pid in user_processes(user.name)]
    assert processes
    before = sum(p.cpu_times().user + p.cpu_times().system for p in processes)
    time.sleep(1.5)
    after = sum(p.cpu_times().user + p.cpu_times().system for p in processes)
    assert after - before < 0.05
    slot = next(n for n, place in startd.places().items() if place == "Claimed/Suspended")
    startd.client.vacate(slot, fast=True)
    result = _result(startd)
    assert result.evaluate("JobOutcome") == "evicted"
    assert "Job was suspended." in (iwd / "job.log").read_text()


@pytest.mark.parametrize("dedicated", [True, False])
def test_dedicated_account_processes_die_with_the_job(
    startd_factory, slot_users, tmp_path, dedicated
) -> None:
    """When the job's account is dedicated to jobs (DEDICATED_EXECUTE_ACCOUNT_REGEXP), every
    process of that account is killed when the job ends, even one no tracker of the job could
    see (started outside it); an account that is not dedicated keeps its other processes."""
    user = slot_users[0]
    extra = f"DEDICATED_EXECUTE_ACCOUNT_REGEXP = {user.name}\n" if dedicated else ""
    startd = startd_factory(extra)
    outsider = subprocess.Popen(["sleep", "300"], user=user.uid, group=user.gid)
    try:
        iwd = _iwd(tmp_path, user)
        startd.run_job(_job(user.name, iwd, "exit 0\n"))
        assert _result(startd).evaluate("JobOutcome") == "exited"
        if dedicated:
            assert outsider.wait(10) == -9
        else:
            assert outsider.poll() is None
    finally:
        outsider.kill()
        outsider.wait(10)


def test_a_job_ignoring_its_kill_signal_is_hard_killed(
    startd_factory, slot_users, tmp_path
) -> None:
    """A vacated job that ignores SIGTERM is killed with SIGKILL when its vacate time
    (MachineMaxVacateTime) runs out, and is evicted."""
    user = slot_users[1]
    startd = startd_factory("MachineMaxVacateTime = 2\n")
    iwd = _iwd(tmp_path, user)
    trapped = iwd / "trapped"
    script = f"trap '' TERM\n: > {trapped}\nwhile :; do sleep 0.2; done\n"
    startd.run_job(_job(user.name, iwd, script))
    # Vacating before the trap is set would end the job with SIGTERM, not test the hard kill.
    startd.wait_for(trapped.exists, 10, "the job to ignore SIGTERM")
    startd.wait_for(lambda: "Claimed/Busy" in startd.places().values(), 10, "the job to run")
    slot = next(n for n, place in startd.places().items() if place == "Claimed/Busy")
    vacated = time.monotonic()
    startd.client.vacate(slot)
    result = _result(startd)
    assert result.evaluate("JobOutcome") == "evicted"
    assert time.monotonic() - vacated >= 1.5
    assert "told the starter to hard kill" in startd.log()
    assert user_processes(user.name) == []
