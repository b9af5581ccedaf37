"""The schedd of a real ``ep run`` driven only through HTCondor's ``htcondor2`` (unmodified, in
a subprocess, as an ordinary user proven by FS): submission, queries, actions, edits and
history, each answer compared with what ``ep q`` reports (issue 22, must-show items 1 and 3).

The client side imports nothing of epcore: the snippets run in their own interpreter with
only CONDOR_CONFIG naming the pool.
"""

from __future__ import annotations

import contextlib
import encodings.idna  # noqa: F401 - see below
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

# ``ep ... -pool HOST`` imports the network client (and Python its host-name codec) only
# then; pool.ep forks it as a user who cannot read this interpreter's files, so they are
# imported here first.
import epcore.net.schedd_client  # noqa: F401
from epcore.config import Config
from epcore.net import tokens
from epcore.testing.cedar import Htcondor2Error, run_htcondor2
from epcore.testing.pool import PoolProcess, run_ep
from epcore.testing.system import SlotUser

pytestmark = pytest.mark.system

#: Jobs that never match (Requirements false): they stay idle, so every status is the test's.
SUBMIT_50 = """
sub = htcondor2.Submit({
    "executable": "/bin/sleep", "arguments": "600 $(ProcId)", "requirements": "false",
    "+Color": '"blue"',
})
submitted = htcondor2.Schedd().submit(sub, count=50)
result = {"cluster": submitted.cluster(), "procs": submitted.num_procs(),
          "first": submitted.first_proc()}
"""


def _as(pool: PoolProcess, user: SlotUser, code: str) -> Any:
    return run_htcondor2(str(pool.config_path), code, uid=user.uid, gid=user.gid)


def _ep_q(pool: PoolProcess, *args: str) -> list[dict[str, Any]]:
    """What ``ep q -allusers -json`` reports (root asks, so it sees every job)."""
    result = pool.ep("q", "-allusers", "-json", *args)
    assert result.status == 0, result.stderr
    documents: list[dict[str, Any]] = json.loads(result.stdout or "[]")
    return documents


