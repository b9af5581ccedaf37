"""The backends a startd builds from its plugins: process tracking and container runtimes.

Both are built from the :class:`~epcore.types.BackendSpec` records the plugins offer, once at
startup (and, for container runtimes, again on reconfiguration: an admin who installs docker
and reconfigures expects HasDocker to appear, as HTCondor's startd probes again). A backend
whose factory raises is logged and left out, so one broken plugin does not stop the startd.
"""

from __future__ import annotations

import logging

from epcore.config import Config
from epcore.errors import EpError
from epcore.plugins import Plugins
from epcore.types import ContainerRuntime, IsolationBackend, MachineAttribute

#: Isolation backends in the order a starter applies them: the process group always, the
#: finer ones after it (their usage numbers are preferred).
ISOLATION_ORDER = ("process_group", "gid", "pid_namespace", "cgroup")


def isolation_backends(
    plugins: Plugins, config: Config, log: logging.Logger
) -> tuple[IsolationBackend, ...]:
    """The isolation backends the configuration turns on and this machine supports."""
    chosen: list[IsolationBackend] = []
    for spec in plugins.backends("isolation"):
        backend = spec.factory(config)
        if not hasattr(backend, "track"):
            continue
        typed: IsolationBackend = backend  # type: ignore[assignment]
        if not typed.wanted():
            continue
        if not typed.available():
            log.warning("isolation backend %s is configured but unavailable", spec.name)
            continue
        chosen.append(typed)
    rank = {name: i for i, name in enumerate(ISOLATION_ORDER)}
    chosen.sort(key=lambda b: rank.get(b.name, len(rank)))
    log.info("process tracking: %s", ", ".join(b.name for b in chosen) or "none")
    return tuple(chosen)


def container_runtimes(
    plugins: Plugins, config: Config, log: logging.Logger
) -> tuple[ContainerRuntime, ...]:
    """Every container runtime the plugins offer, built for ``config``."""
    built: list[ContainerRuntime] = []
    for spec in plugins.backends("container"):
        try:
            runtime = spec.factory(config)
        except EpError as error:
            log.error("container runtime %s cannot be built: %s", spec.name, error)
            continue
        if not hasattr(runtime, "start"):
            log.error("container runtime %s offers no start(): left out", spec.name)
            continue
        typed: ContainerRuntime = runtime  # type: ignore[assignment]
        built.append(typed)
    return tuple(built)


def runtime_attributes(
    runtimes: tuple[ContainerRuntime, ...], log: logging.Logger
) -> list[MachineAttribute]:
    """What every runtime advertises (HasDocker, DockerVersion...), logged once."""
    found: list[MachineAttribute] = []
    for runtime in runtimes:
        attributes = list(runtime.machine_attributes())
        shown = ", ".join(f"{a.name} = {a.value!r}" for a in attributes)
        log.info("container runtime %s: %s", runtime.name, shown or "no attributes")
        found.extend(attributes)
    return found
