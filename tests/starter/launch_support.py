"""Helpers shared by the launch and supervisor server tests: a job spec, a fake starter."""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Callable
from pathlib import Path

import psutil

from epcore.starter.launch import LaunchedJob, LaunchSpec
from epcore.testing.system import wait_until

SH = "/bin/sh"
PATH_ENV = (("PATH", "/usr/bin:/bin"),)
#: Generous: the VM is noisy, and nothing here should take more than a fraction of it.
PATIENCE = 10.0


def shell(script: str, cwd: Path, **fields: object) -> LaunchSpec:
    """A LaunchSpec running ``script`` with /bin/sh."""
    return LaunchSpec(argv=(SH, "-c", script), environment=PATH_ENV, cwd=str(cwd), **fields)


def fake_starter(tmp_path: Path, start: Callable[[LaunchSpec], LaunchedJob]) -> int:
    """Fork a process that starts a job (which leaves a daemon behind) through ``start`` and
    then waits, as a starter would; its pid once the job's pids are in ``tmp_path/pids`` and
    the supervisor's in ``tmp_path/supervisor`` (the job can write its pids before ``start``
    returns, so both are waited for; each is written whole by a rename)."""
    pids = tmp_path / "pids"
    script = f"sleep 1000 & echo $$ $! > {pids}.tmp; mv {pids}.tmp {pids}; sleep 1000"
    failed = tmp_path / "starter_failed"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the fake starter
        try:
            job = start(shell(script, tmp_path))
            (tmp_path / "supervisor.tmp").write_text(str(job.supervisor_pid))
            (tmp_path / "supervisor.tmp").rename(tmp_path / "supervisor")
            signal.pause()
        except BaseException:
            failed.write_text(traceback.format_exc())
        finally:
            os._exit(1)
    written = (tmp_path / "pids", tmp_path / "supervisor")
    # Three times the usual patience: a loaded CI machine has taken over ten seconds here.
    wait_until(lambda: failed.exists() or all(path.exists() for path in written), 3 * PATIENCE)
    assert not failed.exists(), f"the fake starter failed:\n{failed.read_text()}"
    missing = [path.name for path in written if not path.exists()]
    assert not missing, f"after {3 * PATIENCE} s the fake starter has not written {missing}"
    return pid


def gone(pid: int) -> bool:
    """True when process ``pid`` has exited (a zombie counts)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def kill_starter_and_check_the_job_ends(tmp_path: Path, starter: int) -> int:
    """SIGKILL the :func:`fake_starter` ``starter`` and check that its supervisor and the
    job's whole tree (at least two processes) end within PATIENCE; the supervisor's pid."""
    supervisor = int((tmp_path / "supervisor").read_text())
    job = psutil.Process(supervisor).children(recursive=True)
    assert len(job) >= 2
    os.kill(starter, signal.SIGKILL)
    os.waitpid(starter, 0)
    assert wait_until(lambda: gone(supervisor), PATIENCE), "the supervisor outlived its starter"
    assert wait_until(lambda: all(gone(p.pid) for p in job), PATIENCE), "the job outlived it"
    return supervisor
