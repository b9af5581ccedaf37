"""The collector's store: updates, expiry, absent and offline ads, invalidation, queries."""

from __future__ import annotations

import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.collector.collector import AdState, Collector, CollectorSink, Departure, DepartureKind
from epcore.config import Config
from epcore.errors import ConfigError, PoolError

T0 = 1_700_000_000


def collector(text: str = "") -> Collector:
    """A collector configured by ``text`` on top of the defaults."""
    return Collector(Config.from_text(text, subsystem="COLLECTOR"))


def machine(name: str, **extra: object) -> ClassAd:
    """A small machine ad named ``name``."""
    ad = ClassAd({"MyType": "Machine", "Name": name, "Cpus": 1, "State": "Unclaimed"})
    for key, value in extra.items():
        ad[key] = value
    return ad


def names(ads: list[ClassAd]) -> list[str]:
    """The Name of each ad, in order."""
    return [str(ad.evaluate("Name")) for ad in ads]


def test_update_stamps_last_heard_from_and_counts_updates() -> None:
    """An update stores a copy stamped with the collector's time and an update count."""
    store = collector()
    ad = machine("slot1@a")
    store.update([ad], T0 + 0.7)
    store.update([ad], T0 + 10)
    [stored] = store.query("Machine", now=T0 + 10)
    assert stored.evaluate("LastHeardFrom") == T0 + 10
    assert stored.evaluate("UpdatesTotal") == 2
    assert "LastHeardFrom" not in ad


def test_update_replaces_by_type_and_name_with_type_case_insensitive() -> None:
    """A second ad of the same MyType (any case) and Name replaces the first."""
    store = collector()
    store.update([machine("slot1@a", Cpus=1)], T0)
    store.update([parse_ad('[MyType = "MACHINE"; Name = "slot1@a"; Cpus = 8]')], T0 + 1)
    assert [ad.evaluate("Cpus") for ad in store.query("machine", now=T0 + 1)] == [8]
    assert len(store) == 1


@pytest.mark.parametrize(
    "text",
    [
        '[Name = "x"]',
        '[MyType = "Machine"]',
        '[MyType = 3; Name = "x"]',
        '[MyType = "M"; Name = 1]',
    ],
)
def test_update_without_type_or_name_is_refused_whole(text: str) -> None:
    """An ad lacking a string MyType or Name is a PoolError and nothing of the batch is stored."""
    store = collector()
    with pytest.raises(PoolError, match=r"MyType|Name"):
        store.update([machine("good@a"), parse_ad(text)], T0)
    assert len(store) == 0


@pytest.mark.parametrize(
    ("config", "own_lifetime", "kept_until"),
    [
        ("", None, 900),
        ("CLASSAD_LIFETIME = 60", None, 60),
        ("CLASSAD_LIFETIME = 60", 300, 300),
        ("", 5, 5),
        ("", "not a number", 900),
    ],
)
def test_live_ads_expire_after_their_lifetime(
    config: str, own_lifetime: object, kept_until: int
) -> None:
    """An ad lives ClassAdLifetime (its own, else CLASSAD_LIFETIME) seconds past LastHeardFrom."""
    store = collector(config)
    ad = (
        machine("slot1@a")
        if own_lifetime is None
        else machine("slot1@a", ClassAdLifetime=own_lifetime)
    )
    store.update([ad], T0)
    assert store.expire(T0 + kept_until) == []
    assert names(store.query("Machine", now=T0)) == ["slot1@a"]
    assert store.expire(T0 + kept_until + 1) == [
        Departure("Machine", "slot1@a", DepartureKind.EXPIRED)
    ]
    assert store.query(None, now=T0) == []


