"""Running job hooks for real: time limits, process groups, stdin, stderr logging, identity."""

from __future__ import annotations

import logging
import signal
import time
from pathlib import Path

import pytest
from job_hooks_support import LOGGER, eventually_gone, runner, sample_job, write_hook

from epcore.classad import ClassAd, format_old, parse_ad
from epcore.starter.hooks import HookError, prepare_job_input, prepare_outcome
from epcore.testing.system import SlotUser


def test_hanging_hook_is_killed_with_its_children(tmp_path: Path) -> None:
    """A hook past its time limit is killed with its whole process group, and reported."""
    body = f"sleep 1000 &\necho $! > {tmp_path}/pids\nsleep 1000 &\necho $! >> {tmp_path}/pids\n"
    body += "echo $$ >> " + str(tmp_path) + "/pids\nwait\n"
    path = write_hook(tmp_path, "hang", body)
    started = time.monotonic()
    result = runner(tmp_path, timeout=1.0).run(path, [], "")
    assert time.monotonic() - started < 20
    assert result.timed_out
    assert result.signal == signal.SIGKILL
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 3
    assert eventually_gone(pids)
    outcome = prepare_outcome(result, "PREPARE_JOB")
    assert outcome.kind == "hold"
    assert "time limit" in outcome.message


def test_leftover_background_process_is_killed_when_the_hook_exits(tmp_path: Path) -> None:
    """A hook that exits leaving a child holding its stdout still finishes, child killed."""
    path = write_hook(tmp_path, "bg", f"sleep 1000 &\necho $! > {tmp_path}/pid\necho 'A = 1'\n")
    result = runner(tmp_path, timeout=60.0).run(path, [], "")
    assert (result.exit_code, result.timed_out) == (0, False)
    assert result.stdout == "A = 1\n"
    assert eventually_gone([int((tmp_path / "pid").read_text())])


@pytest.mark.parametrize("reads", [True, False], ids=["reads-stdin", "ignores-stdin"])
def test_large_stdin_does_not_deadlock(tmp_path: Path, reads: bool) -> None:
    """A job ad larger than a pipe buffer is delivered, or dropped if the hook never reads."""
    job = ClassAd({f"Attr{n}": "x" * 100 for n in range(3000)})
    body = "wc -c\n" if reads else "echo done\n"
    path = write_hook(tmp_path, "big", body)
    result = runner(tmp_path, timeout=60.0).run(path, [], format_old(job))
    assert (result.exit_code, result.timed_out) == (0, False)
    expected = str(len(format_old(job).encode())) if reads else "done"
    assert result.stdout.strip() == expected


@pytest.mark.parametrize("mode", ["run", "start"])
def test_stderr_lines_go_to_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, mode: str
) -> None:
    """Every stderr line of a hook, waited for or not, is logged with the hook's name."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    path = write_hook(tmp_path, "noisy", "echo first >&2\nprintf 'second\\nno newline' >&2\n")
    hooks = runner(tmp_path)
    if mode == "run":
        result = hooks.run(path, [], "", name="UPDATE_JOB_INFO")
    else:
        result = hooks.start(path, [], "", name="UPDATE_JOB_INFO").wait()
    assert result.stderr == "first\nsecond\nno newline"
    logged = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    for line in ("first", "second", "no newline"):
        assert f"UPDATE_JOB_INFO hook stderr: {line}" in logged


def test_started_hook_is_not_waited_for_and_can_be_killed(tmp_path: Path) -> None:
    """start returns at once; poll says running; kill ends the hook and its group."""
    path = write_hook(tmp_path, "slow", f"sleep 1000 &\necho $! > {tmp_path}/pid\nwait\n")
    hook = runner(tmp_path).start(path, [], "")
    assert hook.poll() is None
    deadline = time.monotonic() + 5.0
    while not (tmp_path / "pid").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    result = hook.kill()
    assert result.signal == signal.SIGKILL
    assert not result.timed_out
    assert hook.poll() is result
    assert eventually_gone([hook.pid, int((tmp_path / "pid").read_text())])


def test_started_hook_past_its_deadline_is_killed_on_poll(tmp_path: Path) -> None:
    """An advisory hook that overruns its time limit is killed when next polled."""
    hook = runner(tmp_path, timeout=0.5).start(write_hook(tmp_path, "s", "sleep 1000\n"), [], "")
    time.sleep(0.6)
    result = hook.poll()
    assert result is not None
    assert result.timed_out


def test_hook_that_cannot_start_raises(tmp_path: Path) -> None:
    """A hook whose working directory is missing raises HookError naming the directory."""
    path = write_hook(tmp_path, "h", "exit 0\n")
    with pytest.raises(HookError, match="nowhere"):
        runner(tmp_path / "nowhere").run(path, [], "")


@pytest.mark.parametrize(
    ("uid", "timeout", "problem"),
    [
        (1000, 1.0, "gid"),
        (None, 0.0, "time limit"),
        (None, -1.0, "time limit"),
        (None, float("nan"), "time limit"),
        (None, float("inf"), "time limit"),
    ],
)
def test_runner_rejects_bad_settings(
    tmp_path: Path, uid: int | None, timeout: float, problem: str
) -> None:
    """A uid without a gid, or a time limit that is not a positive number, is refused."""
    with pytest.raises(HookError, match=problem):
        runner(tmp_path, timeout=timeout, uid=uid)


@pytest.mark.system
@pytest.mark.parametrize("extra", [False, True], ids=["no-extra-groups", "extra-group"])
def test_hook_runs_as_the_slot_user(
    as_root: None, slot_users: tuple[SlotUser, ...], execute_dir: Path, extra: bool
) -> None:
    """Run as root, the hook runs as the job's user with exactly the given groups."""
    user, other = slot_users[0], slot_users[1]
    groups = (user.gid, other.gid) if extra else ()
    body = 'echo "Uid = $(id -u)"\necho "Gid = $(id -g)"\necho "Groups = \\"$(id -G)\\""\n'
    path = write_hook(execute_dir, "whoami", body)
    hooks = runner(execute_dir, uid=user.uid, gid=user.gid, groups=groups)
    result = hooks.run(path, [], prepare_job_input(sample_job()))
    assert result.exit_code == 0, result.stderr
    ad = parse_ad(result.stdout)
    assert ad.evaluate("Uid") == user.uid
    assert ad.evaluate("Gid") == user.gid
    seen = {int(g) for g in str(ad.evaluate("Groups")).split()}
    assert seen == {user.gid, *groups}
    assert 0 not in seen


@pytest.mark.system
def test_slot_user_hook_is_killed_at_its_time_limit(
    as_root: None, slot_users: tuple[SlotUser, ...], execute_dir: Path
) -> None:
    """A hanging hook running as a slot user is still killed, children included."""
    user = slot_users[2]
    path = write_hook(execute_dir, "hang", "sleep 1000 &\necho $!\nwait\n")
    hooks = runner(execute_dir, timeout=1.0, uid=user.uid, gid=user.gid, groups=())
    result = hooks.run(path, [], "")
    assert result.timed_out
    assert eventually_gone([int(result.stdout)])


def test_environment_is_exactly_the_given_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook sees only the environment the runner was given, not the starter's."""
    monkeypatch.setenv("EPCORE_TEST_LEAK", "1")
    result = runner(tmp_path).run(write_hook(tmp_path, "env", "env\n"), [], "")
    assert "EPCORE_TEST_LEAK" not in result.stdout
    assert "PATH=/usr/bin:/bin" in result.stdout.splitlines()
