"""Which slots a cron job's ads go to (seed 000, "Job output"): SlotMergeConstraint (slot ad as
TARGET), then SlotName/Name prefix, then SlotTypeId, then SlotId; untargeted ads everywhere and
under the targeted ones; the job's SLOTS and PREFIX."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import ClassAd, parse_ad
from epcore.slots.cron_merge import CronLayers, cron_ad, merge_cron_ads, merge_target
from epcore.slots.cron_output import CronOutputError, parse_cron_output

SEED_OUTPUT = "Value=1\nSlotId=1\n-s1\nValue=2\nSlotId=2\n-s2\nValue=10\n- update:true\n"


def _slots(count: int = 4, types: dict[int, int] | None = None) -> dict[str, ClassAd]:
    ads = {}
    for number in range(1, count + 1):
        type_id = (types or {}).get(number, 1)
        ads[f"slot{number}"] = parse_ad(
            f'[Name = "slot{number}@host"; SlotID = {number}; SlotTypeId = {type_id};'
            f" Cpus = {number}]"
        )
    return ads


def _merge(text: str, slot_ads: dict[str, ClassAd], **job) -> dict[str, dict[str, object]]:
    records = [cron_ad("job", ad, **job) for ad in parse_cron_output(text).ads]
    layers = merge_cron_ads(records, slot_ads, 0.0)
    found: dict[str, dict[str, object]] = {}
    for slot in slot_ads:
        values: dict[str, object] = {}
        for name, expr in layers.of(slot):
            values[name] = expr.evaluate()
        found[slot] = values
    return found


def test_seed_example_sets_value_per_slot() -> None:
    """Value=1 on slot1, Value=2 on slot2, Value=10 on all the others."""
    merged = _merge(SEED_OUTPUT, _slots())
    assert {slot: values["Value"] for slot, values in merged.items()} == {
        "slot1": 1,
        "slot2": 2,
        "slot3": 10,
        "slot4": 10,
    }


def test_targeted_ads_win_whatever_the_output_order() -> None:
    """The untargeted ad comes first in the output here; slot1 still gets its own value."""
    text = "Value=10\n-all\nValue=1\nSlotId=1\n-s1\n"
    merged = _merge(text, _slots(2))
    assert (merged["slot1"]["Value"], merged["slot2"]["Value"]) == (1, 10)


@pytest.mark.parametrize(
    ("targeting", "expected"),
    [
        ("SlotMergeConstraint = TARGET.Cpus >= 3\nSlotId = 1", {"slot3", "slot4"}),
        ('SlotName = "slot1"\nSlotId = 2', {"slot1"}),
        ('Name = "slot2"\nSlotTypeId = 2', {"slot2"}),
        ("SlotTypeId = 2\nSlotId = 1", {"slot3", "slot4"}),
        ("SlotId = 4", {"slot4"}),
        ("SlotMergeConstraint = MY.Want == TARGET.SlotID\nWant = 2", {"slot2"}),
        ("SlotMergeConstraint = TARGET.NoSuchAttribute", set()),
    ],
)
def test_targeting_priority(targeting: str, expected: set[str]) -> None:
    """The highest-priority targeting attribute present decides; the others are ignored."""
    merged = _merge(f"Mark = true\n{targeting}\n-t\n", _slots(4, {3: 2, 4: 2}))
    assert {slot for slot, values in merged.items() if values.get("Mark") is True} == expected


def test_name_prefix_matches_longer_names() -> None:
    """SlotName matches Names up to its length: slot1 covers slot10 and dynamic slot1_1."""
    slots = {
        "slot1": parse_ad('[Name = "slot1@h"; SlotID = 1]'),
        "slot1_1": parse_ad('[Name = "slot1_1@h"; SlotID = 1]'),
        "slot10": parse_ad('[Name = "slot10@h"; SlotID = 10]'),
        "slot2": parse_ad('[Name = "slot2@h"; SlotID = 2]'),
    }
    merged = _merge('X = 1\nSlotName = "slot1"\n-\n', slots)
    assert {slot for slot, values in merged.items() if values} == {"slot1", "slot1_1", "slot10"}


def test_targeting_attributes_are_not_merged_and_prefix_applies() -> None:
    """SlotId, SlotName, Name, SlotTypeId and SlotMergeConstraint stay out of the slot ad;
    the job's PREFIX is put before every merged name."""
    text = 'A = 1\nSlotId = 1\nName = "slot1"\n-\n'
    merged = _merge(text, _slots(1), prefix="test_")
    assert merged["slot1"] == {"test_A": 1}


def test_job_slots_limit_every_ad() -> None:
    """STARTD_CRON_<NAME>_SLOTS keeps even the untargeted ad to those slot numbers."""
    merged = _merge(SEED_OUTPUT, _slots(), slots=(2, 3))
    assert {slot: values.get("Value") for slot, values in merged.items()} == {
        "slot1": None,
        "slot2": 2,
        "slot3": 10,
        "slot4": None,
    }


@pytest.mark.parametrize(
    "text",
    ['SlotId = "one"', "SlotId = 1.5", "SlotTypeId = true", "SlotName = 3", "Name = undefined"],
)
def test_targeting_value_of_the_wrong_type(text: str) -> None:
    """A SlotId or SlotTypeId that is no integer, a SlotName that is no string: an error."""
    (ad,) = parse_cron_output(f"{text}\n-\n").ads
    with pytest.raises(CronOutputError):
        merge_target(ad.attributes, "job")


def test_no_ads_no_layers() -> None:
    """No cron ads: no slot gets anything."""
    assert merge_cron_ads([], _slots(), 0.0) == CronLayers({})


@given(
    general=st.integers(0, 100),
    targeted=st.dictionaries(st.integers(1, 6), st.integers(101, 200), max_size=6),
)
def test_every_slot_gets_its_targeted_value_or_the_general_one(general, targeted) -> None:
    """For any set of SlotId ads and one untargeted ad, each slot ends with its own SlotId
    ad's value when there is one, else the untargeted value."""
    text = "".join(f"V = {value}\nSlotId = {slot}\n-s{slot}\n" for slot, value in targeted.items())
    text += f"V = {general}\n-\n"
    merged = _merge(text, _slots(6))
    for number in range(1, 7):
        assert merged[f"slot{number}"]["V"] == targeted.get(number, general)
