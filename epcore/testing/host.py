"""Fake machines for tests, the policy simulator and embedding.

:class:`FakeMachineHost` is a :class:`~epcore.config.host.MemoryHost` (files, commands and
environment held in memory) that also answers the hardware and usage readings of
:class:`~epcore.types.MachineHost`; every reading is a plain attribute a test may change
between two calls. :class:`FakeSysfs` writes a small real file tree (``/proc``, ``/sys``,
``/dev`` look-alikes) under a temporary directory, with chosen contents and timestamps, for code
that reads files itself (cgroup files, device access times through ``LocalHost(dev_root=...)``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import attrs

from epcore.config.host import HostFacts, MemoryHost

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


@attrs.define
class FakeSysfs:
    """A real directory tree under ``root`` that stands in for ``/``.

    Paths are written as on the real machine (``"/proc/loadavg"``) and land under ``root``;
    every helper returns the real path it wrote.
    """

    root: Path

    def path(self, path: str) -> Path:
        """Where ``path`` (an absolute path of the imitated machine) lives under ``root``."""
        return self.root / path.lstrip("/")

    def write(
        self,
        path: str,
        text: str = "",
        *,
        atime: float | None = None,
        mtime: float | None = None,
    ) -> Path:
        """Create (or replace) the file ``path`` with ``text``; set its times when given."""
        target = self.path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        self.set_times(path, atime=atime, mtime=mtime)
        return target

    def write_all(self, files: Mapping[str, str]) -> list[Path]:
        """Write several files at once (path -> contents)."""
        return [self.write(path, text) for path, text in files.items()]

    def mkdir(self, path: str) -> Path:
        """Create the directory ``path`` (and its parents)."""
        target = self.path(path)
        target.mkdir(parents=True, exist_ok=True)
        return target

    def symlink(self, path: str, points_to: str) -> Path:
        """Create ``path`` as a symbolic link to ``points_to`` (taken literally: it may dangle)."""
        target = self.path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(points_to)
        return target

    def set_times(
        self, path: str, *, atime: float | None = None, mtime: float | None = None
    ) -> Path:
        """Set the access and/or modification time of ``path`` (the other one is kept)."""
        target = self.path(path)
        if atime is None and mtime is None:
            return target
        current = target.stat()
        os.utime(
            target,
            (
                current.st_atime if atime is None else atime,
                current.st_mtime if mtime is None else mtime,
            ),
        )
        return target

    def devices(self, atimes: Mapping[str, float]) -> Path:
        """Create device stand-ins (``"/dev/pts/0": atime``...) and return the fake /dev."""
        for path, atime in atimes.items():
            self.write(path, atime=atime, mtime=atime)
        return self.mkdir("/dev")
