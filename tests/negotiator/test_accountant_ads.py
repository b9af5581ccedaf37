"""The accountant's ads: condor_userprio's attribute names, round trip, damaged ads."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from negotiator_helpers import NOW, config, slot

from epcore.classad import format_old, parse_ad
from epcore.errors import PoolError
from epcore.negotiator import Accountant, SubmitterRecord

_ATTRIBUTES = {
    "MyType",
    "Name",
    "Priority",
    "PriorityFactor",
    "ResourcesUsed",
    "WeightedResourcesUsed",
    "AccumulatedUsage",
    "WeightedAccumulatedUsage",
    "BeginUsageTime",
    "LastUsageTime",
    "Ceiling",
    "Floor",
    "IsAccountingGroup",
    "AccountingGroup",
    "LastUpdateTime",
}

_reals = st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False)
_records = st.builds(
    SubmitterRecord,
    name=st.from_regex(r"[a-z][a-z0-9_.\-]{0,12}@[a-z]{1,8}\.org", fullmatch=True),
    factor=st.floats(min_value=1e-3, max_value=1e12),
    rup=st.floats(min_value=0.5, max_value=1e6),
    floor=st.none() | st.floats(min_value=0.001, max_value=1e4),
    ceiling=st.none() | st.floats(min_value=0, max_value=1e4),
    resources_used=st.integers(min_value=0, max_value=10**6),
    weighted_resources_used=_reals,
    accumulated_usage=_reals,
    weighted_accumulated_usage=_reals,
    begin_usage_time=_reals,
    last_usage_time=_reals,
)


def test_ads_use_userprio_attribute_names() -> None:
    """Each record is an Accounting ad with condor_userprio -l's names; Priority is the EUP."""
    accountant = Accountant.empty(config()).set_priority("a@x.org", 3.0, NOW)
    accountant = accountant.set_factor("a@x.org", 10.0, NOW).update_usage([], NOW)
    (ad,) = accountant.to_ads()
    assert set(ad) == _ATTRIBUTES
    assert ad.evaluate("MyType") == "Accounting"
    assert ad.evaluate("Priority") == 30.0
    assert (ad.evaluate("Ceiling"), ad.evaluate("Floor")) == (-1.0, 0.0)
    assert (ad.evaluate("IsAccountingGroup"), ad.evaluate("AccountingGroup")) == (False, "<none>")


def test_group_records_hold_their_members_usage() -> None:
    """With GROUP_NAMES, each group gets a record charged with its direct members' slots
    (not its subgroups'), marked IsAccountingGroup; a member's ad names its group."""
    cfg = config("GROUP_NAMES = physics, physics.hep\nGROUP_QUOTA_physics = 4\n")
    slots = [
        slot(1, running="physics.einstein@example.org"),
        slot(2, running="physics.hep.higgs@example.org"),
        slot(3, running="alice@example.org"),
    ]
    accountant = Accountant.empty(cfg).update_usage(slots, NOW)
    assert accountant.record("physics").resources_used == 1
    assert accountant.record("physics.hep").resources_used == 1
    ads = {ad.evaluate("Name"): ad for ad in accountant.to_ads()}
    assert ads["physics"].evaluate("IsAccountingGroup") is True
    assert ads["physics.hep.higgs@example.org"].evaluate("AccountingGroup") == "physics.hep"
    assert ads["alice@example.org"].evaluate("AccountingGroup") == "<none>"


@given(records=st.lists(_records, max_size=5, unique_by=lambda r: r.name))
def test_ads_round_trip_through_text(records: list[SubmitterRecord]) -> None:
    """from_ads(to_ads()) restores every record (RUP up to rounding), also through old text."""
    cfg = config()
    accountant = Accountant(Accountant.empty(cfg).policy, {r.name: r for r in records}, NOW)
    ads = [parse_ad(format_old(ad)) for ad in accountant.to_ads()]
    back = Accountant.from_ads(ads, cfg)
    assert back.last_update == (NOW if records else None)
    assert back.records.keys() == accountant.records.keys()
    for name, record in accountant.records.items():
        restored = back.records[name]
        assert restored.rup == pytest.approx(record.rup, rel=1e-9)
        assert attrs.evolve(record, rup=restored.rup) == restored


