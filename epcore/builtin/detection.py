"""Built-in plugin: the machine's standard resources, inventory scripts, load and idle times.

Resources (``ep_detect_resources``), as the hardware has them; NUM_CPUS, MEMORY and the
RESERVED_* knobs are applied later, when the inventory is built:

* ``Cpus``: logical CPUs, or physical cores when COUNT_HYPERTHREAD_CPUS is false.
* ``Memory``: physical memory in MB. ``Swap``: VirtualMemory in KB.
* ``Disk``: KB free on the file system of the EXECUTE directory; when that directory does not
  exist yet, its nearest existing parent is measured (the daemon creates it on startup).
* One custom resource per ``MACHINE_RESOURCE_INVENTORY_<name>`` script (see
  :func:`parse_inventory_output` for the output rules), plus HTCondor 24+'s automatic GPU
  discovery (``$(LIBEXEC)/condor_gpu_discovery $(STARTD_DETECT_GPUS)``). A GPU discovery
  program that does not exist here is left to :mod:`epcore.builtin.nvidia`, which asks NVML.
  A script that cannot run, times out, exits non-zero or prints unusable output is logged
  (naming the script and, for bad output, the line) and contributes nothing.

Readings (``ep_host_readings``) are machine-wide: see :func:`idle_times` for KeyboardIdle and
ConsoleIdle and :func:`cpu_is_busy` for CpuIsBusy. The per-slot rules (SLOTS_CONNECTED_TO_CONSOLE,
SLOTS_CONNECTED_TO_KEYBOARD, DISCONNECTED_KEYBOARD_IDLE_BOOST) are not applied here: the slot
ad builder splits these machine-wide readings among slots
(:func:`epcore.slots.readings.split_readings`).
"""

from __future__ import annotations

import logging
import posixpath
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

import attrs

from epcore import hookimpl
from epcore.builtin.nvidia import GPU_RESOURCE, gpu_discovery_plan, program_available
from epcore.classad import ClassAd, ClassAdSyntaxError, Expr, parse_ad, parse_expr
from epcore.errors import ClassAdError, ConfigError
from epcore.types import DetectedResource, HostReadings, ResourceDevice

if TYPE_CHECKING:
    from epcore.config import Config
    from epcore.types import MachineHost

_log = logging.getLogger("epcore.builtin.detection")

#: What HTCondor reports as an idle time when no device can be examined ("infinite").
INFINITE_IDLE: Final = 2**31 - 1
#: Resource names an inventory script may not use (HTCondor refuses to start).
RESERVED_NAMES: Final = frozenset({"CPU", "CPUS", "DISK", "SWAP", "MEM", "MEMORY", "RAM"})

_INVENTORY_PREFIX: Final = "MACHINE_RESOURCE_INVENTORY_"
_SOURCE: Final = "epcore.builtin.detection"
_C_NUMBER: Final = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_ID_SEPARATORS: Final = re.compile(r"[,\s]+")
_VIRTUAL_CONSOLE: Final = re.compile(r"tty[0-9]+")


# -- standard resources ---------------------------------------------------------------------


def free_disk_kb(host: MachineHost, path: str) -> int:
    """KB free for ``path``, measured at its nearest existing ancestor; OSError when none."""
    current = posixpath.normpath(path)
    while True:
        try:
            free = host.disk_free_kb(current)
        except OSError:
            parent = posixpath.dirname(current)
            if parent == current:
                raise
            current = parent
            continue
        if current != posixpath.normpath(path):
            _log.debug("%s does not exist yet; measured free disk at %s", path, current)
        return free


def _standard_resources(config: Config, host: MachineHost) -> list[DetectedResource]:
    logical, physical = host.cpu_counts()
    cpus = logical if config.get_bool("COUNT_HYPERTHREAD_CPUS", True) else physical
    execute = config.get("EXECUTE")
    disk = 0
    if execute is None:
        _log.error("EXECUTE is not set; Disk is 0")
    else:
        try:
            disk = free_disk_kb(host, execute)
        except OSError as exc:
            _log.error("cannot measure free disk of EXECUTE (%s): %s; Disk is 0", execute, exc)
    try:
        swap = host.swap_kb()
    except OSError as exc:
        _log.error("cannot read swap space: %s; Swap is 0", exc)
        swap = 0
    return [
        DetectedResource("Cpus", cpus, source=_SOURCE),
        DetectedResource("Memory", host.memory_mb(), source=_SOURCE),
        DetectedResource("Disk", disk, source=_SOURCE),
        DetectedResource("Swap", swap, source=_SOURCE),
    ]


