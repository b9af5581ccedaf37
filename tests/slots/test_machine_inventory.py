"""build_inventory: the detected machine after NUM_CPUS, MEMORY, RESERVED_* and the custom
resource knobs."""

from __future__ import annotations

import pytest
from slot_helpers import EXECUTE, config, gpus, seed_lines

from epcore.errors import SlotConfigError
from epcore.slots.inventory import build_inventory
from epcore.types import DetectedResource, MachineInventory, ResourceDevice

DETECTED = (
    DetectedResource("Cpus", 4, source="test"),
    DetectedResource("Memory", 256, source="test"),
    DetectedResource("Disk", 1_000_000, source="test"),
    DetectedResource("Swap", 500_000, source="test"),
)


def inventory(text: str, detected: tuple[DetectedResource, ...] = DETECTED) -> MachineInventory:
    """The inventory ``text`` makes of the detected 4-core, 256 MB machine."""
    return build_inventory(config(text), detected)


def test_without_knobs_the_inventory_is_what_was_detected() -> None:
    """No knob: Cpus, Memory, Disk and Swap as detected; the EXECUTE disk is recorded."""
    inv = inventory("")
    assert (inv.cpus, inv.memory_mb, inv.disk_kb, inv.swap_kb) == (4, 256, 1_000_000, 500_000)
    assert (inv.detected_cpus, inv.detected_memory_mb) == (4, 256)
    assert inv.custom == {}
    assert inv.disk_by_path == {EXECUTE: 1_000_000}


def test_the_seed_lie_doubles_cpus_and_memory() -> None:
    """Seed 000 line 3041: ``NUM_CPUS = $(DETECTED_CORES)*2`` and ``MEMORY =
    $(DETECTED_MEMORY)*2`` give 8 Cpus and 512 MB on the 4-core, 256 MB machine."""
    text = seed_lines("000", 3040, 3046)
    assert "NUM_CPUS = $(DETECTED_CORES)*2" in text
    inv = inventory(text)
    assert (inv.cpus, inv.memory_mb) == (8, 512)
    assert (inv.detected_cpus, inv.detected_memory_mb) == (4, 256)


@pytest.mark.parametrize(
    ("text", "memory"),
    [
        ("RESERVED_MEMORY = 56", 200),
        ("MEMORY = 1000", 1000),
        ("MEMORY = 1000\nRESERVED_MEMORY = 100", 900),
        ("MEMORY = 0", 256),
        ("RESERVED_MEMORY = 1000", 0),
    ],
)
def test_memory_is_memory_or_detected_less_reserved(text: str, memory: int) -> None:
    """MEMORY (when above 0) replaces the detected memory; RESERVED_MEMORY comes off both."""
    assert inventory(text).memory_mb == memory


def test_reserved_disk_is_in_megabytes() -> None:
    """RESERVED_DISK = 5 keeps 5120 KB back (seed 002's "Reserving 5120 Kbytes" log line),
    from the EXECUTE partition and from every other execute directory."""
    inv = build_inventory(
        config("RESERVED_DISK = 5"), DETECTED, execute_disks_kb={"/scratch": 10_000}
    )
    assert inv.disk_kb == 1_000_000 - 5120
    assert inv.disk_by_path == {EXECUTE: 1_000_000 - 5120, "/scratch": 10_000 - 5120}


def test_without_detectors_the_configuration_facts_stand_in() -> None:
    """With nothing detected, Cpus and Memory come from DETECTED_CPUS_LIMIT / DETECTED_MEMORY."""
    inv = build_inventory(config("", cores=6, memory_mb=2048), ())
    assert (inv.cpus, inv.memory_mb, inv.disk_kb) == (6, 2048, 0)


def test_later_detectors_win_for_the_same_name() -> None:
    """Two reports of one resource (any case): the later one counts."""
    inv = inventory("", (*DETECTED, DetectedResource("cpus", 16, source="plugin")))
    assert inv.cpus == 16


def test_machine_resource_knobs_add_custom_resources() -> None:
    """Seed 000 lines 288-289: MACHINE_RESOURCE_Cogs = 16 and MACHINE_RESOURCE_actuator = 8."""
    inv = inventory(seed_lines("000", 288, 289))
    assert {name: r.quantity for name, r in inv.custom.items()} == {"actuator": 8, "Cogs": 16}
    assert inv.custom["Cogs"].devices == ()
    assert inv.custom["Cogs"].source == "MACHINE_RESOURCE_Cogs"


@pytest.mark.parametrize(
    ("value", "quantity", "ids"),
    [
        ("16", 16, ()),
        ("2.5", 2.5, ()),
        ("4 * 2", 8, ()),
        ("GPU-0, GPU-1", 2, ("GPU-0", "GPU-1")),
        ("CUDA0 CUDA1 CUDA2", 3, ("CUDA0", "CUDA1", "CUDA2")),
        ("abc", 1, ("abc",)),
    ],
)
def test_a_machine_resource_is_a_quantity_or_a_list_of_ids(
    value: str, quantity: float, ids: tuple[str, ...]
) -> None:
    """A number (or an expression giving one) is a quantity; anything else lists device ids,
    as HTCondor reads it."""
    resource = inventory(f"MACHINE_RESOURCE_Widgets = {value}").custom["Widgets"]
    assert resource.quantity == quantity
    assert tuple(d.id for d in resource.devices) == ids


def test_a_prefixed_knob_counts_for_the_startd() -> None:
    """``STARTD.MACHINE_RESOURCE_X`` is the startd's MACHINE_RESOURCE_X; other daemons' are
    not."""
    inv = inventory("STARTD.MACHINE_RESOURCE_Foo = 3\nSCHEDD.MACHINE_RESOURCE_Bar = 2")
    assert list(inv.custom) == ["Foo"]