@pytest.mark.parametrize(
    ("requirements", "becomes_absent"),
    [
        ("TRUE", True),
        ("FALSE", False),
        ("Cpus > 4", False),
        ("Cpus == 1", True),
        ("NoSuchAttribute", False),
        ("1", True),
    ],
)
def test_expiry_makes_absent_only_when_absent_requirements_is_true(
    requirements: str, becomes_absent: bool
) -> None:
    """An expiring machine ad is kept as absent exactly when ABSENT_REQUIREMENTS is true for it."""
    store = collector(f"ABSENT_REQUIREMENTS = {requirements}")
    store.update([machine("slot1@a")], T0)
    [departure] = store.expire(T0 + 901)
    assert departure.kind is (
        DepartureKind.MADE_ABSENT if becomes_absent else DepartureKind.EXPIRED
    )
    assert store.query("Machine", now=T0 + 901) == []
    absent = store.query("Machine", now=T0 + 901, absent=True)
    assert names(absent) == (["slot1@a"] if becomes_absent else [])
    if becomes_absent:
        assert absent[0].evaluate("Absent") is True
        assert absent[0].evaluate("LastHeardFrom") == T0 + 901
        assert store.state_of("Machine", "slot1@a") is AdState.ABSENT


def test_absent_requirements_apply_only_to_machine_ads() -> None:
    """Other daemons' ads (a Scheduler ad) simply expire, whatever ABSENT_REQUIREMENTS says."""
    store = collector("ABSENT_REQUIREMENTS = True")
    store.update([parse_ad('[MyType = "Scheduler"; Name = "schedd@a"]')], T0)
    assert [d.kind for d in store.expire(T0 + 901)] == [DepartureKind.EXPIRED]
    assert store.query(None, now=T0 + 901, absent=True) == []


@pytest.mark.parametrize(
    ("config", "gone_after"),
    [
        ("", 30 * 24 * 3600),
        ("ABSENT_EXPIRE_ADS_AFTER = 100", 100),
        ("ABSENT_EXPIRE_ADS_AFTER = 0", None),
    ],
)
def test_absent_ads_expire_after_absent_expire_ads_after(
    config: str, gone_after: int | None
) -> None:
    """Absent ads go ABSENT_EXPIRE_ADS_AFTER seconds after becoming absent; 0 keeps them."""
    store = collector(f"ABSENT_REQUIREMENTS = True\n{config}")
    store.update([machine("slot1@a")], T0)
    store.expire(T0 + 901)
    became_absent = T0 + 901
    if gone_after is None:
        assert store.expire(became_absent + 10**9) == []
        assert len(store.query("Machine", now=T0, absent=True)) == 1
        return
    assert store.expire(became_absent + gone_after) == []
    assert store.expire(became_absent + gone_after + 1) == [
        Departure("Machine", "slot1@a", DepartureKind.ABSENT_EXPIRED)
    ]
    assert len(store) == 0


def test_next_update_replaces_an_absent_ad() -> None:
    """A machine that comes back replaces its absent ad with a live one."""
    store = collector("ABSENT_REQUIREMENTS = True")
    store.update([machine("slot1@a")], T0)
    store.expire(T0 + 901)
    store.update([machine("slot1@a", Cpus=2)], T0 + 2000)
    [live] = store.query("Machine", now=T0 + 2000)
    assert "Absent" not in live
    assert live.evaluate("UpdatesTotal") == 1
    assert store.query("Machine", now=T0 + 2000, absent=True) == []


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        ("Absent =?= true", ["gone@a"]),
        ("Absent", ["gone@a"]),
        ("Absent =!= true", ["here@a"]),
        ("MY.absent isnt true && Cpus == 1", ["here@a"]),
        ("Cpus == 1", ["here@a"]),
        ("true", ["here@a"]),
    ],
)
def test_absent_ads_are_seen_only_when_the_constraint_names_absent(
    constraint: str, expected: list[str]
) -> None:
    """A query sees absent ads when its constraint mentions Absent, as condor_status does."""
    store = collector("ABSENT_REQUIREMENTS = True")
    store.update([machine("gone@a")], T0)
    store.expire(T0 + 901)
    store.update([machine("here@a")], T0 + 901)
    assert names(store.query("Machine", constraint, now=T0 + 901)) == expected


def test_absent_flag_returns_only_absent_ads() -> None:
    """absent=True lists the absent ads and no live one, as condor_status -absent."""
    store = collector("ABSENT_REQUIREMENTS = True")
    store.update([machine("gone@a")], T0)
    store.expire(T0 + 901)
    store.update([machine("here@a")], T0 + 901)
    assert names(store.query("Machine", now=T0 + 901, absent=True)) == ["gone@a"]
    assert names(store.query("Machine", "Cpus == 2", now=T0 + 901, absent=True)) == []


