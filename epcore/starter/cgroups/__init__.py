"""Job isolation with cgroups (v1, v2, or both on a hybrid host): the "cgroup" backend.

:class:`CgroupBackend` is an :class:`~epcore.types.IsolationBackend`; :data:`BACKEND_SPEC`
offers it to the starter (kind "isolation", name "cgroup"). :func:`read_layout` tells which
hierarchies the machine has and which version serves each controller.
"""

from __future__ import annotations

from epcore.starter.cgroups.backend import (
    CgroupBackend,
    CgroupTracking,
    MemoryLimits,
    cgroup_name,
    cpu_shares,
    cpu_weight,
    memory_limits,
)
from epcore.starter.cgroups.mountinfo import (
    CgroupLayout,
    MountEntry,
    MountinfoError,
    V1Hierarchy,
    layout_from_mounts,
    parse_mountinfo,
    read_layout,
)
from epcore.types import IsolationBackendSpec

#: The backend as a plugin offers it (``ep_isolation_backends``).
BACKEND_SPEC = IsolationBackendSpec(CgroupBackend.name, CgroupBackend)

__all__ = [
    "BACKEND_SPEC",
    "CgroupBackend",
    "CgroupLayout",
    "CgroupTracking",
    "MemoryLimits",
    "MountEntry",
    "MountinfoError",
    "V1Hierarchy",
    "cgroup_name",
    "cpu_shares",
    "cpu_weight",
    "layout_from_mounts",
    "memory_limits",
    "parse_mountinfo",
    "read_layout",
]
