"""Dynamic slots: request rewriting, fitting, naming, devices, giving back; consumption
policies and slot weight."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from slot_helpers import config, gpus, job, machine

from epcore.classad import ClassAd
from epcore.errors import EpError, SlotConfigError
from epcore.slots.consumption import (
    compute_consumption,
    consumption_cost,
    consumption_expressions,
    slot_weight,
)
from epcore.slots.dynamic import (
    Carved,
    NoFit,
    ResourceRequest,
    Shortfall,
    carve,
    carve_in,
    next_sub_id,
    release,
    release_in,
    resource_request,
)
from epcore.slots.layout import plan_slots
from epcore.slots.model import Slot, SlotLayout, SlotResources
from epcore.types import MachineInventory

BASE = "MACHINE_RESOURCE_Cogs = 4\n"


def layout_of(text: str = "", **machine_args: object) -> tuple[SlotLayout, MachineInventory]:
    """The layout (and machine) of BASE + ``text`` on 8 Cpus, 8192 MB, 1 GB of disk."""
    cfg = config(BASE + text)
    args: dict[str, object] = {"cpus": 8, "memory_mb": 8192, "disk_kb": 1_048_576, **machine_args}
    inventory = machine(cfg, **args)  # type: ignore[arg-type]
    return plan_slots(cfg, inventory), inventory


def carved(text: str, ad: str, **machine_args: object) -> Carved | NoFit:
    """Carve a dynamic slot for job ``ad`` out of slot1 of BASE + ``text``."""
    layout, inventory = layout_of(text, **machine_args)
    return carve_in(layout, 1, job(ad), config(BASE + text), inventory=inventory)


def given_slot(text: str, ad: str, **machine_args: object) -> SlotResources:
    """The resources of the dynamic slot carved for ``ad``."""
    result = carved(text, ad, **machine_args)
    assert isinstance(result, Carved), result
    return result.dslot.resources


REQUESTS = [
    ("[RequestCpus = 1; RequestMemory = 1000; RequestDisk = 5000]", (1, 1024, 5120)),
    ("[RequestCpus = 3; RequestMemory = 1024; RequestDisk = 10240]", (3, 1024, 10240)),
    ("[RequestMemory = 1; RequestDisk = 1]", (1, 128, 1024)),
    ("[RequestCpus = 2.7; RequestMemory = 100.9; RequestDisk = 1]", (2, 128, 1024)),
    ("[RequestCpus = 1; RequestMemory = 2 * 100; RequestDisk = MY.RequestMemory]", (1, 256, 1024)),
]


@pytest.mark.parametrize(("ad", "expected"), REQUESTS)
def test_requests_are_rounded_by_the_default_modify_expressions(
    ad: str, expected: tuple[int, int, int]
) -> None:
    """quantize(RequestCpus,{1}), quantize(RequestMemory,{128}) and the default disk
    quantum of 1024 KB size the dynamic slot; a job without RequestCpus asks for one."""
    resources = given_slot("", ad)
    assert (resources.cpus, resources.memory_mb, resources.disk_kb) == expected


def test_a_configured_modify_expression_sees_the_slot_as_target() -> None:
    """MODIFY_REQUEST_EXPR_REQUESTCPUS = TARGET.Cpus gives the job every free Cpu."""
    text = "MODIFY_REQUEST_EXPR_REQUESTCPUS = TARGET.Cpus"
    assert given_slot(text, "[RequestCpus = 1; RequestMemory = 1; RequestDisk = 1]").cpus == 8


def test_a_slot_type_modify_expression_wins() -> None:
    """SLOT_TYPE_1_MODIFY_REQUEST_EXPR_REQUESTMEMORY applies to type 1's slots."""
    text = (
        "use FEATURE : PartitionableSlot\n"
        "MODIFY_REQUEST_EXPR_REQUESTMEMORY = 512\n"
        "SLOT_TYPE_1_MODIFY_REQUEST_EXPR_REQUESTMEMORY = max({3072, RequestMemory})"
    )
    assert given_slot(text, "[RequestMemory = 100; RequestDisk = 1]").memory_mb == 3072