@pytest.mark.parametrize(
    ("config", "kind", "absent_after"),
    [
        ("", DepartureKind.INVALIDATED, False),
        ("ABSENT_REQUIREMENTS = True", DepartureKind.INVALIDATED, False),
        ("EXPIRE_INVALIDATED_ADS = True", DepartureKind.EXPIRED, False),
        (
            "EXPIRE_INVALIDATED_ADS = True\nABSENT_REQUIREMENTS = True",
            DepartureKind.MADE_ABSENT,
            True,
        ),
        (
            "EXPIRE_INVALIDATED_ADS = False\nABSENT_REQUIREMENTS = True",
            DepartureKind.INVALIDATED,
            False,
        ),
    ],
)
def test_invalidation_with_and_without_expire_invalidated_ads(
    config: str, kind: DepartureKind, absent_after: bool
) -> None:
    """Invalidation drops the ad, or treats it as expired under EXPIRE_INVALIDATED_ADS."""
    store = collector(config)
    store.update([machine("slot1@a"), machine("slot2@a")], T0)
    assert store.invalidate("machine", ["slot1@a", "unknown@a"], T0 + 5) == [
        Departure("Machine", "slot1@a", kind)
    ]
    assert names(store.query("Machine", now=T0 + 5)) == ["slot2@a"]
    assert names(store.query("Machine", now=T0 + 5, absent=True)) == (
        ["slot1@a"] if absent_after else []
    )


def test_invalidation_leaves_absent_ads_and_other_types_alone() -> None:
    """Invalidating a Name that is absent, or of another MyType, changes nothing."""
    store = collector("ABSENT_REQUIREMENTS = True")
    store.update([machine("gone@a")], T0)
    store.expire(T0 + 901)
    store.update([parse_ad('[MyType = "Scheduler"; Name = "s@a"]')], T0 + 901)
    assert store.invalidate("Machine", ["gone@a", "s@a"], T0 + 902) == []
    assert len(store) == 2


@pytest.mark.parametrize(
    ("config", "gone_after"),
    [("", None), ("OFFLINE_EXPIRE_ADS_AFTER = 0", None), ("OFFLINE_EXPIRE_ADS_AFTER = 3600", 3600)],
)
def test_offline_ads_last_offline_expire_ads_after(config: str, gone_after: int | None) -> None:
    """An Offline ad outlives CLASSAD_LIFETIME, going after OFFLINE_EXPIRE_ADS_AFTER (0: never)."""
    store = collector(config)
    store.update([machine("slot1@a", Offline=True)], T0)
    assert store.state_of("Machine", "slot1@a") is AdState.OFFLINE
    assert store.expire(T0 + 901) == []
    assert names(store.query("Machine", "Offline", now=T0 + 901)) == ["slot1@a"]
    if gone_after is None:
        assert store.expire(T0 + 10**9) == []
        return
    assert store.expire(T0 + gone_after + 1) == [
        Departure("Machine", "slot1@a", DepartureKind.OFFLINE_EXPIRED)
    ]


def test_real_update_replaces_an_offline_ad() -> None:
    """The machine's next real update turns its offline ad back into a live, expiring one."""
    store = collector()
    store.update([machine("slot1@a", Offline=True)], T0)
    store.update([machine("slot1@a")], T0 + 50)
    assert store.state_of("Machine", "slot1@a") is AdState.LIVE
    assert store.persistent_ads() == []
    assert [d.kind for d in store.expire(T0 + 50 + 901)] == [DepartureKind.EXPIRED]


@pytest.mark.parametrize(
    ("my_type", "constraint", "expected"),
    [
        ("Machine", None, ["slot1@a", "slot2@a"]),
        ("machine", "Cpus > 1", ["slot2@a"]),
        ("Machine", 'State == "Claimed"', []),
        ("Machine", "Cpus", ["slot1@a", "slot2@a"]),
        ("Machine", "NoSuch", []),
        ("Machine", "1/0", []),
        ("Machine", "LastHeardFrom + 10 > time()", ["slot1@a", "slot2@a"]),
        ("Scheduler", None, ["schedd@a"]),
        (None, None, ["slot1@a", "slot2@a", "schedd@a"]),
        (None, 'MyType == "Scheduler"', ["schedd@a"]),
        ("Negotiator", None, []),
    ],
)
def test_query_by_type_and_constraint(
    my_type: str | None, constraint: str | None, expected: list[str]
) -> None:
    """Queries filter by MyType and by a constraint that must evaluate to true."""
    store = collector()
    store.update([machine("slot1@a"), machine("slot2@a", Cpus=4)], T0)
    store.update([parse_ad('[MyType = "Scheduler"; Name = "schedd@a"]')], T0)
    assert names(store.query(my_type, constraint, now=T0 + 5)) == expected


