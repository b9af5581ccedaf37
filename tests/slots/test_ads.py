"""Slot ads: the seeds' STARTD_ATTRS and STARTD_SLOT_ATTRS examples, START -> Requirements
per state, and GPU property ads (more in test_ad_details.py)."""

from __future__ import annotations

import pytest
from slot_ad_fixtures import (
    EXECUTE,
    build,
    by_name,
    config_of,
    gpus,
    inventory_of,
    partitionable_with_dynamic,
    resources,
    static_slots,
)

from epcore.classad import (
    UNDEFINED,
    ClassAd,
    parse_ad,
    symmetric_match,
)
from epcore.slots.ads import slot_ad_problems
from epcore.slots.model import Slot, SlotLayout
from epcore.slots.slot_status import (
    SlotStatus,
)
from epcore.types import HostReadings

# -- STARTD_ATTRS (seed 000 "Configuring STARTD_ATTRS on a per-slot basis") ------------------

PER_SLOT_LISTS = """
favorite_color = "blue"
favorite_season = "spring"
favorite_movie = "Casablanca"
favorite_song = "Blue in Green"
STARTD_ATTRS = favorite_color, favorite_season
SLOT1_STARTD_ATTRS = favorite_movie
SLOT2_STARTD_ATTRS = favorite_song
"""

FAVORITES = ("favorite_color", "favorite_season", "favorite_movie", "favorite_song")


@pytest.mark.parametrize(
    ("slot", "expected"),
    [
        ("slot1", {"favorite_color", "favorite_season", "favorite_movie"}),
        ("slot2", {"favorite_color", "favorite_season", "favorite_song"}),
        ("slot3", {"favorite_color", "favorite_season"}),
    ],
)
def test_per_slot_startd_attrs_lists_combine(slot: str, expected: set[str]) -> None:
    """Each slot publishes STARTD_ATTRS followed by its own SLOT<N>_STARTD_ATTRS entries."""
    ads = by_name(build(config_of(PER_SLOT_LISTS), static_slots(3)))
    assert {name for name in FAVORITES if name in ads[slot]} == expected


PER_SLOT_VALUES = """
favorite_color = "blue"
favorite_season = "spring"
STARTD_ATTRS = favorite_color, favorite_season
SLOT2_favorite_color = "green"
SLOT3_favorite_season = "summer"
"""


@pytest.mark.parametrize(
    ("slot", "color", "season"),
    [("slot1", "blue", "spring"), ("slot2", "green", "spring"), ("slot3", "blue", "summer")],
)
def test_per_slot_values_override_the_shared_value(slot: str, color: str, season: str) -> None:
    """SLOT<N>_<attr> replaces <attr> in slot N's ad only, as the seed's three ads show."""
    ads = by_name(build(config_of(PER_SLOT_VALUES), static_slots(3)))
    assert ads[slot].evaluate("favorite_color") == color
    assert ads[slot].evaluate("favorite_season") == season


def test_dynamic_slots_take_their_parents_per_slot_values() -> None:
    """A dynamic slot slot1_M reads SLOT1_<attr>, the knobs of the slot it was carved from."""
    config = config_of(PER_SLOT_VALUES + 'SLOT1_favorite_color = "red"\n')
    ads = by_name(build(config, partitionable_with_dynamic([resources(), resources()])))
    assert [ads[name].evaluate("favorite_color") for name in ("slot1", "slot1_1", "slot1_2")] == [
        "red",
        "red",
        "red",
    ]


def test_slot_type_values_apply_to_every_slot_of_the_type() -> None:
    """SLOT_TYPE_<T>_<attr> gives a value to the slots of type T; SLOT<N>_<attr> still wins."""
    config = config_of(
        'favorite_color = "blue"\nSTARTD_ATTRS = favorite_color\n'
        'SLOT_TYPE_1_favorite_color = "teal"\nSLOT2_favorite_color = "green"\n'
    )
    ads = by_name(build(config, static_slots(3, type_id=1)))
    assert [ads[s].evaluate("favorite_color") for s in ("slot1", "slot2", "slot3")] == [
        "teal",
        "green",
        "teal",
    ]