@contextlib.contextmanager
def recording_proxy(sinful: str) -> Iterator[tuple[str, bytearray]]:
    """A TCP proxy to ``sinful`` recording every byte both ways: its own sinful address and
    the recording."""
    host, port = sinful.strip("<>").split("?")[0].split(":")
    recorded = bytearray()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def pump(source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                recorded.extend(data)
                target.sendall(data)
            target.shutdown(socket.SHUT_WR)

    def accept() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            server = socket.create_connection((host, int(port)))
            threading.Thread(target=pump, args=(server, client), daemon=True).start()
            threading.Thread(target=pump, args=(client, server), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"<127.0.0.1:{listener.getsockname()[1]}>", recorded
    finally:
        stop.set()
        thread.join()
        listener.close()


def _ids(ads: list[dict[str, Any]]) -> list[str]:
    return sorted(f"{ad['ClusterId']}.{ad['ProcId']}" for ad in ads)


def test_submit_and_query_50_jobs_as_an_ordinary_user(pool_factory, slot_users) -> None:
    """htcondor2.Schedd().submit(count=50) as an ordinary user queues 50 jobs owned by that
    user; query with a constraint, a projection and a limit answers what ``ep q`` shows, and
    the summary counts them."""
    pool: PoolProcess = pool_factory()
    user = slot_users[0]
    answer = _as(pool, user, SUBMIT_50)
    assert answer["procs"] == 50 and answer["first"] == 0
    cluster = answer["cluster"]
    local = _ep_q(pool)
    assert len(local) == 50
    assert {ad["Owner"] for ad in local} == {user.name}
    assert {ad["Color"] for ad in local} == {"blue"}
    query = f"""
s = htcondor2.Schedd()
every = s.query("ClusterId == {cluster}", ["ClusterId", "ProcId", "Owner", "Args", "JobStatus"])
some = s.query("ProcId >= 40", ["ProcId"])
limited = s.query("true", ["ProcId"], limit=7)
summary = s.query(opts=htcondor2.QueryOpt.SummaryOnly)
result = {{"every": [dict(ad) for ad in every], "some": [dict(ad) for ad in some],
          "limited": len(limited), "summary": dict(summary[0])}}
"""
    found = _as(pool, user, query)
    assert _ids(found["every"]) == _ids(local)
    by_id = {f"{ad['ClusterId']}.{ad['ProcId']}": ad for ad in local}
    for ad in found["every"]:
        # htcondor2 asks for the ServerTime HTCondor adds to every ad, projection or not.
        assert set(ad) == {"ClusterId", "ProcId", "Owner", "Args", "JobStatus", "ServerTime"}
        assert abs(ad["ServerTime"] - time.time()) < 120
        mine = by_id[f"{ad['ClusterId']}.{ad['ProcId']}"]
        assert (ad["Owner"], ad["Args"], ad["JobStatus"]) == (
            mine["Owner"],
            mine["Args"],
            mine["JobStatus"],
        )
    assert sorted(ad["ProcId"] for ad in found["some"]) == list(range(40, 50))
    assert all(set(ad) == {"ProcId", "ServerTime"} for ad in found["some"])
    assert found["limited"] == 7
    assert found["summary"]["Jobs"] == 50 and found["summary"]["Idle"] == 50


def test_act_edit_history_and_itemdata(pool_factory, slot_users) -> None:
    """Hold (with a reason), release and remove by ids and by constraint, edit one job and a
    constraint's jobs, read the history and submit with itemdata: each outcome is what
    ``ep q`` (and ``ep q -history``) reports."""
    pool: PoolProcess = pool_factory()
    user = slot_users[0]
    cluster = _as(pool, user, SUBMIT_50)["cluster"]
    code = f"""
s = htcondor2.Schedd()
held = s.act(htcondor2.JobAction.Hold, ["{cluster}.0", "{cluster}.1", "{cluster}.2"],
             reason=("wait for it", 7))
released = s.act(htcondor2.JobAction.Release, "ClusterId == {cluster} && ProcId == 1")
removed = s.act(htcondor2.JobAction.Remove, ["{cluster}.48", "{cluster}.49", "{cluster}.99"])
again = s.act(htcondor2.JobAction.Release, ["{cluster}.3"])
twice = s.act(htcondor2.JobAction.Hold, ["{cluster}.0"])
one = s.edit(["{cluster}.5"], "Answer", "42")
many = s.edit("ClusterId == {cluster} && ProcId < 10", "Tag", '"ten"')
history = s.history("ClusterId == {cluster}", ["ClusterId", "ProcId", "RemoveReason"], match=10)
items = s.submit(
    htcondor2.Submit({{"executable": "/bin/echo", "arguments": "$(word)",
                      "requirements": "false"}}),
    itemdata=iter([{{"word": "alpha"}}, {{"word": "beta"}}, {{"word": "gamma"}}]),
)
result = {{"held": dict(held), "released": dict(released), "removed": dict(removed),
          "again": dict(again), "twice": dict(twice), "one": int(one), "many": int(many),
          "history": [dict(ad) for ad in history], "items": items.cluster()}}
"""
    answer = _as(pool, user, code)
    assert answer["held"]["TotalSuccess"] == 3
    assert answer["released"]["TotalSuccess"] == 1
    assert answer["removed"]["TotalSuccess"] == 2
    assert answer["removed"]["TotalNotFound"] == 1
    assert answer["again"]["TotalSuccess"] == 0 and answer["again"]["TotalBadStatus"] == 1
    assert answer["twice"]["TotalSuccess"] == 0 and answer["twice"]["TotalAlreadyDone"] == 1
    assert answer["one"] == 1 and answer["many"] == 10
    local = {f"{ad['ClusterId']}.{ad['ProcId']}": ad for ad in _ep_q(pool)}
    assert local[f"{cluster}.0"]["JobStatus"] == 5
    assert local[f"{cluster}.0"]["HoldReason"] == "wait for it"
    assert local[f"{cluster}.2"]["JobStatus"] == 5
    assert local[f"{cluster}.1"]["JobStatus"] == 1
    assert f"{cluster}.48" not in local and f"{cluster}.49" not in local
    assert local[f"{cluster}.5"]["Answer"] == 42
    assert [local[f"{cluster}.{proc}"]["Tag"] for proc in range(10)] == ["ten"] * 10
    assert "Tag" not in local[f"{cluster}.10"]
    history = _ep_q(pool, "-history")
    assert _ids(answer["history"]) == _ids(history) == [f"{cluster}.48", f"{cluster}.49"]
    assert {ad["RemoveReason"] for ad in answer["history"]} == {"Python-initiated action"}
    # Since: the jobs recorded after the named one (newest first), that one left out.
    newer, older = (f"{ad['ClusterId']}.{ad['ProcId']}" for ad in answer["history"])
    code = f"""
s = htcondor2.Schedd()
def ids(since):
    found = s.history(None, ["ClusterId", "ProcId"], since=since)
    return [f"{{ad['ClusterId']}}.{{ad['ProcId']}}" for ad in found]
result = [ids("{older}"), ids("{newer}"), ids(classad2.ExprTree("ProcId >= 48"))]
"""
    assert _as(pool, user, code) == [[newer], [], []]
    words = sorted(ad["Args"] for ad in local.values() if ad["ClusterId"] == answer["items"])
    assert words == ["alpha", "beta", "gamma"]


def test_another_user_cannot_act_on_or_edit_the_jobs(pool_factory, slot_users) -> None:
    """An ordinary user's hold, remove and edit of another user's jobs are refused (permission
    denied, logged with who and from where), as is the owner's edit of Owner, JobStatus or
    ProcId; the jobs stay as they were; a submission cannot name another owner."""
    pool: PoolProcess = pool_factory()
    owner, other = slot_users[0], slot_users[1]
    cluster = _as(pool, owner, SUBMIT_50)["cluster"]
    code = f"""
s = htcondor2.Schedd()
held = s.act(htcondor2.JobAction.Hold, "ClusterId == {cluster}")
removed = s.act(htcondor2.JobAction.Remove, ["{cluster}.0"])
result = {{"held": dict(held), "removed": dict(removed)}}
"""
    answer = _as(pool, other, code)
    assert answer["held"]["TotalSuccess"] == 0
    assert answer["held"]["TotalPermissionDenied"] == 50
    assert answer["removed"]["TotalPermissionDenied"] == 1
    for edit in (
        f's.edit(["{cluster}.0"], "Answer", "1")',
        f's.edit("ClusterId == {cluster}", "Answer", "1")',
    ):
        with pytest.raises(Htcondor2Error, match="Unable to"):
            _as(pool, other, f"s = htcondor2.Schedd()\n{edit}\nresult = True")
    # The owner may edit their jobs, but not what says whose they are or where they stand.
    for attribute, value in (("Owner", f'"{other.name}"'), ("JobStatus", "4"), ("ProcId", "7")):
        with pytest.raises(Htcondor2Error, match="Unable to"):
            code = f's = htcondor2.Schedd()\ns.edit(["{cluster}.0"], "{attribute}", {value!r})'
            _as(pool, owner, code + "\nresult = True")
    local = _ep_q(pool)
    assert len(local) == 50
    assert {ad["JobStatus"] for ad in local} == {1}
    assert {ad["Owner"] for ad in local} == {owner.name}
    assert all("Answer" not in ad for ad in local)
    log = pool.log("SchedLog")
    assert f"from {other.name}@" in log and f"not owned by {other.name}" in log
    assert f"SetAttribute Answer of {cluster}.0 from {other.name}@" in log
    # Nor may a user pretend to be another when submitting.
    forged = SUBMIT_50.replace('"+Color"', f'"+Owner": \'"{owner.name}"\', "+Color"')
    assert _as(pool, other, forged)["procs"] == 50
    owners = {ad["Owner"] for ad in _ep_q(pool) if ad["Owner"] != owner.name}
    assert owners == {other.name}


def _collector(pool: PoolProcess) -> str:
    """The pool's CEDAR address as ``HOST:PORT`` (its collector address file)."""
    sinful = (pool.directory / "log" / ".collector_address").read_text().splitlines()[0]
    return sinful.strip("<>").split("?")[0]


def test_ep_commands_speak_cedar_with_dash_pool(pool_factory, slot_users, shared_dir) -> None:
    """``ep submit / q / hold / release / rm -pool HOST:PORT`` reach the schedd over CEDAR as
    the user running them: the jobs are theirs, ``ep q -pool`` shows what the local socket
    shows, the actions act, and another user's are refused."""
    pool: PoolProcess = pool_factory()
    user, other = slot_users[0], slot_users[1]
    address = _collector(pool)
    home = shared_dir / "remote_home"
    home.mkdir()
    home.chmod(0o777)
    (home / "job.sub").write_text(
        "executable = /bin/sleep\narguments = 600\nrequirements = false\nqueue 4\n"
    )
    submitted = pool.ep("submit", "job.sub", "-pool", address, user=user, cwd=str(home))
    assert submitted.status == 0, submitted.stderr
    assert "4 job(s) submitted to cluster 1." in submitted.stdout
    local = _ep_q(pool)
    assert _ids(local) == ["1.0", "1.1", "1.2", "1.3"]
    assert {ad["Owner"] for ad in local} == {user.name}
    remote = pool.ep("q", "-pool", address, "-allusers", "-json", user=user)
    assert remote.status == 0, remote.stderr
    assert _ids(json.loads(remote.stdout)) == _ids(local)
    named = pool.ep("q", "-pool", address, "-name", "no-such-schedd", user=user)
    assert named.status == 1 and "knows no schedd named no-such-schedd" in named.stderr
    held = pool.ep("hold", "1.0", "1.1", "-pool", address, "-reason", "stop", user=user)
    assert held.status == 0, held.stderr
    assert "Job 1.0 held." in held.stdout and "Job 1.1 held." in held.stdout
    released = pool.ep("release", "1.1", "-pool", address, user=user)
    assert "Job 1.1 released." in released.stdout, released.stderr
    refused = pool.ep("rm", "1.2", "-pool", address, user=other)
    assert refused.status == 1 and "1.2: permission denied" in refused.stderr
    removed = pool.ep("rm", "1.3", "-pool", address, user=user)
    assert "Job 1.3 marked for removal." in removed.stdout, removed.stderr
    after = {f"{ad['ClusterId']}.{ad['ProcId']}": ad for ad in _ep_q(pool)}
    assert after["1.0"]["JobStatus"] == 5 and after["1.0"]["HoldReason"] == "stop"
    assert after["1.1"]["JobStatus"] == 1 and after["1.2"]["JobStatus"] == 1
    assert "1.3" not in after
    history = pool.ep("q", "-pool", address, "-history", "-json", user=user)
    assert _ids(json.loads(history.stdout)) == ["1.3"], history.stderr


#: The pool takes only tokens for reading and writing: FS proves nothing here.
TOKEN_ONLY = """
SEC_READ_AUTHENTICATION = REQUIRED
SEC_READ_AUTHENTICATION_METHODS = IDTOKENS
SEC_WRITE_AUTHENTICATION_METHODS = IDTOKENS
"""
TOKEN_CLIENT = """\
COLLECTOR_HOST = {address}
SEC_CLIENT_AUTHENTICATION_METHODS = TOKEN
SEC_CLIENT_ENCRYPTION = REQUIRED
SEC_TOKEN_DIRECTORY = {tokens}
"""


@pytest.mark.oracle
def test_a_token_holder_submits_and_acts_as_the_tokens_user(
    pool_factory, slot_users, tmp_path
) -> None:
    """htcondor2 with only a token (TOKEN and encryption required, no FS on the pool) submits,
    queries, holds and edits as the user the token names: the jobs are that user's, as
    ``ep q`` shows, and a recording proxy sees none of a job's arguments in the clear;
    ``ep q / release -pool`` with that client configuration do the same."""
    pool: PoolProcess = pool_factory(TOKEN_ONLY)
    user = slot_users[2]
    address = (pool.directory / "log" / ".collector_address").read_text().splitlines()[0]
    domain = tokens.TokenSettings.from_lookup(Config.load(pool.config_path).get).trust_domain
    made = pool.ep(
        "token", "create", "--identity", f"{user.name}@{domain}",
        "--authz", "READ", "--authz", "WRITE",
    )  # fmt: skip
    assert made.status == 0, made.stderr
    directory = tmp_path / "tokens"
    directory.mkdir(mode=0o700)
    (directory / "token").write_text(made.stdout.strip() + "\n")
    (directory / "token").chmod(0o600)
    config = tmp_path / "client.config"
    config.write_text(TOKEN_CLIENT.format(address=address, tokens=directory))
    code = """
s = htcondor2.Schedd()
r = s.submit(htcondor2.Submit({"executable": "/bin/sleep", "arguments": "600",
                               "requirements": "false"}), count=5)
held = s.act(htcondor2.JobAction.Hold, [f"{r.cluster()}.0"])
s.edit([f"{r.cluster()}.1"], "Answer", "42")
ads = s.query("true", ["ClusterId", "ProcId"])
result = {"ids": sorted(f"{a['ClusterId']}.{a['ProcId']}" for a in ads),
          "held": held["TotalSuccess"]}
"""
    answer = run_htcondor2(str(config), code)
    local = {f"{ad['ClusterId']}.{ad['ProcId']}": ad for ad in _ep_q(pool)}
    assert answer["ids"] == sorted(local) and len(local) == 5
    # Through a recording proxy, a submission's arguments never cross the wire in the clear.
    secret = "argument-" + "x7q" * 5
    with recording_proxy(address) as (proxied, recorded):
        sealed = f"""
where = classad2.ClassAd({{"MyType": "Scheduler", "Name": "proxied", "MyAddress": "{proxied}",
                          "CondorVersion": "$CondorVersion: 25.0.0 2025-01-01 $"}})
r = htcondor2.Schedd(where).submit(htcondor2.Submit({{
    "executable": "/bin/sleep", "arguments": "600 {secret}", "requirements": "false"}}))
result = r.cluster()
"""
        cluster = run_htcondor2(str(config), sealed)
    assert pool.jobs(f"ClusterId == {cluster}")[0].evaluate("Args") == f"600 {secret}"
    assert len(recorded) > 1000 and secret.encode() not in recorded
    assert answer["held"] == 1 and local["1.0"]["JobStatus"] == 5
    assert local["1.1"]["Answer"] == 42
    assert {ad["Owner"] for ad in local.values()} == {user.name}
    # epcore's own client, with the same client configuration, over TOKEN and AES-GCM.
    where = address.strip("<>").split("?")[0]
    remote = run_ep(["q", "-pool", where, "-allusers", "-json", "--config", str(config)])
    assert remote.status == 0, remote.stderr
    assert _ids(json.loads(remote.stdout)) == _ids(_ep_q(pool)) == [*sorted(local), "2.0"]
    held = run_ep(["release", "1.0", "-pool", where, "--config", str(config)])
    assert "Job 1.0 released." in held.stdout, held.stderr
    assert {ad["JobStatus"] for ad in _ep_q(pool)} == {1}


def test_vacate_by_htcondor2_evicts_the_owners_running_job(pool_factory, slot_users) -> None:
    """JobAction.Vacate on a running job evicts it (it runs again, counted), a job that is not
    running is a bad status, and another user's vacate is refused."""
    pool: PoolProcess = pool_factory()
    user, other = slot_users[0], slot_users[1]
    submit = """
r = htcondor2.Schedd().submit(htcondor2.Submit({"executable": "/bin/sleep",
                                                "arguments": "300"}), count=1)
result = r.cluster()
"""
    cluster = _as(pool, user, submit)

    def status() -> object:
        return pool.jobs()[0].evaluate("JobStatus")

    pool.wait_for(lambda: status() == 2, 60, "the job to run")
    vacate = f"""
v = htcondor2.Schedd().act(htcondor2.JobAction.Vacate, ["{cluster}.0"])
result = dict(v)
"""
    assert _as(pool, other, vacate)["TotalPermissionDenied"] == 1
    assert _as(pool, user, vacate)["TotalSuccess"] == 1
    pool.wait_for(
        lambda: pool.jobs()[0].evaluate("NumJobStarts") == 2 and status() == 2,
        60,
        "the job to run a second time",
    )
    assert pool.jobs()[0].evaluate("JobLastOutcome") == "evicted"
    hold = f'htcondor2.Schedd().act(htcondor2.JobAction.Hold, ["{cluster}.0"])\nresult = 1'
    _as(pool, user, hold)
    assert _as(pool, user, vacate)["TotalBadStatus"] == 1


def test_late_materialization_is_refused_with_a_reason_htcondor2_shows(
    pool_factory, slot_users
) -> None:
    """A submission with max_materialize or max_idle (a submit digest) is refused at its
    commit with the reason, which htcondor2 raises; nothing is queued, and a submission
    without them still goes through on the same pool."""
    pool: PoolProcess = pool_factory()
    user = slot_users[0]
    code = """
result = []
for extra in ({"max_materialize": "2"}, {"max_idle": "1"}):
    sub = htcondor2.Submit({"executable": "/bin/true", "hold": "true", **extra})
    try:
        htcondor2.Schedd().submit(sub, count=5)
        result.append("queued")
    except htcondor2.HTCondorException as error:
        result.append(str(error))
"""
    answer = _as(pool, user, code)
    assert len(answer) == 2
    for message in answer:
        assert "late materialization (max_materialize, max_idle) is not supported" in message
    assert _ep_q(pool) == []
    assert _as(pool, user, SUBMIT_50)["cluster"] >= 1