def test_a_non_integer_rewrite_leaves_the_request_alone() -> None:
    """A rewrite giving a real (or an error) is ignored, as HTCondor ignores it."""
    text = "MODIFY_REQUEST_EXPR_REQUESTMEMORY = RequestMemory * 1.5"
    assert given_slot(text, "[RequestMemory = 1000; RequestDisk = 1]").memory_mb == 1000


def test_a_rewrite_that_no_longer_fits_falls_back_to_the_request() -> None:
    """1000 MB rounds to 1024, which a 1000 MB slot lacks: the job's own 1000 MB is used."""
    ad = "[RequestMemory = 1000; RequestDisk = 1]"
    assert given_slot("", ad, memory_mb=1000).memory_mb == 1000


def test_must_modify_refuses_instead_of_falling_back() -> None:
    """With MUST_MODIFY_REQUEST_EXPRS the rounded request stands, and does not fit."""
    result = carved(
        "MUST_MODIFY_REQUEST_EXPRS = true",
        "[RequestMemory = 1000; RequestDisk = 1]",
        memory_mb=1000,
    )
    assert isinstance(result, NoFit)
    assert result.shortfalls == (Shortfall("Memory", 1024, 1000),)
    assert str(result.shortfalls[0]) == "Memory: 1024 requested, 1000 available (24 short)"


def test_the_request_is_read_without_checking_it_fits() -> None:
    """resource_request gives the rounded request even when the slot is too small for it
    (what a negotiator compares against several slots)."""
    layout, _ = layout_of()
    ad = job("[RequestCpus = 20; RequestMemory = 100; RequestDisk = 1; RequestCogs = 1]")
    found = resource_request(config(BASE), layout.slots[0], ad)
    assert found == ResourceRequest(20, 128, 1024, {"Cogs": 1})


def test_a_schedd_override_wins_over_the_job_request() -> None:
    """``_condor_RequestCpus`` replaces RequestCpus."""
    ad = "[RequestCpus = 1; _condor_RequestCpus = 4; RequestMemory = 1; RequestDisk = 1]"
    assert given_slot("", ad).cpus == 4


def test_a_job_without_a_memory_request_is_refused() -> None:
    """No RequestMemory: no dynamic slot, and the reason says so."""
    result = carved("", "[RequestCpus = 1; RequestDisk = 1]")
    assert isinstance(result, NoFit)
    assert "RequestMemory" in result.reason


def test_every_short_resource_is_listed() -> None:
    """A request too big in Cpus and Cogs lists both, with the amounts."""
    result = carved("", "[RequestCpus = 9; RequestMemory = 1; RequestDisk = 1; RequestCogs = 5]")
    assert isinstance(result, NoFit)
    assert result.shortfalls == (Shortfall("Cpus", 9, 8), Shortfall("Cogs", 5, 4))
    assert result.reason == (
        "slot1 cannot hold the request: Cpus: 9 requested, 8 available (1 short); "
        "Cogs: 5 requested, 4 available (1 short)"
    )


def test_dynamic_slots_take_the_lowest_free_number() -> None:
    """slot1_1, slot1_2; after slot1_1 goes, the next one is slot1_1 again."""
    layout, inventory = layout_of()
    cfg = config(BASE)
    ad = job("[RequestCpus = 1; RequestMemory = 1; RequestDisk = 1]")
    first = carve_in(layout, 1, ad, cfg, inventory=inventory)
    assert isinstance(first, Carved) and first.layout is not None
    second = carve_in(first.layout, 1, ad, cfg, inventory=inventory)
    assert isinstance(second, Carved) and second.layout is not None
    assert [s.name("ep") for s in second.layout.slots] == ["slot1@ep", "slot1_1@ep", "slot1_2@ep"]
    emptied = release_in(second.layout, 1, 1)
    assert next_sub_id(emptied, 1) == 1


def test_custom_resources_and_devices_are_carved() -> None:
    """RequestCogs and RequestGPUs come out of the p-slot; GPUs as the first free devices."""
    layout, inventory = layout_of(detected=[gpus(("GPU-a", 7.0), ("GPU-b", 8.0))])
    ad = job("[RequestMemory = 1; RequestDisk = 1; RequestCogs = 3; RequestGPUs = 1]")
    result = carve_in(layout, 1, ad, config(BASE), inventory=inventory)
    assert isinstance(result, Carved)
    assert result.dslot.resources.custom == {"Cogs": 3, "GPUs": 1}
    assert result.dslot.resources.devices == {"GPUs": ("GPU-a",)}
    assert result.pslot.resources.custom == {"Cogs": 1, "GPUs": 1}
    assert result.pslot.resources.devices == {"GPUs": ("GPU-b",)}
    assert result.pslot.total.devices == {"GPUs": ("GPU-a", "GPU-b")}


