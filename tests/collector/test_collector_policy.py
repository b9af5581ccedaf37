"""The keys the collector keeps ads under (collector_policy.key_name), as HTCondor's collector
keys them: by name, never by the daemon's address; and the store's updates, invalidations
and expiry by those keys."""

from __future__ import annotations

import pytest

from epcore.classad import ClassAd
from epcore.collector.collector import AdState, Collector, Departure, DepartureKind
from epcore.collector.collector_policy import ad_key
from epcore.config import Config
from epcore.errors import PoolError

T0 = 1_700_000_000


def collector(text: str = "") -> Collector:
    """A collector configured by ``text`` on top of the defaults."""
    return Collector(Config.from_text(text, subsystem="COLLECTOR"))


def slot(address: str, **extra: object) -> ClassAd:
    """slot1@exec's machine ad as sent from ``address``."""
    ad = ClassAd({"MyType": "Machine", "Name": "slot1@exec", "MyAddress": address})
    for key, value in extra.items():
        ad[key] = value
    return ad


def submitter(schedd: str, **extra: object) -> ClassAd:
    """alice's submitter ad from the schedd named ``schedd``."""
    ad = ClassAd({"MyType": "Submitter", "Name": "alice@pool", "ScheddName": schedd, "IdleJobs": 1})
    for key, value in extra.items():
        ad[key] = value
    return ad


@pytest.mark.parametrize(
    ("ad", "same_as", "different_from"),
    [
        # A startd of the same Name elsewhere is the same startd (HTCONDOR-1948).
        (slot("<10.0.0.1:9618>"), slot("<10.0.0.2:9618>"), slot("<10.0.0.1:9618>", Name="x")),
        (submitter("s1@a"), submitter("s1@a", IdleJobs=5), submitter("s2@b")),
        (
            ClassAd({"MyType": "Accounting", "Name": "alice@pool", "NegotiatorName": "n1"}),
            ClassAd({"MyType": "ACCOUNTING", "Name": "alice@pool", "NegotiatorName": "n1"}),
            ClassAd({"MyType": "Accounting", "Name": "alice@pool", "NegotiatorName": "n2"}),
        ),
        (
            ClassAd({"MyType": "Machine", "Machine": "exec", "SlotID": 2}),
            ClassAd({"MyType": "Machine", "Machine": "exec", "SlotID": 2, "Cpus": 4}),
            ClassAd({"MyType": "Machine", "Machine": "exec", "SlotID": 3}),
        ),
        (
            ClassAd({"MyType": "DaemonMaster", "Machine": "exec"}),
            ClassAd({"MyType": "DaemonMaster", "Machine": "exec", "MyAddress": "<10.0.0.9:1>"}),
            ClassAd({"MyType": "DaemonMaster", "Machine": "other"}),
        ),
        (
            # A generic ad is keyed by its Name alone, whatever else it holds.
            ClassAd({"MyType": "Defrag", "Name": "d", "ScheddName": "s1"}),
            ClassAd({"MyType": "Defrag", "Name": "d", "ScheddName": "s2"}),
            ClassAd({"MyType": "Defrag", "Name": "e", "ScheddName": "s1"}),
        ),
    ],
)
def test_keys_follow_htcondors_per_type_names(
    ad: ClassAd, same_as: ClassAd, different_from: ClassAd
) -> None:
    """Each ad has the key of an ad HTCondor takes for the same daemon and not that of one
    it takes for another."""
    key = ad_key(ad, "test")
    assert ad_key(same_as, "test") == key
    assert ad_key(different_from, "test") != key


@pytest.mark.parametrize(
    "ad",
    [
        ClassAd({"MyType": "Negotiator", "Machine": "cm"}),  # no Machine fallback for these
        ClassAd({"MyType": "Submitter", "ScheddName": "s1"}),
        ClassAd({"MyType": "Machine", "SlotID": 1}),
    ],
)
def test_an_ad_without_the_names_its_type_needs_has_no_key(ad: ClassAd) -> None:
    """An ad lacking what HTCondor keys its type by is a PoolError naming the Name."""
    with pytest.raises(PoolError, match="Name"):
        ad_key(ad, "test")


def test_a_startd_of_the_same_name_at_another_address_replaces_the_first() -> None:
    """Two startds of one Name at two addresses are one ad in the store (the later one,
    counting both updates); invalidating the Name or its lifetime ending removes it, once."""
    store = collector("CLASSAD_LIFETIME = 60")
    store.update([slot("<10.0.0.1:9618>")], T0)
    store.update([slot("<10.0.0.2:9618>")], T0 + 5)
    (stored,) = store.query("Machine", now=T0 + 5)
    assert stored.evaluate("MyAddress") == "<10.0.0.2:9618>"
    assert stored.evaluate("UpdatesTotal") == 2
    assert store.expire(T0 + 64) == []
    gone = [Departure("Machine", "slot1@exec", DepartureKind.EXPIRED)]
    assert store.expire(T0 + 66) == gone
    store.update([slot("<10.0.0.1:9618>")], T0 + 70)
    store.update([slot("<10.0.0.2:9618>")], T0 + 71)
    invalidated = store.invalidate("Machine", ["slot1@exec"], T0 + 72)
    assert invalidated == [Departure("Machine", "slot1@exec", DepartureKind.INVALIDATED)]
    assert len(store) == 0


def test_an_absent_startd_is_replaced_by_its_name_from_another_address() -> None:
    """A startd made absent comes back live when its Name is heard from a new address."""
    store = collector("CLASSAD_LIFETIME = 10\nABSENT_REQUIREMENTS = true")
    store.update([slot("<10.0.0.1:9618>")], T0)
    made = store.expire(T0 + 11)
    assert made == [Departure("Machine", "slot1@exec", DepartureKind.MADE_ABSENT)]
    store.update([slot("<10.0.0.2:9618>")], T0 + 12)
    assert store.state_of("Machine", "slot1@exec") is AdState.LIVE
    assert len(store) == 1


def test_one_users_submitter_ads_from_two_schedds_are_kept_apart() -> None:
    """A user's submitter ads from two schedds are two ads: each schedd's update replaces
    only its own, invalidating one schedd's leaves the other's, and each expires on its own
    lifetime (the departure naming the user)."""
    store = collector("CLASSAD_LIFETIME = 60")
    store.update([submitter("s1@a"), submitter("s2@b")], T0)
    store.update([submitter("s1@a", IdleJobs=7)], T0 + 30)
    found = {
        str(ad.evaluate("ScheddName")): ad.evaluate("IdleJobs")
        for ad in store.query("Submitter", now=T0 + 30)
    }
    assert found == {"s1@a": 7, "s2@b": 1}
    gone = store.expire(T0 + 61)
    assert gone == [Departure("Submitter", "alice@pool", DepartureKind.EXPIRED)]
    (left,) = store.query("Submitter", now=T0 + 61)
    assert left.evaluate("ScheddName") == "s1@a"
    store.update([submitter("s2@b")], T0 + 62)
    assert store.invalidate_ads([submitter("s1@a")], T0 + 63) == [
        Departure("Submitter", "alice@pool", DepartureKind.INVALIDATED)
    ]
    (left,) = store.query("Submitter", now=T0 + 63)
    assert left.evaluate("ScheddName") == "s2@b"
