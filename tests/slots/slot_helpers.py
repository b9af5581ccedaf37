"""Shared helpers of the slot-model tests: configurations on a fake host, machines built
directly as MachineInventory records, and the seed text the examples come from (read from
the seed documents EPCORE_SEEDS_DIR names, see tests/seed_documents.py)."""

from __future__ import annotations

from collections.abc import Sequence

from seed_documents import seed_file

from epcore.classad import ClassAd, parse_ad
from epcore.config import Config, HostFacts, MemoryHost
from epcore.slots.inventory import custom_resources
from epcore.slots.layout import SlotPlan, plan
from epcore.slots.model import Slot, SlotResources
from epcore.types import DetectedResource, MachineInventory, ResourceDevice

#: The EXECUTE directory of every test configuration (the default table's is $(LOCAL_DIR)/...).
EXECUTE = "/execute"


def fake_host(cores: int = 4, memory_mb: int = 256) -> MemoryHost:
    """A configuration host whose detected values describe a machine of ``cores`` Cpus."""
    return MemoryHost(
        host_facts=HostFacts(
            hostname="ep",
            full_hostname="ep.example.org",
            detected={
                "DETECTED_CORES": str(cores),
                "DETECTED_PHYSICAL_CPUS": str(cores),
                "DETECTED_CPUS_LIMIT": str(cores),
                "DETECTED_MEMORY": str(memory_mb),
                "ARCH": "X86_64",
                "OPSYS": "LINUX",
            },
            specials={"DETECTED_CPUS": str(cores), "USERNAME": "condor", "PID": "1", "PPID": "0"},
        )
    )


def config(text: str, cores: int = 4, memory_mb: int = 256) -> Config:
    """``text`` read as the whole configuration (EXECUTE set to /execute) on a fake host."""
    return Config.from_text(f"EXECUTE = {EXECUTE}\n{text}", host=fake_host(cores, memory_mb))


def machine(
    cfg: Config,
    *,
    cpus: int = 4,
    memory_mb: int = 256,
    disk_kb: int = 1_000_000,
    swap_kb: int = 400_000,
    detected: Sequence[DetectedResource] = (),
    disk_by_path: dict[str, int] | None = None,
) -> MachineInventory:
    """A MachineInventory built directly, with the custom resources ``cfg`` and ``detected``
    declare (the 4-core / 256 MB machine of the seed examples by default)."""
    return MachineInventory(
        cpus=cpus,
        physical_cpus=cpus,
        memory_mb=memory_mb,
        disk_kb=disk_kb,
        swap_kb=swap_kb,
        detected_cpus=cpus,
        detected_memory_mb=memory_mb,
        custom=custom_resources(cfg, detected),
        disk_by_path=disk_by_path or {EXECUTE: disk_kb},
    )


def slots_of(text: str, **machine_args: object) -> tuple[Slot, ...]:
    """The slots ``text`` gives on the machine described by ``machine_args``."""
    return plan_of(text, **machine_args).layout.slots


def plan_of(text: str, **machine_args: object) -> SlotPlan:
    """The slot plan ``text`` gives on the machine described by ``machine_args``."""
    cfg = config(text)
    return plan(cfg, machine(cfg, **machine_args))  # type: ignore[arg-type]


def sole_slot(text: str, **machine_args: object) -> SlotResources:
    """The resources of the only slot ``text`` gives."""
    slots = slots_of(text, **machine_args)
    assert len(slots) == 1, slots
    return slots[0].resources


def gpus(*specs: tuple[str, float]) -> DetectedResource:
    """A detected GPUs resource: one device per (id, Capability)."""
    devices = tuple(ResourceDevice(i, {"Capability": cap}) for i, cap in specs)
    return DetectedResource("GPUs", len(devices), devices, source="test")


def job(text: str) -> ClassAd:
    """A job ad from new-syntax ClassAd text."""
    return parse_ad(text)


def seed_lines(seed: str, first: int, last: int) -> str:
    """Lines ``first``..``last`` (1-based, inclusive) of seed ``seed`` ("000"), each without
    its indentation (the rst blocks mix tabs and spaces; configuration ignores indentation).

    The seeds are read where EPCORE_SEEDS_DIR says; without it the calling test skips."""
    lines = seed_file(seed).read_text(encoding="utf-8").splitlines()[first - 1 : last]
    return "\n".join(line.strip() for line in lines) + "\n"
