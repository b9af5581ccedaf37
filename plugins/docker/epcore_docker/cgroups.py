"""A container's cgroup, found from its first process, for usage, processes and OOM kills.

dockerd (its cgroupfs or systemd driver alike) puts each container in a group of its own; the
group's path in each hierarchy is in ``/proc/<pid>/cgroup`` of the container's first process,
and the hierarchies' mount points come from the core's mountinfo reader. On v1 the memory and
cpuacct hierarchies are read (they may be mounted apart); on v2 the one unified group.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from epcore.api import CgroupLayout, V1Group, read_int, read_keyed, read_layout, read_pids
from epcore.errors import IsolationError
from epcore.types import TrackedUsage


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """``/proc/<pid>/cgroup`` as {controller: path}; the v2 line under the key ``""``."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _hierarchy, controllers, path = parts
        if not controllers:
            found[""] = path
            continue
        for controller in controllers.split(","):
            found[controller.removeprefix("name=")] = path
    return found


@attrs.frozen
class ContainerCgroup:
    """Where a container's accounting lives: its v1 memory and cpuacct groups, or its v2
    group (``unified``)."""

    memory: V1Group | None = None
    cpuacct: V1Group | None = None
    unified: Path | None = None

    def pids(self) -> frozenset[int]:
        """The processes in the group (empty once it is gone)."""
        if self.memory is not None:
            return frozenset(self.memory.procs())
        if self.unified is not None:
            return frozenset(read_pids(self.unified / "cgroup.procs"))
        return frozenset()

    def usage(self) -> TrackedUsage | None:
        """CPU seconds and memory bytes now; None once the group is gone."""
        if self.memory is not None or self.cpuacct is not None:
            user, system = self.cpuacct.cpu_seconds() if self.cpuacct else (None, None)
            current, peak = self.memory.memory_bytes(False) if self.memory else (None, None)
        elif self.unified is not None:
            stat = read_keyed(self.unified / "cpu.stat") or {}
            user_usec, system_usec = stat.get("user_usec"), stat.get("system_usec")
            user = None if user_usec is None else user_usec / 1e6
            system = None if system_usec is None else system_usec / 1e6
            current = read_int(self.unified / "memory.current")
            peak = read_int(self.unified / "memory.peak")
        else:
            return None
        if user is None and system is None and current is None:
            return None
        return TrackedUsage(user, system, current, peak)

    def oom_kills(self) -> int:
        """Processes the container's memory limit killed so far."""
        if self.memory is not None:
            return self.memory.oom_kills()
        if self.unified is not None:
            events = read_keyed(self.unified / "memory.events")
            return 0 if events is None else events.get("oom_kill", 0)
        return 0


def _v1_group(layout: CgroupLayout, controller: str, paths: dict[str, str]) -> V1Group | None:
    hierarchy = layout.v1.get(controller)
    path = paths.get(controller)
    if hierarchy is None or path is None:
        return None
    # A hierarchy mounted from a sub-group shows paths relative to that sub-group.
    relative = (
        os.path.relpath(path, hierarchy.cgroup_root) if hierarchy.cgroup_root != "/" else path
    )
    return V1Group(hierarchy.path / relative.lstrip("/"), hierarchy.controllers)


def find_cgroup(pid: int, layout: CgroupLayout | None = None) -> ContainerCgroup | None:
    """The cgroup of process ``pid`` (a container's first process); None when it is gone
    or the machine's cgroups cannot be read."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="ascii", errors="replace") as handle:
            paths = parse_proc_cgroup(handle.read())
        layout = layout if layout is not None else read_layout()
    except (OSError, IsolationError):
        return None
    memory = _v1_group(layout, "memory", paths)
    cpuacct = _v1_group(layout, "cpuacct", paths)
    if memory is not None or cpuacct is not None:
        return ContainerCgroup(memory=memory, cpuacct=cpuacct)
    if layout.v2 is not None and "" in paths:
        return ContainerCgroup(unified=layout.v2 / paths[""].lstrip("/"))
    return None