GENOME = """
# A string value, quoted
GenomeDBName = "FruitFlies"
# Probably a mistake, because not quoted, and gets evaluated.
WRONGGenomeDBName = FruitFlies
# A numeric value, not quoted
GenomeDBSizeGB = 1729
# An expression, not quoted (happens to evaluate to a boolean)
HasLargeGenomeDB = GenomeDBSizeGB > 100
STARTD_ATTRS = GenomeDBName GenomeDBSizeGB HasLargeGenomeDB $(STARTD_ATTRS)
STARTD_ATTRS = WRONGGenomeDBName $(STARTD_ATTRS)
GenomeDBPath = "/path/to/db"
STARTD_ATTRS = GenomeDBPath $(STARTD_ATTRS)
"""


@pytest.mark.parametrize(
    ("attribute", "text", "value"),
    [
        ("GenomeDBName", '"FruitFlies"', "FruitFlies"),
        ("WRONGGenomeDBName", "FruitFlies", UNDEFINED),
        ("GenomeDBSizeGB", "1729", 1729),
        ("HasLargeGenomeDB", "GenomeDBSizeGB > 100", True),
        ("GenomeDBPath", '"/path/to/db"', "/path/to/db"),
    ],
)
def test_startd_attrs_values_are_classad_expressions(
    attribute: str, text: str, value: object
) -> None:
    """Quoted values are strings, bare words are references (UNDEFINED, not an error),
    numbers are numbers and expressions stay expressions, on every slot (seed 000)."""
    for ad in build(config_of(GENOME), static_slots(2)):
        assert str(ad[attribute]) == text
        result = ad.evaluate(attribute)
        assert result is value if value is UNDEFINED else result == value


def test_old_startd_exprs_lists_are_still_read() -> None:
    """STARTD_EXPRS and SLOT<N>_STARTD_EXPRS add entries as STARTD_ATTRS does (seed 002)."""
    config = config_of('a = 1\nb = "two"\nSTARTD_EXPRS = a\nSLOT2_STARTD_EXPRS = b\n')
    ads = by_name(build(config, static_slots(2)))
    assert ("a" in ads["slot1"], "b" in ads["slot1"]) == (True, False)
    assert (ads["slot2"].evaluate("a"), ads["slot2"].evaluate("b")) == (1, "two")


def test_system_startd_attrs_publish_the_collector_host_string() -> None:
    """SYSTEM_STARTD_ATTRS adds COLLECTOR_HOST_STRING (quoted COLLECTOR_HOST) to every slot."""
    ads = build(config_of("COLLECTOR_HOST = cm.example.org\n"), static_slots(1))
    assert ads[0].evaluate("COLLECTOR_HOST_STRING") == "cm.example.org"


SUSPENDABLE = """
IsSuspendableSlot = SlotID > $(DETECTED_CORES)
NonSuspendableSlotState = eval(strcat("slot",SlotID-$(DETECTED_CORES),"_State")
STARTD_SLOT_ATTRS = $(STARTD_SLOT_ATTRS) State
STARTD_ATTRS = $(STARTD_ATTRS) IsSuspendableSlot NonSuspendableSlotState
"""


def test_unparsable_startd_attrs_entry_is_left_out_and_reported() -> None:
    """The seed's NonSuspendableSlotState misses a parenthesis: like HTCondor, the entry is
    left out of the ads (the others stay) and reported as a configuration problem."""
    config = config_of(SUSPENDABLE, cpus=2)
    layout = static_slots(4)
    ads = build(config, layout)
    assert all("NonSuspendableSlotState" not in ad for ad in ads)
    assert [ad.evaluate("IsSuspendableSlot") for ad in ads] == [False, False, True, True]
    problems = slot_ad_problems(config, layout)
    assert len(problems) == 4
    assert all("NonSuspendableSlotState" in problem for problem in problems)


def test_cross_slot_state_lets_a_slot_watch_another() -> None:
    """STARTD_SLOT_ATTRS = State puts slot1_State ... slot4_State into every ad, so the
    (repaired) suspendable-slot example sees the state of its non-suspendable partner."""
    config = config_of(SUSPENDABLE.replace('"_State")', '"_State"))'), cpus=2)
    statuses = {"slot1": SlotStatus("Claimed", "Busy"), "slot2": SlotStatus("Unclaimed")}
    ads = by_name(build(config, static_slots(4), statuses=statuses))
    assert ads["slot2"].evaluate("slot1_State") == "Claimed"
    assert [ads[f"slot{n}"].evaluate("slot4_State") for n in (1, 2, 3, 4)] == ["Owner"] * 4
    assert ads["slot3"].evaluate("NonSuspendableSlotState") == "Claimed"
    assert ads["slot4"].evaluate("NonSuspendableSlotState") == "Unclaimed"
    assert slot_ad_problems(config, static_slots(4)) == []