def test_configuration_replaces_a_detected_resource_of_the_same_name() -> None:
    """MACHINE_RESOURCE_gpus (any case) wins over detected GPUs."""
    detected = (*DETECTED, gpus(("GPU-a", 8.0), ("GPU-b", 7.0)))
    inv = inventory("MACHINE_RESOURCE_gpus = 1", detected)
    assert list(inv.custom) == ["gpus"]
    assert inv.custom["gpus"].quantity == 1


def test_detected_devices_keep_their_properties() -> None:
    """A detector's devices and property ads reach the inventory unchanged."""
    inv = inventory("", (*DETECTED, gpus(("GPU-a", 8.0))))
    assert inv.custom["GPUs"].devices == (ResourceDevice("GPU-a", {"Capability": 8.0}),)


@pytest.mark.parametrize(
    ("names", "kept"),
    [
        ("Cogs", ["Cogs"]),
        ("cogs, GPUs", ["Cogs", "GPUs"]),
        ("Other", []),
        ("", ["actuator", "Cogs", "GPUs"]),
    ],
)
def test_machine_resource_names_keeps_only_listed_resources(names: str, kept: list[str]) -> None:
    """When MACHINE_RESOURCE_NAMES is set, only the names it lists count, configured or
    detected, compared without case; set to nothing it is unset (HTCondor's param())."""
    text = (
        "MACHINE_RESOURCE_Cogs = 16\nMACHINE_RESOURCE_actuator = 8\n"
        f"MACHINE_RESOURCE_NAMES = {names}"
    )
    inv = inventory(text, (*DETECTED, gpus(("GPU-a", 8.0))))
    assert list(inv.custom) == kept


def test_the_seed_idiom_for_machine_resource_names_keeps_both() -> None:
    """Seed 000 lines 298-300 append Cogs and actuator to MACHINE_RESOURCE_NAMES when it is
    defined; with an earlier ``gpus`` both new names join it."""
    text = (
        "MACHINE_RESOURCE_NAMES = gpus\n"
        + seed_lines("000", 288, 289)
        + seed_lines("000", 298, 300)
    )
    inv = inventory(text, (*DETECTED, gpus(("GPU-a", 8.0))))
    assert list(inv.custom) == ["actuator", "Cogs", "GPUs"]


def test_an_inventory_script_knob_is_left_to_detection() -> None:
    """MACHINE_RESOURCE_INVENTORY_GPUs names a command, not a resource: it adds nothing."""
    assert inventory("MACHINE_RESOURCE_INVENTORY_GPUs = /bin/true").custom == {}


BAD = [
    ("MACHINE_RESOURCE_Cogs = 4 +", "MACHINE_RESOURCE_Cogs: '4 +' is neither a number nor"),
    ("MACHINE_RESOURCE_Cogs = abc(", "MACHINE_RESOURCE_Cogs: 'abc(' is neither a number nor"),
    ("MACHINE_RESOURCE_Cogs = -3", "MACHINE_RESOURCE_Cogs: the quantity '-3' is negative"),
    ("MACHINE_RESOURCE_GPUs = a, b, A", "MACHINE_RESOURCE_GPUs: the device id 'A' is listed"),
    ("MACHINE_RESOURCE_Memory = 4", "MACHINE_RESOURCE_Memory: 'Memory' is a reserved"),
    ("MACHINE_RESOURCE_ram = 4", "MACHINE_RESOURCE_ram: 'ram' is a reserved"),
    ("NUM_CPUS = lots", "NUM_CPUS: 'lots' is not a number"),
    ("NUM_CPUS = 0", "NUM_CPUS: 0 is less than 1"),
    ("MEMORY = -5", "MEMORY: -5 is less than 0"),
    ("RESERVED_DISK = 1.5", "RESERVED_DISK: '1.5' is not a whole number"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_malformed_inventory_knobs_are_errors_naming_the_knob(text: str, message: str) -> None:
    """Each malformed value raises SlotConfigError at the knob's line, naming the knob."""
    with pytest.raises(SlotConfigError) as caught:
        inventory(text)
    assert message in str(caught.value)
    assert caught.value.line == 2  # line 1 is the EXECUTE line the helper adds


def test_offline_devices_are_taken_out_of_the_device_list() -> None:
    """OFFLINE_MACHINE_RESOURCE_GPUs removes a GPU from the slots' pool; the id stays in
    ``offline`` for Offline<name>."""
    detected = (*DETECTED, gpus(("GPU-a", 8.0), ("GPU-b", 7.0)))
    resource = inventory("OFFLINE_MACHINE_RESOURCE_GPUs = gpu-b", detected).custom["GPUs"]
    assert [d.id for d in resource.devices] == ["GPU-a"]
    assert (resource.quantity, resource.offline) == (1, ("gpu-b",))


def test_devices_a_detector_reports_offline_are_not_handed_out() -> None:
    """A detector's ``offline`` ids are filtered out of its devices."""
    found = DetectedResource(
        "GPUs", 2, (ResourceDevice("GPU-a"), ResourceDevice("GPU-b")), offline=("GPU-a",)
    )
    resource = inventory("", (*DETECTED, found)).custom["GPUs"]
    assert ([d.id for d in resource.devices], resource.quantity) == (["GPU-b"], 1)


def test_an_offline_count_reduces_a_plain_quantity() -> None:
    """For a resource without ids, OFFLINE_MACHINE_RESOURCE_<name> may be a count."""
    text = "MACHINE_RESOURCE_Cogs = 16\nOFFLINE_MACHINE_RESOURCE_Cogs = 4"
    assert inventory(text).custom["Cogs"].quantity == 12
