"""End to end: group quotas and a concurrency limit in a real ``ep run`` pool (issue 28's
must-show 2 and 3).

One user submits through ``ep submit`` with ``accounting_group`` (and
``accounting_group_user``) or ``concurrency_limits``; the submissions are held and released
together so that one negotiation cycle sees all of them. The running jobs are sampled from
the schedd while the jobs run; every job must complete.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from epcore.testing.cedar import run_htcondor2
from epcore.testing.pool import PoolProcess, submit_as

pytestmark = pytest.mark.system

CPUS = 8
GROUPS = """
GROUP_NAMES = physics, chemistry
GROUP_QUOTA_physics = 6
GROUP_QUOTA_chemistry = 2
"""
GROUP_JOBS = """\
executable = /bin/sleep
arguments = 1
request_cpus = 1
request_memory = 64
hold = true
accounting_group = {group}
accounting_group_user = {user}
queue {count}
"""
MATLAB_JOBS = """\
executable = /bin/sleep
arguments = 1
request_cpus = 1
request_memory = 64
hold = true
concurrency_limits = matlab
queue 20
"""


def _running_by_group(pool: PoolProcess) -> tuple[dict[str, int], dict[str, int]]:
    """Running and idle jobs per AcctGroup."""
    running: dict[str, int] = {}
    idle: dict[str, int] = {}
    for job in pool.client.query_jobs(projection=["AcctGroup", "JobStatus"]):
        group = str(job.evaluate("AcctGroup"))
        status = job.evaluate("JobStatus")
        if status == 2:
            running[group] = running.get(group, 0) + 1
        elif status == 1:
            idle[group] = idle.get(group, 0) + 1
    return running, idle


def _sample_until_empty(
    pool: PoolProcess, seconds: float, every: float, look: Callable[[], None]
) -> None:
    """Call ``look`` every ``every`` seconds until the queue is empty (at most ``seconds``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        look()
        if not pool.client.query_jobs(projection=["ClusterId"]):
            return
        time.sleep(every)
    pytest.fail(f"the jobs did not finish in {seconds} s")


def _all_completed(pool: PoolProcess, count: int) -> None:
    history = pool.client.query_jobs(history=True, projection=["JobStatus", "ExitCode"])
    assert len(history) == count
    assert {(h.evaluate("JobStatus"), h.evaluate("ExitCode")) for h in history} == {(4, 0)}


def _submit_groups(pool: PoolProcess, user: object, root: Path, counts: dict[str, int]) -> None:
    for group, count in counts.items():
        text = GROUP_JOBS.format(group=group, user=f"{group}_user", count=count)
        submit_as(pool, user, root, text)  # type: ignore[arg-type]
    assert pool.ep("release", "-all").status == 0


def test_quotas_hold_six_and_two_while_both_groups_wait(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """8 slots, physics 6 and chemistry 2 without surplus, 40 jobs each: while both groups
    have idle jobs no sample shows more than 6 and 2 running, full samples show exactly 6
    and 2, and all 80 jobs complete."""
    pool = pool_factory(GROUPS, cpus=CPUS, memory=CPUS * 256)
    _submit_groups(pool, slot_users[0], shared_dir, {"physics": 40, "chemistry": 40})
    contended: list[dict[str, int]] = []

    def look() -> None:
        running, idle = _running_by_group(pool)
        if idle.get("physics", 0) and idle.get("chemistry", 0):
            assert running.get("physics", 0) <= 6 and running.get("chemistry", 0) <= 2, running
            if sum(running.values()) == CPUS:
                contended.append(running)

    _sample_until_empty(pool, 120, 0.3, look)
    assert len(contended) >= 3, contended
    assert all(s == {"physics": 6, "chemistry": 2} for s in contended), contended
    _all_completed(pool, 80)
    quotas = pool.ep("userprio", "-quotas")
    assert quotas.status == 0, quotas.stderr
    rows = {line.split()[0]: line.split() for line in quotas.stdout.splitlines() if line}
    assert rows["physics"][1:4] == ["6.00", "6.00", "no"]
    assert rows["chemistry"][1:4] == ["2.00", "2.00", "no"]


def test_surplus_lets_chemistry_take_physics_idle_share(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """With GROUP_ACCEPT_SURPLUS, chemistry runs 2 while physics has work, then takes the
    slots physics leaves when it runs dry: more than its quota of 2 at once."""
    pool = pool_factory(GROUPS + "GROUP_ACCEPT_SURPLUS = true\n", cpus=CPUS, memory=CPUS * 256)
    _submit_groups(pool, slot_users[0], shared_dir, {"physics": 12, "chemistry": 40})
    chemistry_after_physics: list[int] = []
    chemistry_during_physics: list[int] = []

    def look() -> None:
        running, idle = _running_by_group(pool)
        physics = running.get("physics", 0) + idle.get("physics", 0)
        if not idle.get("chemistry", 0):
            return
        if idle.get("physics", 0):
            chemistry_during_physics.append(running.get("chemistry", 0))
        elif physics == 0:
            chemistry_after_physics.append(running.get("chemistry", 0))

    _sample_until_empty(pool, 120, 0.3, look)
    assert chemistry_during_physics and max(chemistry_during_physics) <= 2
    assert chemistry_after_physics and max(chemistry_after_physics) > 2, chemistry_after_physics
    _all_completed(pool, 52)


def test_matlab_limit_keeps_two_running(pool_factory, slot_users, shared_dir: Path) -> None:
    """MATLAB_LIMIT = 2 and 20 jobs asking for matlab on 8 slots: sampled every second (and
    in between), never more than 2 run at once, and all 20 complete; ep userprio -limits
    shows the limit."""
    pool = pool_factory("MATLAB_LIMIT = 2\n", cpus=CPUS, memory=CPUS * 256)
    submit_as(pool, slot_users[0], shared_dir, MATLAB_JOBS)
    assert pool.ep("release", "-all").status == 0
    most: list[int] = []

    def look() -> None:
        jobs = pool.client.query_jobs(projection=["JobStatus"])
        most.append(sum(1 for job in jobs if job.evaluate("JobStatus") == 2))

    _sample_until_empty(pool, 120, 0.25, look)
    assert max(most) == 2, most
    _all_completed(pool, 20)
    limits = pool.ep("userprio", "-limits")
    assert limits.status == 0 and "matlab" in limits.stdout, limits


GROUP_PRIORITIES = """
result = [dict(ad) for ad in htcondor2.Negotiator().getPriorities()]
"""


def test_groups_reach_htcondor2_and_userprio_over_cedar(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """After a cycle with groups, htcondor2's getPriorities lists <none>, chemistry and
    physics as accounting groups (their quotas, each naming its parent) before the
    submitters, who name their group; ``ep userprio -pool -quotas`` shows the rows the local
    ``ep userprio -quotas`` shows."""
    pool = pool_factory(GROUPS, cpus=CPUS, memory=CPUS * 256)
    _submit_groups(pool, slot_users[0], shared_dir, {"physics": 2, "chemistry": 2})
    _sample_until_empty(pool, 60, 0.5, lambda: None)
    listed = run_htcondor2(str(pool.config_path), GROUP_PRIORITIES)
    assert isinstance(listed, list)
    groups = [entry for entry in listed if entry.get("IsAccountingGroup") is True]
    assert [entry["Name"] for entry in groups] == ["<none>", "chemistry", "physics"]
    assert listed[: len(groups)] == groups
    by_name = {entry["Name"]: entry for entry in listed}
    assert by_name["physics"]["EffectiveQuota"] == 6.0
    assert by_name["physics"]["AccountingGroup"] == "<none>"
    assert by_name["chemistry"]["SurplusPolicy"] == "no"
    submitter = next(name for name in by_name if str(name).startswith("physics.physics_user@"))
    assert by_name[submitter]["AccountingGroup"] == "physics"
    local = pool.ep("userprio", "-quotas")
    address = (pool.directory / "log" / ".collector_address").read_text().splitlines()[0]
    remote = pool.ep("userprio", "-pool", address.strip("<>"), "-quotas")
    assert remote.status == 0, remote.stderr
    assert "physics" in remote.stdout and remote.stdout == local.stdout
