"""htcondor2 (unmodified, in subprocesses) administers a real ``ep run`` pool's startd and
negotiator over CEDAR: drain, vacate, history, priorities; an ordinary user is refused every
administrative command, over FS and over CLAIMTOBE, and each refusal is logged."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from epcore.runtime.persist import read_history
from epcore.testing.cedar import Htcondor2Error, run_htcondor2
from epcore.testing.pool import PoolProcess, submit_as

pytestmark = pytest.mark.system


def _run(pool: PoolProcess, code: str, user: object | None = None, **environ: str) -> object:
    uid, gid = int(getattr(user, "uid", 0)), int(getattr(user, "gid", 0))
    return run_htcondor2(str(pool.config_path), code, uid=uid, gid=gid, environ=environ)


def _status(pool: PoolProcess, job: str) -> object:
    cluster, proc = job.split(".")
    found = pool.jobs(f"ClusterId == {cluster} && ProcId == {proc}")
    return found[0].evaluate("JobStatus") if found else None


def _states(pool: PoolProcess) -> set[object]:
    return {ad.evaluate("State") for ad in pool.client.query_ads("Machine")}


def test_vacate_history_and_resource_usage_through_htcondor2(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """The owner of a running job can neither vacate it nor vacate the machine (refusals
    logged, the job runs on); the administrator's vacateSlot sends it back to run again;
    getResourceUsage names the slot it holds; Startd().history returns the startd's records,
    newest first, cut to the projection."""
    pool = pool_factory()
    user = slot_users[0]
    submit_as(pool, user, shared_dir, "executable = /bin/sleep\narguments = 300\nqueue\n")
    pool.wait_for(lambda: _status(pool, "1.0") == 2, 30, "the job to run")
    submitter = str(pool.jobs()[0].evaluate("User"))
    for code in (
        "htcondor2.Startd().vacate(htcondor2.VacateType.Fast)",
        "htcondor2.Startd().vacate(htcondor2.VacateType.Graceful)",
    ):
        with contextlib.suppress(Htcondor2Error):
            _run(pool, code, user)
    log = pool.log("CollectorLog")
    assert f"refused VACATE_ALL_FAST (474) from {user.name}@" in log
    assert f"refused VACATE_ALL_CLAIMS (447) from {user.name}@" in log
    assert "no entry of ALLOW_ADMINISTRATOR matches" in log
    assert pool.jobs()[0].evaluate("NumJobStarts") == 1 and _status(pool, "1.0") == 2
    usage = _run(
        pool,
        f"result = [dict(ad) for ad in htcondor2.Negotiator().getResourceUsage({submitter!r})]",
    )
    claimed = [
        str(ad.evaluate("Name")) for ad in pool.client.query_ads("Machine", 'State == "Claimed"')
    ]
    assert [entry["Name"] for entry in usage] == claimed and len(claimed) == 1
    code = f"htcondor2.Startd().vacateSlot({claimed[0]!r}, htcondor2.VacateType.Fast)"
    _run(pool, code)
    pool.wait_for(
        lambda: pool.jobs()[0].evaluate("NumJobStarts") == 2 and _status(pool, "1.0") == 2,
        60,
        "the vacated job to run a second time",
    )
    assert pool.jobs()[0].evaluate("JobLastOutcome") == "evicted"
    records = list(read_history(str(pool.directory / "spool" / "startd_history")))
    assert records, "the vacated job left a history record"
    code = 'result = [dict(ad) for ad in htcondor2.Startd().history(None, ["ClusterId", "ProcId"])]'
    history = _run(pool, code)
    assert history == [
        {"ClusterId": ad.evaluate("ClusterId"), "ProcId": ad.evaluate("ProcId")}
        for ad in reversed(records)
    ]
    assert _run(pool, 'result = len(htcondor2.Startd().history("ClusterId == 99", []))') == 0
    assert pool.ep("rm", "1").status == 0


def test_drain_and_cancel_through_htcondor2(pool_factory, slot_users) -> None:
    """An ordinary user's drainJobs is refused (logged, nothing drains); the administrator's
    drains the machine (its slot shows Drained) and cancelDrainJobs brings it back."""
    pool = pool_factory()
    user = slot_users[0]
    with pytest.raises(Htcondor2Error, match="failed to start draining"):
        _run(pool, "htcondor2.Startd().drainJobs(htcondor2.DrainType.Fast)", user)
    assert f"refused DRAIN_JOBS (512) from {user.name}@" in pool.log("CollectorLog")
    assert _states(pool) == {"Unclaimed"}
    code = "result = htcondor2.Startd().drainJobs(htcondor2.DrainType.Fast, reason='test')"
    assert _run(pool, code) == "1"
    pool.wait_for(lambda: "Drained" in _states(pool), 30, "the slot to drain")
    with pytest.raises(Htcondor2Error, match="failed to start draining"):
        _run(pool, "htcondor2.Startd().drainJobs(check_expr='Cpus > 100000')")
    _run(pool, "htcondor2.Startd().cancelDrainJobs('1')")
    pool.wait_for(lambda: _states(pool) == {"Unclaimed"}, 30, "the drain to end")
    assert "DRAIN_JOBS (fast, reason 'test') from condor@" in pool.log("StartLog")


PRIORITIES = """
n = htcondor2.Negotiator()
result = [dict(ad) for ad in n.getPriorities()]
"""


def _prio(pool: PoolProcess, name: str) -> dict[str, object]:
    for ad in pool.client.user_prio(all_users=True):
        if ad.evaluate("Name") == name:
            return {key: ad.evaluate(key) for key in ad}
    return {}


def test_priorities_read_and_set_through_htcondor2(pool_factory, slot_users) -> None:
    """getPriorities lists what ``ep userprio`` lists; the administrator's setFactor,
    setCeiling, setPriority, setUsage, resetUsage and deleteUser change the accountant as
    ``ep userprio`` shows it; an ordinary user's setFactor is refused and logged."""
    pool = pool_factory()
    user = slot_users[0]
    alice = "alice@cedar.example"
    _run(pool, f"htcondor2.Negotiator().setFactor({alice!r}, 250.0)")
    pool.wait_for(lambda: _prio(pool, alice).get("PriorityFactor") == 250.0, 10, "the factor")
    listed = _run(pool, PRIORITIES)
    assert isinstance(listed, list)
    mine = [entry for entry in listed if entry["Name"] == alice]
    assert len(mine) == 1 and mine[0]["PriorityFactor"] == 250.0
    assert {entry["Name"] for entry in listed} == {
        str(ad.evaluate("Name")) for ad in pool.client.user_prio(all_users=True)
    }
    assert mine[0]["Priority"] == pytest.approx(_prio(pool, alice)["Priority"])
    code = f"""
n = htcondor2.Negotiator()
n.setCeiling({alice!r}, 7)
n.setPriority({alice!r}, 3.0)
n.setUsage({alice!r}, 7200.0)
"""
    _run(pool, code)
    # These commands have no answer: the pool carries them out after the client has gone.
    pool.wait_for(
        lambda: _prio(pool, alice).get("AccumulatedUsage") == 7200.0, 10, "the usage to be set"
    )
    record = _prio(pool, alice)
    assert record["Ceiling"] == 7.0
    assert record["Priority"] == pytest.approx(750.0, rel=0.05)  # a cycle may age it a little
    _run(pool, f"htcondor2.Negotiator().resetUsage({alice!r})")
    pool.wait_for(lambda: _prio(pool, alice)["AccumulatedUsage"] == 0.0, 10, "the reset")
    with contextlib.suppress(Htcondor2Error):
        _run(pool, f"htcondor2.Negotiator().setFactor({alice!r}, 1.0)", user)
    assert f"refused SET_PRIORITYFACTOR (459) from {user.name}@" in pool.log("CollectorLog")
    assert _prio(pool, alice)["PriorityFactor"] == 250.0
    _run(pool, f"htcondor2.Negotiator().deleteUser({alice!r})")
    pool.wait_for(lambda: _prio(pool, alice) == {}, 10, "the deletion")
    assert "SetFactor alice@cedar.example by condor@" in pool.log("NegotiatorLog")


