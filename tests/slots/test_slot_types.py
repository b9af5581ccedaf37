"""read_slot_types: which slot types a machine builds, how many slots of each, and what each
share means on this machine."""

from __future__ import annotations

import pytest
from slot_helpers import config, gpus, machine

from epcore.classad import parse_expr
from epcore.slots.shares import ResourceShare
from epcore.slots.slot_types import DeviceConstraint, SlotTypeSpec, read_slot_types
from epcore.types import ResourceDevice


def types(text: str, **machine_args: object) -> tuple[SlotTypeSpec, ...]:
    """The slot types ``text`` gives on the 4-core machine (plus ``machine_args``)."""
    cfg = config(text)
    return read_slot_types(cfg, machine(cfg, **machine_args))  # type: ignore[arg-type]


def summary(specs: tuple[SlotTypeSpec, ...]) -> list[tuple[int, int, bool, str]]:
    """(type id, count, partitionable, knob) of each type."""
    return [(s.type_id, s.count, s.partitionable, s.knob) for s in specs]


LAYOUTS = [
    ("", [(0, 1, True, "SLOT_TYPE_0")]),
    ("NUM_SLOTS = 3", [(0, 3, False, "NUM_SLOTS")]),
    ("SLOT_TYPE_0_PARTITIONABLE = false", [(0, 4, False, "SLOT_TYPE_0")]),
    ("NUM_SLOTS = 2\nSLOT_TYPE_0_PARTITIONABLE = true", [(0, 2, True, "NUM_SLOTS")]),
    (
        "NUM_SLOTS_TYPE_2 = 2\nNUM_SLOTS_TYPE_1 = 1",
        [(1, 1, False, "SLOT_TYPE_1"), (2, 2, False, "SLOT_TYPE_2")],
    ),
    ("NUM_SLOTS = 4\nNUM_SLOTS_TYPE_1 = 1", [(1, 1, False, "SLOT_TYPE_1")]),
    ("NUM_SLOTS_TYPE_1 = 0\nNUM_SLOTS_TYPE_3 = 1", [(3, 1, False, "SLOT_TYPE_3")]),
    ("NUM_SLOTS_TYPE_1 = 0", [(0, 1, True, "SLOT_TYPE_0")]),
    ("SLOT_TYPE_1 = 50%", [(0, 1, True, "SLOT_TYPE_0")]),
    ("NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1_PARTITIONABLE = TRUE", [(1, 1, True, "SLOT_TYPE_1")]),
    ("STARTD.NUM_SLOTS_TYPE_1 = 2", [(1, 2, False, "SLOT_TYPE_1")]),
    ("SCHEDD.NUM_SLOTS_TYPE_1 = 2", [(0, 1, True, "SLOT_TYPE_0")]),
    ("num_slots_type_1 = 1", [(1, 1, False, "SLOT_TYPE_1")]),
    ("use FEATURE : PartitionableSlot", [(1, 1, True, "SLOT_TYPE_1")]),
    ("use FEATURE : StaticSlots", [(1, 4, False, "SLOT_TYPE_1")]),
    ("use FEATURE : StaticSlots(2, 3)", [(2, 3, False, "SLOT_TYPE_2")]),
    ("MAX_SLOT_TYPES = 20\nNUM_SLOTS_TYPE_15 = 1", [(15, 1, False, "SLOT_TYPE_15")]),
]


@pytest.mark.parametrize(("text", "expected"), LAYOUTS)
def test_the_slot_types_a_configuration_makes(
    text: str, expected: list[tuple[int, int, bool, str]]
) -> None:
    """NUM_SLOTS_TYPE_<N> > 0 makes a type; without any, type 0 is one partitionable slot, or
    NUM_SLOTS static slots, or (SLOT_TYPE_0_PARTITIONABLE false) one static slot per Cpu."""
    assert summary(types(text)) == expected


