"""Machines held in memory, for tests, the policy simulator and embedding.

:class:`MemoryHost` is a :class:`~epcore.config.host.ConfigHost` that serves files from a dict
and facts from a record; :class:`FakeMachineHost` adds the hardware and usage readings of
:class:`~epcore.types.MachineHost` as plain attributes. They live apart from the reader's own
records so that a command reading the real machine's configuration (``ep submit``) does not
build their classes.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from epcore.config.host import CommandOutput, HostFacts


def _default_facts() -> HostFacts:
    return HostFacts(
        hostname="localhost",
        full_hostname="localhost",
        detected={
            "DETECTED_CORES": "1",
            "DETECTED_PHYSICAL_CPUS": "1",
            "DETECTED_CPUS_LIMIT": "1",
            "DETECTED_MEMORY": "1024",
            "ARCH": "X86_64",
            "OPSYS": "LINUX",
            "UNAME_ARCH": "x86_64",
            "UNAME_OPSYS": "Linux",
        },
        specials={"DETECTED_CPUS": "1", "USERNAME": "condor", "PID": "1", "PPID": "0"},
    )


@attrs.define
class MemoryHost:
    """A :class:`ConfigHost` backed by memory: files in a dict, commands answered by a dict.

    Paths are used as given (no normalisation); ``commands`` maps a command line to its output.
    """

    files: dict[str, str] = attrs.field(factory=dict)
    commands: dict[str, CommandOutput] = attrs.field(factory=dict)
    environment: dict[str, str] = attrs.field(factory=dict)
    host_facts: HostFacts = attrs.field(factory=_default_facts)

    def read_text(self, path: str) -> str:
        """Return the stored file, or raise FileNotFoundError."""
        try:
            return self.files[path]
        except KeyError:
            raise FileNotFoundError(path) from None

    def list_dir(self, path: str) -> list[str]:
        """Return the stored files directly inside ``path``."""
        prefix = path.rstrip("/") + "/"
        names = [p[len(prefix) :] for p in self.files if p.startswith(prefix)]
        found = [n for n in names if "/" not in n]
        if not found and not any(p.startswith(prefix) for p in self.files):
            raise FileNotFoundError(path)
        return found

    def run_command(self, command: str) -> CommandOutput:
        """Return the stored output for ``command``, or raise FileNotFoundError."""
        try:
            return self.commands[command]
        except KeyError:
            raise FileNotFoundError(command) from None

    def environ(self) -> Mapping[str, str]:
        """Return the stored environment."""
        return self.environment

    def facts(self) -> HostFacts:
        """Return the stored facts."""
        return self.host_facts

    def is_file(self, path: str) -> bool:
        """Return True when ``path`` is one of the stored files."""
        return path in self.files

    def write_text(self, path: str, text: str) -> None:
        """Store ``text`` as the file ``path``."""
        self.files[path] = text


#: Free space reported for "/" unless a test says otherwise: 100 GiB, in KB.
DEFAULT_DISK_KB = 100 * 1024 * 1024


def facts_for(
    cpus: int, physical_cpus: int, memory_mb: int, hostname: str = "fake-ep"
) -> HostFacts:
    """The configuration facts of a Linux x86_64 machine with these counts."""
    return HostFacts(
        hostname=hostname.split(".")[0],
        full_hostname=hostname,
        detected={
            "DETECTED_CORES": str(cpus),
            "DETECTED_PHYSICAL_CPUS": str(physical_cpus),
            "DETECTED_CPUS_LIMIT": str(cpus),
            "DETECTED_MEMORY": str(memory_mb),
            "ARCH": "X86_64",
            "OPSYS": "LINUX",
            "OPSYSNAME": "Debian",
            "OPSYSSHORTNAME": "Debian",
            "OPSYSLONGNAME": "Debian GNU/Linux 12",
            "OPSYSMAJORVER": "12",
            "OPSYSVER": "1200",
            "OPSYSANDVER": "Debian12",
            "OPSYSLEGACY": "LINUX",
            "UNAME_ARCH": "x86_64",
            "UNAME_OPSYS": "Linux",
        },
        specials={
            "DETECTED_CPUS": str(cpus),
            "USERNAME": "condor",
            "PID": "1",
            "PPID": "0",
            "IP_ADDRESS": "192.0.2.10",
            "IPV4_ADDRESS": "192.0.2.10",
        },
    )


@attrs.define
class FakeMachineHost(MemoryHost):
    """A machine described by attributes: 4 cores, 8192 MB, 100 GiB free on "/", idle.

    ``free_disk_kb`` maps exact paths to free KB (any other path raises FileNotFoundError, as
    a missing directory does on a real machine); ``device_atimes`` maps ``/dev/...`` paths to
    access times. ``host_facts`` defaults to facts matching the CPU and memory counts, so
    ``$(DETECTED_CORES)`` and :meth:`cpu_counts` agree. ``fail`` names readings that should
    raise OSError (``"load_average"``, ``"swap_kb"``...), to test how callers cope.
    """

    logical_cpus: int = 4
    physical_cpus: int = 4
    physical_memory_mb: int = 8192
    swap_space_kb: int = 2 * 1024 * 1024
    free_disk_kb: dict[str, int] = attrs.field(factory=lambda: {"/": DEFAULT_DISK_KB})
    one_minute_load: float = 0.0
    device_atimes: dict[str, float] = attrs.field(factory=dict)
    fail: set[str] = attrs.field(factory=set)
    # Declared again (after the counts) so that its default can be computed from them.
    host_facts: HostFacts = attrs.field()

    @host_facts.default
    def _facts_from_counts(self) -> HostFacts:
        return facts_for(self.logical_cpus, self.physical_cpus, self.physical_memory_mb)

    def _check(self, reading: str) -> None:
        if reading in self.fail:
            raise OSError(f"fake failure reading {reading}")

    def cpu_counts(self) -> tuple[int, int]:
        """(logical CPUs, physical cores)."""
        self._check("cpu_counts")
        return self.logical_cpus, self.physical_cpus

    def memory_mb(self) -> int:
        """Physical memory in MB."""
        self._check("memory_mb")
        return self.physical_memory_mb

    def swap_kb(self) -> int:
        """Swap (VirtualMemory) in KB."""
        self._check("swap_kb")
        return self.swap_space_kb

    def disk_free_kb(self, path: str) -> int:
        """Free KB at exactly ``path``; FileNotFoundError for a path not in ``free_disk_kb``."""
        self._check("disk_free_kb")
        try:
            return self.free_disk_kb[path]
        except KeyError:
            raise FileNotFoundError(path) from None

    def load_average(self) -> float:
        """The one-minute load average."""
        self._check("load_average")
        return self.one_minute_load

    def device_access_times(self) -> Mapping[str, float]:
        """The configured device access times."""
        self._check("device_access_times")
        return dict(self.device_atimes)
