"""End to end: configuration text -> inventory -> slot plan -> (carving) -> slot ads, for the
seeds' custom-resource and GPU examples."""

from __future__ import annotations

import pytest
from slot_ad_fixtures import HOST, NOW, by_name

from epcore.classad import ClassAd, parse_ad, symmetric_match
from epcore.config import Config
from epcore.slots.ads import build_slot_ads
from epcore.slots.dynamic import Carved, carve_in
from epcore.slots.inventory import build_inventory
from epcore.slots.layout import plan_slots
from epcore.slots.model import SlotLayout
from epcore.testing.host import FakeMachineHost
from epcore.types import DetectedResource, HostReadings, MachineInventory, ResourceDevice

READINGS = HostReadings(load_avg=0.0, condor_load_avg=0.0, keyboard_idle=5000, console_idle=5000)
EXECUTE = "/execute"

COGS = """
MACHINE_RESOURCE_Cogs = 16
MACHINE_RESOURCE_actuator = 8

# declare one partitionable slot with half of the Cogs, 6 actuators, and
# 50% of all other resources:
SLOT_TYPE_1 = cogs=50%,actuator=6,50%
SLOT_TYPE_1_PARTITIONABLE = TRUE
NUM_SLOTS_TYPE_1 = 1

# declare two static slots, each with 25% of the Cogs, 1 actuator, and
# 25% of all other resources:
SLOT_TYPE_2 = cogs=25%,actuator=1,25%
SLOT_TYPE_2_PARTITIONABLE = FALSE
NUM_SLOTS_TYPE_2 = 2
"""

GPU_SLOTS = """
use feature : GPUs
# declare a partitionable slot that has the 2 powerful GPUs
# and 90% of the other resources:
SLOT_TYPE_1 @=slot
   GPUs = 2 : Capability >= 8.0
   90%
@slot
SLOT_TYPE_1_PARTITIONABLE = TRUE
NUM_SLOTS_TYPE_1 = 1

# declare a small static slot and assign it a specific GPU by id
SLOT_TYPE_2 @=slot
   GPUs = 1 : "GPU-6a96bd13"
   CPUs = 1
\t\t   Memory = 10
@slot
SLOT_TYPE_2_PARTITIONABLE = FALSE
NUM_SLOTS_TYPE_2 = 1

# declare two static slots that split up the remaining resources which may or may not include GPUs
SLOT_TYPE_3 = auto
SLOT_TYPE_3_PARTITIONABLE = FALSE
NUM_SLOTS_TYPE_3 = 2
"""


def gpu(device_id: str, capability: float) -> ResourceDevice:
    return ResourceDevice(device_id, {"Capability": capability, "DeviceName": "Fake GPU"})


GPU_DEVICES = (
    gpu("GPU-11111111", 8.0),
    gpu("GPU-6a96bd13", 6.1),
    gpu("GPU-22222222", 8.0),
    gpu("GPU-33333333", 7.5),
)


def machine(
    text: str, gpus: tuple[ResourceDevice, ...] = (), cpus: int = 8
) -> tuple[Config, MachineInventory]:
    """The configuration and inventory of a 16 GB machine with ``cpus`` cores and ``gpus``
    (the GPU example needs 30 cores: 90% of them, one more, and one for each auto slot)."""
    host = FakeMachineHost(logical_cpus=cpus, physical_cpus=cpus, physical_memory_mb=16384)
    config = Config.from_text(f"EXECUTE = {EXECUTE}\n{text}", host=host)
    detected = [
        DetectedResource("Cpus", cpus),
        DetectedResource("Memory", 16384),
        DetectedResource("Disk", 8_000_000),
        DetectedResource("Swap", 1_000_000),
    ]
    if gpus:
        detected.append(DetectedResource("GPUs", len(gpus), gpus, "test"))
    return config, build_inventory(config, detected)


def ads_of(config: Config, inventory: MachineInventory, layout: SlotLayout) -> dict[str, ClassAd]:
    ads = build_slot_ads(config, inventory, layout, READINGS, {}, NOW, host_name=HOST)
    return by_name(ads)


