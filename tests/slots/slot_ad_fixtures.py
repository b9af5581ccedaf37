"""Machines, layouts and builders shared by the slot-ad tests (hand-made layouts, fake hosts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.slots.ads import build_slot_ads
from epcore.slots.model import Slot, SlotLayout, SlotResources
from epcore.slots.slot_status import (
    Benchmarks,
    ClaimInfo,
    PreemptingClaim,
    RunningJob,
    SlotStatus,
)
from epcore.testing.host import FakeMachineHost
from epcore.types import (
    DetectedResource,
    HostReadings,
    MachineAttribute,
    MachineInventory,
    ResourceDevice,
)

#: 2023-11-14 22:13:20 UTC, a Tuesday.
NOW = 1_700_000_000
HOST = "ep.example.org"
EXECUTE = "/var/lib/condor/execute"
QUIET = HostReadings(load_avg=0.0, condor_load_avg=0.0, keyboard_idle=5000, console_idle=5000)


def config_of(text: str = "", *, cpus: int = 4, memory_mb: int = 8192) -> Config:
    """``text`` read as the configuration of a fake Linux machine with these counts."""
    host = FakeMachineHost(logical_cpus=cpus, physical_cpus=cpus, physical_memory_mb=memory_mb)
    return Config.from_text(text, host=host)


def inventory_of(
    cpus: int = 4,
    memory_mb: int = 8192,
    disk_kb: int = 4_000_000,
    swap_kb: int = 2_000_000,
    custom: Mapping[str, DetectedResource] | None = None,
) -> MachineInventory:
    """A machine inventory with these amounts (detected = configured)."""
    return MachineInventory(
        cpus=cpus,
        physical_cpus=cpus,
        memory_mb=memory_mb,
        disk_kb=disk_kb,
        swap_kb=swap_kb,
        detected_cpus=cpus,
        detected_memory_mb=memory_mb,
        custom=dict(custom or {}),
        disk_by_path={EXECUTE: disk_kb},
    )


def resources(
    cpus: float = 1,
    memory_mb: int = 2048,
    disk_kb: int = 1_000_000,
    swap_kb: int = 500_000,
    custom: Mapping[str, float] | None = None,
    devices: Mapping[str, tuple[str, ...]] | None = None,
) -> SlotResources:
    """Slot resources with these amounts."""
    return SlotResources(cpus, memory_mb, disk_kb, swap_kb, dict(custom or {}), dict(devices or {}))


def static_slots(count: int = 4, type_id: int = 1, **amounts: object) -> SlotLayout:
    """``count`` identical static slots slot1..slotN."""
    share = resources(**amounts)  # type: ignore[arg-type]
    return SlotLayout(
        tuple(Slot(n, type_id, "static", share, share, EXECUTE) for n in range(1, count + 1))
    )


def partitionable_with_dynamic(
    children: Sequence[SlotResources] = (resources(cpus=1, memory_mb=1024),),
    whole: SlotResources | None = None,
) -> SlotLayout:
    """slot1 partitionable (the whole machine), followed by dynamic slots carved from it."""
    whole = whole or resources(cpus=4, memory_mb=8192, disk_kb=4_000_000, swap_kb=2_000_000)
    left = SlotResources(
        whole.cpus - sum(child.cpus for child in children),
        whole.memory_mb - sum(child.memory_mb for child in children),
        whole.disk_kb - sum(child.disk_kb for child in children),
        whole.swap_kb,
        {
            name: amount - sum(child.custom.get(name, 0) for child in children)
            for name, amount in whole.custom.items()
        },
        {
            name: tuple(
                i for i in ids if all(i not in child.devices.get(name, ()) for child in children)
            )
            for name, ids in whole.devices.items()
        },
    )
    slots = [Slot(1, 1, "partitionable", left, whole, EXECUTE)]
    slots += [
        Slot(1, 1, "dynamic", child, child, EXECUTE, sub_id=index)
        for index, child in enumerate(children, start=1)
    ]
    return SlotLayout(tuple(slots))


def gpus(*devices: tuple[str, float]) -> dict[str, DetectedResource]:
    """A GPUs custom resource with devices (id, Capability) that have property ads."""
    found = tuple(
        ResourceDevice(device_id, {"Capability": capability, "GlobalMemoryMb": 16000})
        for device_id, capability in devices
    )
    return {"GPUs": DetectedResource("GPUs", len(found), found, "test")}


def build(
    config: Config,
    layout: SlotLayout,
    inventory: MachineInventory | None = None,
    *,
    statuses: Mapping[str, SlotStatus] | None = None,
    readings: HostReadings = QUIET,
    now: float = NOW,
    started_at: float | None = None,
    extra: Sequence[MachineAttribute] = (),
    benchmarks: Benchmarks | None = None,
    utc_offset: int = 0,
) -> list[ClassAd]:
    """build_slot_ads with the test defaults."""
    return build_slot_ads(
        config,
        inventory or inventory_of(),
        layout,
        readings,
        statuses or {},
        now,
        host_name=HOST,
        extra_attributes=extra,
        started_at=started_at,
        benchmarks=benchmarks,
        utc_offset=utc_offset,
    )


def by_name(ads: Sequence[ClassAd]) -> dict[str, ClassAd]:
    """The ads by their short slot name (slot1, slot1_2)."""
    result = {}
    for ad in ads:
        name = ad.evaluate("Name")
        assert isinstance(name, str)
        result[name.split("@")[0]] = ad
    return result


# -- a slot of each kind, with everything that can be in an ad -------------------------------

#: A claimed slot's time so far: ClaimedIdle less than a second is not published.
TIME_TOTALS = (("UnclaimedIdle", 30.0), ("ClaimedIdle", 0.4), ("ClaimedBusy", 950.0))
CLAIMED = SlotStatus(
    "Claimed",
    "Busy",
    current_rank=1.0,
    claim=ClaimInfo(
        "coltrane@example.org",
        "coltrane",
        "submit.example.org",
        60,
        0,
        accounting_group="group_jazz.coltrane",
        concurrency_limits="sax",
    ),
    job=RunningJob("152.3", 1_699_999_000, 50.0),
    preempting=PreemptingClaim("miles", "miles@example.org", 5.0),
    time_totals=TIME_TOTALS,
)
SCENARIO_CONFIG = "STARTD_SLOT_ATTRS = State\nCONSUMPTION_POLICY = True\n"
STATUSES = {"slot1": CLAIMED, "slot2_1": CLAIMED}


def rich_scenario() -> tuple[dict[str, ClassAd], dict[str, Slot]]:
    """slot1 static and claimed, slot2 partitionable, slot2_1 dynamic and claimed; one GPU
    each, with a property ad."""
    devices = [("GPU-0", 8.0), ("GPU-1", 8.0), ("GPU-2", 7.0), ("GPU-3", 7.0)]
    custom = gpus(*devices)
    static = resources(cpus=1, custom={"GPUs": 1}, devices={"GPUs": ("GPU-0",)})
    whole = resources(cpus=3, custom={"GPUs": 3}, devices={"GPUs": ("GPU-1", "GPU-2", "GPU-3")})
    child = resources(cpus=1, custom={"GPUs": 1}, devices={"GPUs": ("GPU-1",)})
    family = partitionable_with_dynamic([child], whole).slots
    slots = [
        Slot(1, 1, "static", static, static, EXECUTE),
        *(Slot(2, 2, s.kind, s.resources, s.total, EXECUTE, s.sub_id) for s in family),
    ]
    ads = build(
        config_of(SCENARIO_CONFIG),
        SlotLayout(tuple(slots)),
        inventory_of(custom=custom),
        statuses=STATUSES,
        benchmarks=Benchmarks(mips=2500, kflops=700000, last_run=1_699_990_000),
    )
    names = ["slot1", "slot2", "slot2_1"]
    return dict(zip(names, ads, strict=True)), dict(zip(names, slots, strict=True))
