"""Issue 18, finding 7: periodic_hold, periodic_release, periodic_remove, periodic_vacate and
the SYSTEM_PERIODIC_* knobs were accepted at submit and never evaluated. Through a real
``ep run``, with jobs of real users: each expression now acts on the job as HTCondor's
schedd does, with its reason and codes, and the pool serves another user afterwards."""

from __future__ import annotations

import contextlib
from pathlib import Path

import psutil
import pytest
from security_support import assert_pool_serves

from epcore.classad import ClassAd
from epcore.testing.pool import PoolProcess, submit_as
from epcore.testing.system import SlotUser, user_processes

pytestmark = pytest.mark.system

#: Passes every second, so that the tests need not wait a minute for each.
QUICK_PASSES = "PERIODIC_EXPR_INTERVAL = 1\n"


def _job(pool: PoolProcess, job_id: str = "1.0", *, history: bool = False) -> ClassAd | None:
    cluster, proc = job_id.split(".")
    found = pool.jobs(f"ClusterId == {cluster} && ProcId == {proc}", history=history)
    return found[0] if found else None


def _status(pool: PoolProcess, job_id: str = "1.0") -> object:
    job = _job(pool, job_id)
    return None if job is None else job.evaluate("JobStatus")


def _wait_status(pool: PoolProcess, status: int, what: str, timeout: float = 60) -> ClassAd:
    pool.wait_for(lambda: _status(pool) == status, timeout, what)
    job = _job(pool)
    assert job is not None
    return job


def _sleeps(user: SlotUser) -> bool:
    return bool(user_processes(user.name))


def _wait_no_process(pool: PoolProcess, user: SlotUser) -> None:
    """Wait until no process of ``user`` is left; a timeout names the processes that are."""
    try:
        pool.wait_for(lambda: not _sleeps(user), 30, "the held job's process to end")
    except AssertionError as failure:
        left = []
        for pid in user_processes(user.name):
            with contextlib.suppress(psutil.Error):
                process = psutil.Process(pid)
                parent = process.ppid()
                left.append(
                    f"{pid} (uid {process.uids().real}, parent {parent}): {process.cmdline()}"
                )
        raise AssertionError(f"{failure}\nprocesses of {user.name} left: {left}") from None


