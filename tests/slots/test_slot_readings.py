"""Per-slot LoadAvg, CondorLoadAvg, KeyboardIdle and ConsoleIdle: seed 002's multi-core rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from slot_ad_fixtures import NOW, build, by_name, config_of, partitionable_with_dynamic, resources
from slot_ad_fixtures import static_slots as statics

from epcore.slots.readings import owner_load_shares
from epcore.slots.slot_status import SlotStatus
from epcore.types import HostReadings

CONNECTED_TO_BOTH = "SLOTS_CONNECTED_TO_KEYBOARD = 2\nSLOTS_CONNECTED_TO_CONSOLE = 2\n"
ONE_CONNECTED = "SLOTS_CONNECTED_TO_KEYBOARD = 1\nSLOTS_CONNECTED_TO_CONSOLE = 1\n"


def test_seed_log_two_owner_slots_share_owner_load_and_keyboard() -> None:
    """Seed 002's first log: a 2-core machine, load 0.34, both slots connected to the keyboard:
    slot1 gets the whole owner load, both see Keyboard 0 and Console 4."""
    readings = HostReadings(load_avg=0.34, condor_load_avg=0.0, keyboard_idle=0, console_idle=4)
    ads = by_name(build(config_of(CONNECTED_TO_BOTH, cpus=2), statics(2), readings=readings))
    assert ads["slot1"].evaluate("LoadAvg") == pytest.approx(0.34)
    assert ads["slot2"].evaluate("LoadAvg") == 0.0
    for slot in ("slot1", "slot2"):
        assert (ads[slot].evaluate("KeyboardIdle"), ads[slot].evaluate("ConsoleIdle")) == (0, 4)
        assert ads[slot].evaluate("TotalLoadAvg") == pytest.approx(0.34)


def test_seed_log_owner_slot_and_busy_slot() -> None:
    """Seed 002's second log: load 1.25 of which 0.996 is HTCondor's; slot1 (Owner, connected)
    gets the 0.254 owner load and the real idle times, slot2 (Claimed/Busy, not connected)
    its job's 0.996 and Keyboard = Console = 1496 (uptime 296 s + the 1200 s boost)."""
    readings = HostReadings(load_avg=1.25, condor_load_avg=0.996, keyboard_idle=0, console_idle=0)
    statuses = {"slot2": SlotStatus("Claimed", "Busy", condor_load_avg=0.996)}
    ads = by_name(
        build(
            config_of(ONE_CONNECTED, cpus=2),
            statics(2),
            readings=readings,
            statuses=statuses,
            started_at=NOW - 296,
        )
    )
    slot1, slot2 = ads["slot1"], ads["slot2"]
    assert slot1.evaluate("LoadAvg") == pytest.approx(0.254)
    assert slot1.evaluate("CondorLoadAvg") == 0.0
    assert (slot1.evaluate("KeyboardIdle"), slot1.evaluate("ConsoleIdle")) == (0, 0)
    assert slot2.evaluate("LoadAvg") == pytest.approx(0.996)
    assert slot2.evaluate("CondorLoadAvg") == pytest.approx(0.996)
    assert (slot2.evaluate("KeyboardIdle"), slot2.evaluate("ConsoleIdle")) == (1496, 1496)
    assert slot2.evaluate("TotalCondorLoadAvg") == pytest.approx(0.996)


def test_owner_slots_get_owner_load_and_keyboard_before_lower_numbered_slots() -> None:
    """Owner-state slots come first whatever their number; claimed slots follow by CurrentRank."""
    readings = HostReadings(load_avg=1.5, condor_load_avg=0.0, keyboard_idle=7, console_idle=9)
    statuses = {
        "slot1": SlotStatus("Claimed", "Busy", current_rank=5.0),
        "slot2": SlotStatus("Claimed", "Busy", current_rank=1.0),
        "slot3": SlotStatus("Owner", "Idle"),
    }
    ads = by_name(build(config_of(ONE_CONNECTED), statics(3), readings=readings, statuses=statuses))
    loads = [ads[f"slot{n}"].evaluate("LoadAvg") for n in (1, 2, 3)]
    assert loads == [0.0, 0.5, 1.0]
    assert ads["slot3"].evaluate("KeyboardIdle") == 7
    assert ads["slot1"].evaluate("KeyboardIdle") == ads["slot2"].evaluate("KeyboardIdle") == 1200


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # HTCondor's default: no slot notices the keyboard or the console.
        ("", [(1200, 1200)] * 3),
        # The Desktop policy templates connect every slot.
        ("use POLICY : Desktop\n", [(3, 40)] * 3),
        (ONE_CONNECTED, [(3, 40), (1200, 1200), (1200, 1200)]),
        # Connected to the console but not the keyboard: the console's idle time for both.
        ("SLOTS_CONNECTED_TO_CONSOLE = 2\n", [(40, 40), (40, 40), (1200, 1200)]),
        # Connected to the keyboard only: the keyboard's idle time, the console disconnected.
        ("SLOTS_CONNECTED_TO_KEYBOARD = 2\n", [(3, 1200), (3, 1200), (1200, 1200)]),
        (ONE_CONNECTED + "DISCONNECTED_KEYBOARD_IDLE_BOOST = 60\n", [(3, 40), (60, 60), (60, 60)]),
    ],
)
def test_keyboard_and_console_connections(text: str, expected: list[tuple[int, int]]) -> None:
    """SLOTS_CONNECTED_TO_CONSOLE/KEYBOARD decide which slots see the real idle times; the
    others report the startd's uptime plus DISCONNECTED_KEYBOARD_IDLE_BOOST."""
    readings = HostReadings(load_avg=0.0, condor_load_avg=0.0, keyboard_idle=3, console_idle=40)
    ads = build(config_of(text), statics(3), readings=readings, started_at=NOW)
    assert [(a.evaluate("KeyboardIdle"), a.evaluate("ConsoleIdle")) for a in ads] == expected


def test_partitionable_slot_uses_no_connection() -> None:
    """A partitionable slot sees the idle times of its place without using up a connection."""
    readings = HostReadings(load_avg=0.0, condor_load_avg=0.0, keyboard_idle=3, console_idle=40)
    layout = partitionable_with_dynamic([resources(), resources()])
    ads = by_name(build(config_of(ONE_CONNECTED), layout, readings=readings, started_at=NOW))
    assert [ads[s].evaluate("KeyboardIdle") for s in ("slot1", "slot1_1", "slot1_2")] == [
        3,
        3,
        1200,
    ]


@pytest.mark.parametrize(
    ("total", "count", "shares"),
    [
        (0.0, 3, [0.0, 0.0, 0.0]),
        (0.4, 3, [0.4, 0.0, 0.0]),
        (2.5, 4, [1.0, 1.0, 0.5, 0.0]),
        (3.5, 2, [1.0, 2.5]),
        (5.0, 1, [5.0]),
        (-0.2, 2, [0.0, 0.0]),
    ],
)
def test_owner_load_is_handed_out_in_steps_of_one(
    total: float, count: int, shares: list[float]
) -> None:
    """At most 1.0 per slot in order; when the slots run out the last takes the rest."""
    assert owner_load_shares(total, count) == pytest.approx(shares)


@given(st.floats(min_value=0.0, max_value=1000.0), st.integers(min_value=1, max_value=300))
def test_owner_load_shares_add_up(total: float, count: int) -> None:
    """All owner load is handed out, and only the last slot may get more than 1.0."""
    shares = owner_load_shares(total, count)
    assert sum(shares) == pytest.approx(total)
    assert all(0.0 <= share <= 1.0 for share in shares[:-1])
