"""plan_slots: numbering, explicit and auto shares, partitions, rounding and device binding."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from slot_helpers import EXECUTE, config, gpus, machine, plan_of, slots_of, sole_slot

from epcore.errors import SlotConfigError
from epcore.slots.layout import plan, plan_slots


def test_slots_are_numbered_in_type_order() -> None:
    """Type 1's slots come first, then type 2's; ids count from 1 across types."""
    text = "NUM_SLOTS_TYPE_2 = 2\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1_PARTITIONABLE = true"
    found = [(s.slot_id, s.type_id, s.kind, s.sub_id) for s in slots_of(text)]
    assert found == [
        (1, 1, "partitionable", None),
        (2, 2, "static", None),
        (3, 2, "static", None),
    ]


def test_the_default_is_one_partitionable_slot_with_everything() -> None:
    """No slot knob: slot1 of type 0, partitionable, holding the whole machine."""
    (slot,) = slots_of("", detected=[gpus(("GPU-a", 8.0))])
    assert (slot.slot_id, slot.type_id, slot.kind, slot.execute) == (1, 0, "partitionable", EXECUTE)
    resources = slot.resources
    assert (resources.cpus, resources.memory_mb, resources.disk_kb, resources.swap_kb) == (
        4,
        256,
        1_000_000,
        400_000,
    )
    assert resources.custom == {"GPUs": 1}
    assert resources.devices == {"GPUs": ("GPU-a",)}
    assert slot.total == slot.resources


def test_auto_slots_split_what_explicit_shares_leave() -> None:
    """One slot takes 2 Cpus and 100 MB; the three auto slots share the rest, memory in whole
    MB."""
    text = "SLOT_TYPE_1 = cpus=2, mem=100\nNUM_SLOTS_TYPE_1 = 1\nNUM_SLOTS_TYPE_2 = 2"
    found = [(s.resources.cpus, s.resources.memory_mb) for s in slots_of(text)]
    assert found == [(2, 100), (1, 78), (1, 78)]


def test_auto_units_of_a_custom_resource_go_to_the_first_slots() -> None:
    """5 Cogs among 2 auto slots: 3 and 2; with 1 Cog for 3 slots: 1, 0, 0."""
    five = slots_of("MACHINE_RESOURCE_Cogs = 5\nNUM_SLOTS_TYPE_1 = 2")
    assert [s.resources.custom["Cogs"] for s in five] == [3, 2]
    one = slots_of("MACHINE_RESOURCE_Cogs = 1\nNUM_SLOTS_TYPE_1 = 3", cpus=3)
    assert [s.resources.custom["Cogs"] for s in one] == [1, 0, 0]


def test_less_than_one_unit_left_gives_auto_slots_none() -> None:
    """When explicit shares leave under one unit, auto slots get 0 of it."""
    text = (
        "MACHINE_RESOURCE_Bw = 10\nSLOT_TYPE_1 = Bw=9.5\nNUM_SLOTS_TYPE_1 = 1\nNUM_SLOTS_TYPE_2 = 1"
    )
    assert [s.resources.custom["Bw"] for s in slots_of(text)] == [9, 0]


def test_disk_rounds_up_and_swap_rounds_down() -> None:
    """Three auto slots: Disk is ceil(1000/3) KB each, Swap floor(1000/3) KB."""
    found = slots_of("NUM_SLOTS = 3", disk_kb=1000, swap_kb=1000)
    assert [(s.resources.disk_kb, s.resources.swap_kb) for s in found] == [(334, 333)] * 3


def test_cpus_are_advertised_whole_unless_fractional() -> None:
    """A third of 4 Cpus is advertised as 1 (HTCondor adds 0.1 and truncates); with a
    ``min`` blanket share a slot keeps half a Cpu."""
    assert sole_slot("SLOT_TYPE_1 = cpus=1/3\nNUM_SLOTS_TYPE_1 = 1").cpus == 1
    assert sole_slot("SLOT_TYPE_1 = cpus=1/2\nNUM_SLOTS_TYPE_1 = 1").cpus == 2
    assert sole_slot("SLOT_TYPE_1 = cpus=0.5, min\nNUM_SLOTS_TYPE_1 = 1").cpus == 0.5


def test_an_explicit_share_gives_at_least_one_cpu_and_one_megabyte() -> None:
    """``cpus=10%`` of 4 Cpus is still 1 Cpu; ``mem=0`` is still 1 MB (HTCondor's floor)."""
    resources = sole_slot("SLOT_TYPE_1 = cpus=10%, mem=0\nNUM_SLOTS_TYPE_1 = 1")
    assert (resources.cpus, resources.memory_mb) == (1, 1)


def test_slots_on_different_partitions_each_take_up_to_all_of_theirs() -> None:
    """SLOT2_EXECUTE on another partition: both slots may have 100% of their own disk."""
    text = "SLOT2_EXECUTE = /scratch\nSLOT_TYPE_1 = disk=100%\nNUM_SLOTS_TYPE_1 = 2"
    found = slots_of(text, disk_by_path={EXECUTE: 1000, "/scratch": 500})
    assert [(s.execute, s.resources.disk_kb) for s in found] == [(EXECUTE, 1000), ("/scratch", 500)]


def test_auto_disk_is_split_per_partition() -> None:
    """Two auto slots on EXECUTE share it; the one on /scratch has all of /scratch."""
    text = "SLOT3_EXECUTE = /scratch\nNUM_SLOTS = 3"
    found = slots_of(text, cpus=3, disk_by_path={EXECUTE: 1000, "/scratch": 300})
    assert [s.resources.disk_kb for s in found] == [500, 500, 300]


def test_slots_on_one_partition_may_not_exceed_it() -> None:
    """Two slots with 60% of the same EXECUTE partition over-commit it by 20%."""
    with pytest.raises(SlotConfigError) as caught:
        slots_of("SLOT_TYPE_1 = disk=60%\nNUM_SLOTS_TYPE_1 = 2")
    assert str(caught.value).endswith(
        "SLOT_TYPE_1 (2 slots) ask for 120% of the Disk of /execute, at most 100% is possible "
        "(20% too many)"
    )


def test_an_unmeasured_execute_directory_is_an_error() -> None:
    """SLOT2_EXECUTE naming a directory detection did not measure is an error naming it."""
    with pytest.raises(SlotConfigError, match=r"SLOT2_EXECUTE: the free space of /elsewhere"):
        slots_of("SLOT2_EXECUTE = /elsewhere\nNUM_SLOTS = 2")


def test_devices_are_bound_in_slot_order_by_constraint() -> None:
    """Slot 1 takes the first device matching its constraint; slot 2, without one, the first
    free device."""
    text = (
        "SLOT_TYPE_1 @=end\n GPUs = 1 : Capability >= 8.0\n 50%\n@end\nNUM_SLOTS_TYPE_1 = 1\n"
        "SLOT_TYPE_2 = GPUs=1, 50%\nNUM_SLOTS_TYPE_2 = 1"
    )
    found = slots_of(text, detected=[gpus(("GPU-a", 7.0), ("GPU-b", 8.6), ("GPU-c", 9.0))])
    assert [s.resources.devices["GPUs"] for s in found] == [("GPU-b",), ("GPU-a",)]


def test_a_constraint_no_free_device_meets_is_an_error() -> None:
    """Asking for 2 devices with Capability >= 8.0 where one has it names the knob and ids."""
    text = "SLOT_TYPE_1 @=end\n GPUs = 2 : Capability >= 8.0\n 50%\n@end\nNUM_SLOTS_TYPE_1 = 1"
    with pytest.raises(SlotConfigError) as caught:
        slots_of(text, detected=[gpus(("GPU-a", 7.0), ("GPU-b", 8.6), ("GPU-c", 6.0))])
    assert str(caught.value).endswith(
        "SLOT_TYPE_1: slot1 needs 2 GPUs matching Capability >= 8.0, only 1 of the free devices "
        "match (free: GPU-a, GPU-b, GPU-c)"
    )


def test_ignored_items_are_reported_as_warnings() -> None:
    """A fraction of a resource the machine lacks is a warning, not an error."""
    found = plan_of("SLOT_TYPE_1 = gpus=1/2\nNUM_SLOTS_TYPE_1 = 1")
    assert found.warnings == (
        "SLOT_TYPE_1: 'gpus=1/2' names a resource this machine does not have; ignored",
    )
    assert found.type_spec(1) is not None and found.type_spec(2) is None


def test_plan_slots_is_the_layout_of_plan() -> None:
    """plan_slots returns exactly plan(...).layout."""
    cfg = config("NUM_SLOTS = 2")
    inventory = machine(cfg)
    assert plan_slots(cfg, inventory) == plan(cfg, inventory).layout


shares = st.one_of(
    st.just("auto"),
    st.integers(1, 100).map(lambda p: f"{p}%"),
    st.tuples(st.integers(1, 4), st.integers(1, 8)).map(lambda f: f"{f[0]}/{f[1]}"),
)
slot_type = st.tuples(
    st.integers(1, 3),
    st.one_of(st.just("auto"), st.integers(1, 3).map(str), shares),
    st.one_of(st.just("auto"), st.integers(1, 200).map(str), shares),
    shares,
    st.one_of(st.just("auto"), st.integers(0, 6).map(str), shares),
)


@given(st.lists(slot_type, min_size=1, max_size=3))
def test_a_plan_never_hands_out_more_than_the_machine_has(
    types: list[tuple[int, str, str, str, str]],
) -> None:
    """Any slot types either fail with SlotConfigError or fit: totals within the machine,
    every slot with at least 1 Cpu and 1 MB."""
    lines = ["MACHINE_RESOURCE_Cogs = 6"]
    for n, (count, cpus, mem, disk, cogs) in enumerate(types, start=1):
        lines += [
            f"NUM_SLOTS_TYPE_{n} = {count}",
            f"SLOT_TYPE_{n} = c={cpus}, m={mem}, d={disk}, Cogs={cogs}",
        ]
    try:
        found = slots_of("\n".join(lines), cpus=8, memory_mb=1024, disk_kb=10_000)
    except SlotConfigError as exc:
        assert exc.reason.startswith(("SLOT_TYPE_", "MACHINE_RESOURCE_"))
        return
    assert sum(s.resources.cpus for s in found) <= 8
    assert sum(s.resources.memory_mb for s in found) <= 1024
    assert sum(s.resources.custom["Cogs"] for s in found) <= 6
    assert sum(s.resources.disk_kb for s in found) <= 10_000 + len(found)  # rounded up each
    assert all(s.resources.cpus >= 1 and s.resources.memory_mb >= 1 for s in found)
