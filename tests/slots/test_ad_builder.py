"""SlotAdBuilder: ads updated in place across calls are exactly the ads a fresh build gives."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st
from slot_ad_fixtures import (
    HOST,
    NOW,
    QUIET,
    config_of,
    inventory_of,
    partitionable_with_dynamic,
    resources,
    static_slots,
)

from epcore.classad import ClassAd, parse_expr
from epcore.config import Config
from epcore.slots.ads import SlotAdBuilder, build_slot_ads
from epcore.slots.model import Slot, SlotLayout
from epcore.slots.slot_status import (
    Benchmarks,
    ClaimInfo,
    DrainingTotals,
    PreemptingClaim,
    RunningJob,
    SlotStatus,
)
from epcore.types import HostReadings, MachineAttribute, MachineInventory

CONFIGS = (
    "",
    "STARTD_SLOT_ATTRS = State, Activity\nSTART = KeyboardIdle > 900\n",
    'STARTD_ATTRS = Colour\nColour = "blue"\nSLOT2_Colour = "red"\nSTART = Colour == "blue"\n',
    "STARTD_SLOT_ATTRS = TotalJobRunTime\nSTARTD_EVAL_SLOT_ATTRS = True\n",
)

CLAIM = ClaimInfo("coltrane@example.org", "coltrane", "submit.example.org", 120.0, 10.0)
STATUSES = (
    SlotStatus(),
    SlotStatus("Unclaimed", "Idle", NOW - 300, NOW - 300, time_totals=(("OwnerIdle", 40.0),)),
    SlotStatus("Matched", "Idle", NOW - 5, NOW - 5),
    SlotStatus(
        "Claimed",
        "Busy",
        NOW - 900,
        NOW - 600,
        current_rank=2.0,
        claim=CLAIM,
        job=RunningJob("152.3", NOW - 600),
        time_totals=(("UnclaimedIdle", 30.0), ("ClaimedIdle", 300.0)),
    ),
    SlotStatus(
        "Claimed",
        "Suspended",
        NOW - 900,
        NOW - 100,
        claim=CLAIM,
        job=RunningJob("152.4", NOW - 800, 50.0, NOW - 100),
        preempting=PreemptingClaim("miles", "miles@example.org", 5.0),
    ),
    SlotStatus("Preempting", "Vacating", NOW - 20, NOW - 20, claim=CLAIM, accepting=False),
    SlotStatus("Drained", "Retiring", NOW - 60, NOW - 60, accepting=False),
)


def _layouts() -> tuple[SlotLayout, ...]:
    static = static_slots(3)
    with_child = partitionable_with_dynamic([resources(cpus=1, memory_mb=1024)])
    with_two = partitionable_with_dynamic(
        [resources(cpus=1, memory_mb=1024), resources(cpus=2, memory_mb=2048)]
    )
    other_directory = SlotLayout(
        tuple(
            Slot(s.slot_id, s.type_id, s.kind, s.resources, s.total, "/scratch")
            for s in static.slots
        )
    )
    return static, with_child, with_two, other_directory


LAYOUTS = _layouts()


@attrs.frozen
class Step:
    """What changes between two calls of the builder."""

    layout: SlotLayout
    statuses: dict[str, SlotStatus]
    readings: HostReadings
    extra: list[MachineAttribute]
    advance: int
    benchmarks: Benchmarks
    draining: DrainingTotals
    fold: bool


@st.composite
def _step(draw: st.DrawFn) -> Step:
    layout = draw(st.sampled_from(LAYOUTS))
    statuses = {
        f"slot{slot.slot_id}" + (f"_{slot.sub_id}" if slot.sub_id is not None else ""): draw(
            st.sampled_from(STATUSES)
        )
        for slot in layout.slots
    }
    readings = HostReadings(
        load_avg=draw(st.sampled_from([0.0, 0.5, 2.0])),
        condor_load_avg=draw(st.sampled_from([0.0, 1.0])),
        keyboard_idle=draw(st.integers(0, 2000)),
        console_idle=draw(st.integers(0, 2000)),
    )
    extra = draw(
        st.lists(
            st.sampled_from(
                [
                    MachineAttribute("HasFoo", True),
                    MachineAttribute("Foo", 3),
                    MachineAttribute("Cpus", 99),
                ]
            ),
            unique=True,
        )
    )
    advance = draw(st.integers(0, 400))
    benchmarks = draw(st.sampled_from([Benchmarks(), Benchmarks(2500, 700000, NOW - 10)]))
    draining = draw(st.sampled_from([DrainingTotals(), DrainingTotals(30.0, 5.0)]))
    fold = draw(st.booleans())
    return Step(layout, statuses, readings, extra, advance, benchmarks, draining, fold)


def _view(ad: ClassAd) -> dict[str, str]:
    """An ad as attribute spelling -> expression text (attribute order aside)."""
    return {name.lower(): f"{name} = {ad.lookup(name)}" for name in ad}


def _kept(builder: SlotAdBuilder, step: Step, now: float, fold: bool) -> list[ClassAd]:
    """The builder's ads after ``step``."""
    return builder.build(
        step.layout,
        step.readings,
        step.statuses,
        now,
        extra_attributes=step.extra,
        benchmarks=step.benchmarks,
        draining=step.draining,
        fold_requirements=fold,
    )