@pytest.mark.parametrize(
    ("projection", "expected"),
    [
        (["Name"], {"Name"}),
        (["name", "CPUS", "Missing"], {"Name", "Cpus"}),
        ([], set()),
        (None, {"MyType", "Name", "Cpus", "State", "LastHeardFrom", "UpdatesTotal"}),
    ],
)
def test_query_projection(projection: list[str] | None, expected: set[str]) -> None:
    """A projection keeps only the named attributes the ad has, in their stored spelling."""
    store = collector()
    store.update([machine("slot1@a")], T0)
    [ad] = store.query("Machine", projection=projection, now=T0)
    assert set(ad) == expected


def test_query_results_are_copies() -> None:
    """Changing a query result does not change the stored ad."""
    store = collector()
    store.update([machine("slot1@a")], T0)
    store.query("Machine", now=T0)[0]["Cpus"] = 99
    assert store.query("Machine", now=T0)[0].evaluate("Cpus") == 1


@pytest.mark.parametrize("constraint", ["Cpus >", "(", "a = 1", '"open', "Cpus > > 2", ""])
def test_bad_constraint_is_a_pool_error(constraint: str) -> None:
    """A constraint that does not parse is a PoolError that says so and quotes it."""
    store = collector()
    store.update([machine("slot1@a")], T0)
    with pytest.raises(PoolError, match="does not parse"):
        store.query("Machine", constraint, now=T0)


@pytest.mark.parametrize("text", ["ABSENT_REQUIREMENTS = Cpus >", "ABSENT_REQUIREMENTS = ((1)"])
def test_bad_absent_requirements_is_a_config_error(text: str) -> None:
    """ABSENT_REQUIREMENTS that does not parse is a ConfigError naming the knob."""
    with pytest.raises(ConfigError, match="ABSENT_REQUIREMENTS"):
        collector(text)


def test_reconfig_changes_lifetimes_of_stored_ads() -> None:
    """After reconfig, stored ads expire by the new CLASSAD_LIFETIME."""
    store = collector()
    store.update([machine("slot1@a")], T0)
    store.reconfig(Config.from_text("CLASSAD_LIFETIME = 10", subsystem="COLLECTOR"))
    assert store.settings.classad_lifetime == 10
    assert [d.kind for d in store.expire(T0 + 11)] == [DepartureKind.EXPIRED]


def test_persistent_ads_round_trip_through_restore() -> None:
    """Absent and offline ads (and no live one) survive a restart through restore()."""
    config = Config.from_text("ABSENT_REQUIREMENTS = True", subsystem="COLLECTOR")
    store = Collector(config)
    store.update([machine("gone@a"), machine("asleep@a", Offline=True)], T0)
    store.update([machine("live@a")], T0 + 800)
    store.expire(T0 + 901)
    kept = store.persistent_ads()
    assert sorted(names(kept)) == ["asleep@a", "gone@a"]
    again = Collector.restore(config, kept)
    assert again.state_of("Machine", "gone@a") is AdState.ABSENT
    assert again.state_of("Machine", "asleep@a") is AdState.OFFLINE
    assert again.state_of("Machine", "live@a") is None
    assert sorted(names(again.persistent_ads())) == ["asleep@a", "gone@a"]


def test_load_persistent_keeps_a_newer_live_ad() -> None:
    """A persisted absent ad does not replace a live ad already received for that Name."""
    store = collector()
    store.update([machine("slot1@a")], T0)
    store.load_persistent([machine("slot1@a", Absent=True, LastHeardFrom=T0 - 5)])
    assert store.state_of("Machine", "slot1@a") is AdState.LIVE