ADMINISTRATION = {
    "reconfig": "loc = htcondor2.Collector().locate(htcondor2.DaemonType.Collector)\n"
    "htcondor2.send_command(loc, htcondor2.DaemonCommand.Reconfig)",
    "shutdown": "loc = htcondor2.Collector().locate(htcondor2.DaemonType.Collector)\n"
    "htcondor2.send_command(loc, htcondor2.DaemonCommand.OffFast)",
    "advertise": "ad = classad2.ClassAd({'MyType': 'Machine', 'Name': 'fake@elsewhere'})\n"
    "htcondor2.Collector().advertise([ad], 'UPDATE_STARTD_AD')",
    "drain": "htcondor2.Startd().drainJobs(htcondor2.DrainType.Fast)",
    "factor": "htcondor2.Negotiator().setFactor('nobody@cedar.example', 5.0)",
}


@pytest.mark.parametrize("method", ["FS", "CLAIMTOBE"])
def test_ordinary_user_cannot_administer_over_any_method(
    pool_factory, slot_users, method: str
) -> None:
    """Authenticated by FS or by CLAIMTOBE (where the pool allows it), an ordinary user is
    who they are: they may query, but reconfiguring, shutting down, advertising, draining
    and changing priorities are each refused and logged, and the pool keeps running."""
    pool = pool_factory("SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE\n")
    user = slot_users[0]
    environ = {"_CONDOR_SEC_CLIENT_AUTHENTICATION_METHODS": method}
    ping = (
        "loc = htcondor2.Collector().locate(htcondor2.DaemonType.Collector)\n"
        'result = dict(htcondor2.ping(loc, "WRITE"))'
    )
    answer = _run(pool, ping, user, **environ)
    assert isinstance(answer, dict)
    assert answer["MyRemoteUserName"].startswith(f"{user.name}@")
    assert answer["AuthMethods"] == method
    for code in ADMINISTRATION.values():
        with contextlib.suppress(Htcondor2Error):
            _run(pool, code, user, **environ)
    log = pool.log("CollectorLog")
    for command in (
        "DC_RECONFIG (60004)",
        "DC_OFF_FAST (60006)",
        "UPDATE_STARTD_AD (0)",
        "DRAIN_JOBS (512)",
        "SET_PRIORITYFACTOR (459)",
    ):
        assert f"refused {command} from {user.name}@" in log, command
    assert pool.process is not None and pool.process.poll() is None
    assert "fake@elsewhere" not in pool.ep("status").stdout
    assert _states(pool) == {"Unclaimed"}
    assert _prio(pool, "nobody@cedar.example") == {}
    count = 'result = len(htcondor2.Collector().query(htcondor2.AdType.Startd, True, ["Name"]))'
    assert _run(pool, count, user, **environ) >= 1


