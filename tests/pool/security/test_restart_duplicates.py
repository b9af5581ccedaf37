"""Finding 5 of issue 18: a ``kill -9`` of ``ep run`` just after it forked starters made their
jobs run twice at once after the restart, and left their slots Claimed/Idle.

Each test submits jobs that write a line with their PID when they start and when they end,
kills ``ep run`` with SIGKILL at one moment of the starters' start, starts it again, and
checks that every job ran exactly once and that no slot is left claimed without a job.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path

import psutil
import pytest
from security_support import assert_pool_serves

from epcore.testing.pool import PoolProcess, submit_as, user_home
from epcore.testing.system import SlotUser

pytestmark = pytest.mark.system

#: Jobs per attack: one per slot, so that one negotiation cycle forks every starter.
JOBS = 3
#: How long each job runs (long enough for the kill to land while it runs).
JOB_SECONDS = 4


def _submit_recording_jobs(pool: PoolProcess, user: SlotUser, root: Path) -> Path:
    """Queue JOBS jobs that append ``start PID`` and ``end PID`` to ``run_<proc>.log`` in
    ``user``'s directory; that directory."""
    home = user_home(root, user)
    script = home / "record.sh"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "start $$" >> {home}/run_$1.log\n'
        f"sleep {JOB_SECONDS}\n"
        f'echo "end $$" >> {home}/run_$1.log\n'
    )
    script.chmod(0o755)
    os.chown(script, user.uid, user.gid)
    submit_as(
        pool,
        user,
        root,
        f"executable = {script}\narguments = $(Process)\nqueue {JOBS}\n",
    )
    return home


def _starters(pool: PoolProcess) -> list[int]:
    """The starters ``ep run`` forked so far (children in a session of their own; a prepared
    supervisor stays in the startd's session)."""
    assert pool.process is not None
    found = []
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(pool.process.pid).children():
            with contextlib.suppress(OSError):
                if os.getsid(child.pid) == child.pid:
                    found.append(child.pid)
    return found


def _kill_9(pool: PoolProcess) -> None:
    assert pool.process is not None
    pool.process.kill()
    pool.process.wait(30)


def _claims_lines(pool: PoolProcess) -> int:
    path = pool.directory / "spool" / "startd_claims"
    with contextlib.suppress(OSError):
        return path.read_text().count("StarterPid")
    return 0


def _runs(home: Path) -> dict[int, list[str]]:
    """Each job's recorded lines, by ProcId."""
    found = {}
    for proc in range(JOBS):
        path = home / f"run_{proc}.log"
        found[proc] = path.read_text().split("\n")[:-1] if path.exists() else []
    return found


def _restart_and_check(pool: PoolProcess, home: Path, slot_users, shared_dir: Path) -> None:
    """Start ``ep run`` again; every job runs to completion exactly once, no slot stays
    claimed without a job, and another user is served."""
    pool.start()
    pool.wait_for(
        lambda: not pool.jobs(),
        90,
        "every job to leave the queue after the restart",
    )
    done = pool.jobs(history=True)
    assert sorted(int(str(job.evaluate("ProcId"))) for job in done) == list(range(JOBS))
    assert all(job.evaluate("JobStatus") == 4 for job in done), done
    for proc, lines in _runs(home).items():
        starts = [line for line in lines if line.startswith("start ")]
        ends = [line for line in lines if line.startswith("end ")]
        assert len(starts) == 1 and len(ends) == 1, f"job 1.{proc} ran {lines}"
        assert starts[0].split()[1] == ends[0].split()[1], lines

    def settled() -> bool:
        states = [
            (ad.evaluate("State"), ad.evaluate("Activity"))
            for ad in pool.client.query_ads("Machine")
        ]
        return ("Claimed", "Idle") not in states and ("Claimed", "Busy") not in states

    pool.wait_for(settled, 60, "every slot to be given back after the jobs ended")
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_a_starter_forked_before_its_record_never_runs_its_job(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """A startd killed after forking a starter, while writing that starter's record (the
    claims file blocks), leaves a starter that exits without running the job; after the
    restart each job runs exactly once."""
    pool = pool_factory(cpus=JOBS)
    claims = pool.directory / "spool" / "startd_claims"
    saved = claims.read_bytes() if claims.exists() else b""
    claims.unlink(missing_ok=True)
    os.mkfifo(claims, 0o600)
    home = _submit_recording_jobs(pool, slot_users[0], shared_dir)
    pool.wait_for(lambda: bool(_starters(pool)), 60, "the first starter to be forked")
    orphans = _starters(pool)
    time.sleep(0.5)  # the startd is blocked opening the claims file; the starter waits
    assert _runs(home) == {proc: [] for proc in range(JOBS)}
    _kill_9(pool)
    for pid in orphans:
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).wait(10)
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
    assert _runs(home) == {proc: [] for proc in range(JOBS)}
    claims.unlink()
    claims.write_bytes(saved)
    _restart_and_check(pool, home, slot_users, shared_dir)


@pytest.mark.parametrize("moment", ["forked", "recorded", "running"])
def test_a_kill_9_around_the_starters_start_never_duplicates_a_job(
    pool_factory, slot_users, shared_dir: Path, moment: str
) -> None:
    """``kill -9`` of ``ep run`` as soon as a starter is forked, as soon as the claims file
    records one, or once every job runs: after the restart each job ran exactly once (the
    surviving starters are adopted, never doubled) and every slot is given back."""
    pool = pool_factory(cpus=JOBS)
    home = _submit_recording_jobs(pool, slot_users[0], shared_dir)
    if moment == "forked":
        pool.wait_for(lambda: bool(_starters(pool)), 60, "the first starter to be forked")
    elif moment == "recorded":
        pool.wait_for(lambda: _claims_lines(pool) > 0, 60, "the first starter's record")
    else:
        pool.wait_for(
            lambda: all(len(lines) == 1 for lines in _runs(home).values()),
            60,
            "every job to start",
        )
    _kill_9(pool)
    _restart_and_check(pool, home, slot_users, shared_dir)


def test_a_kill_9_between_a_jobs_end_and_the_queues_record_never_reruns_it(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """``kill -9`` of ``ep run`` after the startd recorded the jobs' ends but before the queue
    did (the queue's database is held locked meanwhile): after the restart the jobs complete
    from the startd's history and none runs again."""
    pool = pool_factory(cpus=JOBS)
    home = _submit_recording_jobs(pool, slot_users[0], shared_dir)
    pool.wait_for(
        lambda: len([j for j in pool.jobs() if j.evaluate("JobStatus") == 2]) == JOBS,
        60,
        "every job to be running in the queue",
    )
    history = pool.directory / "spool" / "startd_history"
    database = sqlite3.connect(str(pool.directory / "spool" / "job_queue.db"), timeout=30)
    try:
        database.execute("BEGIN EXCLUSIVE")
        pool.wait_for(
            lambda: history.exists() and history.read_text().count("ClusterId") >= 1,
            60,
            "a job's end in the startd's history",
        )
        _kill_9(pool)
    finally:
        database.rollback()
        database.close()
    _restart_and_check(pool, home, slot_users, shared_dir)
