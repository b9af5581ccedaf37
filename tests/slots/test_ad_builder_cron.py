"""Startd cron attributes in the slot ads the builder makes: the per-slot cron layer replaces
configured and machine attributes but never the slot's own state, and updating or dropping it
in place gives exactly the ads a fresh build gives."""

from __future__ import annotations

from slot_ad_fixtures import HOST, NOW, QUIET, config_of, inventory_of, static_slots

from epcore.classad import ClassAd, parse_expr
from epcore.slots.ads import SlotAdBuilder
from epcore.slots.cron_merge import CronLayers

CONFIG = 'STARTD_ATTRS = Colour\nColour = "blue"\nSTART = Value >= 2\n'


def _layers(**by_slot: dict[str, str]) -> CronLayers:
    return CronLayers(
        {
            slot: tuple((name, parse_expr(text)) for name, text in attributes.items())
            for slot, attributes in by_slot.items()
        }
    )


def _fresh(layers: CronLayers | None) -> list[ClassAd]:
    builder = SlotAdBuilder(config_of(CONFIG), inventory_of(), host_name=HOST, started_at=NOW)
    return builder.build(static_slots(2), QUIET, {}, NOW, cron=layers)


def test_cron_attributes_join_each_slots_ad_and_start_sees_them() -> None:
    """Each slot gets its own cron attributes; START over them folds Requirements."""
    ads = _fresh(_layers(slot1={"Value": "1"}, slot2={"Value": "2"}))
    assert [ad.evaluate("Value") for ad in ads] == [1, 2]
    assert ads[0].evaluate("Requirements") is False
    assert ads[1].lookup("Requirements") is not None and ads[1].evaluate("Requirements") is True


def test_cron_layer_replaces_configured_but_not_state() -> None:
    """A cron attribute of a configured name wins; one named like the slot's state does not."""
    (ad, _) = _fresh(
        _layers(slot1={"Colour": '"green"', "State": '"Hacked"', "Name": '"x"', "Mips": "7"})
    )
    assert ad.evaluate("Colour") == "green"
    assert ad.evaluate("State") == "Owner"
    assert ad.evaluate("Name") == f"slot1@{HOST}"
    assert ad.evaluate("Mips") == 7


def test_updating_and_dropping_the_layer_in_place_matches_fresh_builds() -> None:
    """A builder whose cron layers change (new values, a new name, none at all) keeps ads equal
    to fresh builds with the same layers."""
    builder = SlotAdBuilder(config_of(CONFIG), inventory_of(), host_name=HOST, started_at=NOW)
    sequence = [
        None,
        _layers(slot1={"Value": "1"}),
        _layers(slot1={"Value": "3", "Other": '"x"'}, slot2={"Value": "2"}),
        _layers(slot2={"Colour": '"red"'}),
        None,
    ]
    for layers in sequence:
        built = builder.build(static_slots(2), QUIET, {}, NOW, cron=layers)
        fresh = _fresh(layers)
        for ad, expected in zip(built, fresh, strict=True):
            assert {k.lower(): str(ad.lookup(k)) for k in ad} == {
                k.lower(): str(expected.lookup(k)) for k in expected
            }
