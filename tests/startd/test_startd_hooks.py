"""The starter's job hooks with real hook scripts, through a real startd (seed 000, "Job
hooks"): PREPARE_JOB_BEFORE_TRANSFER and PREPARE_JOB may rewrite the job ad, hold it (1-299)
or send it back to idle (300+); UPDATE_JOB_INFO sees the running job; JOB_EXIT gets how the
job left; every hook runs as the job's user."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from epcore.classad import parse_ad

pytestmark = pytest.mark.system


def _hook(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def _setup(tmp_path: Path, user, hooks: dict[str, str]) -> tuple[Path, Path, str]:
    hook_dir = tmp_path / "hooks"
    hook_dir.mkdir()
    hook_dir.chmod(0o755)
    record = tmp_path / "record"
    record.mkdir()
    os.chown(record, user.uid, user.gid)
    config = ""
    for name, body in hooks.items():
        path = _hook(hook_dir, name.lower(), body.replace("@REC@", str(record)))
        config += f"TESTHOOK_HOOK_{name} = {path}\n"
    return hook_dir, record, config


def _job(user, iwd: Path, command: str = "/bin/echo", args: str = "ran") -> str:
    return (
        f'[ ClusterId = 9; ProcId = 0; Owner = "{user.name}"; Cmd = "{command}";'
        f' Arguments = "{args}"; Iwd = "{iwd}"; Out = "out.txt"; UserLog = "job.log";'
        ' HookKeyword = "TESTHOOK"; RequestCpus = 1; RequestMemory = 64; RequestDisk = 1024 ]'
    )


def _result(startd):
    startd.wait_for(lambda: len(startd.history()) >= 1, 60, "the job's result")
    return startd.history()[-1]


def test_prepare_job_rewrites_the_job_ad(startd_factory, slot_users, tmp_path) -> None:
    """PREPARE_JOB's stdout updates the job ad before it runs (the seed's Cmd example), and
    both prepare hooks run as the job's user with the job ad on stdin."""
    user = slot_users[0]
    _, record, config = _setup(
        tmp_path,
        user,
        {
            "PREPARE_JOB_BEFORE_TRANSFER": "id -u > @REC@/before.uid\ncat > @REC@/before.ad\n",
            "PREPARE_JOB": (
                "id -u > @REC@/prepare.uid\ncat > /dev/null\necho 'Arguments = \"rewritten\"'\n"
            ),
        },
    )
    startd = startd_factory(config)
    startd.run_job(_job(user, record))
    result = _result(startd)
    assert result.evaluate("JobOutcome") == "exited"
    assert (record / "out.txt").read_text() == "rewritten\n"
    assert (record / "before.uid").read_text().strip() == str(user.uid)
    assert (record / "prepare.uid").read_text().strip() == str(user.uid)
    assert parse_ad((record / "before.ad").read_text()).evaluate("ClusterId") == 9


@pytest.mark.parametrize(
    ("status", "outcome"),
    [(1, "held"), (299, "held"), (300, "requeued"), (500, "requeued")],
)
def test_prepare_hook_status_holds_or_requeues(
    startd_factory, slot_users, tmp_path, status, outcome
) -> None:
    """HookStatusCode 1-299 holds the job (HookStatusMessage is the hold reason, in the event
    log too); 300 and above sends it back to idle; the job itself never runs."""
    user = slot_users[1]
    body = (
        f'cat > /dev/null\necho "HookStatusCode = {status}"\n'
        "echo 'HookStatusMessage = \"no license left\"'\n"
    )
    _, record, config = _setup(tmp_path, user, {"PREPARE_JOB": body})
    startd = startd_factory(config)
    startd.run_job(_job(user, record))
    result = _result(startd)
    assert result.evaluate("JobOutcome") == outcome
    assert not (record / "out.txt").exists()
    if outcome == "held":
        assert result.evaluate("HoldReason") == "no license left"
        assert result.evaluate("HoldReasonCode") == 19
        assert result.evaluate("HoldReasonSubCode") == status
        assert "no license left" in (record / "job.log").read_text()


def test_update_and_exit_hooks_see_the_job(startd_factory, slot_users, tmp_path) -> None:
    """UPDATE_JOB_INFO gets the job ad with JobState, JobPid, NumPids, JobStartDate and the
    usage; JOB_EXIT gets the argument "exit" and the exit attributes."""
    user = slot_users[2]
    _, record, config = _setup(
        tmp_path,
        user,
        {
            "UPDATE_JOB_INFO": "cat > @REC@/update.ad\n",
            "JOB_EXIT": 'echo "$1" > @REC@/exit.arg\ncat > @REC@/exit.ad\n',
        },
    )
    startd = startd_factory(config)
    startd.run_job(_job(user, record, "/bin/sh", "-c 'sleep 2; exit 3'"))
    result = _result(startd)
    assert result.evaluate("ExitCode") == 3
    update = parse_ad((record / "update.ad").read_text())
    assert update.evaluate("JobState") == "Running"
    for name in ("JobPid", "NumPids", "JobStartDate", "RemoteSysCpu", "RemoteUserCpu", "ImageSize"):
        assert name in update
    assert (record / "exit.arg").read_text() == "exit\n"
    exit_ad = parse_ad((record / "exit.ad").read_text())
    assert exit_ad.evaluate("ExitCode") == 3
    assert exit_ad.evaluate("ExitBySignal") is False
    assert exit_ad.evaluate("JobDuration") >= 1.5


def test_exit_hook_argument_on_eviction(startd_factory, slot_users, tmp_path) -> None:
    """A job vacated by the startd makes JOB_EXIT run with "evict"."""
    user = slot_users[3]
    _, record, config = _setup(tmp_path, user, {"JOB_EXIT": 'echo "$1" > @REC@/exit.arg\n'})
    startd = startd_factory(config)
    startd.run_job(_job(user, record, "/bin/sleep", "60"))
    startd.wait_for(lambda: "Claimed/Busy" in startd.places().values(), 10, "the job to run")
    slot = next(n for n, p in startd.places().items() if p == "Claimed/Busy")
    startd.client.vacate(slot)
    result = _result(startd)
    assert result.evaluate("JobOutcome") == "evicted"
    assert (record / "exit.arg").read_text() == "evict\n"