_GOOD = (
    '[MyType = "Accounting"; Name = "a@x.org"; Priority = 500.0; PriorityFactor = 1000.0; '
    "ResourcesUsed = 2; WeightedResourcesUsed = 2.0]"
)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ('MyType = "Machine"', "MyType"),
        ("Name = 3", "Name"),
        ('Name = ""', "Name"),
        ("PriorityFactor = 0", "PriorityFactor"),
        ('PriorityFactor = "x"', "PriorityFactor"),
        ("Priority = undefined", "Priority"),
        ("ResourcesUsed = -1", "ResourcesUsed"),
        ("ResourcesUsed = 1.5", "ResourcesUsed"),
        ('ResourcesUsed = real("INF")', "ResourcesUsed"),
        ('Priority = real("NaN")', "Priority"),
        ("AccumulatedUsage = true", "AccumulatedUsage"),
        ("Ceiling = error", "Ceiling"),
        ('LastUpdateTime = "now"', "LastUpdateTime"),
    ],
)
def test_damaged_ads_are_pool_errors_naming_the_attribute(change: str, message: str) -> None:
    """An ad with a missing or wrong attribute is a PoolError naming that attribute."""
    ad = parse_ad(_GOOD)
    name, _, value = change.partition(" = ")
    ad[name] = parse_ad(f"[x = {value}]")["x"]
    with pytest.raises(PoolError, match=message):
        Accountant.from_ads([ad], config())


@pytest.mark.parametrize("missing", ["Name", "Priority", "PriorityFactor"])
def test_ads_missing_required_attributes_are_pool_errors(missing: str) -> None:
    """Name, Priority and PriorityFactor are required."""
    ad = parse_ad(_GOOD)
    del ad[missing]
    with pytest.raises(PoolError, match=missing):
        Accountant.from_ads([ad], config())


def test_good_ad_loads() -> None:
    """A well-formed ad gives the record it describes (RUP = Priority / PriorityFactor)."""
    record = Accountant.from_ads([parse_ad(_GOOD)], config()).record("a@x.org")
    assert (record.rup, record.factor, record.resources_used) == (0.5, 1000.0, 2)
    assert (record.floor, record.ceiling) == (None, None)


_values = st.one_of(
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(min_codepoint=1, max_codepoint=0xD7FF)),
    st.booleans(),
    st.none(),
)


@given(
    fields=st.dictionaries(st.sampled_from(sorted(_ATTRIBUTES)), _values, max_size=len(_ATTRIBUTES))
)
def test_arbitrary_ads_load_or_raise_pool_error(fields: dict[str, object]) -> None:
    """Whatever an ad holds, from_ads gives an accountant or a PoolError, nothing else."""
    ad = parse_ad(_GOOD)
    for name, value in fields.items():
        ad[name] = value
    try:
        accountant = Accountant.from_ads([ad], config())
    except PoolError:
        return
    (record,) = accountant.records.values()
    assert record.factor > 0 and record.rup >= 0.5


def test_group_prio_factor_is_a_new_members_factor() -> None:
    """GROUP_PRIO_FACTOR_<g> is the factor a new submitter of that group starts with; others
    keep DEFAULT_PRIO_FACTOR."""
    cfg = config("GROUP_NAMES = physics\nGROUP_QUOTA_physics = 4\nGROUP_PRIO_FACTOR_physics = 7\n")
    accountant = Accountant.empty(cfg)
    assert accountant.record("physics.einstein@example.org").factor == 7.0
    assert accountant.record("alice@example.org").factor == 1000.0