# -- inventory scripts ----------------------------------------------------------------------


@attrs.frozen
class InventoryReport:
    """What one inventory script reported.

    ``resource`` is the custom resource (devices in the order listed, offline ones removed);
    ``offline`` the ids the script took offline; ``attributes`` every other attribute the script
    printed, which HTCondor copies into the machine ad (``CUDACapability`` of
    ``-not-nested`` output, nested ads matching no device...).
    """

    resource: DetectedResource
    offline: tuple[str, ...] = ()
    attributes: Mapping[str, Expr] = attrs.field(factory=dict)


def quantity_or_ids(text: str) -> float | tuple[str, ...]:
    """A resource value as HTCondor reads it: a number, an expression evaluating to a number,
    or else a list of ids separated by commas and/or whitespace."""
    stripped = text.strip()
    if _C_NUMBER.fullmatch(stripped):
        return float(stripped)
    try:
        value = parse_expr(stripped).evaluate()
    except ClassAdSyntaxError:
        value = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return tuple(item for item in _ID_SEPARATORS.split(stripped) if item)


def _parse_lines(text: str, source: str) -> ClassAd:
    try:
        return parse_ad(text, source)
    except ClassAdSyntaxError as exc:
        lines = text.split("\n")
        shown = lines[exc.line - 1].strip() if 0 < exc.line <= len(lines) else ""
        raise ClassAdSyntaxError(f"{exc.reason}: {shown!r}", exc.line, exc.column, source) from exc


def parse_inventory_output(name: str, text: str, source: str) -> InventoryReport:
    """Read the output of the ``MACHINE_RESOURCE_INVENTORY_<name>`` script ``source``.

    Rules (HTCondor's startd): the output is an old-syntax ClassAd (``Attr = value`` lines,
    ``#`` comments). ``Detected<name>`` is required: a number is a quantity of a fungible
    resource; a string holding a number (or an expression evaluating to one) is a quantity too;
    any other string is a comma and/or space separated list of device ids (``"GPU-6a96bd13,
    GPU-9dc7c6d6"``), the quantity being their count. ``Offline<name>`` (a string, ids or a
    count) takes devices out: their ids are dropped, a count is subtracted. Every attribute
    whose value is a nested ad holds device properties: ``Common`` applies to every device, and
    any other applies to the device named by its ``Id`` attribute, or, lacking one, by the
    attribute's own name; ``Id`` itself is not a property. An attribute named ``<name>`` is
    dropped; everything else goes to :attr:`InventoryReport.attributes`.

    Raises ClassAdSyntaxError (with the script as source and the 1-based line) for a line that
    is not ``Attr = expression``, and ClassAdError when ``Detected<name>`` is missing or is
    neither a number nor a string.
    """
    ad = _parse_lines(text, source)
    detected_name, offline_name = f"Detected{name}", f"Offline{name}"
    if detected_name not in ad:
        raise ClassAdError(f"{source}: the output has no {detected_name} attribute")
    detected = ad.evaluate(detected_name)
    if isinstance(detected, str):
        value: float | tuple[str, ...] = quantity_or_ids(detected)
    elif isinstance(detected, (int, float)) and not isinstance(detected, bool):
        value = float(detected)
    else:
        raise ClassAdError(
            f"{source}: {detected_name} = {ad[detected_name]} is neither a number nor a string"
        )
    offline_value = ad.evaluate(offline_name) if offline_name in ad else None
    offline = quantity_or_ids(offline_value) if isinstance(offline_value, str) else ()

    properties: dict[str, dict[str, object]] = {}
    ids = value if isinstance(value, tuple) else ()
    attributes: dict[str, Expr] = {}
    nested: list[tuple[str, ClassAd]] = []
    for attribute in ad:
        if attribute.lower() in (detected_name.lower(), offline_name.lower(), name.lower()):
            continue
        evaluated = ad.evaluate(attribute)
        if isinstance(evaluated, ClassAd):
            nested.append((attribute, evaluated))
        else:
            attributes[attribute] = ad[attribute]
    # Common first, so that a device's own ad overrides it.
    nested.sort(key=lambda item: item[0].lower() != "common")
    for attribute, props in nested:
        values = {key: props.evaluate(key) for key in props if key.lower() != "id"}
        if attribute.lower() == "common":
            targets: tuple[str, ...] = ids
        else:
            owner = props.evaluate("Id")
            owner = owner if isinstance(owner, str) else attribute
            if owner not in ids:
                attributes[attribute] = ad[attribute]  # HTCondor keeps it in the machine ad
                continue
            targets = (owner,)
        for device in targets:
            properties.setdefault(device, {}).update(values)

    if isinstance(value, tuple):
        offline_ids = offline if isinstance(offline, tuple) else ()
        devices = tuple(
            ResourceDevice(device, properties.get(device, {}))
            for device in value
            if device not in offline_ids
        )
        resource = DetectedResource(name, len(devices), devices, source=source)
        return InventoryReport(resource, offline_ids, attributes)
    taken = len(offline) if isinstance(offline, tuple) else offline
    quantity = max(0.0, value - taken)
    quantity_out: float = int(quantity) if quantity.is_integer() else quantity
    resource = DetectedResource(name, quantity_out, source=source)
    return InventoryReport(resource, offline if isinstance(offline, tuple) else (), attributes)