def test_require_gpus_chooses_matching_devices() -> None:
    """RequireGPUs = Capability >= 8.0 takes GPU-b; a second such job finds none left."""
    layout, inventory = layout_of(detected=[gpus(("GPU-a", 7.0), ("GPU-b", 8.0))])
    ad = job(
        "[RequestMemory = 1; RequestDisk = 1; RequestGPUs = 1; RequireGPUs = Capability >= 8.0]"
    )
    first = carve_in(layout, 1, ad, config(BASE), inventory=inventory)
    assert isinstance(first, Carved) and first.layout is not None
    assert first.dslot.resources.devices == {"GPUs": ("GPU-b",)}
    second = carve_in(first.layout, 1, ad, config(BASE), inventory=inventory)
    assert isinstance(second, NoFit)
    assert second.shortfalls[0].resource == "GPUs"
    assert "matching Capability >= 8" in second.reason


def test_only_partitionable_slots_are_carved() -> None:
    """Carving a static slot is a programming error."""
    layout, _ = layout_of("NUM_SLOTS = 2")
    with pytest.raises(EpError, match="slot1 is static"):
        carve(layout.slots[0], job("[RequestMemory = 1; RequestDisk = 1]"), config(BASE), sub_id=1)


def test_a_foreign_dynamic_slot_cannot_be_released() -> None:
    """release refuses a dynamic slot of another parent."""
    layout, _ = layout_of()
    stranger = Slot(2, 0, "dynamic", layout.slots[0].total, layout.slots[0].total, "/x", 1)
    with pytest.raises(EpError, match="not a dynamic slot of slot1"):
        release(layout.slots[0], stranger)


request_ads = st.tuples(
    st.integers(0, 3), st.integers(1, 2000), st.integers(1, 100_000), st.integers(0, 2)
).map(
    lambda r: job(
        f"[RequestCpus = {r[0]}; RequestMemory = {r[1]}; RequestDisk = {r[2]}; "
        f"RequestCogs = {r[3]}; RequestGPUs = {r[3] % 2}]"
    )
)


@given(st.lists(request_ads, min_size=1, max_size=6), st.randoms())
def test_carving_then_releasing_restores_the_partitionable_slot(
    requests: list[ClassAd], rng: object
) -> None:
    """Whatever is carved, giving every dynamic slot back (in any order) restores slot1, and
    while carved the parts add up to the whole."""
    layout, inventory = layout_of(detected=[gpus(("GPU-a", 7.0), ("GPU-b", 8.0))])
    original = layout
    cfg = config(BASE)
    for ad in requests:
        result = carve_in(layout, 1, ad, cfg, inventory=inventory)
        if isinstance(result, Carved):
            assert result.layout is not None
            layout = result.layout
    parts = layout.slots
    assert sum(s.resources.cpus for s in parts) == 8
    assert sum(s.resources.memory_mb for s in parts) == 8192
    assert sum(s.resources.custom["Cogs"] for s in parts) == 4
    assigned = [d for s in parts for d in s.resources.devices.get("GPUs", ())]
    assert sorted(assigned) == ["GPU-a", "GPU-b"]
    subs = [s.sub_id for s in parts if s.sub_id is not None]
    rng.shuffle(subs)  # type: ignore[attr-defined]
    for sub in subs:
        layout = release_in(layout, 1, sub)
    assert layout == original


# -- consumption policies and slot weight ---------------------------------------------------


def pslot_of(text: str) -> Slot:
    """slot1 of BASE + ``text`` on the 8-Cpu machine."""
    return layout_of(text)[0].slots[0]


