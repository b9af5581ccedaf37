"""Every slot example of the seeds gives the slots and values its text promises.

The configuration is read from the seed files themselves (file and lines in each test), on
machines built directly as MachineInventory records: the 4-core / 256 MB machine of seed 000's
"Dividing System Resources" unless the example says otherwise.
"""

from __future__ import annotations

import pytest
from slot_helpers import config, gpus, job, machine, seed_lines

from epcore.errors import SlotConfigError
from epcore.slots.consumption import compute_consumption, consumption_cost, slot_weight
from epcore.slots.dynamic import Carved, NoFit, carve_in
from epcore.slots.layout import plan, plan_slots
from epcore.slots.model import SlotLayout, SlotResources
from epcore.slots.slot_types import read_slot_types
from epcore.types import DetectedResource


def resources(r: SlotResources) -> tuple[float, int, int, int]:
    """(Cpus, Memory MB, Disk KB, Swap KB)."""
    return (r.cpus, r.memory_mb, r.disk_kb, r.swap_kb)


def only_type(line: str, count: int = 1, **machine_args: object) -> list[SlotResources]:
    """The slots of a configuration holding just ``line`` (a SLOT_TYPE_<N> line) with
    ``count`` slots of that type."""
    type_id = line.split("=")[0].strip().removeprefix("SLOT_TYPE_")
    cfg = config(f"{line}\nNUM_SLOTS_TYPE_{type_id} = {count}")
    layout = plan_slots(cfg, machine(cfg, **machine_args))  # type: ignore[arg-type]
    return [slot.resources for slot in layout.slots]


# -- seed 000 "Partitionable Slots" (lines 81-83) and the default ------------------------------


def test_by_default_one_partitionable_slot_holds_everything() -> None:
    """000 lines 81-83: "By default, each EP starts out with one partitionable slot, which
    represents all the detected resources on the machine"."""
    assert "one partitionable slot" in seed_lines("000", 81, 82)
    cfg = config("")
    (slot,) = plan_slots(cfg, machine(cfg)).slots
    assert (slot.slot_id, slot.kind) == (1, "partitionable")
    assert resources(slot.resources) == (4, 256, 1_000_000, 400_000)


def test_static_slots_feature_gives_one_slot_per_core() -> None:
    """000 lines 130-133: ``use FEATURE : StaticSlots`` gives zero partitionable slots and one
    static 1-core slot per detected core, evenly dividing memory and disk."""
    assert "one static slot per detected core" in seed_lines("000", 130, 133).replace("\n", " ")
    cfg = config("use FEATURE : StaticSlots")
    slots = plan_slots(cfg, machine(cfg)).slots
    assert [(s.slot_id, s.kind) for s in slots] == [(n, "static") for n in (1, 2, 3, 4)]
    assert {resources(s.resources) for s in slots} == {(1, 64, 250_000, 100_000)}


def test_num_slots_makes_that_many_static_slots() -> None:
    """000 lines 154-157: "configure NUM_SLOTS to the integer number of slots desired"; the
    slots divide the machine evenly."""
    assert "configure :macro:`NUM_SLOTS`" in seed_lines("000", 154, 154)
    cfg = config("NUM_SLOTS = 2")
    slots = plan_slots(cfg, machine(cfg)).slots
    assert [(s.kind, resources(s.resources)) for s in slots] == [
        ("static", (2, 128, 500_000, 200_000))
    ] * 2


def test_num_slots_may_not_exceed_the_cores() -> None:
    """000 lines 155-157 (002 line 812): NUM_SLOTS may not advertise more slots than NUM_CPUS
    cores; 8 slots on 4 Cpus is an error naming NUM_SLOTS."""
    assert "more slots than there are cores" in seed_lines("000", 156, 156)
    cfg = config("NUM_SLOTS = 8")
    with pytest.raises(SlotConfigError) as caught:
        plan_slots(cfg, machine(cfg))
    assert str(caught.value) == (
        "<string>, line 2: NUM_SLOTS (8 slots) share 4 Cpus automatically; each slot needs at "
        "least 1, 8 in all (4 too few)"
    )


