"""Who a job is (issue 18, findings 9 and 12): raw submissions over the pool's socket from a
real user's own process cannot make a job someone else's, accounting_group_user follows
HTCondor's rules (trusted unless SUBMIT_REQUIREMENT_NAMES says otherwise), root's jobs are
refused, and so are a user log that cannot be written and an Iwd that cannot be entered."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from security_support import assert_pool_serves

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.pool.requests import PoolClient, proc_differences
from epcore.runtime.control import ControlError
from epcore.submit import LocalSubmitHost, SubmitContext, build_jobs, parse_submit
from epcore.testing.pool import PoolProcess, submit_as, user_home
from epcore.testing.system import SlotUser

pytestmark = pytest.mark.system

TRUE_JOB = "executable = /bin/true\nqueue\n"


def as_user(user: SlotUser, action: Callable[[], str]) -> str:
    """Run ``action`` in a forked child that became ``user`` (setgroups, setgid, setuid), as
    the user's own process would; what it returned, or ``error: ...`` for what it raised."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        try:
            os.setgroups([])
            os.setgid(user.gid)
            os.setuid(user.uid)
            try:
                text = action()
            except Exception as error:
                text = f"error: {error}"
            os.write(write_end, text.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 65536):
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


def raw_submit(
    pool: PoolProcess,
    home: Path,
    text: str,
    *,
    cluster_extra: dict[str, object] | None = None,
    proc_extra: dict[str, object] | None = None,
) -> Callable[[], str]:
    """A Submit request as a client can send it: the submit file's ads, with attributes of
    the client's choosing added to the cluster's ad and to each job's own."""
    config = Config.load(str(pool.config_path), subsystem="TOOL")

    def send() -> str:
        client = PoolClient(pool.socket, timeout=30)
        context = SubmitContext(
            owner=str(os.getuid()), submit_dir=str(home), now=int(time.time()), config=config
        )
        cluster_id = client.new_cluster()
        cluster = build_jobs(parse_submit(text), context, LocalSubmitHost(), cluster_id=cluster_id)
        cluster_ad = cluster.cluster_ad.copy()
        cluster_ad.update(cluster_extra or {})
        procs = []
        for proc in cluster.procs:
            own = proc_differences(cluster.cluster_ad, proc)
            own.update(proc_extra or {})
            procs.append(own)
        reply = client.call("Submit", ClusterId=cluster_id, ClusterAd=cluster_ad, Procs=procs)
        return str(reply.evaluate("JobIds"))

    return send


def finished_job(pool: PoolProcess, cluster: int) -> ClassAd:
    """The history ad of job ``cluster``.0, once it has completed."""
    pool.wait_for(
        lambda: bool(pool.jobs(f"ClusterId == {cluster} && JobStatus == 4", history=True)),
        60,
        f"job {cluster}.0 to complete",
    )
    return pool.jobs(f"ClusterId == {cluster}", history=True)[0]


def submitters(pool: PoolProcess) -> set[str]:
    """The names the accountant has charged."""
    return {str(ad.evaluate("Name")) for ad in pool.client.user_prio(all_users=True)}


@pytest.mark.parametrize(
    ("where", "attribute"),
    [
        ("proc", "User"),
        ("proc", "Owner"),
        ("proc", "OsUser"),
        ("cluster", "User"),
        ("cluster", "Owner"),
    ],
)
def test_a_raw_submission_cannot_name_another_user(
    pool_factory, slot_users, shared_dir: Path, where: str, attribute: str
) -> None:
    """A job whose raw ad (its cluster's or its own) names another user in User, Owner or
    OsUser is queued, negotiated, run and charged as the user who sent it."""
    pool = pool_factory()
    attacker, victim, bystander = slot_users[0], slot_users[1], slot_users[3]
    home = user_home(shared_dir, attacker)
    value = f"{victim.name}@vm" if attribute in ("User", "OsUser") else victim.name
    extra = {attribute: value}
    send = raw_submit(
        pool,
        home,
        TRUE_JOB,
        cluster_extra=extra if where == "cluster" else None,
        proc_extra=extra if where == "proc" else None,
    )
    answer = as_user(attacker, send)
    assert not answer.startswith("error"), answer
    queued = pool.jobs()
    job = queued[0] if queued else finished_job(pool, 1)
    assert job.evaluate("Owner") == attacker.name
    assert str(job.evaluate("User")).startswith(f"{attacker.name}@")
    assert victim.name not in str(job.get("OsUser", ""))
    done = finished_job(pool, 1)
    assert done.evaluate("Owner") == attacker.name
    pool.wait_for(lambda: bool(submitters(pool)), 30, "the accountant to record the run")
    charged = submitters(pool)
    assert not any(name.startswith(f"{victim.name}@") for name in charged), charged
    assert any(name.startswith(f"{attacker.name}@") for name in charged), charged
    assert_pool_serves(pool, bystander, shared_dir)