def run_inventory(name: str, command: str, host: MachineHost) -> InventoryReport | None:
    """Run one inventory command and read its output; None (logged) when that fails."""
    try:
        output = host.run_command(command)
    except (OSError, ValueError) as exc:
        _log.error("inventory script for %s (%s) could not run: %s; skipped", name, command, exc)
        return None
    if output.exit_status != 0:
        _log.error(
            "inventory script for %s (%s) exited with status %d; skipped",
            name,
            command,
            output.exit_status,
        )
        return None
    try:
        report = parse_inventory_output(name, output.stdout, command)
    except ClassAdError as exc:
        _log.error("inventory script for %s printed unusable output: %s; skipped", name, exc)
        return None
    _log.info("inventory script for %s found %g", name, report.resource.quantity)
    return report


def inventory_commands(config: Config) -> dict[str, str]:
    """Resource name -> command, for every MACHINE_RESOURCE_INVENTORY_<name> that is set."""
    commands: dict[str, str] = {}
    seen: set[str] = set()
    for knob in sorted(config.names(), key=str.lower):
        bare = knob.rsplit(".", 1)[-1]  # STARTD.MACHINE_RESOURCE_INVENTORY_X counts too
        if not bare.upper().startswith(_INVENTORY_PREFIX) or bare.lower() in seen:
            continue
        seen.add(bare.lower())
        name = bare[len(_INVENTORY_PREFIX) :]
        command = config.get(bare)
        if not name or command is None:
            continue
        if name.upper() in RESERVED_NAMES:
            origin = config.origin(bare)
            raise ConfigError(
                f"{bare} is invalid: '{name}' is a reserved resource name",
                origin.source if origin else None,
                origin.line if origin else None,
            )
        commands[name] = command
    return commands


def _inventory_resources(config: Config, host: MachineHost) -> list[DetectedResource]:
    commands = inventory_commands(config)
    plan = gpu_discovery_plan(config)
    if plan.command is not None and plan.tag not in commands:
        commands[plan.tag] = plan.command  # HTCondor 24+'s automatic discovery
    found: list[DetectedResource] = []
    for name, command in commands.items():
        if name.lower() == GPU_RESOURCE.lower() and not program_available(host, command):
            _log.debug("%s: %s is not installed; NVIDIA GPUs come from NVML", name, command)
            continue
        report = run_inventory(name, command, host)
        if report is not None:
            resource = attrs.evolve(
                report.resource, offline=report.offline, attributes=dict(report.attributes)
            )
            found.append(resource)
    return found


@hookimpl
def ep_detect_resources(config: Config, host: MachineHost) -> list[DetectedResource]:
    """Cpus, Memory, Disk, Swap and the custom resources of inventory scripts."""
    return [*_standard_resources(config, host), *_inventory_resources(config, host)]