def test_periodic_hold_release_and_remove_act_on_a_running_job(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """periodic_hold holds the job once it has run 2 s (code 3, its reason and subcode, its
    process ended), periodic_release releases it 2 s later, it runs again, and
    periodic_remove removes it then with HTCondor's RemoveReason."""
    pool = pool_factory(QUICK_PASSES)
    user = slot_users[0]
    submit_as(
        pool,
        user,
        shared_dir,
        "executable = /bin/sleep\narguments = 300\n"
        "periodic_hold = JobStatus == 2 && NumJobStarts == 1 && "
        "time() - JobCurrentStartDate >= 2\n"
        'periodic_hold_reason = strcat("ran ", NumJobStarts, " time(s)")\n'
        "periodic_hold_subcode = 17\n"
        "periodic_release = HoldReasonCode == 3 && time() - EnteredCurrentStatus >= 2\n"
        "periodic_remove = NumJobStarts >= 2 && JobStatus == 2\n"
        "queue\n",
    )
    _wait_status(pool, 2, "the job to run")
    held = _wait_status(pool, 5, "periodic_hold to hold the running job", timeout=30)
    assert held.evaluate("HoldReason") == "ran 1 time(s)"
    assert held.evaluate("HoldReasonCode") == 3
    assert held.evaluate("HoldReasonSubCode") == 17
    assert held.evaluate("NumHolds") == 1
    _wait_no_process(pool, user)
    pool.wait_for(
        lambda: (job := _job(pool)) is not None and job.evaluate("NumJobStarts") == 2,
        60,
        "periodic_release to let the job run again",
    )
    pool.wait_for(lambda: _job(pool) is None, 60, "periodic_remove to remove the job")
    gone = _job(pool, history=True)
    assert gone is not None and gone.evaluate("JobStatus") == 3
    assert gone.evaluate("RemoveReason") == (
        "The job attribute PeriodicRemove expression "
        "'NumJobStarts >= 2 && JobStatus == 2' evaluated to TRUE"
    )
    assert gone.evaluate("LastHoldReasonCode") == 3
    assert gone.evaluate("ReleaseReason") == (
        "The job attribute PeriodicRelease expression "
        "'HoldReasonCode == 3 && time() - EnteredCurrentStatus >= 2' evaluated to TRUE"
    )
    pool.wait_for(lambda: not _sleeps(user), 30, "the removed job's process to end")
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_system_periodic_hold_from_the_configuration_holds_with_code_26(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """SYSTEM_PERIODIC_HOLD holds a running job of a user whose own expressions say
    nothing, with code 26 and SYSTEM_PERIODIC_HOLD_REASON / _SUBCODE; another user's job,
    which the expression does not name, completes."""
    user = slot_users[0]
    pool = pool_factory(
        QUICK_PASSES
        + f'SYSTEM_PERIODIC_HOLD = Owner == "{user.name}" && JobStatus == 2\n'
        + 'SYSTEM_PERIODIC_HOLD_REASON = strcat("no jobs for ", Owner)\n'
        + "SYSTEM_PERIODIC_HOLD_SUBCODE = 4\n"
    )
    submit_as(pool, user, shared_dir, "executable = /bin/sleep\narguments = 300\nqueue\n")
    held = _wait_status(pool, 5, "SYSTEM_PERIODIC_HOLD to hold the job")
    assert held.evaluate("HoldReason") == f"no jobs for {user.name}"
    assert held.evaluate("HoldReasonCode") == 26
    assert held.evaluate("HoldReasonSubCode") == 4
    _wait_no_process(pool, user)
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_system_periodic_remove_and_release_act_on_idle_and_held_jobs(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """A job submitted on hold is released by SYSTEM_PERIODIC_RELEASE... unless a user held
    it; an idle job that can never match is removed by SYSTEM_PERIODIC_REMOVE."""
    user = slot_users[1]
    pool = pool_factory(
        QUICK_PASSES
        + "SYSTEM_PERIODIC_RELEASE = true\n"
        + "SYSTEM_PERIODIC_REMOVE = JobStatus == 1 && RequestCpus > 1000\n"
    )
    submit_as(
        pool,
        user,
        shared_dir,
        "executable = /bin/true\nhold = true\nqueue\nrequest_cpus = 2000\nhold = false\nqueue\n",
    )
    pool.wait_for(lambda: _job(pool, "1.1") is None, 30, "the unmatchable job's removal")
    removed = _job(pool, "1.1", history=True)
    assert removed is not None
    assert removed.evaluate("RemoveReason") == (
        "The system macro SYSTEM_PERIODIC_REMOVE expression "
        "'JobStatus == 1 && RequestCpus > 1000' evaluated to TRUE"
    )
    pool.wait_for(
        lambda: (
            (done := _job(pool, "1.0", history=True)) is not None
            and done.evaluate("JobStatus") == 4
        ),
        60,
        "the job submitted on hold to be released and complete",
    )
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_a_user_hold_is_never_released_by_policy(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """condor_hold's code 1 is left alone by SYSTEM_PERIODIC_RELEASE, which meanwhile
    releases a job submitted on hold (code 15) that then completes."""
    user = slot_users[1]
    pool = pool_factory(QUICK_PASSES + "SYSTEM_PERIODIC_RELEASE = true\n")
    submit_as(pool, user, shared_dir, "executable = /bin/sleep\narguments = 300\nqueue\n")
    _wait_status(pool, 2, "the job to run")
    assert pool.ep("hold", "1.0", user=user).status == 0
    _wait_no_process(pool, user)
    submit_as(pool, user, shared_dir, "executable = /bin/true\nhold = true\nqueue\n")
    pool.wait_for(
        lambda: (
            (done := _job(pool, "2.0", history=True)) is not None
            and done.evaluate("JobStatus") == 4
        ),
        60,
        "the job submitted on hold to be released by policy and complete",
    )
    held = _job(pool)
    assert held is not None and held.evaluate("JobStatus") == 5
    assert held.evaluate("HoldReasonCode") == 1
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_periodic_vacate_evicts_the_job_back_to_idle_and_it_runs_again(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """periodic_vacate evicts a running job with VacateReasonCode 1000; the queue takes it back
    as idle and it runs a second time."""
    pool = pool_factory(QUICK_PASSES)
    user = slot_users[2]
    submit_as(
        pool,
        user,
        shared_dir,
        "executable = /bin/sleep\narguments = 300\n"
        "periodic_vacate = NumJobStarts == 1 && time() - JobCurrentStartDate >= 2\n"
        "queue\n",
    )
    _wait_status(pool, 2, "the job to run")
    pool.wait_for(
        lambda: (
            (job := _job(pool)) is not None
            and job.evaluate("NumJobStarts") == 2
            and job.evaluate("JobStatus") == 2
        ),
        60,
        "the vacated job to run a second time",
    )
    job = _job(pool)
    assert job is not None
    assert job.evaluate("VacateReasonCode") == 1000
    assert job.evaluate("JobLastOutcome") == "evicted"
    assert str(job.evaluate("VacateReason")).startswith(
        "The job attribute PeriodicVacate expression"
    )
    assert pool.ep("rm", "1.0", user=user).status == 0
    pool.wait_for(lambda: not _sleeps(user), 30, "the removed job's process to end")
    assert_pool_serves(pool, slot_users[3], shared_dir)
