"""One defrag poll as a pure function, step by step (HTCondor's ``Defrag::poll``): the number
to drain, draining and whole machines, the early outs, requirements, rank order,
cancels, the schedule's check expression, and carrying the plan out."""

from __future__ import annotations

import random

import pytest
from defrag_helpers import REASON, pslot, settings

from epcore.classad import ClassAd
from epcore.defrag.poll import Candidate, carry_out, number_to_drain, plan, prorate
from epcore.defrag.state import DefragState

#: A poll time in the middle of an hour (12:30:00 UTC).
NOW = 1_700_000_000 // 86400 * 86400 + 12 * 3600 + 1800
#: Four machines drained per poll.
FAST = "DEFRAG_INTERVAL = 600\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 24\n"


def _fragmented(count: int) -> list[ClassAd]:
    return [pslot(f"m{i}", 1, 8) for i in range(count)]


def _names(candidates: tuple[Candidate, ...]) -> list[str]:
    return [c.machine for c in candidates]


@pytest.mark.parametrize(
    ("n", "elapsed", "period", "granularity", "expected"),
    [
        (4, 1800, 3600, 600, 3),  # half the hour left plus one interval: 4 * 2/3, rounded
        (4, 0, 3600, 600, 4),  # never more than n
        (12, 43200, 86400, 600, 6),  # half the day left: 6.08 rounds to 6
        (0, 100, 3600, 600, 0),
    ],
)
def test_prorate_scales_by_what_is_left_of_the_period(
    n: int, elapsed: int, period: int, granularity: int, expected: int
) -> None:
    """The hourly and daily extra is in proportion to what is left of the hour or day, plus
    one polling interval, rounded and never above n."""
    assert prorate(n, elapsed, period, granularity)[0] == expected


def test_hourly_extra_is_added_only_when_an_hour_boundary_passed() -> None:
    """One machine an hour polled every 10 minutes drains none on the first poll and none
    within the hour, and the hour's machine once a poll falls in a new hour."""
    got = settings("DEFRAG_INTERVAL = 600\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 1")
    assert number_to_drain(got, 0, NOW)[0] == 0
    assert number_to_drain(got, NOW - 600, NOW)[0] == 0
    hour = NOW // 3600 * 3600
    assert number_to_drain(got, hour - 300, hour + 300)[0] == 1


def test_daily_extra_is_added_when_a_day_boundary_passed() -> None:
    """Half a machine an hour is twelve a day, added (prorated) at the first poll of a day."""
    got = settings("DEFRAG_INTERVAL = 600\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 0.5")
    day = NOW // 86400 * 86400
    assert number_to_drain(got, day - 300, day + 300)[0] == 12
    assert number_to_drain(got, NOW - 600, NOW)[0] == 0


def test_rate_limits_the_drains_of_a_poll() -> None:
    """With four a poll and six fragmented machines, four are drained."""
    planned = plan(_fragmented(6), DefragState(), settings(FAST), NOW)
    assert planned.to_drain == 4 and len(planned.candidates) == 6
    sent: list[str] = []
    state, drained = carry_out(
        planned,
        settings(FAST),
        NOW,
        drain=lambda c: sent.append(c.machine) or True,
        cancel=lambda c: True,
    )
    assert drained == 4 and sent == ["m0", "m1", "m2", "m3"]
    assert state.drain_successes == 4 and state.last_poll == NOW


def test_zero_rate_does_nothing() -> None:
    """The default rate (0) plans no drain and says why."""
    planned = plan(_fragmented(3), DefragState(), settings(), NOW)
    assert planned.candidates == () and planned.to_drain == 0
    assert planned.why.startswith("Doing nothing, because number to drain")


@pytest.mark.parametrize(
    ("knobs", "slots", "why"),
    [
        (
            "DEFRAG_MAX_CONCURRENT_DRAINING = 2",
            [pslot("a", draining=True), pslot("b", draining=True, reason=REASON), pslot("c")],
            "DEFRAG_MAX_CONCURRENT_DRAINING=2 and there are 2 draining machines.",
        ),
        ("DEFRAG_MAX_CONCURRENT_DRAINING = 0", [pslot("c")], "DEFRAG_MAX_CONCURRENT_DRAINING=0"),
        (
            "DEFRAG_MAX_WHOLE_MACHINES = 1",
            [pslot("a", 8, 8), pslot("c")],
            "DEFRAG_MAX_WHOLE_MACHINES=1 and there are 1 whole machines.",
        ),
        ("DEFRAG_MAX_WHOLE_MACHINES = 0", [pslot("c")], "DEFRAG_MAX_WHOLE_MACHINES=0"),
    ],
)
def test_limits_stop_the_poll(knobs: str, slots: list[ClassAd], why: str) -> None:
    """Too many machines draining, or enough whole machines, stop the poll before any drain
    (a limit of 0 always does)."""
    planned = plan(slots, DefragState(), settings(FAST + knobs), NOW)
    assert planned.candidates == ()
    assert planned.why == f"Doing nothing, because {why}"


