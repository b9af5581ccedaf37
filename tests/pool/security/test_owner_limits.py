"""Issue 18, finding 8: there were no per-owner limits (a 20,000-job submission grew the queue
to 95 MB) and another user's single job waited 9.6 minutes behind one user's reused claims.

Through a real ``ep run``, as real users: a submission over MAX_JOBS_PER_SUBMISSION,
MAX_JOBS_PER_OWNER or MAX_JOBS_SUBMITTED is refused with condor_submit's words and queues
nothing, also for a raw client that sends its jobs in parts without saying how many;
MAX_JOBS_RUNNING caps the running jobs; and a big submission within the limits does not keep
another user's job waiting longer than CLAIM_WORKLIFE allows its claims to be reused.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from security_support import assert_pool_serves, submitted_cluster

from epcore.classad import ClassAd
from epcore.pool.requests import PoolClient
from epcore.runtime.control import ControlError
from epcore.testing.pool import PoolProcess, submit_as, user_home
from epcore.testing.system import SlotUser

pytestmark = pytest.mark.system

LIMITS = """\
MAX_JOBS_PER_SUBMISSION = 550
MAX_JOBS_PER_OWNER = 600
MAX_JOBS_SUBMITTED = 700
"""


def _submit(pool: PoolProcess, user: SlotUser, root: Path, text: str) -> tuple[int, str]:
    home = user_home(root, user)
    path = home / "limits.sub"
    path.write_text(text)
    os.chown(path, user.uid, user.gid)
    result = pool.ep("submit", path.name, user=user, cwd=str(home))
    return result.status, result.stdout + result.stderr


def _owned(pool: PoolProcess, user: SlotUser) -> int:
    return len(pool.jobs(f'Owner == "{user.name}"'))


def test_submissions_over_the_limits_are_refused_whole(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """551 jobs pass MAX_JOBS_PER_SUBMISSION, 550 + 51 pass MAX_JOBS_PER_OWNER, and another
    user's 151 pass MAX_JOBS_SUBMITTED: each is refused naming the limit, with nothing of it
    queued; what fits is queued, and once the queue is full no cluster is opened."""
    pool = pool_factory(LIMITS)
    alice, bob = slot_users[0], slot_users[1]
    held = "executable = /bin/true\nhold = true\n"

    status, said = _submit(pool, alice, shared_dir, held + "queue 551\n")
    assert status != 0
    assert "Number of submitted jobs would exceed MAX_JOBS_PER_SUBMISSION" in said, said
    assert _owned(pool, alice) == 0

    status, said = _submit(pool, alice, shared_dir, held + "queue 550\n")
    assert status == 0, said
    assert _owned(pool, alice) == 550

    status, said = _submit(pool, alice, shared_dir, held + "queue 51\n")
    assert status != 0
    assert "Number of submitted jobs would exceed MAX_JOBS_PER_OWNER" in said, said
    assert f"{alice.name} has 550 job(s)" in said
    assert _owned(pool, alice) == 550

    status, said = _submit(pool, bob, shared_dir, held + "queue 151\n")
    assert status != 0
    assert "Number of submitted jobs would exceed MAX_JOBS_SUBMITTED" in said, said
    assert _owned(pool, bob) == 0
    status, said = _submit(pool, bob, shared_dir, held + "queue 150\n")
    assert status == 0, said
    assert _owned(pool, bob) == 150

    status, said = _submit(pool, bob, shared_dir, held + "queue 1\n")
    assert status != 0
    assert "MAX_JOBS_SUBMITTED exceeded. Current=700, Limit=700" in said, said
    assert len(pool.jobs()) == 700
    assert pool.ep("rm", bob.name, user=bob).status == 0  # room for the bystander's job
    assert_pool_serves(pool, slot_users[3], shared_dir)


def _raw_submission(socket: str, user: SlotUser, parts: int, per_part: int) -> int:
    """As ``user``, open a cluster and send ``parts`` Submit requests of ``per_part`` jobs
    without announcing the size, as a hand-written client would; the parts accepted."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        accepted = 0
        try:
            os.setgroups([])
            os.setgid(user.gid)
            os.setuid(user.uid)
            client = PoolClient(socket, timeout=30)
            cluster = client.new_cluster()
            ad = ClassAd()
            ad["Cmd"] = "/bin/true"
            ad["ClusterId"] = cluster
            ad["JobStatus"] = 5
            for part in range(parts):
                procs = []
                for index in range(per_part):
                    proc = ClassAd()
                    proc["ProcId"] = part * per_part + index
                    procs.append(proc)
                try:
                    client.call("Submit", ClusterId=cluster, ClusterAd=ad, Procs=procs)
                    accepted += 1
                except ControlError:
                    pass
        except BaseException as error:
            sys.stderr.write(f"raw client failed: {error!r}\n")
        finally:
            os.write(write_end, str(accepted).encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as reader:
        answer = reader.read()
    os.waitpid(pid, 0)
    return int(answer or "-1")


def test_a_raw_client_sending_parts_cannot_pass_the_owner_limit(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """A client of the user's own that sends 4 parts of 200 jobs unannounced gets the parts
    that fit (MAX_JOBS_PER_SUBMISSION 550: two) and never more than the limits allow."""
    pool = pool_factory(LIMITS)
    mallory = slot_users[2]
    accepted = _raw_submission(pool.socket, mallory, parts=4, per_part=200)
    assert accepted == 2
    assert _owned(pool, mallory) == 400
    assert_pool_serves(pool, slot_users[3], shared_dir)


def test_max_jobs_running_caps_the_jobs_started(pool_factory, slot_users, shared_dir: Path) -> None:
    """With MAX_JOBS_RUNNING = 1 and room for four, one job of three runs; the next starts
    when it is removed."""
    pool = pool_factory("MAX_JOBS_RUNNING = 1\n", cpus=4)
    user = slot_users[0]
    submit_as(pool, user, shared_dir, "executable = /bin/sleep\narguments = 300\nqueue 3\n")

    def running() -> list[ClassAd]:
        return pool.jobs("JobStatus == 2")

    pool.wait_for(lambda: len(running()) == 1, 30, "one job to run")
    time.sleep(3)  # NEGOTIATOR_INTERVAL is 2: at least one more cycle with room for more
    [first] = running()
    assert len(running()) == 1
    assert pool.ep("rm", f"1.{first.evaluate('ProcId')}", user=user).status == 0
    pool.wait_for(
        lambda: len(running()) == 1 and running()[0].evaluate("ProcId") != first.evaluate("ProcId"),
        30,
        "the next job to start in its place",
    )
    assert pool.ep("rm", user.name, user=user).status == 0
    assert_pool_serves(pool, slot_users[3], shared_dir)


#: CLAIM_WORKLIFE of the fairness test: how long one owner's claims may be reused.
WORKLIFE = 10
#: How long each job of the big submission runs.
JOB_SECONDS = 1
#: Slack for a loaded machine (two cores shared with four other test runs).
LOAD_SLACK = 15


def test_a_big_submission_does_not_keep_another_users_job_waiting(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """While one user's 500 short jobs keep both slots' claims busy, another user's job
    starts within CLAIM_WORKLIFE + one job's run + a negotiation interval + the slot ad's
    UPDATE_INTERVAL (+ slack for load): the claims stop being reused at CLAIM_WORKLIFE and the
    negotiator gives the freed room to the user who has used least."""
    pool = pool_factory(f"CLAIM_WORKLIFE = {WORKLIFE}\n", cpus=2)
    busy, other = slot_users[0], slot_users[1]
    submit_as(
        pool,
        busy,
        shared_dir,
        f"executable = /bin/sleep\narguments = {JOB_SECONDS}\nrequest_cpus = 1\nqueue 500\n",
    )
    pool.wait_for(lambda: len(pool.jobs("JobStatus == 2")) == 2, 60, "both slots to run jobs")
    time.sleep(2)  # the claims are being reused now
    home = user_home(shared_dir, other)
    (home / "wait.sub").write_text("executable = /bin/true\nrequest_cpus = 1\nqueue\n")
    os.chown(home / "wait.sub", other.uid, other.gid)
    submitted = time.time()
    result = pool.ep("submit", "wait.sub", user=other, cwd=str(home))
    assert result.status == 0, result.stderr
    cluster = submitted_cluster(result.stdout)
    negotiation = 2  # NEGOTIATOR_INTERVAL of the test pools
    update = 5  # UPDATE_INTERVAL of the test pools
    bound = WORKLIFE + JOB_SECONDS + negotiation + update + LOAD_SLACK

    def started() -> bool:
        found = pool.jobs(f"ClusterId == {cluster}") or pool.jobs(
            f"ClusterId == {cluster}", history=True
        )
        return bool(found) and isinstance(found[0].evaluate("JobStartDate"), int)

    pool.wait_for(started, bound, f"the other user's job to start within {bound} s")
    waited = time.time() - submitted
    remaining = len(pool.jobs(f'Owner == "{busy.name}" && JobStatus == 1'))
    assert remaining > 300, "the big submission ran out before the other job had to wait"
    assert waited <= bound
    assert_pool_serves(pool, slot_users[3], shared_dir)