def test_accounting_group_user_is_trusted_by_default_as_in_htcondor(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """With no submit requirement, accounting_group_user names the submitter the job is
    charged to (HTCondor trusts it), while the job still runs as, and belongs to, its owner."""
    pool = pool_factory()
    user, other, bystander = slot_users[0], slot_users[1], slot_users[3]
    submit_as(pool, user, shared_dir, f"accounting_group_user = {other.name}\n{TRUE_JOB}")
    done = finished_job(pool, 1)
    assert done.evaluate("Owner") == user.name
    assert done.evaluate("AcctGroupUser") == other.name
    pool.wait_for(lambda: bool(submitters(pool)), 30, "the accountant to record the run")
    assert any(name.startswith(f"{other.name}@") for name in submitters(pool))
    assert_pool_serves(pool, bystander, shared_dir)


OWN_ACCOUNTING = """\
SUBMIT_REQUIREMENT_NAMES = OwnAccounting
SUBMIT_REQUIREMENT_OwnAccounting = JOB.AcctGroupUser is undefined || JOB.AcctGroupUser == JOB.Owner
SUBMIT_REQUIREMENT_OwnAccounting_REASON = strcat("accounting_group_user must be ", JOB.Owner)
"""


def test_a_submit_requirement_refuses_another_users_accounting_group_user(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """With the SUBMIT_REQUIREMENT README suggests, a submission naming another user in
    accounting_group_user is refused with the requirement's reason and nothing is queued; a
    job naming its own owner is queued."""
    pool = pool_factory(OWN_ACCOUNTING)
    user, other, bystander = slot_users[0], slot_users[1], slot_users[3]
    home = user_home(shared_dir, user)
    (home / "job.sub").write_text(f"accounting_group_user = {other.name}\n{TRUE_JOB}")
    refused = pool.ep("submit", "job.sub", user=user, cwd=str(home))
    assert refused.status == 1
    assert f"accounting_group_user must be {user.name}" in refused.stderr
    assert pool.jobs() == [] and pool.jobs(history=True) == []
    (home / "job.sub").write_text(f"accounting_group_user = {user.name}\n{TRUE_JOB}")
    accepted = pool.ep("submit", "job.sub", user=user, cwd=str(home))
    assert accepted.status == 0, accepted.stderr
    assert_pool_serves(pool, bystander, shared_dir)


def test_roots_job_is_refused_at_submission(pool_factory, slot_users, shared_dir: Path) -> None:
    """root's own submission is refused with the reason (HTCondor never queues a job owned by
    root) and nothing is queued; a super user may still submit for a named ordinary owner."""
    pool = pool_factory()
    bystander = slot_users[3]
    home = user_home(shared_dir, bystander)
    (home / "root.sub").write_text(TRUE_JOB)
    refused = pool.ep("submit", "root.sub", cwd=str(home))
    assert refused.status == 1
    assert "Setting job owner to root is not permitted" in refused.stderr
    assert pool.jobs() == [] and pool.jobs(history=True) == []
    with pytest.raises(ControlError, match="owner to root"):
        pool.client.call(
            "Submit",
            ClusterId=pool.client.new_cluster(),
            ClusterAd=ClassAd({"Owner": "alice", "Cmd": "/bin/true"}),
            Procs=[ClassAd({"ProcId": 0, "Owner": "root"})],
        )
    assert pool.jobs() == []
    assert_pool_serves(pool, bystander, shared_dir)


@pytest.mark.parametrize("problem", ["log", "initialdir"])
def test_an_unusable_log_or_initialdir_is_refused_at_submission(
    pool_factory, slot_users, shared_dir: Path, problem: str
) -> None:
    """A user log the submitter cannot write, or an initialdir it cannot enter, is refused at
    submission with the path, the reason and the submit file's line; nothing is queued."""
    pool = pool_factory()
    user, bystander = slot_users[0], slot_users[3]
    home = user_home(shared_dir, user)
    closed = shared_dir / "closed"
    closed.mkdir()
    closed.chmod(0o700)  # root's: the user can neither enter it nor write in it
    if problem == "log":
        text = f"executable = /bin/true\nlog = {closed}/job.log\nqueue\n"
        words = f"job.sub, line 2: log {closed}/job.log cannot be written: Permission denied"
    else:
        text = f"executable = /bin/true\ninitialdir = {closed}\nqueue\n"
        words = f"job.sub, line 2: initialdir {closed} cannot be entered: Permission denied"
    (home / "job.sub").write_text(text)
    refused = pool.ep("submit", "job.sub", user=user, cwd=str(home))
    assert refused.status == 1
    assert words in refused.stderr
    assert pool.jobs() == [] and pool.jobs(history=True) == []
    assert_pool_serves(pool, bystander, shared_dir)
