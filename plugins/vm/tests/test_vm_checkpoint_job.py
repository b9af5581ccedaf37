"""vm_checkpoint through a real personal pool: a vacated guest is saved, its saved state
goes back to the Iwd with the job's files, and the next run resumes the guest from it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from vm_guest import TICK_LINE, UP_LINE, Guest
from vm_pool import JOB_DEADLINE, domains, submit_vm, vm_config, write_disks

from epcore.testing.pool import PoolProcess, user_home

#: The guest's counter, as it prints it on its console.
_TICK = re.compile(rf"{TICK_LINE} (\d+)")


def _running_console(pool: PoolProcess) -> Path | None:
    """The console of the job's guest in its sandbox (under the pool's execute directory)."""
    found = sorted(pool.directory.rglob("vm_console.log"))
    return found[0] if found else None


def _ticks(path: Path | None) -> list[int]:
    if path is None:
        return []
    try:
        return [int(n) for n in _TICK.findall(path.read_text(errors="replace"))]
    except OSError:
        return []  # the sandbox went meanwhile


@pytest.mark.xdist_group("libvirtd")
def test_a_vacated_checkpointing_guest_resumes_its_counter_when_it_runs_again(
    leftover_domains: None,
    pool_factory,
    slot_users,
    shared_dir: Path,
    libvirt_uri: str,
    vm_guest: Guest,
) -> None:
    """ep vacate of a vm_checkpoint job saves its guest (counting once a second); the saved
    memory comes back to the Iwd with the console, and when the job runs again the guest
    resumes: its counter goes on from the last value it printed instead of starting over,
    and it does not boot again."""
    pool = pool_factory(vm_config(libvirt_uri, vm_guest), cpus=2, memory=2048)
    user = slot_users[0]
    home = user_home(shared_dir, user)
    write_disks(home, user, b"count")
    # The guest ignores the power button: the final ep rm (no save) destroys it after 20 s.
    submit_vm(pool, user, home, "vm_checkpoint = true\njob_max_vacate_time = 20")
    pool.wait_for(
        lambda: len(_ticks(_running_console(pool))) >= 4, JOB_DEADLINE, "the guest to count"
    )
    result = pool.ep("vacate")
    assert result.status == 0, result.stderr
    saved = home / "vm_checkpoint.1.0.mem"
    # The output goes back in name order: the console comes after the saved guest.
    pool.wait_for(
        lambda: saved.exists() and bool(_ticks(home / "vm_console.log")),
        120,
        "the saved guest and the console in the Iwd",
    )
    before = _ticks(home / "vm_console.log")
    assert saved.stat().st_uid == user.uid
    pool.wait_for(
        lambda: bool(domains(libvirt_uri, shared_dir.name)), JOB_DEADLINE, "the second run"
    )
    pool.wait_for(lambda: len(_ticks(_running_console(pool))) >= 2, 120, "the counter again")
    console = _running_console(pool)
    assert console is not None
    after = _ticks(console)
    starter_log = "".join(pool.log(p.name) for p in (pool.directory / "log").glob("StarterLog*"))
    assert after[0] >= before[-1] >= 3, (before, after, starter_log[-3000:])
    assert UP_LINE not in console.read_text(errors="replace")
    assert "resumed from its checkpoint" in starter_log, starter_log[-2000:]
    assert pool.ep("rm", "1.0").status == 0
    pool.wait_for(lambda: not domains(libvirt_uri, shared_dir.name), 60, "the domain to go")


@pytest.mark.xdist_group("libvirtd")
def test_removing_a_checkpointing_job_saves_nothing_and_leaves_no_domain(
    leftover_domains: None,
    pool_factory,
    slot_users,
    shared_dir: Path,
    libvirt_uri: str,
    vm_guest: Guest,
) -> None:
    """ep rm of a running vm_checkpoint job (its guest counting) does not save the guest:
    the domain goes, no vm_checkpoint file is made in the sandbox or the Iwd, and the one an
    earlier run left in the Iwd is removed with the job (HTCondor's spool goes with it)."""
    pool = pool_factory(vm_config(libvirt_uri, vm_guest), cpus=2, memory=2048)
    user = slot_users[0]
    home = user_home(shared_dir, user)
    write_disks(home, user, b"count")
    earlier = home / "vm_checkpoint.1.0.mem"
    earlier.write_bytes(b"not a saved guest: the run boots afresh")
    os.chown(earlier, user.uid, user.gid)
    # The guest ignores the power button: it is destroyed when the 10 s vacate time is up.
    submit_vm(pool, user, home, "vm_checkpoint = true\njob_max_vacate_time = 10")
    pool.wait_for(
        lambda: len(_ticks(_running_console(pool))) >= 2, JOB_DEADLINE, "the guest to count"
    )
    result = pool.ep("rm", "1.0")
    assert result.status == 0, result.stderr
    pool.wait_for(lambda: not domains(libvirt_uri, shared_dir.name), 120, "the domain to go")
    pool.wait_for(lambda: not pool.jobs(), 120, "the job to leave the queue")
    pool.wait_for(lambda: _running_console(pool) is None, 60, "the sandbox to go")
    (removed,) = pool.jobs(history=True)
    assert removed.evaluate("JobStatus") == 3
    starter_log = "".join(pool.log(p.name) for p in (pool.directory / "log").glob("StarterLog*"))
    assert "the job is removed" in starter_log, starter_log[-3000:]
    assert "checkpointed" not in starter_log, starter_log[-3000:]
    assert not list(home.glob("vm_checkpoint.*")), sorted(p.name for p in home.iterdir())
    assert not list(pool.directory.rglob("vm_checkpoint.*"))
