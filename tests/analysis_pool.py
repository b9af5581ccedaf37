"""A small pool of real slot ads (built by epcore.slots) and jobs for the analysis tests."""

from __future__ import annotations

from collections.abc import Mapping

from epcore.classad import ClassAd, parse_ad
from epcore.config import Config
from epcore.slots.ads import build_slot_ads
from epcore.slots.model import Slot, SlotLayout, SlotResources
from epcore.slots.slot_status import ClaimInfo, SlotStatus
from epcore.testing.host import FakeMachineHost
from epcore.types import HostReadings, MachineInventory

#: 2026-11-22 03:10:00 UTC.
NOW = 1_795_317_000
HOST = "ep.example.org"
EXECUTE = "/var/lib/condor/execute"
QUIET = HostReadings(load_avg=0.0, condor_load_avg=0.0, keyboard_idle=5000, console_idle=5000)
UNCLAIMED = SlotStatus("Unclaimed", "Idle", NOW - 60, NOW - 60)


def claimed_by(user: str) -> SlotStatus:
    """A slot claimed and busy for ``user`` (``alice@submit.example.org``)."""
    claim = ClaimInfo(user, user, "submit.example.org")
    return SlotStatus("Claimed", "Busy", NOW - 60, NOW - 60, claim=claim)


def share(cpus: int, memory_mb: int) -> SlotResources:
    """Slot resources with these CPUs and memory and a fixed disk."""
    return SlotResources(cpus, memory_mb, 1_000_000, 500_000, {}, {})


def pool(
    config_text: str = "",
    memories: tuple[int, ...] = (1024, 2048, 4096, 8192),
    statuses: Mapping[str, SlotStatus] | None = None,
) -> list[ClassAd]:
    """One static slot per memory size (1 CPU each), Unclaimed unless ``statuses`` says."""
    cpus = len(memories)
    total = sum(memories)
    host = FakeMachineHost(logical_cpus=cpus, physical_cpus=cpus, physical_memory_mb=total)
    config = Config.from_text(config_text, host=host)
    inventory = MachineInventory(
        cpus=cpus,
        physical_cpus=cpus,
        memory_mb=total,
        disk_kb=4_000_000,
        swap_kb=2_000_000,
        detected_cpus=cpus,
        detected_memory_mb=total,
        custom={},
        disk_by_path={EXECUTE: 4_000_000},
    )
    slots = tuple(
        Slot(n, 1, "static", share(1, memory), share(1, memory), EXECUTE)
        for n, memory in enumerate(memories, start=1)
    )
    chosen = {f"slot{n}": UNCLAIMED for n in range(1, cpus + 1)}
    chosen.update(statuses or {})
    return build_slot_ads(config, inventory, SlotLayout(slots), QUIET, chosen, NOW, host_name=HOST)


def partitionable_pool(left_cpus: int, left_memory: int) -> list[ClassAd]:
    """One partitionable slot of 4 CPUs and 8192 MB with this much left, Unclaimed."""
    host = FakeMachineHost(logical_cpus=4, physical_cpus=4, physical_memory_mb=8192)
    config = Config.from_text("", host=host)
    inventory = MachineInventory(
        cpus=4,
        physical_cpus=4,
        memory_mb=8192,
        disk_kb=4_000_000,
        swap_kb=2_000_000,
        detected_cpus=4,
        detected_memory_mb=8192,
        custom={},
        disk_by_path={EXECUTE: 4_000_000},
    )
    whole = share(4, 8192)
    left = share(left_cpus, left_memory)
    layout = SlotLayout((Slot(1, 1, "partitionable", left, whole, EXECUTE),))
    return build_slot_ads(
        config, inventory, layout, QUIET, {"slot1": UNCLAIMED}, NOW, host_name=HOST
    )


def job(requirements: str | None = None, **attributes: object) -> ClassAd:
    """An idle job ad 7.0 of alice asking 1 CPU, 1024 MB and 1000 KB of disk."""
    ad = parse_ad(
        """[ ClusterId = 7; ProcId = 0; Owner = "alice"; User = "alice@submit.example.org";
             JobStatus = 1; RequestCpus = 1; RequestMemory = 1024; RequestDisk = 1000;
             Cmd = "/bin/sleep"; Arguments = "60" ]"""
    )
    if requirements is not None:
        ad["Requirements"] = parse_ad(f"[ r = {requirements} ]")["r"]
    for name, value in attributes.items():
        ad[name] = value
    return ad


#: The Requirements condor_submit would write for a vanilla job, give or take.
STANDARD = (
    '(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk)'
    " && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus)"
)
