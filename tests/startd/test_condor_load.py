"""The pure computation of CondorLoadAvg (epcore.startd.condor_load)."""

from __future__ import annotations

import pytest

from epcore.config import Config
from epcore.slots.slot_status import SlotStatus
from epcore.startd.condor_load import (
    WINDOW_SECONDS,
    CondorLoad,
    CpuTrack,
    LoadWindow,
    advance,
    slot_load,
    total_load,
)
from epcore.types import HostReadings


def test_window_push_drops_the_oldest_seconds() -> None:
    """Pushing n seconds of a value replaces the n oldest figures with it."""
    window = LoadWindow().push(30, 1.0)
    assert window.average == pytest.approx(0.5)
    assert window.push(30, 0.0).average == pytest.approx(0.5)
    assert window.push(30, 0.0).push(30, 0.0).average == pytest.approx(0.0)


def test_window_push_caps_at_the_window() -> None:
    """More seconds than the window holds fill it once, and zero seconds change nothing."""
    window = LoadWindow().push(10 * WINDOW_SECONDS, 2.0)
    assert window.average == pytest.approx(2.0)
    assert window.push(0, 0.0) is window


def test_advance_rates_the_cpu_since_the_last_reading() -> None:
    """Two readings of one source 5 s apart, 5 CPU seconds apart, add five seconds at 1 core."""
    first = advance(CpuTrack(), "a", 10.0, 100.0, 5.0)
    assert first.window.average == 0.0
    second = advance(first, "a", 15.0, 105.0, 5.0)
    assert second.window.average == pytest.approx(5 / WINDOW_SECONDS)


def test_advance_gives_a_new_source_no_rate() -> None:
    """A reading of another job's group (a new job on the slot) counts as 0, not a jump."""
    first = advance(CpuTrack(), "a", 1000.0, 100.0, 5.0)
    second = advance(first, "b", 3.0, 105.0, 5.0)
    assert second.window.average == 0.0
    assert second.source == "b"


def test_advance_caps_the_seconds_at_the_polling_interval() -> None:
    """A long gap between polls adds at most POLLING_INTERVAL figures, as HTCondor does."""
    first = advance(CpuTrack(), "a", 0.0, 0.0, 5.0)
    second = advance(first, "a", 100.0, 100.0, 5.0)
    assert second.window.average == pytest.approx(5 * 1.0 / WINDOW_SECONDS)


def test_advance_ignores_a_counter_that_went_down() -> None:
    """A CPU counter that went backwards (a recreated group) adds 0, never a negative load."""
    first = advance(CpuTrack(), "a", 50.0, 0.0, 5.0)
    assert advance(first, "a", 10.0, 5.0, 5.0).window.average == 0.0


def test_slot_load_is_capped_by_the_machine_load() -> None:
    """A slot's load never exceeds the machine's load average."""
    assert slot_load(1.0, 4.0, 0.5) == 0.5
    assert slot_load(1.0, 4.0, 2.0) == 1.0


def test_slot_load_scales_with_an_overloaded_machine() -> None:
    """On a machine loaded beyond its cores, the slot's share scales by load over cores."""
    assert slot_load(1.0, 2.0, 4.0) == 2.0


def test_total_load_is_the_sum_capped_by_the_machine() -> None:
    """TotalCondorLoadAvg sums the slots and stays below the machine load."""
    assert total_load([0.5, 0.25], 4.0) == 0.75
    assert total_load([1.0, 1.0], 1.5) == 1.5


def test_readings_and_statuses_carry_the_loads() -> None:
    """The sampled loads fill TotalCondorLoadAvg and each slot's status; unchanged statuses
    and loads keep the same status object."""
    load = CondorLoad(Config.from_text("POLLING_INTERVAL = 5\n"), 2.0)
    load.loads = {"slot1": 0.75, "slot2": 0.0}
    readings = load.readings(HostReadings(2.0, 0.0, 0, 0))
    assert readings.condor_load_avg == 0.75
    statuses = {"slot1": SlotStatus(), "slot2": SlotStatus()}
    first = load.statuses(statuses)
    assert first["slot1"].condor_load_avg == 0.75
    assert first["slot2"] is statuses["slot2"]
    assert load.statuses(statuses)["slot1"] is first["slot1"]