def test_draining_machines_are_counted_by_machine_and_by_reason() -> None:
    """Two draining p-slots of one machine count once; a machine another defrag drains does
    not count; one drained for no known reason does."""
    slots = [
        pslot("a", draining=True, reason=REASON),
        pslot("a", slot="slot2", draining=True, reason=REASON),
        pslot("b", draining=True, reason="Defrag other@cm"),
        pslot("c", draining=True),
    ]
    planned = plan(slots, DefragState(), settings(FAST), NOW)
    assert planned.state.machines_draining == 2
    assert planned.state.prev_draining == frozenset({"a", "c"})


def test_whole_machines_are_counted_and_not_drained() -> None:
    """Machines whose p-slot has every cpu are whole: counted, never candidates; draining
    ones are not candidates either."""
    slots = [pslot("w", 8, 8), pslot("f", 2, 8), pslot("d", 1, 8, draining=True)]
    planned = plan(slots, DefragState(), settings(FAST), NOW)
    assert planned.state.whole_machines == 1
    assert _names(planned.candidates) == ["f"]


def test_offline_and_static_slots_are_never_candidates() -> None:
    """Only partitionable slots that are not Offline are considered."""
    slots = [pslot("o", Offline=True), pslot("s", PartitionableSlot=False), pslot("p")]
    planned = plan(slots, DefragState(), settings(FAST), NOW)
    assert _names(planned.candidates) == ["p"]


def test_requirements_select_candidates() -> None:
    """DEFRAG_REQUIREMENTS is ANDed to the candidates' constraint."""
    slots = [pslot("small", 1, 4), pslot("big", 1, 64)]
    got = settings(FAST + "DEFRAG_REQUIREMENTS = TotalSlotCpus >= 32")
    assert _names(plan(slots, DefragState(), got, NOW).candidates) == ["big"]


def test_rank_orders_candidates_highest_first() -> None:
    """Candidates go in DEFRAG_RANK order, highest first; the default rank drains the
    machine with the least expected badput first."""
    slots = [
        pslot("a", ExpectedMachineGracefulDrainingBadput=500, Memory=1),
        pslot("b", ExpectedMachineGracefulDrainingBadput=100, Memory=3),
        pslot("c", ExpectedMachineGracefulDrainingBadput=900, Memory=2),
    ]
    by_default = plan(slots, DefragState(), settings(FAST), NOW)
    assert _names(by_default.candidates) == ["b", "a", "c"]
    by_memory = plan(slots, DefragState(), settings(FAST + "DEFRAG_RANK = Memory"), NOW)
    assert _names(by_memory.candidates) == ["b", "c", "a"]


def test_equal_ranks_are_shuffled() -> None:
    """Machines of equal rank take turns: the shuffle puts a different one first for some
    seed, and the same seed gives the same order."""
    slots = _fragmented(6)
    firsts = {
        plan(list(slots), DefragState(), settings(FAST), NOW, rng=random.Random(seed))
        .candidates[0]
        .machine
        for seed in range(20)
    }
    assert len(firsts) > 1
    again = [
        _names(
            plan(list(slots), DefragState(), settings(FAST), NOW, rng=random.Random(7)).candidates
        )
        for _ in range(2)
    ]
    assert again[0] == again[1]


def test_cancel_requirements_cancel_my_drains_once_per_machine() -> None:
    """A machine I drain that matches DEFRAG_CANCEL_REQUIREMENTS is cancelled once (two of
    its p-slots match), is not drained again this poll, and the cancel is recorded; another
    defrag's drain is left alone."""
    knobs = FAST + "DEFRAG_CANCEL_REQUIREMENTS = Cpus >= 4"
    slots = [
        pslot("a", 4, draining=True, reason=REASON),
        pslot("a", 6, slot="slot2", draining=True, reason=REASON),
        pslot("b", 4, draining=True, reason="Defrag other@cm"),
        pslot("c", 1, draining=True, reason=REASON),
    ]
    planned = plan(slots, DefragState(), settings(knobs), NOW)
    assert _names(planned.cancels) == ["a"]
    state, _ = carry_out(planned, settings(knobs), NOW, drain=lambda c: True, cancel=lambda c: True)
    assert state.cancels == ((NOW, "slot1@a"),)