def test_the_templates_set_the_shares_they_document() -> None:
    """``use FEATURE : PartitionableSlot`` shares 100%; StaticSlots leaves the type all auto;
    ``StaticSlots(2, 3, cpus=1 mem=100)`` gives its shares to type 2."""
    (pslot,) = types("use FEATURE : PartitionableSlot")
    assert pslot.cpus == pslot.disk == ResourceShare("fraction", 1.0, "100%")
    (static,) = types("use FEATURE : StaticSlots")
    assert static.cpus.kind == static.memory.kind == "auto"
    (typed,) = types("use FEATURE : StaticSlots(2, 3, cpus=1 mem=100)")
    assert (typed.cpus.amount, typed.memory.amount, typed.disk.kind) == (1, 100, "auto")


def test_the_blanket_share_fills_every_unnamed_resource() -> None:
    """``cogs=50%,actuator=6,50%``: the 50% blanket goes to Cpus, Memory, Disk and Swap."""
    text = (
        "MACHINE_RESOURCE_Cogs = 16\nMACHINE_RESOURCE_actuator = 8\n"
        "SLOT_TYPE_1 = cogs=50%,actuator=6,50%\nNUM_SLOTS_TYPE_1 = 1"
    )
    (spec,) = types(text)
    half = ResourceShare("fraction", 0.5, "50%")
    assert spec.cpus == spec.memory == spec.disk == spec.swap == half
    assert spec.custom == {"actuator": ResourceShare("absolute", 6, "6"), "Cogs": half}


def test_custom_names_match_without_case_and_before_standard_names() -> None:
    """A custom resource named ``d`` takes ``d=2``; ``disk`` still means Disk."""
    text = "MACHINE_RESOURCE_d = 4\nSLOT_TYPE_1 = D=2, disk=10%\nNUM_SLOTS_TYPE_1 = 1"
    (spec,) = types(text)
    assert spec.custom["d"].amount == 2
    assert spec.disk.amount == pytest.approx(0.1)


def test_a_fraction_of_a_missing_resource_is_ignored() -> None:
    """``gpus=50%`` on a machine without GPUs is ignored and reported, so one configuration
    serves machines with and without them."""
    (spec,) = types("SLOT_TYPE_1 = gpus=50%, cpus=1\nNUM_SLOTS_TYPE_1 = 1")
    assert spec.ignored == ("gpus=50%",)
    assert spec.cpus.amount == 1


def test_a_min_blanket_allows_fractional_cpus() -> None:
    """HTCondor's ``min`` blanket share lets a slot have less than one Cpu."""
    (spec,) = types("SLOT_TYPE_1 = cpus=0.5, min\nNUM_SLOTS_TYPE_1 = 1")
    assert spec.fractional_cpus
    assert spec.memory.minimal


def test_constraints_are_kept_for_device_resources() -> None:
    """``GPUs = 2 : Capability >= 8.0`` keeps its constraint under the machine's name."""
    text = "SLOT_TYPE_1 @=end\n  gpus = 2 : Capability >= 8.0\n  50%\n@end\nNUM_SLOTS_TYPE_1 = 1"
    (spec,) = types(text, detected=[gpus(("GPU-a", 8.0), ("GPU-b", 7.0))])
    assert spec.constraints["GPUs"].text == "Capability >= 8.0"


CONSTRAINTS = [
    ('"GPU-6a96bd13"', ResourceDevice("GPU-6A96BD13"), 0, True),
    ('"GPU-6a96bd13"', ResourceDevice("GPU-ffff"), 0, False),
    ("1", ResourceDevice("GPU-b"), 1, True),
    ("1", ResourceDevice("GPU-a"), 0, False),
    ("Capability >= 8.0", ResourceDevice("GPU-a", {"Capability": 8.0}), 0, True),
    ("Capability >= 8.0", ResourceDevice("GPU-b", {"Capability": 7.5}), 0, False),
    ("Capability >= 8.0", ResourceDevice("GPU-c"), 0, False),
    ("GlobalMemoryMb", ResourceDevice("GPU-d", {"GlobalMemoryMb": 16000}), 0, True),
]


@pytest.mark.parametrize(("text", "device", "index", "matches"), CONSTRAINTS)
def test_a_device_constraint_follows_htcondor_rules(
    text: str, device: ResourceDevice, index: int, matches: bool
) -> None:
    """A string matches the id without case, a whole number the position, any other
    expression the device's property ad (undefined does not match)."""
    constraint = DeviceConstraint(text, parse_expr(text))
    assert constraint.matches(index, device) is matches