# -- seed 000 lines 195-203 (002 827-833): four ways to say half of 128 MB ------------------


@pytest.mark.parametrize("line", [197, 199, 201, 203])
def test_half_the_memory_four_ways(line: int) -> None:
    """000 lines 195-203: on a machine with 128 MB, ``mem=64``, ``mem=1/2``, ``mem=50%`` and
    ``mem=auto`` give the same allocation. (``auto`` halves only when a second slot shares
    the memory, so the type has two slots here; a sole auto slot would get all 128 MB.)"""
    slots = only_type(seed_lines("000", line, line).strip(), 2, memory_mb=128)
    assert [s.memory_mb for s in slots] == [64, 64]


def test_a_sole_auto_slot_takes_all_the_memory() -> None:
    """The reading above is forced: with one slot, ``mem=auto`` is all 128 MB, not 64."""
    assert [s.memory_mb for s in only_type("SLOT_TYPE_1 = mem=auto", 1, memory_mb=128)] == [128]


# -- seed 000 lines 236-249 (002 843-853): types 1-3 are equal, and 4-6 ---------------------


@pytest.mark.parametrize(("seed", "first"), [("000", 239), ("002", 843)])
def test_types_one_to_three_and_four_to_six_are_equivalent(seed: str, first: int) -> None:
    """ "Types 1-3 are all equivalent to each other, as are types 4-6" on 4 cores / 256 MB:
    2 Cpus, 128 MB, half the disk and a quarter of the swap; then 1 Cpu, 64 MB and a quarter
    of each."""
    lines = [line for line in seed_lines(seed, first, first + 10).splitlines() if line]
    assert len(lines) == 6 and lines[5] == "SLOT_TYPE_6 = 1/4"
    found = [resources(only_type(line)[0]) for line in lines]
    assert found[:3] == [(2, 128, 500_000, 100_000)] * 3
    assert found[3:] == [(1, 64, 250_000, 100_000)] * 3


# -- seed 000 lines 251-258: 10% to one slot, 90% for the rest -------------------------------


def test_auto_slots_share_what_an_explicit_share_leaves() -> None:
    """000 lines 255-258: "if one slot is defined to use 10% of the memory and the rest define
    it as auto (or leave it undefined), then the rest of the slots will evenly divide 90% of
    the memory between themselves"."""
    assert "evenly divide 90% of" in seed_lines("000", 256, 258).replace("\n", " ")
    text = (
        "SLOT_TYPE_1 = mem=10%\nNUM_SLOTS_TYPE_1 = 1\n"
        "SLOT_TYPE_2 = mem=auto\nNUM_SLOTS_TYPE_2 = 2\n"
        "NUM_SLOTS_TYPE_3 = 1"  # SLOT_TYPE_3 left undefined
    )
    cfg = config(text)
    slots = plan_slots(cfg, machine(cfg, memory_mb=1000)).slots
    assert [s.resources.memory_mb for s in slots] == [100, 300, 300, 300]


# -- seed 000 lines 260-267 (002 857-861): disk auto, one core, 50% of the rest ---------------


def test_the_two_spellings_of_one_core_and_half_the_rest_agree() -> None:
    """000 lines 265 and 267: ``cpus=1, ram=1/2, swap=50%`` and ``cpus=1, disk=auto, 50%``
    both set disk to auto, cores to 1 and everything else to 50%."""
    first = seed_lines("000", 265, 265).strip()
    second = seed_lines("000", 267, 267).strip()
    specs = []
    for line in (first, second):
        cfg = config(f"{line}\nNUM_SLOTS_TYPE_1 = 1")
        (spec,) = read_slot_types(cfg, machine(cfg))
        specs.append([(s.kind, s.amount) for s in (spec.cpus, spec.memory, spec.disk, spec.swap)])
    assert (
        specs[0] == specs[1] == [("absolute", 1), ("fraction", 0.5), ("auto", 0), ("fraction", 0.5)]
    )
    assert (
        resources(only_type(first)[0])
        == resources(only_type(second)[0])
        == (
            1,
            128,
            1_000_000,
            200_000,
        )
    )