def test_default_cancel_requirements_cancel_whole_machines() -> None:
    """By default a drain of mine is cancelled once the machine is whole."""
    slots = [pslot("a", 8, 8, draining=True, reason=REASON), pslot("b", 2, draining=True)]
    assert _names(plan(slots, DefragState(), settings(), NOW).cancels) == ["a"]


@pytest.mark.parametrize(
    ("schedule", "check"),
    [
        (
            "graceful",
            "ExpectedMachineGracefulDrainingCompletion <= 2200 && "
            "ExpectedMachineGracefulDrainingBadput <= 1450",
        ),
        (
            "quick",
            "ExpectedMachineQuickDrainingCompletion <= 1500 && "
            "ExpectedMachineQuickDrainingBadput <= 1325",
        ),
        (
            "fast",
            "ExpectedMachineQuickDrainingCompletion <= 1500 && "
            "ExpectedMachineQuickDrainingBadput <= 1325",
        ),
    ],
)
def test_schedule_chooses_the_check_expression(schedule: str, check: str) -> None:
    """The drain's check allows 1200 s of slippage and 25 % more badput plus 1200 core-seconds
    over the figures of the schedule (quick and fast read the Quick ones)."""
    slot = pslot(
        "a",
        ExpectedMachineGracefulDrainingCompletion=1000,
        ExpectedMachineGracefulDrainingBadput=200,
        ExpectedMachineQuickDrainingCompletion=300,
        ExpectedMachineQuickDrainingBadput=100,
    )
    got = settings(FAST + f"DEFRAG_DRAINING_SCHEDULE = {schedule}")
    (candidate,) = plan([slot], DefragState(), got, NOW).candidates
    assert candidate.check == check
    state, _ = carry_out(
        plan([slot], DefragState(), got, NOW),
        got,
        NOW,
        drain=lambda c: True,
        cancel=lambda c: True,
    )
    assert state.drains == ((NOW, "slot1@a", schedule, True),)


def test_refused_drain_counts_a_failure_and_the_next_candidate_is_tried() -> None:
    """A startd that refuses the drain counts a failure; the next candidate is drained in its
    place, up to the number to drain."""
    got = settings("DEFRAG_INTERVAL = 600\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 12")
    planned = plan(_fragmented(4), DefragState(), got, NOW)
    assert planned.to_drain == 2
    tried: list[str] = []

    def drain(candidate: Candidate) -> bool:
        tried.append(candidate.machine)
        return candidate.machine != "m0"

    state, drained = carry_out(planned, got, NOW, drain=drain, cancel=lambda c: True)
    assert (drained, tried) == (2, ["m0", "m1", "m2"])
    assert (state.drain_successes, state.drain_failures) == (2, 1)


def test_arrivals_count_new_whole_machines_and_finished_drains() -> None:
    """A machine newly whole, or no longer draining, arrived; the first arrival only starts
    the clock, later ones give the mean arrival rate."""
    got = settings(FAST)
    first = plan([pslot("a", 8, 8), pslot("b", 1, draining=True)], DefragState(), got, NOW)
    assert first.state.machines_arrived == 0 and first.state.last_arrival == NOW
    later = NOW + 600
    second = plan([pslot("a", 1), pslot("b", 1), pslot("c", 8, 8)], first.state, got, later)
    # c is newly whole, b stopped draining.
    assert second.state.machines_arrived == 2
    assert second.state.mean_drained_arrival == pytest.approx(2 / 1200)
    assert second.state.whole_machines_peak == 1 and second.state.machines_draining_peak == 1


def test_draining_cost_averages_per_cpu_over_the_startds_age() -> None:
    """AvgDrainingBadput and AvgDrainingUnclaimed divide each machine's totals by its age and
    the sum by the pool's cpus, from the first slot of each machine."""
    slots = [
        pslot(
            "a",
            TotalMachineDrainingBadput=400,
            TotalMachineDrainingUnclaimedTime=100,
            DaemonStartTime=NOW - 1000,
            LastHeardFrom=NOW,
            TotalCpus=4,
        ),
        pslot("a", slot="slot2", TotalMachineDrainingBadput=9999, TotalCpus=4),
    ]
    state = plan(slots, DefragState(), settings(), NOW).state
    assert state.avg_draining_badput == pytest.approx(0.1)
    assert state.avg_draining_unclaimed == pytest.approx(0.025)
