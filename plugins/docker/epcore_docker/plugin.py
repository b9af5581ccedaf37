"""The docker plugin's hooks: epcore finds this module through the ``epcore`` entry point.

It offers one container runtime, ``docker`` (:class:`epcore_docker.runtime.DockerRuntime`),
and the one knob epcore adds for it, DOCKER_URL. HTCondor's own DOCKER_* knobs are already in
epcore's default table; the runtime reads them.
"""

from __future__ import annotations

from collections.abc import Sequence

from epcore import hookimpl
from epcore.config import Config, KnobDefault
from epcore.types import ContainerRuntimeSpec
from epcore_docker.runtime import NAME, DockerRuntime


def _build(config: Config) -> DockerRuntime:
    return DockerRuntime(config)


@hookimpl
def ep_config_defaults() -> Sequence[KnobDefault]:
    """DOCKER_URL: where dockerd listens, for the docker SDK."""
    return [
        KnobDefault(
            "DOCKER_URL",
            None,
            "string",
            "epcore: where dockerd listens (unix:///var/run/docker.sock, tcp://host:2375); "
            "unset: the DOCKER_HOST environment variable, else the default socket.",
        )
    ]


@hookimpl
def ep_container_runtimes() -> Sequence[ContainerRuntimeSpec]:
    """The docker runtime, built by the startd for its configuration."""
    return [ContainerRuntimeSpec(NAME, _build)]
