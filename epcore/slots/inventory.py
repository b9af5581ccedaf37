"""What the startd divides among its slots: the detected machine, after configuration.

:func:`build_inventory` is pure: detection (plugins, through ``ep_detect_resources``) has
already looked at the hardware; this applies the knobs HTCondor applies before it builds slots:

- Cpus: ``NUM_CPUS`` when a file sets it (it may lie, e.g. ``$(DETECTED_CORES)*2``), else the
  detected ``Cpus``;
- Memory (MB): ``MEMORY`` when set to more than 0, else the detected ``Memory``; then less
  ``RESERVED_MEMORY`` in both cases (HTCondor's sysapi does the same);
- Disk (KB): the detected free space of the EXECUTE partition less ``RESERVED_DISK``, which is
  in **megabytes**: HTCondor multiplies it by 1024 ("Parameter is in meg"); the 8.x manual's
  log line "Reserving 5120 Kbytes for file system" is RESERVED_DISK = 5;
- Swap (KB): the detected ``Swap``;
- custom resources: every detected resource that is not a standard one, and every
  ``MACHINE_RESOURCE_<name>`` knob, whose value is a quantity (``16``, or an expression that
  evaluates to a number) or a list of device ids (``GPU-0, GPU-1``: the quantity is their
  number). A knob replaces a detected resource of the same name (names compare without case).
  When ``MACHINE_RESOURCE_NAMES`` is set, only the resources it lists count (seed 000: "If the
  configuration uses the optional configuration variable MACHINE_RESOURCE_NAMES ... also add
  the resource names to this variable"). ``MACHINE_RESOURCE_INVENTORY_<name>`` is detection's
  business (it runs a command) and is skipped here.

A malformed value is a SlotConfigError naming the knob: a quantity that is negative, a list
whose items cannot be device ids (``4 +``), an id listed twice, or a reserved name
(``MACHINE_RESOURCE_Memory``: HTCondor refuses CPU, CPUS, DISK, SWAP, MEM, MEMORY and RAM).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import attrs

from epcore.classad import parse_expr
from epcore.config import Config
from epcore.errors import ClassAdSyntaxError, SlotConfigError
from epcore.slots.knobs import is_configured, knob_error, matching_knobs, read_int
from epcore.types import (
    STANDARD_RESOURCES,
    DetectedResource,
    MachineHost,
    MachineInventory,
    ResourceDevice,
)

_MACHINE_RESOURCE = re.compile(r"MACHINE_RESOURCE_([A-Za-z0-9_]+)", re.IGNORECASE)
_RESERVED_NAMES = frozenset({"cpu", "cpus", "disk", "swap", "mem", "memory", "ram"})
_NUMBER = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*")
_LIST_SEPARATORS = re.compile(r"[,\s]+")
# What a device id may be made of: GPU-6a96bd13, CUDA0, /dev/nvidia0, 0000:3b:00.0...
_DEVICE_ID = re.compile(r"[A-Za-z0-9_.:@#/-]+")
_STANDARD = {name.lower(): name for name in STANDARD_RESOURCES}
_KB_PER_MB = 1024


def build_inventory(
    config: Config,
    detected: Sequence[DetectedResource],
    *,
    execute_disks_kb: Mapping[str, int] | None = None,
) -> MachineInventory:
    """The machine the slots divide, from the detected resources and the configuration.

    ``detected`` is what the detectors reported, in registration order: a later resource of
    the same name (any case) replaces an earlier one. ``execute_disks_kb`` gives the free KB of
    every other execute directory a slot may use (``SLOT<N>_EXECUTE``); RESERVED_DISK is kept
    back from each, as from the EXECUTE partition.
    """
    found = {resource.name.lower(): resource for resource in detected}
    detected_cpus = _detected_int(config, found, "cpus", "DETECTED_CPUS_LIMIT")
    detected_memory = _detected_int(config, found, "memory", "DETECTED_MEMORY")
    cpus = detected_cpus
    if is_configured(config, "NUM_CPUS"):
        cpus = read_int(config, "NUM_CPUS", minimum=1) or detected_cpus
    configured_memory = read_int(config, "MEMORY", minimum=0) or 0
    memory = configured_memory if configured_memory > 0 else detected_memory
    memory = max(0, memory - (read_int(config, "RESERVED_MEMORY") or 0))
    reserved_disk_kb = (read_int(config, "RESERVED_DISK") or 0) * _KB_PER_MB
    disk = max(0, _quantity(found, "disk") - reserved_disk_kb)
    disks = {path: max(0, kb - reserved_disk_kb) for path, kb in (execute_disks_kb or {}).items()}
    execute = config.get("EXECUTE")
    if execute:
        disks[execute] = disk
    physical = read_int(config, "DETECTED_PHYSICAL_CPUS") or detected_cpus
    return MachineInventory(
        cpus=cpus,
        physical_cpus=physical,
        memory_mb=memory,
        disk_kb=disk,
        swap_kb=_quantity(found, "swap"),
        detected_cpus=detected_cpus,
        detected_memory_mb=detected_memory,
        custom=custom_resources(config, detected),
        disk_by_path=disks,
    )


def custom_resources(
    config: Config, detected: Sequence[DetectedResource] = ()
) -> dict[str, DetectedResource]:
    """The custom resources of the machine, by name as spelled, sorted without case.

    Detected non-standard resources first, then ``MACHINE_RESOURCE_<name>`` knobs (which win
    over a detected resource of the same name), then the ``MACHINE_RESOURCE_NAMES`` filter.
    """
    by_lower: dict[str, DetectedResource] = {}
    for resource in detected:
        if resource.name.lower() in _STANDARD:
            continue
        _check_name(config, None, resource.name, resource.source or "a detector")
        by_lower[resource.name.lower()] = resource
    for knob, match in matching_knobs(config, _MACHINE_RESOURCE):
        name = match.group(1)
        if name.lower() == "names" or name.lower().startswith("inventory_"):
            continue
        value = config.get(knob)
        if value is None:
            continue
        _check_name(config, knob, name, knob)
        by_lower[name.lower()] = parse_machine_resource(config, knob, name, value)
    allowed = config.get("MACHINE_RESOURCE_NAMES")
    if allowed is not None:
        names = {item.lower() for item in config.get_list("MACHINE_RESOURCE_NAMES")}
        by_lower = {key: value for key, value in by_lower.items() if key in names}
    return {by_lower[key].name: _take_offline(config, by_lower[key]) for key in sorted(by_lower)}


def _take_offline(config: Config, resource: DetectedResource) -> DetectedResource:
    """``resource`` without its offline devices: those its detector reported and those
    ``OFFLINE_MACHINE_RESOURCE_<name>`` lists (ids, or a count for a plain quantity).

    A detector's ``quantity`` of a plain resource is taken to be net of what it reports
    offline; devices it lists are filtered either way.
    """
    knob = f"OFFLINE_MACHINE_RESOURCE_{resource.name}"
    value = config.get(knob)
    offline = list(resource.offline)
    knob_count = 0.0
    if value is not None:
        listed = parse_machine_resource(config, knob, resource.name, value)
        offline += [d.id for d in listed.devices]
        knob_count = listed.quantity
    if not offline and not knob_count:
        return resource
    if resource.devices:
        gone = {item.lower() for item in offline}
        devices = tuple(d for d in resource.devices if d.id.lower() not in gone)
        return attrs.evolve(
            resource, quantity=len(devices), devices=devices, offline=tuple(offline)
        )
    quantity = max(0.0, resource.quantity - knob_count)
    return attrs.evolve(resource, quantity=quantity, offline=tuple(offline))


def parse_machine_resource(config: Config, knob: str, name: str, value: str) -> DetectedResource:
    """Read ``MACHINE_RESOURCE_<name> = value``: a quantity, or a list of device ids.

    As in HTCondor, a value that is a number, or a ClassAd expression evaluating to one, is a
    quantity of interchangeable units; anything else is a list of device ids separated by
    commas or whitespace.
    """
    text = value.strip()
    quantity = _as_number(config, text)
    if quantity is not None:
        if quantity < 0:
            raise knob_error(config, knob, f"{knob}: the quantity {text!r} is negative")
        return DetectedResource(name, quantity, source=knob)
    ids = [item for item in _LIST_SEPARATORS.split(text) if item]
    bad = [item for item in ids if not _DEVICE_ID.fullmatch(item)]
    if bad:
        raise knob_error(
            config,
            knob,
            f"{knob}: {text!r} is neither a number nor a list of ids "
            f"({bad[0]!r} cannot be a device id)",
        )
    seen: set[str] = set()
    for item in ids:
        if item.lower() in seen:
            raise knob_error(config, knob, f"{knob}: the device id {item!r} is listed twice")
        seen.add(item.lower())
    devices = tuple(ResourceDevice(item) for item in ids)
    return DetectedResource(name, len(devices), devices, source=knob)


def _as_number(config: Config, text: str) -> float | None:
    if _NUMBER.fullmatch(text):
        number = float(text)
        return int(number) if number.is_integer() else number
    try:
        result = parse_expr(text).evaluate(context=config.eval_context)
    except ClassAdSyntaxError:
        return None
    if isinstance(result, bool) or not isinstance(result, int | float):
        return None
    return result if math.isfinite(result) else None


def _check_name(config: Config, knob: str | None, name: str, where: str) -> None:
    if name.lower() not in _RESERVED_NAMES:
        return
    message = (
        f"{where}: {name!r} is a reserved resource name (CPU, CPUS, DISK, SWAP, MEM, MEMORY "
        "and RAM are the standard resources)"
    )
    raise knob_error(config, knob, message) if knob else SlotConfigError(message)


def _quantity(found: Mapping[str, DetectedResource], name: str) -> int:
    resource = found.get(name)
    return 0 if resource is None else max(0, int(resource.quantity))


def _detected_int(
    config: Config, found: Mapping[str, DetectedResource], name: str, fallback_knob: str
) -> int:
    # Without a detector for it (a bare configuration, a test) the value HTCondor put into the
    # configuration before reading it stands in.
    resource = found.get(name)
    if resource is not None:
        return max(0, int(resource.quantity))
    return max(0, read_int(config, fallback_knob) or 0)


def execute_disks_kb(config: Config, host: MachineHost) -> dict[str, int]:
    """Free KB of every SLOT<N>_EXECUTE directory (those that cannot be measured are left
    out: the slot planner then says which slot lacks its disk)."""
    disks = {}
    for name in config.names():
        upper = name.upper()
        if upper.startswith("SLOT") and upper.endswith("_EXECUTE"):
            path = config.get(name)
            if path:
                try:
                    disks[path] = host.disk_free_kb(path)
                except OSError:
                    continue
    return disks
