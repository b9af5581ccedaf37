"""Must-show 2: the machine attributes the seed documents name, walked one by one.

Every attribute of tests/data/seed_attributes.toml (section (d) of the requirements inventory,
its machine-attribute table) is either in the slot-ad table of epcore.slots.attributes or in
EXCLUDED below with the reason it is not the ad builder's to publish. Every attribute of the
table is then checked, by presence and ClassAd type, in ads built for a static, a
partitionable and a dynamic slot, each in a state where the attribute exists (a claim and a
running job for the claim and job attributes).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from slot_ad_fixtures import (
    SCENARIO_CONFIG,
    STATUSES,
    TIME_TOTALS,
    build,
    config_of,
    gpus,
    inventory_of,
    rich_scenario,
)

from epcore.classad import ClassAd, Expr
from epcore.slots.attributes import ATTRIBUTES_BY_NAME, SLOT_ATTRIBUTES, SlotAttribute, expand
from epcore.slots.model import Slot, SlotLayout
from epcore.slots.resource_attrs import device_attribute
from epcore.slots.slot_status import SlotStatus

SEED_ATTRIBUTES = Path(__file__).resolve().parents[1] / "data" / "seed_attributes.toml"

#: Seed attributes whose names the table spells differently.
ALIASES = {"gpu property attrs": "<name>_<id>"}

#: Seed attributes the slot-ad builder does not publish, and why.
EXCLUDED = {
    "VirtualMachineID": "obsolete: Condor 6.8's name for SlotID (HTCondor publishes it only "
    "with ALLOW_VM_CRUFT)",
    "TotalSlotMem": "seed 002's old MODIFY_REQUEST_EXPR_REQUESTMEMORY default misspells "
    "TotalSlotMemory, which is the attribute HTCondor advertises (and the table lists)",
    "CheckpointPlatform": "obsolete: standard-universe checkpointing is gone",
    "LastHeardFrom": "collector-only: the collector inserts it when an ad arrives",
    "LastPeriodicCheckpoint": "obsolete: standard-universe checkpointing is gone",
    "CurrentTime": "obsolete: old ClassAds' clock attribute, replaced by time()",
    "vm<N>_<attr>": "obsolete: STARTD_VM_EXPRS cross-VM copies, replaced by slot<N>_<attr>",
    "HasDocker": "published by the docker plugin through ep_machine_attributes",
    "DockerVersion": "published by the docker plugin through ep_machine_attributes",
    "HasDockerVolume<NAME>": "published by the docker plugin through ep_machine_attributes",
    "HasSingularity": "published by the apptainer plugin through ep_machine_attributes",
    "SingularityVersion": "published by the apptainer plugin through ep_machine_attributes",
    "SingularityOfflineReason": "published by the apptainer plugin through ep_machine_attributes",
    "HasVM": "published by the VM plugin through ep_machine_attributes",
    "VMOfflineReason": "published by the VM plugin once a VM job fails",
    "VMOfflineTime": "published by the VM plugin once a VM job fails",
    "OfflineUniverses": "published by the daemon once a universe's backend fails (VM plugin)",
    "AvgDrainingBadput": "defrag-only: condor_defrag's own daemon ad",
    "AvgDrainingUnclaimed": "defrag-only: condor_defrag's own daemon ad",
    "DeviceGPUsAverageUsage": "GPU monitoring (condor_gpu_utilization as a startd cron job), "
    "merged into the ad by the startd-cron issue",
    "DeviceGPUsMemoryPeakUsage": "GPU monitoring (condor_gpu_utilization as a startd cron "
    "job), merged into the ad by the startd-cron issue",
    "Absent": "collector-only: the collector marks ads of machines that went away",
}


def inventory_rows() -> list[tuple[str, str]]:
    """(attribute name, status) of every machine attribute the seeds name."""
    data = tomllib.loads(SEED_ATTRIBUTES.read_text(encoding="utf-8"))
    return [(row["name"], row["status"]) for row in data["attribute"]]


ROWS = inventory_rows()


def test_inventory_table_is_found() -> None:
    """The seeds' attribute list is read whole (it holds more than seventy names)."""
    assert len(ROWS) > 70
    assert ("Name", "modern (format changed)") in ROWS


@pytest.mark.parametrize(("name", "status"), ROWS, ids=[name for name, _ in ROWS])
def test_every_inventory_attribute_is_published_or_excluded(name: str, status: str) -> None:
    """Each inventory attribute is in the slot-ad table or excluded with a reason, not both."""
    key = ALIASES.get(name.lower(), name).lower()
    excluded = {excluded.lower() for excluded in EXCLUDED}
    assert (key in ATTRIBUTES_BY_NAME) != (key in excluded), (name, status)


