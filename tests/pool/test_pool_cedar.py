"""HTCondor's own clients (htcondor2, unmodified, in subprocesses) against a real ``ep run``.

The pool is found through CONDOR_CONFIG alone (COLLECTOR_HOST's port 0 and the address file);
answers are compared with what the pool's own requests report.
"""

from __future__ import annotations

import contextlib
import random
import threading
from pathlib import Path

import psutil
import pytest

from epcore.testing.cedar import Htcondor2Error, run_htcondor2
from epcore.testing.pool import PoolProcess
from tests.net.test_listener import _hostile as hostile

pytestmark = pytest.mark.system

FAKE_SLOT = """
ad = classad2.ClassAd({
    "MyType": "Machine", "Name": "fake@elsewhere.example", "Machine": "elsewhere.example",
    "Cpus": 64, "Memory": 1024, "State": "Unclaimed", "Activity": "Idle",
    "OpSys": "LINUX", "Arch": "X86_64",
})
htcondor2.Collector().advertise([ad], "UPDATE_STARTD_AD")
result = True
"""


def _config(pool: PoolProcess) -> str:
    return str(pool.config_path)


def test_htcondor2_queries_the_pools_collector(pool_factory) -> None:
    """Collector().query with a constraint and a projection returns the slots the pool's own
    query returns, cut to the projection; the schedd's ad carries a reachable MyAddress, found
    by locateAll, where directQuery asks the schedd itself."""
    pool: PoolProcess = pool_factory()
    code = """
c = htcondor2.Collector()
slots = c.query(htcondor2.AdType.Startd, "Cpus >= 1", ["Name", "Cpus", "MyAddress"])
result = {
    "slots": [dict(ad) for ad in slots],
    "schedds": [
        ad.get("MyAddress") for ad in c.query(htcondor2.AdType.Schedd, True, ["MyAddress"])
    ],
    "none": len(c.query(htcondor2.AdType.Startd, "Cpus > 100000", ["Name"])),
    "located": [ad["MyAddress"] for ad in c.locateAll(htcondor2.DaemonType.Schedd)],
    "direct": c.directQuery(htcondor2.DaemonType.Schedd)["MyType"],
}
"""
    answer = run_htcondor2(_config(pool), code)
    local = pool.client.query_ads("Machine")
    assert sorted(slot["Name"] for slot in answer["slots"]) == sorted(
        str(ad.evaluate("Name")) for ad in local
    )
    address = Path(pool.directory / "log" / ".collector_address").read_text().splitlines()[0]
    assert address.startswith("<127.0.0.1:")
    for slot in answer["slots"]:
        assert set(slot) == {"Name", "Cpus", "MyAddress"}
        assert slot["MyAddress"] == address
    assert answer["schedds"] == [address]
    assert answer["none"] == 0
    assert answer["located"] == [address]
    assert answer["direct"] == "Scheduler"  # asked of the schedd itself, at that address


def test_advertised_startd_ad_is_seen_by_ep_status_and_invalidated(pool_factory) -> None:
    """A made-up startd ad advertised by the pool's administrator shows in ``ep status`` with
    who sent it; an invalidation removes it."""
    pool: PoolProcess = pool_factory()
    assert run_htcondor2(_config(pool), FAKE_SLOT) is True
    status = pool.ep("status")
    assert "fake@elsewhere.example" in status.stdout, status.stdout + status.stderr
    # epcore's own client over CEDAR sees the same (ep status -pool, as condor_status -pool).
    address = (pool.directory / "log" / ".collector_address").read_text().splitlines()[0]
    remote = pool.ep("status", "-pool", address.strip("<>"), "-af", "Name")
    assert remote.status == 0, remote.stderr
    assert sorted(remote.stdout.split()) == sorted(
        str(ad.evaluate("Name")) for ad in pool.client.query_ads("Machine")
    )
    stored = pool.client.query_ads("Machine", 'Name == "fake@elsewhere.example"')
    assert stored[0].evaluate("AuthenticatedIdentity").startswith("condor@")
    assert stored[0].evaluate("AuthenticationMethod") == "FS"
    invalidate = """
ad = classad2.ClassAd({"MyType": "Query", "TargetType": "Machine",
                       "Requirements": classad2.ExprTree('Name == "fake@elsewhere.example"')})
htcondor2.Collector().advertise([ad], "INVALIDATE_STARTD_ADS")
result = True
"""
    run_htcondor2(_config(pool), invalidate)
    assert "fake@elsewhere.example" not in pool.ep("status").stdout


