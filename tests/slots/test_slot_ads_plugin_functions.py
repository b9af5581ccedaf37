"""Plugin ClassAd functions in the slot ads: START folded into Requirements and the cron ads'
SlotMergeConstraint are evaluated with the configuration's function table."""

from __future__ import annotations

import pytest
from lucky_functions import lucky_context
from slot_ad_fixtures import build, static_slots

from epcore.classad import parse_ad
from epcore.config import Config
from epcore.slots.cron_merge import CronLayers, cron_ad, merge_cron_ads
from epcore.slots.cron_output import parse_cron_output
from epcore.testing.host import FakeMachineHost


@pytest.mark.parametrize(
    ("start", "requirements"), [("isLucky(7)", "true"), ("isLucky(8)", "START")]
)
def test_start_calling_a_plugin_function_is_folded_when_locally_true(
    start: str, requirements: str
) -> None:
    """START = isLucky(7) is TRUE against the slot alone, so Requirements is advertised True;
    isLucky(8) is FALSE, so Requirements stays START."""
    config = Config.from_text(
        f"START = {start}\n", host=FakeMachineHost(), eval_context=lucky_context()
    )
    (ad,) = build(config, static_slots(1))
    assert str(ad["Requirements"]) == requirements


def test_slot_merge_constraint_calls_the_plugin_function() -> None:
    """A cron ad whose SlotMergeConstraint calls the plugin's function goes to the slots it
    accepts, and to none without the plugin's functions."""
    cpus = {1: 3, 2: 7, 3: 5, 4: 14}
    slots = {
        f"slot{n}": parse_ad(f'[Name = "slot{n}@host"; SlotID = {n}; Cpus = {count}]')
        for n, count in cpus.items()
    }
    output = "SlotMergeConstraint = isLucky(TARGET.Cpus)\nValue = 1\n"
    records = [cron_ad("job", ad) for ad in parse_cron_output(output).ads]

    def reached(layers: CronLayers) -> set[str]:
        return {name for name in slots if any(n == "Value" for n, _ in layers.of(name))}

    assert reached(merge_cron_ads(records, slots, 0.0, lucky_context())) == {"slot2", "slot4"}
    assert reached(merge_cron_ads(records, slots, 0.0)) == set()