def test_administrator_reconfigures_and_shuts_the_pool_down(pool_factory) -> None:
    """The administrator's DC_RECONFIG makes the pool read its configuration again (a knob
    added to the file shows through RemoteParam) and DC_OFF_PEACEFUL ends it cleanly."""
    pool = pool_factory("EPCORE_TEST_KNOB = before\n")
    locate = "loc = htcondor2.Collector().locate(htcondor2.DaemonType.Collector)\n"
    knob = locate + 'result = htcondor2.RemoteParam(loc)["EPCORE_TEST_KNOB"]'
    assert _run(pool, knob) == "before"
    with open(pool.config_path, "a", encoding="utf-8") as handle:
        handle.write("EPCORE_TEST_KNOB = after\n")
    _run(pool, locate + "htcondor2.send_command(loc, htcondor2.DaemonCommand.Reconfig)")
    pool.wait_for(lambda: _run(pool, knob) == "after", 20, "the configuration to be read again")
    _run(pool, locate + "htcondor2.send_command(loc, htcondor2.DaemonCommand.OffPeaceful)")
    assert pool.process is not None
    assert pool.process.wait(60) == 0


def test_send_command_vacate_all_claims_evicts_the_running_job(
    pool_factory, slot_users, shared_dir: Path
) -> None:
    """``send_command(location, 447)`` by the administrator vacates the running job, which
    runs again; the location is one htcondor2 can send to (every role answers on the one
    port), since htcondor2 refuses a startd's own location ("Machine" reads as a slot)
    before it connects, whatever daemon is behind it."""
    pool = pool_factory()
    submit_as(pool, slot_users[0], shared_dir, "executable = /bin/sleep\narguments = 300\nqueue\n")
    pool.wait_for(lambda: _status(pool, "1.0") == 2, 30, "the job to run")
    with pytest.raises(Htcondor2Error, match="Failed to convert ad type to daemon type"):
        _run(
            pool,
            "loc = htcondor2.Collector().locate(htcondor2.DaemonType.Startd)\n"
            "htcondor2.send_command(loc, 447)",
        )
    _run(
        pool,
        "loc = htcondor2.Collector().locate(htcondor2.DaemonType.Schedd)\n"
        "htcondor2.send_command(loc, 447)",
    )
    pool.wait_for(
        lambda: pool.jobs()[0].evaluate("NumJobStarts") == 2 and _status(pool, "1.0") == 2,
        60,
        "the vacated job to run a second time",
    )
    assert pool.jobs()[0].evaluate("JobLastOutcome") == "evicted"
    assert "VACATE_ALL_CLAIMS (447) from condor@" in pool.log("StartLog")
