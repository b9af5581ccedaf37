"""The machine as detection sees it: its resources, readings and the attributes plugins add
(``ep_detect_resources``, ``ep_host_readings``, ``ep_machine_attributes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import attrs

from epcore.config.host import ConfigHost

#: Names of the resources every machine has; every other resource name is a custom resource.
STANDARD_RESOURCES = ("Cpus", "Memory", "Disk", "Swap")


@attrs.frozen
class ResourceDevice:
    """One instance of a custom resource (a GPU), with the property ad a slot constraint reads.

    ``id`` is what ``Assigned<name>`` lists and a string constraint matches
    (``"GPU-6a96bd13"``); ``properties`` are ClassAd values (``Capability = 8.0``).
    """

    id: str
    properties: Mapping[str, object] = attrs.field(factory=dict)


@attrs.frozen
class DetectedResource:
    """A resource a detector found: its name, how much there is, and its devices if countable.

    Standard names are ``Cpus``, ``Memory`` (MB), ``Disk`` (KB of the EXECUTE partition) and
    ``Swap`` (KB); any other name is a custom resource. ``quantity`` equals ``len(devices)``
    when devices are given. ``source`` says which detector found it (for ``ep plugins`` and logs).
    ``offline`` lists the ids a detector found but took out of service (``Offline<name>``), and
    ``attributes`` the other attributes it reported, which go into the machine ad as HTCondor
    copies an inventory script's extra output (values are ClassAd values or expressions).
    """

    name: str
    quantity: float
    devices: tuple[ResourceDevice, ...] = ()
    source: str = ""
    offline: tuple[str, ...] = ()
    attributes: Mapping[str, object] = attrs.field(factory=dict)


@attrs.frozen
class MachineInventory:
    """What the startd divides among its slots, after configuration has had its say.

    ``cpus`` and ``memory_mb`` already honour NUM_CPUS / MEMORY / RESERVED_MEMORY; ``disk_kb`` is
    the free space of the EXECUTE partition less RESERVED_DISK; ``disk_by_path`` holds the same
    for every execute directory a slot may use (SLOT<N>_EXECUTE). ``detected_cpus`` and
    ``detected_memory_mb`` are what the hardware has, before configuration.
    """

    cpus: int
    physical_cpus: int
    memory_mb: int
    disk_kb: int
    swap_kb: int
    detected_cpus: int
    detected_memory_mb: int
    custom: Mapping[str, DetectedResource] = attrs.field(factory=dict)
    disk_by_path: Mapping[str, int] = attrs.field(factory=dict)


@attrs.frozen
class HostReadings:
    """Machine-wide readings at one moment; the startd splits the loads among slots.

    ``keyboard_idle`` and ``console_idle`` are seconds since the last input on a terminal or
    input device (and on the console); ``cpu_busy_time`` is how long the non-HTCondor load has
    been above HighLoad (0 when it is not), ``cpu_is_busy`` whether it is now.
    """

    load_avg: float
    condor_load_avg: float
    keyboard_idle: int
    console_idle: int
    cpu_busy_time: int = 0
    cpu_is_busy: bool = False


@attrs.frozen
class MachineAttribute:
    """An attribute a plugin adds to every slot ad: a ClassAd value or expression text.

    ``expression`` True means ``value`` is ClassAd expression text to be parsed (``"HasFoo &&
    Cpus > 2"``); otherwise it is a plain value (bool, int, float, str).
    """

    name: str
    value: object
    expression: bool = False


class MachineHost(ConfigHost, Protocol):
    """The machine as detection sees it: a configuration host plus hardware and usage readings.

    ``epcore.builtin.host.LocalHost`` reads the real machine (through psutil and /proc);
    ``epcore.testing`` provides a fake one. Every method may raise ``OSError``.
    """

    def cpu_counts(self) -> tuple[int, int]:
        """(logical CPUs, physical cores)."""
        ...

    def memory_mb(self) -> int:
        """Physical memory in MB."""
        ...

    def swap_kb(self) -> int:
        """Swap space in KB."""
        ...

    def disk_free_kb(self, path: str) -> int:
        """Free space in KB of the file system holding ``path``."""
        ...

    def load_average(self) -> float:
        """The one-minute load average."""
        ...

    def device_access_times(self) -> Mapping[str, float]:
        """Last access time (epoch seconds) of each terminal and input device, by path.

        Console devices (``/dev/console``, ``/dev/tty<N>``, ``/dev/input/*``) and pseudo
        terminals (``/dev/pts/*``) are both included; detection tells them apart by path.
        """
        ...