# -- custom resources: seed 000 lines 286-320, seed 002 lines 867-886 ----------------------------


def test_cogs_and_actuators() -> None:
    """000 lines 288-289 and 310-320: one partitionable slot with half the Cogs, 6 actuators
    and 50% of the rest; two static slots each with 25% of the Cogs, 1 actuator and 25% of
    the rest. TotalSlotCogs is the slot's share, Cogs what it has."""
    text = seed_lines("000", 288, 289) + seed_lines("000", 310, 320)
    cfg = config(text)
    slots = plan_slots(cfg, machine(cfg)).slots
    assert [(s.slot_id, s.kind) for s in slots] == [
        (1, "partitionable"),
        (2, "static"),
        (3, "static"),
    ]
    assert [resources(s.resources) for s in slots] == [
        (2, 128, 500_000, 200_000),
        (1, 64, 250_000, 100_000),
        (1, 64, 250_000, 100_000),
    ]
    assert [s.total.custom for s in slots] == [
        {"actuator": 6, "Cogs": 8},
        {"actuator": 1, "Cogs": 4},
        {"actuator": 1, "Cogs": 4},
    ]


def test_the_older_gpu_and_actuator_example() -> None:
    """002 lines 867-886: the same layout with MACHINE_RESOURCE_NAMES = gpu, actuator and 16
    gpus; a job requesting 2 gpus and 1 actuator (lines 890-896) fits the partitionable
    slot."""
    text = seed_lines("002", 867, 867) + seed_lines("002", 871, 886)
    cfg = config(text)
    inventory = machine(cfg)
    assert {name: r.quantity for name, r in inventory.custom.items()} == {"actuator": 8, "gpu": 16}
    layout = plan_slots(cfg, inventory)
    assert [s.resources.custom for s in layout.slots] == [
        {"actuator": 6, "gpu": 8},
        {"actuator": 1, "gpu": 4},
        {"actuator": 1, "gpu": 4},
    ]
    request = "[RequestMemory = 64; RequestDisk = 1024; RequestGpu = 2; RequestActuator = 1]"
    result = carve_in(layout, 1, job(request), cfg, inventory=inventory)
    assert isinstance(result, Carved)
    assert result.dslot.resources.custom == {"actuator": 1, "gpu": 2}
    assert result.pslot.resources.custom == {"actuator": 5, "gpu": 6}


# -- GPUs with constraints: seed 000 lines 4147-4170 ---------------------------------------------

SEED_GPUS = gpus(("GPU-aaaa", 8.0), ("GPU-6a96bd13", 7.5), ("GPU-bbbb", 8.6), ("GPU-cccc", 6.1))


def gpu_layout(devices: DetectedResource = SEED_GPUS) -> SlotLayout:
    """The GPU example on 30 Cpus / 10000 MB with four GPUs, two of Capability >= 8.0."""
    cfg = config(seed_lines("000", 4147, 4170))
    return plan_slots(cfg, machine(cfg, cpus=30, memory_mb=10_000, detected=[devices]))


def test_gpus_are_assigned_by_constraint_and_by_id() -> None:
    """000 lines 4149-4170: the partitionable slot gets the two GPUs of Capability >= 8.0 and
    90% of the rest; the small static slot gets GPU-6a96bd13, 1 Cpu and 10 MB; two auto static
    slots split what is left, the one remaining GPU to the first."""
    slots = gpu_layout().slots
    assert [(s.slot_id, s.type_id, s.kind) for s in slots] == [
        (1, 1, "partitionable"),
        (2, 2, "static"),
        (3, 3, "static"),
        (4, 3, "static"),
    ]
    assert [resources(s.resources) for s in slots] == [
        (27, 9000, 900_000, 360_000),
        (1, 10, 33_334, 13_333),
        (1, 495, 33_334, 13_333),
        (1, 495, 33_334, 13_333),
    ]
    assert [s.resources.devices.get("GPUs") for s in slots] == [
        ("GPU-aaaa", "GPU-bbbb"),
        ("GPU-6a96bd13",),
        ("GPU-cccc",),
        None,
    ]
    assert [s.resources.custom["GPUs"] for s in slots] == [2, 1, 1, 0]


