"""End to end: 200 jobs from three real users with different priority factors (must-show 1).

A real ``ep run`` with 14 cores; three slot users submit through ``ep submit`` (as
themselves: the pool knows them from its socket), root gives them priority factors 1000, 2000
and 4000 with ``ep userprio -setfactor`` and releases the held submissions at once, so that
one negotiation cycle shares the machine. While every user still has idle jobs, each user's
share of the running jobs must match the fair-share formula (share proportional to 1/EUP,
EUP = RUP x factor, every RUP at its 0.5 start) within 10%; in the end every job has
completed and written its output.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from epcore.classad import ClassAd
from epcore.testing.pool import PoolProcess
from epcore.testing.system import open_up

pytestmark = pytest.mark.system

CPUS = 14
FACTORS = (1000.0, 2000.0, 4000.0)
JOBS = (67, 67, 66)

SUBMIT = """\
executable = /bin/sh
arguments = "-c 'sleep 2; echo job $(Cluster).$(Process) of $ENV(LOGNAME)'"
output = out.$(Process)
error = err.$(Process)
log = jobs.log
request_cpus = 1
request_memory = 64
hold = true
queue {count}
"""


def _running_by_owner(pool: PoolProcess) -> tuple[dict[str, int], dict[str, int]]:
    jobs: list[ClassAd] = pool.client.query_jobs(projection=["Owner", "JobStatus"])
    running: dict[str, int] = {}
    idle: dict[str, int] = {}
    for job in jobs:
        owner = str(job.evaluate("Owner"))
        status = job.evaluate("JobStatus")
        if status == 2:
            running[owner] = running.get(owner, 0) + 1
        elif status == 1:
            idle[owner] = idle.get(owner, 0) + 1
    return running, idle


def test_three_users_share_the_pool_by_their_priority_factors(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """While all three users wait for slots, each runs 1/EUP of them (within 10%), and all
    200 jobs complete with their output."""
    pool = pool_factory(cpus=CPUS, memory=CPUS * 256)
    users = slot_users[:3]
    homes = []
    for user, count in zip(users, JOBS, strict=True):
        home = shared_dir / f"home_{user.name}"
        home.mkdir()
        os.chown(home, user.uid, user.gid)
        open_up(home)
        (home / "job.sub").write_text(
            SUBMIT.replace("$ENV(LOGNAME)", user.name).format(count=count)
        )
        os.chown(home / "job.sub", user.uid, user.gid)
        homes.append(home)
        result = pool.ep("submit", "job.sub", user=user, cwd=str(home))
        assert result.status == 0, result.stderr
        assert f"{count} job(s) submitted" in result.stdout
    submitters = {}
    for job in pool.client.query_jobs(projection=["Owner", "User"]):
        submitters[str(job.evaluate("Owner"))] = str(job.evaluate("User"))
    for user, factor in zip(users, FACTORS, strict=True):
        result = pool.ep("userprio", "-setfactor", submitters[user.name], str(factor))
        assert result.status == 0, result.stderr
    refused = pool.ep("userprio", "-setfactor", submitters[users[0].name], "1", user=users[0])
    assert refused.status != 0 and "QUEUE_SUPER_USERS" in refused.stderr

    assert pool.ep("release", "-all").status == 0
    inverse = [1.0 / f for f in FACTORS]
    expected = {u.name: CPUS * w / sum(inverse) for u, w in zip(users, inverse, strict=True)}

    samples: list[dict[str, int]] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        running, idle = _running_by_owner(pool)
        if all(idle.get(u.name, 0) > 0 for u in users):
            if sum(running.values()) == CPUS:
                samples.append(running)
        elif samples:
            break  # a user has run out of idle jobs: the contention is over
        time.sleep(0.3)
    assert len(samples) >= 5, f"too few samples of full contention: {samples}"
    for user in users:
        observed = sum(s.get(user.name, 0) for s in samples) / len(samples)
        assert abs(observed - expected[user.name]) <= 0.1 * expected[user.name], (
            user.name,
            observed,
            expected[user.name],
            samples[:5],
        )

    pool.wait_for(lambda: not pool.client.query_jobs(projection=["ClusterId"]), 240, "all jobs")
    history = pool.client.query_jobs(history=True, projection=["Owner", "JobStatus", "ExitCode"])
    assert len(history) == sum(JOBS)
    assert {(h.evaluate("JobStatus"), h.evaluate("ExitCode")) for h in history} == {(4, 0)}
    for user, home, count in zip(users, homes, JOBS, strict=True):
        outputs = sorted(home.glob("out.*"))
        assert len(outputs) == count
        for path in outputs:
            process = path.name.split(".", 1)[1]
            text = path.read_text()
            assert text.startswith("job ") and text.rstrip().endswith(
                f".{process} of {user.name}"
            ), (path, text)
            assert path.stat().st_uid == user.uid
