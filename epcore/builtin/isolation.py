"""Built-in plugin: the isolation backends that ship with epcore.

``process_group`` (always on: the job's session and everything its supervisor inherits as
subreaper), ``pid_namespace`` (USE_PID_NAMESPACES), ``gid`` (USE_GID_PROCESS_TRACKING with
MIN/MAX_TRACKING_GID) and ``cgroup`` (BASE_CGROUP; v1 or v2 per controller). The startd asks
each backend whether the configuration wants it and the machine has it; a plugin may offer a
backend under one of these names to replace the built-in one.
"""

from __future__ import annotations

from collections.abc import Sequence

from epcore import hookimpl
from epcore.types import IsolationBackendSpec


@hookimpl
def ep_isolation_backends() -> Sequence[IsolationBackendSpec]:
    """The four built-in process trackers."""
    from epcore.starter.cgroups.backend import CgroupBackend
    from epcore.starter.trackers import tracker_specs

    return (*tracker_specs(), IsolationBackendSpec(CgroupBackend.name, CgroupBackend))
