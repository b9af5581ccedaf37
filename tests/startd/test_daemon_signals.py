"""A real startd and the signals it is sent: SIGHUP reconfigures, SIGTERM shuts down
peacefully (a second one, or SIGQUIT, fast), and nothing of it is left afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import psutil
import pytest

from epcore.runtime.control import ControlError

pytestmark = pytest.mark.system

FREE_JOB = (
    '[ Owner = "nobody_at_all"; ClusterId = 9; ProcId = {proc}; RequestCpus = 1;'
    " RequestMemory = 64; RequestDisk = 1024 ]"
)


def _job(user, iwd: Path, seconds: int, proc: int = 0) -> str:
    return (
        f'[ ClusterId = 5; ProcId = {proc}; Owner = "{user.name}"; Cmd = "/bin/sleep";'
        f' Arguments = "{seconds}"; Iwd = "{iwd}"; RequestCpus = 1; RequestMemory = 64;'
        " RequestDisk = 1024 ]"
    )


def _iwd(tmp_path: Path, user) -> Path:
    iwd = tmp_path / "iwd"
    iwd.mkdir(exist_ok=True)
    os.chown(iwd, user.uid, user.gid)
    return iwd


def _signal(startd, signum: int) -> None:
    assert startd.process is not None
    os.kill(startd.process.pid, signum)


def _wait_for_log(startd, text: str, count: int = 1) -> None:
    startd.wait_for(lambda: startd.log().count(text) >= count, 20, f"{text!r} in the StartLog")


def _exit_code(startd, timeout: float = 30.0) -> int:
    assert startd.process is not None
    try:
        return startd.process.wait(timeout)
    except subprocess.TimeoutExpired as error:
        raise AssertionError(f"the startd did not exit within {timeout} s") from error


def _left_over(startd, user) -> list[int]:
    """Processes of the startd (its starters) or of the job user that still run."""
    pids = set(startd.starter_pids())
    for process in psutil.process_iter(["username", "status"]):
        if process.info["username"] == user.name and process.info["status"] != "zombie":
            pids.add(process.pid)
    return sorted(pids)


def test_sighup_rereads_start(startd_factory) -> None:
    """After START = False is written and SIGHUP sent, a claim is refused by START."""
    startd = startd_factory(cpus=2, memory=1024)
    claim_id = startd.client.claim("slot1", _free_job(0))
    startd.client.release(claim_id)
    with open(startd.config_path, "a") as handle:
        handle.write("START = False\n")
    _signal(startd, signal.SIGHUP)
    _wait_for_log(startd, "reconfigured")
    with pytest.raises(ControlError, match="START"):
        startd.client.claim("slot1", _free_job(1))
    assert startd.process is not None and startd.process.poll() is None


def _free_job(proc: int):
    from epcore.classad import parse_ad

    return parse_ad(FREE_JOB.format(proc=proc))


def test_sighup_logs_restart_only_knobs(startd_factory) -> None:
    """A changed NUM_CPUS is logged as waiting for a restart; the slots stay as they were."""
    startd = startd_factory(cpus=2, memory=1024)
    before = startd.places()
    with open(startd.config_path, "a") as handle:
        handle.write("NUM_CPUS = 1\nUPDATE_INTERVAL = 7\n")
    _signal(startd, signal.SIGHUP)
    _wait_for_log(startd, "reconfigured")
    log = startd.log()
    assert "reconfig: NUM_CPUS changed; it takes effect at the next restart" in log
    assert "UPDATE_INTERVAL changed" not in log
    assert startd.places() == before == {"slot1": "Unclaimed/Idle"}
    assert startd.client.query()[0].evaluate("Cpus") == 2


@pytest.mark.parametrize(
    "bad",
    ["this line is not configuration\n", "include : /nonexistent/epcore.conf\n", "if\n"],
    ids=["no-equals", "missing-include", "unclosed-if"],
)
def test_sighup_with_a_bad_file_keeps_the_old_configuration(startd_factory, bad: str) -> None:
    """A configuration file that does not parse on SIGHUP is logged, the old configuration
    (START = True) stays, and the startd keeps serving."""
    startd = startd_factory(cpus=1, memory=512)
    with open(startd.config_path, "a") as handle:
        handle.write("START = False\n" + bad)
    _signal(startd, signal.SIGHUP)
    _wait_for_log(startd, "reconfig failed; the old configuration stays")
    assert "reconfigured" not in startd.log()
    claim_id = startd.client.claim("slot1", _free_job(0))
    assert "Claimed/Idle" in startd.places().values()
    startd.client.release(claim_id)
    assert startd.process is not None and startd.process.poll() is None


def test_sigterm_is_peaceful(startd_factory, slot_users, tmp_path: Path) -> None:
    """On SIGTERM a running job finishes normally, no new claim is taken meanwhile, and the
    startd then exits 0 leaving no process behind."""
    startd = startd_factory(cpus=2, memory=1024)
    user = slot_users[0]
    startd.run_job(_job(user, _iwd(tmp_path, user), 3))
    startd.wait_for(lambda: "Claimed/Busy" in startd.places().values(), 20, "the job to run")
    _signal(startd, signal.SIGTERM)
    _wait_for_log(startd, "shutting down (peaceful)")
    with pytest.raises(ControlError):
        startd.client.claim("slot1", _free_job(1))
    assert _exit_code(startd) == 0
    history = startd.history()
    assert [ad.evaluate("JobOutcome") for ad in history] == ["exited"]
    assert history[0].evaluate("ExitCode") == 0
    assert "startd exiting" in startd.log()
    assert _left_over(startd, user) == []
    assert not os.path.exists(startd.control)


@pytest.mark.parametrize(
    "second", [signal.SIGTERM, signal.SIGQUIT], ids=["second-sigterm", "sigquit"]
)
def test_fast_shutdown_kills_the_job(
    startd_factory, slot_users, tmp_path: Path, second: int
) -> None:
    """A second SIGTERM, or SIGQUIT, after a peaceful one kills the running job (evicted in the
    history) and the startd exits, leaving no process behind."""
    startd = startd_factory(cpus=2, memory=1024)
    user = slot_users[1]
    startd.run_job(_job(user, _iwd(tmp_path, user), 300))
    startd.wait_for(lambda: "Claimed/Busy" in startd.places().values(), 20, "the job to run")
    startd.wait_for(
        lambda: any(p.info["username"] == user.name for p in psutil.process_iter(["username"])),
        20,
        "the job's process",
    )
    _signal(startd, signal.SIGTERM)
    _wait_for_log(startd, "shutting down (peaceful)")
    _signal(startd, second)
    _wait_for_log(startd, "shutting down (fast)")
    assert _exit_code(startd) == 0
    history = startd.history()
    assert [ad.evaluate("JobOutcome") for ad in history] == ["evicted"]
    assert _left_over(startd, user) == []


def test_sigquit_alone_is_fast(startd_factory, slot_users, tmp_path: Path) -> None:
    """SIGQUIT without a SIGTERM before it shuts down fast: the job is evicted at once."""
    startd = startd_factory(cpus=2, memory=1024)
    user = slot_users[2]
    startd.run_job(_job(user, _iwd(tmp_path, user), 300))
    startd.wait_for(lambda: "Claimed/Busy" in startd.places().values(), 20, "the job to run")
    _signal(startd, signal.SIGQUIT)
    assert _exit_code(startd) == 0
    assert [ad.evaluate("JobOutcome") for ad in startd.history()] == ["evicted"]
    assert "shutting down (peaceful)" not in startd.log()
    assert _left_over(startd, user) == []


def test_idle_startd_exits_at_once_on_sigterm(startd_factory) -> None:
    """A startd with no job exits 0 on SIGTERM and removes its sockets."""
    startd = startd_factory(cpus=1, memory=512)
    _signal(startd, signal.SIGTERM)
    assert _exit_code(startd, 20) == 0
    assert not os.path.exists(startd.control)
    assert startd.starter_pids() == []