def test_cogs_and_actuators_seed_example() -> None:
    """The seed's custom resources give TotalCogs, DetectedCogs, TotalSlotCogs and Cogs."""
    config, inventory = machine(COGS)
    ads = ads_of(config, inventory, plan_slots(config, inventory))
    assert sorted(ads) == ["slot1", "slot2", "slot3"]
    names = ("TotalCogs", "DetectedCogs", "TotalSlotCogs", "Cogs", "actuator", "Totalactuator")
    assert [ads["slot1"].evaluate(n) for n in names] == [16, 16, 8, 8, 6, 8]
    for static in ("slot2", "slot3"):
        assert [ads[static].evaluate(n) for n in ("Cogs", "actuator", "Cpus")] == [4, 1, 2]


@pytest.mark.parametrize(
    ("cogs", "actuators", "matches"), [(2, 1, True), (8, 6, True), (9, 1, False), (1, 7, False)]
)
def test_partitionable_cogs_slot_matches_requests_that_fit(
    cogs: int, actuators: int, matches: bool
) -> None:
    """The partitionable slot's Requirements compare RequestCogs/RequestActuator with what
    it has (the seed's request_cogs = 2, request_actuator = 1 job fits)."""
    config, inventory = machine(COGS)
    pslot = ads_of(config, inventory, plan_slots(config, inventory))["slot1"]
    job = parse_ad(
        f"[RequestCpus = 1; RequestMemory = 100; RequestDisk = 100; RequestCogs = {cogs};"
        f" RequestActuator = {actuators}; Requirements = true]"
    )
    assert symmetric_match(pslot, job) is matches


def test_gpu_constraint_seed_example() -> None:
    """The seed's GPU slot types: the partitionable slot holds the two Capability 8.0 GPUs,
    slot2 holds GPU-6a96bd13, and every slot carries the property ads of its GPUs."""
    config, inventory = machine(GPU_SLOTS, GPU_DEVICES, cpus=30)
    ads = ads_of(config, inventory, plan_slots(config, inventory))
    pslot, small = ads["slot1"], ads["slot2"]
    assert pslot.evaluate("AssignedGPUs") == "GPU-11111111,GPU-22222222"
    assert str(pslot["AvailableGPUs"]) == "{ GPUs_GPU_11111111,GPUs_GPU_22222222 }"
    assert small.evaluate("AssignedGPUs") == "GPU-6a96bd13"
    nested = small.evaluate("GPUs_GPU_6a96bd13")
    assert isinstance(nested, ClassAd)
    assert nested.evaluate("Capability") == 6.1
    assert [ads[s].evaluate("TotalGPUs") for s in ads] == [4, 4, 4, 4]
    job = parse_ad(
        "[RequestCpus = 1; RequestMemory = 10; RequestDisk = 10; RequestGPUs = 2;"
        " RequireGPUs = Capability >= 8.0;"
        " Requirements = countMatches(MY.RequireGPUs, TARGET.AvailableGPUs) >= RequestGPUs]"
    )
    assert [s for s, ad in sorted(ads.items()) if symmetric_match(ad, job)] == ["slot1"]


def test_carved_dynamic_slot_ads() -> None:
    """Carving a job from the partitionable slot gives a slot1_1 ad with the job's GPU and a
    parent ad that offers only what is left."""
    config, inventory = machine(GPU_SLOTS, GPU_DEVICES, cpus=30)
    layout = plan_slots(config, inventory)
    job = parse_ad(
        "[RequestCpus = 2; RequestMemory = 1000; RequestDisk = 1000; RequestGPUs = 1;"
        " Requirements = true]"
    )
    carved = carve_in(layout, 1, job, config, inventory=inventory)
    assert isinstance(carved, Carved)
    ads = ads_of(config, inventory, carved.layout)
    dynamic, parent = ads["slot1_1"], ads["slot1"]
    assert (dynamic.evaluate("SlotType"), dynamic.evaluate("Cpus"), dynamic.evaluate("GPUs")) == (
        "Dynamic",
        2,
        1,
    )
    assert dynamic.evaluate("AssignedGPUs") == "GPU-11111111"
    assert parent.evaluate("GPUs") == 1
    assert str(parent["AvailableGPUs"]) == "{ GPUs_GPU_22222222 }"
    assert parent.evaluate("Cpus") == parent.evaluate("TotalSlotCpus") - 2
    assert dynamic.evaluate("Name") == f"slot1_1@{HOST}"