def test_exclusions_name_inventory_attributes() -> None:
    """Every exclusion refers to an attribute the inventory lists (no stale entries)."""
    listed = {name.lower() for name, _ in ROWS}
    assert [name for name in EXCLUDED if name.lower() not in listed] == []


def test_modern_startd_attributes_are_published() -> None:
    """The modern attributes left out are all owned elsewhere (plugins, other issues, the
    collector or condor_defrag), never simply missing."""
    owners = ("plugin", "issue", "collector-only", "defrag-only", "misspells", "daemon")
    for name, status in ROWS:
        if status.startswith("modern") and name in EXCLUDED:
            assert any(owner in EXCLUDED[name] for owner in owners), name


# -- presence and types in built ads ------------------------------------------------------------

ADS, SLOTS = rich_scenario()
PREFIXES = list(ADS)


def concrete_names(spec: SlotAttribute, slot: Slot) -> list[str]:
    """The attribute names ``spec`` stands for in ``slot``'s ad of the scenario."""
    if not spec.is_template:
        return [spec.name]
    if spec.name == "<name>_<id>":
        return [device_attribute("GPUs", i) for i in slot.total.devices["GPUs"]]
    if spec.name == "Consumption<res>":
        return [f"Consumption{res}" for res in ("Cpus", "Memory", "Disk", "GPUs")]
    if spec.name == "slot<N>_<attr>":
        return [f"{prefix}_State" for prefix in PREFIXES]
    if spec.name == "TotalTime<State><Activity>":
        return [f"TotalTime{key}" for key, seconds in TIME_TOTALS if int(seconds)]
    return [expand(spec, name="GPUs")]


def expected_present(spec: SlotAttribute, slot: Slot, status: SlotStatus | None) -> bool:
    """Whether ``spec``'s attributes belong in ``slot``'s ad in the scenario."""
    rules = {
        "partitionable": slot.kind == "partitionable",
        "dynamic": slot.kind == "dynamic",
        "resource-limited": slot.kind != "static",
        "consumption": slot.kind != "static",
        "claimed": status is not None and status.claim is not None,
        "preempting": status is not None and status.preempting is not None,
        "job": status is not None and status.job is not None,
        "timed": status is not None and bool(status.time_totals),
        "draining": False,  # the scenario's startd is not draining
    }
    return rules.get(spec.presence, True)


def has_type(ad: ClassAd, name: str, kind: str) -> bool:
    """Whether attribute ``name`` of ``ad`` is of ClassAd type ``kind``."""
    value = ad.evaluate(name)
    checks = {
        "bool": lambda: isinstance(value, bool),
        "int": lambda: isinstance(value, int) and not isinstance(value, bool),
        "real": lambda: isinstance(value, float),
        "string": lambda: isinstance(value, str),
        "list": lambda: isinstance(value, list),
        "classad": lambda: isinstance(value, ClassAd),
        "expression": lambda: isinstance(ad[name], Expr),
    }
    return checks[kind]()


CASES = [
    pytest.param(spec, prefix, id=f"{spec.name}-{SLOTS[prefix].kind}")
    for spec in SLOT_ATTRIBUTES
    for prefix in PREFIXES
]


@pytest.mark.parametrize(("spec", "prefix"), CASES)
def test_table_attribute_presence_and_type(spec: SlotAttribute, prefix: str) -> None:
    """Each table attribute is in exactly the ads its presence rule names, with its type."""
    ad, slot = ADS[prefix], SLOTS[prefix]
    present = expected_present(spec, slot, STATUSES.get(prefix))
    for name in concrete_names(spec, slot):
        assert (name in ad) == present, name
        if present:
            assert has_type(ad, name, spec.type), (name, str(ad[name]))


@pytest.mark.parametrize("prefix", PREFIXES)
def test_ads_hold_only_documented_attributes(prefix: str) -> None:
    """Every attribute of a built ad is in the table, or comes from SYSTEM_STARTD_ATTRS."""
    ad, slot = ADS[prefix], SLOTS[prefix]
    documented = {"collector_host_string"}
    for spec in SLOT_ATTRIBUTES:
        documented.update(name.lower() for name in concrete_names(spec, slot))
    assert sorted(name for name in ad if name.lower() not in documented) == []


def test_attributes_exist_only_in_their_states() -> None:
    """Claim and job attributes vanish when the slot is not claimed."""
    idle = build(
        config_of(SCENARIO_CONFIG),
        SlotLayout((SLOTS["slot1"],)),
        inventory_of(custom=gpus(("GPU-0", 8.0))),
    )[0]
    for spec in SLOT_ATTRIBUTES:
        if spec.presence in ("claimed", "preempting", "job"):
            assert spec.name not in idle