def test_ordinary_user_cannot_advertise_or_administer(pool_factory, slot_users) -> None:
    """An ordinary user (FS proves who) may query but not advertise, reconfigure or shut the
    pool down; each refusal is logged with who, where and why, and the pool keeps running."""
    pool: PoolProcess = pool_factory()
    user = slot_users[0]
    query = 'result = len(htcondor2.Collector().query(htcondor2.AdType.Startd, True, ["Name"]))'
    assert run_htcondor2(_config(pool), query, uid=user.uid, gid=user.gid) >= 1
    with pytest.raises(Htcondor2Error, match="Failed to advertise"):
        run_htcondor2(_config(pool), FAKE_SLOT, uid=user.uid, gid=user.gid)
    for command in ("Reconfig", "Off"):
        code = f"""
loc = htcondor2.Collector().locate(htcondor2.DaemonType.Collector)
htcondor2.send_command(loc, htcondor2.DaemonCommand.{command})
result = True
"""
        # send_command may or may not report the refusal; the pool's log does.
        with contextlib.suppress(Htcondor2Error):
            run_htcondor2(_config(pool), code, uid=user.uid, gid=user.gid)
    log = pool.log("CollectorLog")
    assert f"refused UPDATE_STARTD_AD (0) from {user.name}@" in log
    assert "no entry of ALLOW_DAEMON matches" in log
    assert f"from {user.name}@" in log and "ALLOW_ADMINISTRATOR" in log
    assert "fake@elsewhere.example" not in pool.ep("status").stdout
    assert run_htcondor2(_config(pool), query) >= 1  # still running


def test_ping_and_remote_param(pool_factory) -> None:
    """htcondor2.ping authorizes READ and DAEMON for the administrator; RemoteParam reads the
    pool's knobs as its configuration sets them."""
    pool: PoolProcess = pool_factory("EPCORE_TEST_KNOB = forty two\n")
    code = """
loc = htcondor2.Collector().locate(htcondor2.DaemonType.Collector)
read = htcondor2.ping(loc, "READ")
daemon = htcondor2.ping(loc, "DAEMON")
param = htcondor2.RemoteParam(loc)
result = {
    "read": read["AuthorizationSucceeded"], "daemon": daemon["AuthorizationSucceeded"],
    "user": daemon["MyRemoteUserName"], "knob": param["EPCORE_TEST_KNOB"],
    "has_knob": "EPCORE_TEST_KNOB" in param.keys(),
}
"""
    answer = run_htcondor2(_config(pool), code)
    assert answer["read"] is True and answer["daemon"] is True
    assert answer["user"].startswith("condor@")
    assert answer["knob"] == "forty two"
    assert answer["has_knob"] is True


def test_claimtobe_is_refused_unless_the_pool_names_it(pool_factory, slot_users) -> None:
    """A user claiming to be condor by CLAIMTOBE gets nowhere with the personal pool's policy
    (FS only); a pool whose DAEMON level names CLAIMTOBE believes the claim."""
    claim = {
        "_CONDOR_SEC_CLIENT_AUTHENTICATION_METHODS": "CLAIMTOBE",
        "_CONDOR_SEC_CLAIMTOBE_USER": "condor",
    }
    user = slot_users[0]
    pool: PoolProcess = pool_factory()
    with pytest.raises(Htcondor2Error, match="Failed to advertise"):
        run_htcondor2(_config(pool), FAKE_SLOT, uid=user.uid, gid=user.gid, environ=claim)
    assert "fake@elsewhere.example" not in pool.ep("status").stdout
    trusting: PoolProcess = pool_factory("SEC_DAEMON_AUTHENTICATION_METHODS = FS, CLAIMTOBE\n")
    run_htcondor2(_config(trusting), FAKE_SLOT, uid=user.uid, gid=user.gid, environ=claim)
    stored = trusting.client.query_ads("Machine", 'Name == "fake@elsewhere.example"')
    assert stored[0].evaluate("AuthenticationMethod") == "CLAIMTOBE"


def test_pool_keeps_answering_htcondor2_under_hostile_connections(pool_factory) -> None:
    """While many connections send random bytes, absurd lengths, truncated frames, deep ads
    and half handshakes, htcondor2 queries are answered, the pool's memory stays bounded and
    the refusals are in the CollectorLog with their reasons."""
    pool: PoolProcess = pool_factory("CEDAR_CLIENT_TIMEOUT = 2\n")
    address = (pool.directory / "log" / ".collector_address").read_text().split()[0]
    port = int(address.strip("<>").split(":")[1])
    assert pool.process is not None
    before = psutil.Process(pool.process.pid).memory_info().rss
    rng = random.Random(22)
    threads = [
        threading.Thread(target=hostile, args=(port, kind % 6, random.Random(rng.random())))
        for kind in range(120)
    ]
    for thread in threads:
        thread.start()
    query = 'result = len(htcondor2.Collector().query(htcondor2.AdType.Startd, True, ["Name"]))'
    answers = [run_htcondor2(_config(pool), query) for _ in range(3)]
    for thread in threads:
        thread.join(30)
    answers.append(run_htcondor2(_config(pool), query))
    assert answers == [1, 1, 1, 1]
    grown = psutil.Process(pool.process.pid).memory_info().rss - before
    assert grown < 64 * 1024 * 1024, f"the pool grew by {grown / 2**20:.0f} MiB"
    log = pool.log("CollectorLog")
    assert "unrecognized packet header" in log
    assert "the most a packet may hold" in log