def test_cross_slot_names_of_dynamic_slots_carry_both_numbers() -> None:
    """A dynamic slot's copies are named slot<N>_<M>_<attr>."""
    config = config_of("STARTD_SLOT_ATTRS = Cpus\n")
    layout = partitionable_with_dynamic([resources(cpus=1), resources(cpus=2)])
    ads = build(config, layout)
    assert [ads[0].evaluate(name) for name in ("slot1_Cpus", "slot1_1_Cpus", "slot1_2_Cpus")] == [
        1,
        1,
        2,
    ]


def test_cross_slot_copies_are_expressions_unless_evaluated() -> None:
    """The copy is the expression itself; STARTD_EVAL_SLOT_ATTRS copies the value instead, and
    leaves out values that are UNDEFINED."""
    text = "Doubled = Cpus * 2\nLost = NoSuchAttribute\nSTARTD_ATTRS = Doubled Lost\n"
    text += "STARTD_SLOT_ATTRS = Doubled Lost\n"
    plain = build(config_of(text), static_slots(2, cpus=3))[1]
    assert str(plain["slot1_Doubled"]) == "Cpus * 2"
    assert "slot1_Lost" in plain
    evaluated = build(config_of(text + "STARTD_EVAL_SLOT_ATTRS = True\n"), static_slots(2))[1]
    assert str(evaluated["slot1_Doubled"]) == "2"
    assert "slot1_Lost" not in evaluated


# -- Requirements --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "keyboard_idle", "requirements"),
    [
        (None, 5000, "true"),
        ("KeyboardIdle > 15 * 60", 5000, "true"),
        ("KeyboardIdle > 15 * 60", 10, "START"),
        ('TARGET.Owner == "coltrane"', 5000, "START"),
        ("false", 5000, "START"),
    ],
)
def test_static_requirements_are_true_when_start_is_locally_true(
    start: str | None, keyboard_idle: int, requirements: str
) -> None:
    """A static slot advertises Requirements = True when START evaluates to True against its
    own ad, otherwise START itself, which then decides against each job (seed 000)."""
    text = "SLOTS_CONNECTED_TO_KEYBOARD = 1\nSLOTS_CONNECTED_TO_CONSOLE = 1\n"
    if start is not None:
        text += f"START = {start}\n"
    readings = HostReadings(0.0, 0.0, keyboard_idle, keyboard_idle)
    (ad,) = build(config_of(text), static_slots(1), readings=readings)
    assert str(ad["Requirements"]) == requirements
    assert str(ad["Start"]) == (start or "true")


@pytest.mark.parametrize("state", ["Matched", "Preempting", "Drained"])
def test_requirements_are_false_while_the_slot_takes_no_match(state: str) -> None:
    """Matched, Preempting and Drained slots advertise Requirements = False."""
    for layout in (static_slots(1), partitionable_with_dynamic()):
        statuses = {"slot1": SlotStatus(state, "Idle"), "slot1_1": SlotStatus(state, "Idle")}
        for ad in build(config_of(), layout, statuses=statuses):
            assert ad.evaluate("Requirements") is False


def test_requirements_are_false_when_the_startd_accepts_no_jobs() -> None:
    """A slot whose status says it accepts no jobs (draining, shutting down) advertises False."""
    (ad,) = build(config_of(), static_slots(1), statuses={"slot1": SlotStatus(accepting=False)})
    assert ad.evaluate("Requirements") is False


JOB = """[
  MyType = "Job"; Owner = "coltrane"; RequestCpus = {cpus}; RequestMemory = 1024;
  RequestDisk = 1000; Requirements = TARGET.Memory >= RequestMemory
]"""


@pytest.mark.parametrize(("cpus", "matches"), [(1, True), (3, True), (4, False)])
def test_partitionable_requirements_check_the_request(cpus: int, matches: bool) -> None:
    """A partitionable slot matches only jobs whose requests fit what it has left."""
    layout = partitionable_with_dynamic([resources(cpus=1, memory_mb=1024)])
    pslot = build(config_of('START = TARGET.Owner == "coltrane"\n'), layout)[0]
    assert str(pslot["Requirements"]) == "START && (WithinResourceLimits)"
    assert symmetric_match(pslot, parse_ad(JOB.format(cpus=cpus))) is matches