def test_the_partitionable_gpu_slot_hands_out_its_own_gpus() -> None:
    """A job asking for one GPU with RequireGPUs = Capability > 8.5 gets GPU-bbbb from slot1."""
    cfg = config(seed_lines("000", 4147, 4170))
    inventory = machine(cfg, cpus=30, memory_mb=10_000, detected=[SEED_GPUS])
    ad = "[RequestMemory = 1; RequestDisk = 1; RequestGPUs = 1; RequireGPUs = Capability > 8.5]"
    result = carve_in(plan_slots(cfg, inventory), 1, job(ad), cfg, inventory=inventory)
    assert isinstance(result, Carved)
    assert result.dslot.resources.devices == {"GPUs": ("GPU-bbbb",)}


# -- dynamic provisioning: seed 000 lines 425-460 (002 1021-1037) -------------------------------


def test_job_a_leaves_seven_cores_and_9216_megabytes() -> None:
    """000 lines 427-460: a p-slot of 10 cores and 10240 MB; JobA (3 cores, 1024 MB, 10240 KB of
    disk) gets Slot1_1 and leaves cpu = 7, memory = 9216, disk = BIG-10240."""
    assert seed_lines("000", 432, 434).split() == [
        "cpu",
        "=",
        "10",
        "memory",
        "=",
        "10240",
        "disk",
        "=",
        "BIG",
    ]
    assert seed_lines("000", 457, 459).split()[:6] == ["cpu", "=", "7", "memory", "=", "9216"]
    cfg = config("")
    big = 50_000_000
    layout = plan_slots(cfg, machine(cfg, cpus=10, memory_mb=10_240, disk_kb=big))
    job_a = job("[RequestCpus = 3; RequestMemory = 1024; RequestDisk = 10240]")
    result = carve_in(layout, 1, job_a, cfg)
    assert isinstance(result, Carved)
    assert result.dslot.name("ep") == "slot1_1@ep"
    assert resources(result.dslot.resources)[:3] == (3, 1024, 10_240)
    assert resources(result.pslot.resources)[:3] == (7, 9216, big - 10_240)


def test_the_modern_way_to_one_partitionable_slot() -> None:
    """000 lines 477-480 and 002 lines 1041-1043: NUM_SLOTS = 1, NUM_SLOTS_TYPE_1 = 1,
    (SLOT_TYPE_1 = 100%,) SLOT_TYPE_1_PARTITIONABLE = TRUE give one p-slot with everything."""
    for text in (seed_lines("000", 477, 480), seed_lines("002", 1041, 1043)):
        cfg = config(text)
        (slot,) = plan_slots(cfg, machine(cfg)).slots
        assert (slot.type_id, slot.kind) == (1, "partitionable")
        assert resources(slot.resources) == (4, 256, 1_000_000, 400_000)


def test_the_default_modify_expressions_round_requests() -> None:
    """000 lines 617-619: quantize(RequestCpus, {1}), quantize(RequestMemory, {128}),
    quantize(RequestDisk, {1024}): 1000 MB becomes 1024, 5000 KB 5120."""
    cfg = config(seed_lines("000", 617, 619).replace("- :macro:`", "").replace("`", ""))
    layout = plan_slots(cfg, machine(cfg))
    ad = job("[RequestCpus = 1; RequestMemory = 100; RequestDisk = 5000]")
    result = carve_in(layout, 1, ad, cfg)
    assert isinstance(result, Carved)
    assert resources(result.dslot.resources)[:3] == (1, 128, 5120)


def test_the_old_memory_rounding_names_an_attribute_slots_lack() -> None:
    """002 line 1096's quantize(RequestMemory, {TotalSlotMem / TotalSlotCpus / 4}) refers to
    TotalSlotMem, which no slot ad has: the rewrite is an error, so the request stands (as in
    HTCondor, which only takes an integer result)."""
    cfg = config(seed_lines("002", 1095, 1097))
    result = carve_in(
        plan_slots(cfg, machine(cfg)), 1, job("[RequestMemory = 100; RequestDisk = 5000]"), cfg
    )
    assert isinstance(result, Carved)
    assert (result.dslot.resources.memory_mb, result.dslot.resources.disk_kb) == (100, 5120)


