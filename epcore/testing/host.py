"""Fake machines for tests.

:class:`FakeMachineHost` (defined beside :class:`~epcore.config.memory_host.MemoryHost`, since the
policy simulator runs on it too) is a MemoryHost (files, commands and environment held in
memory) that also answers the hardware and usage readings of :class:`~epcore.types.MachineHost`;
every reading is a plain attribute a test may change between two calls. :class:`FakeSysfs`
writes a small real file tree (``/proc``, ``/sys``, ``/dev`` look-alikes) under a temporary
directory, with chosen contents and timestamps, for code that reads
files itself (cgroup files, device access times through ``LocalHost(dev_root=...)``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import attrs

from epcore.config.memory_host import DEFAULT_DISK_KB, FakeMachineHost, facts_for

__all__ = ["DEFAULT_DISK_KB", "FakeMachineHost", "FakeSysfs", "facts_for"]


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