def test_partitionable_requirements_with_start_locally_true_keep_the_limits() -> None:
    """With START locally True only WithinResourceLimits is left of Requirements."""
    pslot = build(config_of(), partitionable_with_dynamic())[0]
    assert str(pslot["Requirements"]) == "WithinResourceLimits"
    assert symmetric_match(pslot, parse_ad(JOB.format(cpus=9))) is False


def test_static_start_decides_against_the_job() -> None:
    """A START that reads the job decides the match (the desktop seed's coltrane example)."""
    (ad,) = build(config_of('START = TARGET.Owner == "coltrane"\n'), static_slots(1))
    assert symmetric_match(ad, parse_ad(JOB.format(cpus=1)))
    assert not symmetric_match(ad, parse_ad(JOB.format(cpus=1).replace("coltrane", "miles")))


# -- GPUs (seed 000 "Configuring GPUs") ------------------------------------------------------

GPU_JOB = """[
  RequestCpus = 1; RequestMemory = 10; RequestDisk = 10; RequestGPUs = {count};
  RequireGPUs = Capability >= 8.0;
  Requirements = countMatches(MY.RequireGPUs, TARGET.AvailableGPUs) >= RequestGPUs
]"""


def gpu_machine() -> tuple[list[ClassAd], dict[str, ClassAd]]:
    custom = gpus(("GPU-aaaa0001", 8.0), ("GPU-aaaa0002", 8.0), ("GPU-6a96bd13", 6.1))
    powerful = ("GPU-aaaa0001", "GPU-aaaa0002")
    pslot = resources(cpus=3, custom={"GPUs": 2}, devices={"GPUs": powerful})
    small = resources(cpus=1, memory_mb=10, custom={"GPUs": 1}, devices={"GPUs": ("GPU-6a96bd13",)})
    layout = SlotLayout(
        (
            Slot(1, 1, "partitionable", pslot, pslot, EXECUTE),
            Slot(2, 2, "static", small, small, EXECUTE),
        )
    )
    ads = build(config_of(), layout, inventory_of(custom=custom))
    return ads, by_name(ads)


def test_gpu_slots_carry_nested_property_ads() -> None:
    """Each slot gets the property ads of its GPUs, AssignedGPUs and AvailableGPUs."""
    _, ads = gpu_machine()
    small = ads["slot2"]
    assert small.evaluate("AssignedGPUs") == "GPU-6a96bd13"
    nested = small.evaluate("GPUs_GPU_6a96bd13")
    assert isinstance(nested, ClassAd)
    assert (nested.evaluate("Id"), nested.evaluate("Capability")) == ("GPU-6a96bd13", 6.1)
    assert str(small["AvailableGPUs"]) == "{ GPUs_GPU_6a96bd13 }"
    pslot = ads["slot1"]
    assert pslot.evaluate("AssignedGPUs") == "GPU-aaaa0001,GPU-aaaa0002"
    assert "GPUs_GPU_6a96bd13" not in pslot
    assert [pslot.evaluate(n) for n in ("GPUs", "TotalSlotGPUs", "TotalGPUs", "DetectedGPUs")] == [
        2,
        2,
        3,
        3,
    ]


@pytest.mark.parametrize(
    ("slot", "count", "matches"),
    [
        ("slot1", 1, True),
        ("slot1", 2, True),
        ("slot1", 3, False),
        ("slot2", 1, False),
    ],
)
def test_gpu_jobs_match_through_count_matches(slot: str, count: int, matches: bool) -> None:
    """A job requiring Capability >= 8.0 GPUs matches the slot holding the powerful ones only."""
    _, ads = gpu_machine()
    assert symmetric_match(ads[slot], parse_ad(GPU_JOB.format(count=count))) is matches


def test_carved_gpus_leave_available_gpus_of_the_partitionable_slot() -> None:
    """After a dynamic slot takes a GPU the p-slot lists only the others as available."""
    custom = gpus(("GPU-1", 8.0), ("GPU-2", 8.0))
    whole = resources(cpus=4, custom={"GPUs": 2}, devices={"GPUs": ("GPU-1", "GPU-2")})
    child = resources(cpus=1, custom={"GPUs": 1}, devices={"GPUs": ("GPU-1",)})
    ads = by_name(
        build(config_of(), partitionable_with_dynamic([child], whole), inventory_of(custom=custom))
    )
    assert str(ads["slot1"]["AvailableGPUs"]) == "{ GPUs_GPU_2 }"
    assert str(ads["slot1_1"]["AvailableGPUs"]) == "{ GPUs_GPU_1 }"
    assert ads["slot1_1"].evaluate("AssignedGPUs") == "GPU-1"
