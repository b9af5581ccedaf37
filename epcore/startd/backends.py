"""The backends a startd builds from its plugins: process tracking and container runtimes.

Both are built from the spec records the plugins offer (:class:`~epcore.types.IsolationBackendSpec`,
:class:`~epcore.types.ContainerRuntimeSpec`), once at
startup (and, for container runtimes, again on reconfiguration: an admin who installs docker
and reconfigures expects HasDocker to appear, as HTCondor's startd probes again). A backend
whose factory raises (or builds something else than its kind's Protocol) is logged and left
out, so one broken plugin does not stop the startd.
"""

from __future__ import annotations

import logging

from epcore.config import Config
from epcore.errors import EpError, PluginError
from epcore.plugins import Plugins
from epcore.types import ContainerRuntime, IsolationBackend, MachineAttribute, ScratchFilesystem

#: Isolation backends in the order a starter applies them: the process group always, the
#: finer ones after it (their usage numbers are preferred).
ISOLATION_ORDER = ("process_group", "gid", "pid_namespace", "cgroup")


def isolation_backends(
    plugins: Plugins, config: Config, log: logging.Logger
) -> tuple[IsolationBackend, ...]:
    """The isolation backends the configuration turns on and this machine supports."""
    chosen: list[IsolationBackend] = []
    for spec in plugins.isolation_backends():
        try:
            backend = plugins.build_isolation_backend(spec, config)
        except PluginError as error:
            log.error("isolation backend %s left out: %s", spec.name, error)
            continue
        if not backend.wanted():
            continue
        if not backend.available():
            log.warning("isolation backend %s is configured but unavailable", spec.name)
            continue
        chosen.append(backend)
    rank = {name: i for i, name in enumerate(ISOLATION_ORDER)}
    chosen.sort(key=lambda b: rank.get(b.name, len(rank)))
    log.info("process tracking: %s", ", ".join(b.name for b in chosen) or "none")
    return tuple(chosen)


def container_runtimes(
    plugins: Plugins, config: Config, log: logging.Logger
) -> tuple[ContainerRuntime, ...]:
    """Every container runtime the plugins offer, built for ``config``."""
    built: list[ContainerRuntime] = []
    for spec in plugins.container_runtimes():
        try:
            built.append(plugins.build_container_runtime(spec, config))
        except EpError as error:
            # PluginError among them: a factory that built something else than a runtime.
            log.error("container runtime %s cannot be built: %s", spec.name, error)
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


def scratch_filesystem(
    plugins: Plugins, config: Config, log: logging.Logger
) -> ScratchFilesystem | None:
    """The per-job scratch filesystem the configuration turns on (the last plugin's that is
    wanted), started: its backing store made and volumes left by a dead startd removed. One
    that is wanted but cannot start is kept, unavailable: it says why in the slot ads and jobs
    run in plain sandboxes."""
    chosen: ScratchFilesystem | None = None
    for spec in plugins.scratch_filesystems():
        try:
            built = plugins.build_scratch_filesystem(spec, config)
        except EpError as error:
            log.error("scratch filesystem %s cannot be built: %s", spec.name, error)
            continue
        if built.wanted():
            chosen = built
    if chosen is None:
        return None
    chosen.start()
    if chosen.available():
        log.info("scratch filesystem %s: every job gets its own", chosen.name)
    else:
        shown = ", ".join(f"{a.name} = {a.value!r}" for a in chosen.machine_attributes())
        log.warning("scratch filesystem %s is unavailable: %s", chosen.name, shown)
    return chosen
