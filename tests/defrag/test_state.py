"""The defrag daemon's memory: the state file, the first poll after a restart, and the
Defrag ad with HTCondor's attribute names."""

from __future__ import annotations

import pytest

from epcore.defrag.state import (
    DefragState,
    defrag_ad,
    first_poll_delay,
    forget_old,
    last_poll_of,
    record_cancel,
    record_drain,
    state_text,
)

NOW = 1_700_000_000


def test_state_file_round_trips_last_poll() -> None:
    """The state file holds LastPoll in old ClassAd syntax and reads back the same."""
    text = state_text(DefragState(last_poll=NOW))
    assert text == f"LastPoll = {NOW}\n"
    assert last_poll_of(text) == NOW


@pytest.mark.parametrize("text", ["", "LastPoll = \n", "garbage ((", 'LastPoll = "x"'])
def test_unreadable_state_file_gives_no_last_poll(text: str) -> None:
    """A state file without a usable LastPoll is as if there were none (HTCondor warns)."""
    assert last_poll_of(text) is None


@pytest.mark.parametrize(
    ("last", "now", "delay"),
    [
        (0, NOW, 0),  # never polled: at once
        (NOW - 100, NOW, 500),  # the rest of the interval
        (NOW - 600, NOW, 0),  # the interval is over
        (NOW + 50, NOW, 0),  # a last poll in the future (clock moved back): at once
    ],
)
def test_first_poll_waits_out_the_interval_since_the_last(last: int, now: int, delay: int) -> None:
    """After a restart the first poll comes when the interval since the last poll ends."""
    assert first_poll_delay(last, 600, now) == delay


def test_defrag_ad_has_htcondors_attributes() -> None:
    """The Defrag ad is MyType "Defrag" with the counters, peaks, averages and the recent
    drains and cancels newest first, under HTCondor's names."""
    state = DefragState(started=NOW - 100, last_poll=NOW, machines_draining=1, whole_machines=2)
    state = record_drain(state, "slot1@a", "graceful", True, NOW - 10)
    state = record_drain(state, "slot1@b", "graceful", False, NOW - 5)
    state = record_cancel(state, "slot1@c", NOW - 1)
    ad = defrag_ad(state, "DEFRAG@cm", 60, NOW)
    assert ad.evaluate("MyType") == "Defrag" and ad.evaluate("Name") == "DEFRAG@cm"
    assert ad.evaluate("DrainSuccesses") == 1 and ad.evaluate("DrainFailures") == 1
    assert ad.evaluate("RecentDrainSuccesses") == 1 and ad.evaluate("RecentDrainFailures") == 1
    assert ad.evaluate("MachinesDraining") == 1 and ad.evaluate("WholeMachines") == 2
    drains = ad.evaluate("RecentDrainsList")
    assert isinstance(drains, list)
    assert [d.evaluate("who") for d in drains] == ["slot1@b", "slot1@a"]
    assert drains[1].evaluate("what") == "graceful" and drains[1].evaluate("when") == NOW - 10
    cancels = ad.evaluate("RecentCancelsList")
    assert isinstance(cancels, list) and cancels[0].evaluate("who") == "slot1@c"
    for name in (
        "MachinesDrainingPeak",
        "WholeMachinesPeak",
        "AvgDrainingBadput",
        "AvgDrainingUnclaimed",
        "MeanDrainedArrival",
        "MeanDrainedArrivalSD",
        "DrainedMachines",
        "StatsLifetime",
        "StatsLastUpdateTime",
        "RecentStatsLifetime",
        "RecentWindowMax",
        "RecentStatsTickTime",
    ):
        assert name in ad, name
    assert ad.evaluate("RecentWindowMax") == 600 and ad.evaluate("StatsLifetime") == 100


def test_recent_counters_cover_ten_intervals() -> None:
    """Drains older than ten polling intervals leave the Recent counters, not the lifetime
    ones; only the last ten drains are listed."""
    state = DefragState(started=NOW - 5000)
    for i in range(12):
        state = record_drain(state, f"slot1@m{i}", "quick", True, NOW - 1000 + i)
    state = record_drain(state, "slot1@new", "quick", True, NOW)
    ad = defrag_ad(forget_old(state, 60, NOW), "d", 60, NOW)
    assert ad.evaluate("DrainSuccesses") == 13
    assert ad.evaluate("RecentDrainSuccesses") == 1
    drains = ad.evaluate("RecentDrainsList")
    assert isinstance(drains, list) and len(drains) == 10