@pytest.mark.parametrize(
    ("ad", "message"),
    [
        (machine("x@a", LastHeardFrom=T0), "neither absent nor offline"),
        (machine("x@a", Absent=True), "LastHeardFrom"),
        (machine("x@a", Absent=True, LastHeardFrom="yesterday"), "LastHeardFrom"),
        (ClassAd({"Name": "x@a", "Absent": True, "LastHeardFrom": T0}), "MyType"),
    ],
)
def test_load_persistent_refuses_unusable_ads(ad: ClassAd, message: str) -> None:
    """An ad that is not absent or offline, or lacks its identity or time, is a PoolError."""
    store = collector()
    with pytest.raises(PoolError, match=message):
        store.load_persistent([machine("ok@a", Absent=True, LastHeardFrom=T0), ad])
    assert len(store) == 0


class _Clock:
    """A settable clock."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_sink_publishes_with_the_collectors_own_clock() -> None:
    """CollectorSink stores advertised slot ads stamped by its clock and invalidates by Name."""
    store = collector()
    clock = _Clock(T0 + 42)
    sink = CollectorSink(store, clock)
    untyped = ClassAd({"Name": "slot1@a", "Cpus": 1})
    sink.advertise([untyped, machine("slot2@a")], now=5.0)
    ads = store.query("Machine", now=T0)
    assert names(ads) == ["slot1@a", "slot2@a"]
    assert {ad.evaluate("LastHeardFrom") for ad in ads} == {T0 + 42}
    assert "MyType" not in untyped
    sink.invalidate(["slot1@a"], now=6.0)
    assert names(store.query("Machine", now=T0)) == ["slot2@a"]


def test_persistent_generation_moves_exactly_when_persistent_ads_change() -> None:
    """persistent_generation changes with the absent/offline set and stays put otherwise."""
    store = collector("ABSENT_REQUIREMENTS = True\nABSENT_EXPIRE_ADS_AFTER = 100")
    seen = [store.persistent_generation]

    def step(changes: bool) -> None:
        now = store.persistent_generation
        assert (now != seen[-1]) is changes
        seen.append(now)

    store.update([machine("live@a"), machine("gone@a")], T0)
    step(False)
    store.update([machine("asleep@a", Offline=True)], T0)
    step(True)
    store.update([machine("live@a")], T0 + 600)
    store.expire(T0 + 700)
    step(False)
    store.expire(T0 + 901)  # gone@a becomes absent
    step(True)
    store.invalidate("Machine", ["asleep@a"], T0 + 902)
    step(True)
    store.update([machine("gone@a")], T0 + 903)  # back: its absent ad is replaced
    step(True)
    store.expire(T0 + 1505)  # live@a (heard at T0 + 600) expires and becomes absent
    step(True)
    store.expire(T0 + 1505 + 101)  # that absent ad outlives ABSENT_EXPIRE_ADS_AFTER
    step(True)
    store.load_persistent([machine("old@a", Absent=True, LastHeardFrom=T0 + 1600)])
    step(True)


def test_repeated_offline_match_records_do_not_rewrite_the_persistent_log() -> None:
    """The first match record changes the persistent offline ad; later cycles that only
    move MachineLastMatchTime, the counts and OfflineMatches leave persistent_generation
    alone, while a real change to the offline ad still moves it."""
    store = collector()
    store.update([machine("asleep@a", Offline=True, Memory=512)], T0)
    before = store.persistent_generation
    [stored] = store.query("Machine", now=T0 + 5)
    first = stored.copy()
    first["MachineLastMatchTime"] = T0 + 5
    first["MachineMatchCount"] = 1
    first["slot1_MachineLastMatchTime"] = T0 + 5
    first["OfflineMatches"] = [ClassAd({"Scheduler": "s", "AutoclusterID": 1, "RequestCount": 1})]
    store.update([first], T0 + 5)
    matched = store.persistent_generation
    assert matched != before
    again = first.copy()
    again["MachineLastMatchTime"] = T0 + 65
    again["MachineMatchCount"] = 3
    again["slot1_MachineLastMatchTime"] = T0 + 65
    again["OfflineMatches"] = []
    store.update([again], T0 + 65)
    assert store.persistent_generation == matched
    [kept] = store.query("Machine", now=T0 + 66)
    assert kept.evaluate("MachineLastMatchTime") == T0 + 65
    changed = again.copy()
    changed["Memory"] = 1024
    store.update([changed], T0 + 70)
    assert store.persistent_generation != matched