# -- load and idle times --------------------------------------------------------------------


def console_device_names(config: Config) -> frozenset[str]:
    """CONSOLE_DEVICES as names under /dev (HTCondor accepts them with or without /dev/)."""
    return frozenset(name.removeprefix("/dev/") for name in config.get_list("CONSOLE_DEVICES"))


def is_console_device(path: str, console_devices: frozenset[str]) -> bool:
    """True for the physical console: CONSOLE_DEVICES, virtual consoles and input devices.

    Pseudo terminals (``/dev/pts/*``: ssh and terminal-window sessions) are not."""
    name = path.removeprefix("/dev/")
    return (
        name in console_devices
        or name.startswith("input/")
        or _VIRTUAL_CONSOLE.fullmatch(name) is not None
    )


def _idle_since(latest: float | None, now: float) -> int:
    if latest is None:
        return INFINITE_IDLE
    return max(0, int(now - latest))  # an access "in the future" (clock step) is activity now


def idle_times(
    access_times: Mapping[str, float], now: float, console_devices: frozenset[str]
) -> tuple[int, int]:
    """(KeyboardIdle, ConsoleIdle) in seconds at ``now``.

    ConsoleIdle counts console devices only; KeyboardIdle counts every terminal and input
    device, pseudo terminals included, so it is never above ConsoleIdle. Neither is negative.
    With no device to look at, both are HTCondor's "infinite" idle time (2**31 - 1).
    """
    console = [t for path, t in access_times.items() if is_console_device(path, console_devices)]
    every = list(access_times.values())
    keyboard_idle = _idle_since(max(every, default=None), now)
    console_idle = _idle_since(max(console, default=None), now)
    return min(keyboard_idle, console_idle), console_idle


def cpu_is_busy(
    config: Config,
    load_avg: float,
    condor_load_avg: float,
    keyboard_idle: int,
    console_idle: int,
    now: float,
) -> bool:
    """The configuration's ``CpuBusy`` expression, evaluated against the machine readings.

    HTCondor evaluates CpuBusy in the slot ad; the policy templates define it as
    ``(LoadAvg - CondorLoadAvg) >= $(HighLoad)``. Without a definition (HTCondor's default
    configuration) the CPU is never busy. A definition that does not parse is logged.
    """
    text = config.get("CpuBusy")
    if text is None:
        return False
    try:
        expression = parse_expr(text)
    except ClassAdSyntaxError as exc:
        _log.error("CpuBusy = %s does not parse: %s; the CPU counts as not busy", text, exc)
        return False
    machine = ClassAd(
        {
            "LoadAvg": load_avg,
            "CondorLoadAvg": condor_load_avg,
            "TotalLoadAvg": load_avg,
            "TotalCondorLoadAvg": condor_load_avg,
            "KeyboardIdle": keyboard_idle,
            "ConsoleIdle": console_idle,
        }
    )
    return expression.evaluate(machine, context=config.eval_context.at(now)) is True


@hookimpl
def ep_host_readings(config: Config, host: MachineHost, now: float) -> HostReadings:
    """Load average, idle times and CpuIsBusy of the whole machine at ``now``.

    CondorLoadAvg is 0 here: the daemon knows which processes are its jobs' and adds their
    load (and computes CpuBusyTime from successive readings, see :func:`track_cpu_busy`).
    """
    try:
        load = host.load_average()
    except OSError as exc:
        _log.error("cannot read the load average: %s; using 0", exc)
        load = 0.0
    try:
        access_times = host.device_access_times()
    except OSError as exc:
        _log.error("cannot examine terminals and input devices: %s", exc)
        access_times = {}
    keyboard, console = idle_times(access_times, now, console_device_names(config))
    busy = cpu_is_busy(config, load, 0.0, keyboard, console, now)
    return HostReadings(load, 0.0, keyboard, console, 0, busy)


def track_cpu_busy(busy_since: float | None, busy: bool, now: float) -> tuple[float | None, int]:
    """(when the CPU became busy or None, CpuBusyTime) after a reading at ``now``."""
    if not busy:
        return None, 0
    since = now if busy_since is None else busy_since
    return since, max(0, int(now - since))


# -- per-slot idle times --------------------------------------------------------------------
