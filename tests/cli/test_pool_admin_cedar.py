"""``ep userprio / drain / vacate -pool HOST:PORT`` speak CEDAR to a real pool, as
condor_userprio, condor_drain and condor_vacate do; the pool authorizes them as it authorizes
HTCondor's tools (an ordinary user is refused the changes)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pool"))

from epcore.testing.pool import PoolProcess, pool_factory, shared_dir

__all__ = ["pool_factory", "shared_dir"]

pytestmark = pytest.mark.system


def _address(pool: PoolProcess) -> str:
    first = (pool.directory / "log" / ".collector_address").read_text().splitlines()[0]
    return first.strip("<>")


def _factor(pool: PoolProcess, name: str) -> object:
    for ad in pool.client.user_prio(all_users=True):
        if ad.evaluate("Name") == name:
            return ad.evaluate("PriorityFactor")
    return None


def test_userprio_over_cedar_reads_and_sets_and_refuses_ordinary_users(
    pool_factory, slot_users
) -> None:
    """Root's ``ep userprio -pool`` sets a factor and lists it as the local one does; an
    ordinary user's change is refused with the pool's words and changes nothing."""
    pool = pool_factory()
    where = _address(pool)
    done = pool.ep("userprio", "-pool", where, "-setfactor", "carol@cedar.example", "40")
    assert done.status == 0, done.stderr
    assert _factor(pool, "carol@cedar.example") == 40.0
    listed = pool.ep("userprio", "-pool", where, "-allusers", "-l")
    assert listed.status == 0, listed.stderr
    assert 'Name = "carol@cedar.example"' in listed.stdout
    assert "PriorityFactor = 40.0" in listed.stdout
    user = slot_users[0]
    refused = pool.ep(
        "userprio", "-pool", where, "-setfactor", "carol@cedar.example", "2", user=user
    )
    assert refused.status == 1
    assert "refused" in refused.stderr and "DENIED" in refused.stderr, refused.stderr
    assert _factor(pool, "carol@cedar.example") == 40.0
    assert pool.ep("userprio", "-pool", where, "-allusers", user=user).status == 0


def test_drain_and_vacate_over_cedar(pool_factory, slot_users) -> None:
    """``ep drain -pool -fast`` drains the startd the collector names and ``-cancel`` ends
    it; ``ep vacate -pool`` is sent for root and refused for an ordinary user, as is their
    drain; ``-name`` naming no startd is an error saying so."""
    pool = pool_factory()
    where = _address(pool)
    user = slot_users[0]
    refused = pool.ep("drain", "-pool", where, "-fast", user=user)
    assert refused.status == 1 and "DENIED" in refused.stderr, refused.stderr
    drained = pool.ep("drain", "-pool", where, "-fast")
    assert drained.status == 0, drained.stderr
    pool.wait_for(
        lambda: any(ad.evaluate("State") == "Drained" for ad in pool.client.query_ads()),
        30,
        "the slot to drain",
    )
    assert pool.ep("drain", "-pool", where, "-cancel").status == 0
    pool.wait_for(
        lambda: all(ad.evaluate("State") == "Unclaimed" for ad in pool.client.query_ads()),
        30,
        "the drain to end",
    )
    vacated = pool.ep("vacate", "-pool", where, "-fast")
    assert vacated.status == 0 and "Sent the vacate of every slot" in vacated.stdout
    assert pool.ep("vacate", "-pool", where, user=user).status == 1
    missing = pool.ep("drain", "-pool", where, "-name", "no-such-host.example")
    assert missing.status == 1 and "knows no startd named no-such-host" in missing.stderr
    log = pool.log("CollectorLog")
    assert f"refused DRAIN_JOBS (512) from {user.name}@" in log
    assert f"refused VACATE_ALL_CLAIMS (447) from {user.name}@" in log