def test_consumption_defaults_quantize_the_requests() -> None:
    """CONSUMPTION_CPUS/MEMORY/DISK default to quantize(target.RequestX, {1|128|1024}); a
    custom resource consumes its request, 0 when the job has none."""
    cfg = config(BASE)
    result = compute_consumption(
        cfg, pslot_of(""), job("[RequestCpus = 2; RequestMemory = 1000; RequestDisk = 5000]")
    )
    assert result.amounts == {"Cpus": 2, "Memory": 1024, "Disk": 5120, "Cogs": 0}
    assert result.problems == ()


def test_consumption_expressions_name_their_knobs() -> None:
    """A slot type's CONSUMPTION_<res> wins over the machine's; custom resources default to
    their request; Swap consumes nothing and has no expression."""
    cfg = config(BASE + "SLOT_TYPE_1_CONSUMPTION_Cogs = 1")
    found = consumption_expressions(cfg, 1, ["Cpus", "Memory", "Disk", "Swap", "Cogs"])
    assert found["Cpus"] == ("CONSUMPTION_CPUS", "quantize(target.RequestCpus,{1})")
    assert found["Cogs"] == ("SLOT_TYPE_1_CONSUMPTION_Cogs", "1")
    assert "Swap" not in found
    assert consumption_expressions(cfg, 2, ["Cogs"])["Cogs"] == (
        "ConsumptionCogs",
        "ifthenelse(target.RequestCogs =?= undefined, 0, target.RequestCogs)",
    )


def test_a_consumption_that_is_not_a_number_refuses_the_match() -> None:
    """A consumption expression giving a negative number makes the carve a NoFit naming
    the knob."""
    text = (
        "use FEATURE : PartitionableSlot\nSLOT_TYPE_1_CONSUMPTION_POLICY = true\n"
        "CONSUMPTION_MEMORY = -1"
    )
    result = carved(text, "[RequestCpus = 1; RequestMemory = 1; RequestDisk = 1]")
    assert isinstance(result, NoFit)
    assert result.reason.startswith("CONSUMPTION_MEMORY = -1 gives -1")


def test_a_consumption_of_nothing_refuses_the_match() -> None:
    """HTCondor refuses a match that would take nothing from the slot."""
    text = (
        "CONSUMPTION_POLICY = true\n"
        "CONSUMPTION_CPUS = 0\nCONSUMPTION_MEMORY = 0\nCONSUMPTION_DISK = 0"
    )
    result = carved(text, "[RequestCpus = 1; RequestMemory = 1; RequestDisk = 1]")
    assert isinstance(result, NoFit)
    assert result.reason == "the consumption policy takes nothing from the slot"


WEIGHTS = [
    ("", 8),
    ("SLOT_WEIGHT = Memory / 1024", 8),
    ("SLOT_WEIGHT = Cpus + Disk / 1048576", 9),
    ("SLOT_WEIGHT = 2 * Cpus\nSLOT_TYPE_0_SLOT_WEIGHT = Cpus / 2", 4),
]


@pytest.mark.parametrize(("text", "weight"), WEIGHTS)
def test_slot_weight_uses_cpus_memory_and_disk(text: str, weight: float) -> None:
    """SLOT_WEIGHT defaults to Cpus; a slot type's SLOT_WEIGHT wins."""
    pslot = pslot_of(text)
    assert slot_weight(config(BASE + text), pslot.resources, pslot.type_id) == weight


def test_a_slot_weight_using_other_attributes_is_an_error() -> None:
    """Only Cpus, Memory and Disk are defined for SLOT_WEIGHT: ``KFlops`` makes it undefined,
    a SlotConfigError naming the knob."""
    text = "SLOT_WEIGHT = Cpus * KFlops"
    with pytest.raises(SlotConfigError) as caught:
        slot_weight(config(BASE + text), pslot_of(text).resources)
    assert "SLOT_WEIGHT: 'Cpus * KFlops' gives UNDEFINED, not a number" in str(caught.value)


def test_the_cost_of_a_match_is_the_weight_it_takes() -> None:
    """With SLOT_WEIGHT = Cpus a 3-Cpu consumption costs 3."""
    cfg = config(BASE + "SLOT_WEIGHT = Cpus")
    pslot = pslot_of("")
    consumption = compute_consumption(
        cfg, pslot, job("[RequestCpus = 3; RequestMemory = 1; RequestDisk = 1]")
    )
    assert consumption_cost(cfg, pslot, consumption) == 3