# -- consumption policies: seed 000 lines 4213-4264 ----------------------------------------------


def test_consumption_defaults_are_the_seed_ones() -> None:
    """000 lines 4215-4217 give the CONSUMPTION_CPUS/MEMORY/DISK defaults the configuration
    has."""
    cfg = config("")
    for line in seed_lines("000", 4215, 4217).splitlines():
        name, _, value = line.partition(" = ")
        assert cfg.get(name) == value


def test_a_cpu_consumption_policy_lets_jobs_take_cores_until_none_are_left() -> None:
    """000 lines 4227-4229 and 4241-4243: 8 cores; each match consumes TARGET.RequestCpus
    cores (memory and disk by the defaults) and costs that many in SLOT_WEIGHT = Cpus; a
    third 3-core job no longer fits."""
    cfg = config(seed_lines("000", 4227, 4229) + seed_lines("000", 4241, 4243))
    inventory = machine(cfg, cpus=8, memory_mb=8192)
    layout = plan_slots(cfg, inventory)
    ad = job("[RequestCpus = 3; RequestMemory = 1000; RequestDisk = 5000]")
    pslot = layout.slots[0]
    assert compute_consumption(cfg, pslot, ad).amounts == {"Cpus": 3, "Memory": 1024, "Disk": 5120}
    assert consumption_cost(cfg, pslot, compute_consumption(cfg, pslot, ad)) == 3
    for _ in range(2):
        result = carve_in(layout, 1, ad, cfg)
        assert isinstance(result, Carved) and result.layout is not None
        layout = result.layout
    assert slot_weight(cfg, layout.slots[0].resources, 1) == 2
    third = carve_in(layout, 1, ad, cfg)
    assert isinstance(third, NoFit)
    assert third.reason.endswith("Cpus: 3 requested, 2 available (1 short)")


def test_the_gpu_consumption_policy_reads_request_gpu() -> None:
    """000 lines 4252-4256 and 4262-4264: the policy consumes TARGET.RequestGpu gpus. A job
    with RequestGpu = 2 takes 2 of the 4; the seed's name differs from the resource (gpus,
    inventory (r) #21), so a job with only RequestGpus cannot be matched: the expression is
    undefined, and the refusal names the knob."""
    cfg = config(seed_lines("000", 4252, 4256) + seed_lines("000", 4262, 4264))
    inventory = machine(cfg, cpus=8, memory_mb=8192)
    layout = plan_slots(cfg, inventory)
    assert layout.slots[0].resources.custom == {"gpus": 4}
    with_gpu = job("[RequestCpus = 1; RequestMemory = 1; RequestDisk = 1; RequestGpu = 2]")
    result = carve_in(layout, 1, with_gpu, cfg, inventory=inventory)
    assert isinstance(result, Carved)
    assert result.dslot.resources.custom == {"gpus": 2}
    with_gpus = job("[RequestCpus = 1; RequestMemory = 1; RequestDisk = 1; RequestGpus = 2]")
    refused = carve_in(layout, 1, with_gpus, cfg, inventory=inventory)
    assert isinstance(refused, NoFit)
    assert refused.reason.startswith("SLOT_TYPE_2_CONSUMPTION_gpus = TARGET.RequestGpu gives")


@pytest.mark.parametrize(
    "lines",
    [
        (("000", 288, 289), ("000", 310, 320)),
        (("002", 867, 867), ("002", 871, 886)),
        (("000", 4147, 4170),),
        (("000", 4252, 4256),),
    ],
)
def test_the_seed_layouts_ignore_nothing(lines: tuple[tuple[str, int, int], ...]) -> None:
    """No seed layout names a resource its machine lacks, so none is ignored with a warning."""
    cfg = config("".join(seed_lines(*where) for where in lines))
    found = plan(cfg, machine(cfg, cpus=30, memory_mb=10_000, detected=[SEED_GPUS]))
    assert found.warnings == ()
    assert len(found.layout.slots) >= 1
