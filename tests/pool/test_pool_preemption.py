"""End to end: jobs preempted by user priority and by the slot's RANK (must-show 3).

A real ``ep run`` with two cores. A user with a poor priority fills the machine with long
jobs; then a better user, or a user the slots' RANK prefers, submits. The negotiator
preempts the running jobs, the schedd waits until the preempted jobs are gone and starts
the new ones on the same dynamic slots, and the preempted jobs go back to idle.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from epcore.testing.pool import PoolProcess, submit_as
from epcore.testing.system import SlotUser

pytestmark = pytest.mark.system

LONG_JOBS = "executable = /bin/sleep\narguments = 600\nrequest_cpus = 1\nrequest_memory = 64\n"


def _submit(pool: PoolProcess, user: SlotUser, root: Path, text: str) -> None:
    submit_as(pool, user, root, text)


def _running(pool: PoolProcess) -> dict[str, int]:
    found: dict[str, int] = {}
    for job in pool.jobs("JobStatus == 2"):
        owner = str(job.evaluate("Owner"))
        found[owner] = found.get(owner, 0) + 1
    return found


def test_a_better_priority_preempts_under_preemption_requirements(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """With PREEMPTION_REQUIREMENTS true, a user whose effective priority is far better
    takes the slots of a running user; the preempted jobs go back to idle."""
    pool = pool_factory(
        "PREEMPTION_REQUIREMENTS = True\nMAXJOBRETIREMENTTIME = 0\n", cpus=2, memory=1024
    )
    poor, rich = slot_users[0], slot_users[1]
    _submit(pool, poor, shared_dir, LONG_JOBS + "queue 2\n")
    pool.wait_for(lambda: _running(pool) == {poor.name: 2}, 60, "the poor user's jobs to run")
    submitter = str(pool.jobs()[0].evaluate("User"))
    assert pool.ep("userprio", "-setfactor", submitter, "1000000").status == 0
    _submit(pool, rich, shared_dir, LONG_JOBS + "queue 2\n")
    pool.wait_for(lambda: _running(pool) == {rich.name: 2}, 90, "the preemption")
    preempted = pool.jobs(f'Owner == "{poor.name}"')
    assert [j.evaluate("JobStatus") for j in preempted] == [1, 1]
    assert all(j.evaluate("JobLastOutcome") == "evicted" for j in preempted)
    assert "(priority)" in pool.log("NegotiatorLog")


def test_preemption_requirements_false_protects_running_jobs(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """With PREEMPTION_REQUIREMENTS false (the default), a better user waits."""
    pool = pool_factory("MAXJOBRETIREMENTTIME = 0\n", cpus=2, memory=1024)
    poor, rich = slot_users[0], slot_users[1]
    _submit(pool, poor, shared_dir, LONG_JOBS + "queue 2\n")
    pool.wait_for(lambda: _running(pool) == {poor.name: 2}, 60, "the poor user's jobs to run")
    submitter = str(pool.jobs()[0].evaluate("User"))
    assert pool.ep("userprio", "-setfactor", submitter, "1000000").status == 0
    _submit(pool, rich, shared_dir, LONG_JOBS + "queue 2\n")
    cycles = pool.log("NegotiatorLog").count("negotiation cycle")
    pool.wait_for(
        lambda: pool.log("NegotiatorLog").count("negotiation cycle") >= cycles + 3,
        60,
        "three more negotiation cycles",
    )
    assert _running(pool) == {poor.name: 2}


def test_the_slots_rank_preempts_for_the_job_it_prefers(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """A slot whose RANK prefers another user's jobs lets them preempt the running ones."""
    preferred = slot_users[1]
    pool = pool_factory(
        f'RANK = Owner == "{preferred.name}"\nMAXJOBRETIREMENTTIME = 0\n', cpus=2, memory=1024
    )
    other = slot_users[0]
    _submit(pool, other, shared_dir, LONG_JOBS + "queue 2\n")
    pool.wait_for(lambda: _running(pool) == {other.name: 2}, 60, "the first jobs to run")
    _submit(pool, preferred, shared_dir, LONG_JOBS + "queue 1\n")
    pool.wait_for(
        lambda: _running(pool) == {other.name: 1, preferred.name: 1}, 90, "the RANK preemption"
    )
    assert "(rank)" in pool.log("NegotiatorLog")


def test_a_partitionable_slot_is_freed_for_a_bigger_job_of_a_better_user(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """Under ALLOW_PSLOT_PREEMPTION a two-core job of a better user preempts the two one-core
    dynamic slots it needs, and runs in the partitionable slot once they are gone."""
    pool = pool_factory(
        "PREEMPTION_REQUIREMENTS = True\nALLOW_PSLOT_PREEMPTION = True\nMAXJOBRETIREMENTTIME = 0\n",
        cpus=2,
        memory=1024,
    )
    poor, rich = slot_users[0], slot_users[1]
    _submit(pool, poor, shared_dir, LONG_JOBS + "queue 2\n")
    pool.wait_for(lambda: _running(pool) == {poor.name: 2}, 60, "the poor user's jobs to run")
    submitter = str(pool.jobs()[0].evaluate("User"))
    assert pool.ep("userprio", "-setfactor", submitter, "1000000").status == 0
    big = LONG_JOBS.replace("request_cpus = 1", "request_cpus = 2")
    _submit(pool, rich, shared_dir, big + "queue 1\n")
    pool.wait_for(lambda: _running(pool) == {rich.name: 1}, 120, "the big job to run")
    (job,) = pool.jobs(f'Owner == "{rich.name}"')
    assert job.evaluate("RequestCpus") == 2
    assert [j.evaluate("JobStatus") for j in pool.jobs(f'Owner == "{poor.name}"')] == [1, 1]