def _fresh(
    config: Config, inventory: MachineInventory, step: Step, now: float, fold: bool
) -> list[ClassAd]:
    """The ads a build from nothing gives for ``step``."""
    return build_slot_ads(
        config,
        inventory,
        step.layout,
        step.readings,
        step.statuses,
        now,
        host_name=HOST,
        extra_attributes=step.extra,
        started_at=NOW - 1000,
        benchmarks=step.benchmarks,
        draining=step.draining,
        fold_requirements=fold,
    )


@settings(max_examples=60, deadline=None)
@given(config_text=st.sampled_from(CONFIGS), steps=st.lists(_step(), min_size=1, max_size=6))
def test_updated_ads_equal_fresh_ads(config_text: str, steps: Sequence[Step]) -> None:
    """Whatever changes between calls (layout, states, readings, plugin attributes, clock),
    the ads the builder keeps updating are the ads a fresh build gives."""
    config = config_of(config_text)
    inventory = inventory_of()
    builder = SlotAdBuilder(config, inventory, host_name=HOST, started_at=NOW - 1000)
    now = float(NOW)
    for step in steps:
        now += step.advance
        kept = _kept(builder, step, now, step.fold)
        fresh = _fresh(config, inventory, step, now, step.fold)
        assert [_view(ad) for ad in kept] == [_view(ad) for ad in fresh]


@settings(max_examples=40, deadline=None)
@given(config_text=st.sampled_from(CONFIGS), steps=st.lists(_step(), min_size=1, max_size=5))
def test_refolded_ads_equal_fresh_ads_of_the_other_flavour(
    config_text: str, steps: Sequence[Step]
) -> None:
    """Refolding the last build's ads gives the ads a fresh build of the other flavour
    (Requirements folded or not) gives, and the builder goes on from them correctly."""
    config = config_of(config_text)
    inventory = inventory_of()
    builder = SlotAdBuilder(config, inventory, host_name=HOST, started_at=NOW - 1000)
    now = float(NOW)
    for step in steps:
        now += step.advance
        for fold in (step.fold, not step.fold):
            if fold == step.fold:
                kept = _kept(builder, step, now, fold)
            else:
                kept = builder.refold(step.layout, now, fold_requirements=fold)
            fresh = _fresh(config, inventory, step, now, fold)
            assert [_view(ad) for ad in kept] == [_view(ad) for ad in fresh]


def test_the_builder_keeps_its_ads_and_changes_only_what_moved() -> None:
    """A second call returns the same ad objects, with the clock attributes moved on."""
    builder = SlotAdBuilder(config_of(), inventory_of(), host_name=HOST, started_at=NOW)
    busy = STATUSES[3]
    readings = HostReadings(0.0, 0.0, keyboard_idle=100, console_idle=100)
    first = builder.build(static_slots(2), readings, {"slot1": busy}, NOW)
    second = builder.build(static_slots(2), readings, {"slot1": busy}, NOW + 60)
    assert [id(ad) for ad in first] == [id(ad) for ad in second]
    ad = second[0]
    assert ad.evaluate("MyCurrentTime") == NOW + 60
    assert ad.evaluate("TotalJobRunTime") == 660
    assert ad.evaluate("TotalClaimRunTime") == 120 + 660
    assert ad.evaluate("TotalTimeClaimedBusy") == 660
    assert ad.evaluate("TotalTimeClaimedIdle") == 300


def test_time_in_a_state_below_a_second_is_not_published() -> None:
    """TotalTime<State><Activity> appears only once a whole second has been spent there."""
    builder = SlotAdBuilder(config_of(), inventory_of(), host_name=HOST, started_at=NOW)
    status = SlotStatus("Unclaimed", "Idle", NOW, NOW, time_totals=(("OwnerIdle", 0.4),))
    (ad,) = builder.build(static_slots(1), QUIET, {"slot1": status}, NOW + 0.5)
    assert "TotalTimeOwnerIdle" not in ad and "TotalTimeUnclaimedIdle" not in ad
    (ad,) = builder.build(static_slots(1), QUIET, {"slot1": status}, NOW + 2)
    assert ad.evaluate("TotalTimeUnclaimedIdle") == 2


def test_suspended_time_is_not_run_time() -> None:
    """A suspended job's run time stops while its suspension time grows."""
    builder = SlotAdBuilder(config_of(), inventory_of(), host_name=HOST, started_at=NOW)
    (ad,) = builder.build(static_slots(1), QUIET, {"slot1": STATUSES[4]}, NOW)
    # Started 800 s ago; 50 s suspended before, and suspended again for the last 100 s.
    assert ad.evaluate("TotalJobRunTime") == 650
    assert ad.evaluate("TotalJobSuspendTime") == 150
    assert ad.evaluate("TotalClaimSuspendTime") == 160


def test_policy_attributes_yield_to_every_other_layer() -> None:
    """The engine's policy expressions sit under everything: a machine attribute of the same
    name wins, and a slot without one still carries the expression."""
    builder = SlotAdBuilder(
        config_of(),
        inventory_of(),
        host_name=HOST,
        policy_attributes=lambda slot: (("PREEMPT", parse_expr("Preempt =?= True")),),
    )
    (plain,) = builder.build(static_slots(1), QUIET, {}, NOW)
    assert str(plain.lookup("PREEMPT")) == "Preempt is true"
    extra = [MachineAttribute("Preempt", True)]
    (shadowed,) = builder.build(static_slots(1), QUIET, {}, NOW, extra_attributes=extra)
    assert shadowed.evaluate("Preempt") is True


def test_unfolded_requirements_are_start_itself() -> None:
    """Without folding, Requirements is START (False while unavailable); folded again, a
    locally TRUE START is advertised as True."""
    builder = SlotAdBuilder(
        config_of("START = KeyboardIdle > 60\n"), inventory_of(), host_name=HOST
    )
    readings = HostReadings(0.0, 0.0, keyboard_idle=100, console_idle=100)
    statuses = {"slot2": STATUSES[2]}
    unfolded = builder.build(static_slots(2), readings, statuses, NOW, fold_requirements=False)
    assert str(unfolded[0].lookup("Requirements")) == "START"
    assert unfolded[1].evaluate("Requirements") is False
    folded = builder.build(static_slots(2), readings, statuses, NOW)
    assert (
        folded[0].evaluate("Requirements") is True
        and str(folded[0].lookup("Requirements")) == "true"
    )


def test_dynamic_slots_claimed_alike_share_all_bindings_but_their_names() -> None:
    """The ads of dynamic slots of the same size claimed at the same moment share every
    binding but their Name's, before and after the clock moves on, so that a startd's memory
    grows little per dynamic slot."""
    children = [resources(cpus=1, memory_mb=1024) for _ in range(3)]
    layout = partitionable_with_dynamic(children)
    claimed = SlotStatus("Claimed", "Busy", NOW - 900, NOW - 600, claim=CLAIM)
    statuses = {f"slot1_{n}": claimed for n in range(1, 4)}
    builder = SlotAdBuilder(config_of(), inventory_of(), host_name=HOST, started_at=NOW - 1000)
    for now in (NOW, NOW + 60):
        dynamic = builder.build(layout, QUIET, statuses, float(now))[1:]
        keys = set(dynamic[0]._bindings)
        assert len(keys) > 60
        own = {key for key in keys if len({id(ad._bindings[key]) for ad in dynamic}) > 1}
        assert own == {"name"}
