"""The docker plugin's hooks: epcore finds this module through the ``epcore`` entry point.

It offers one container runtime, ``docker`` (:class:`epcore_docker.runtime.DockerRuntime`),
the one knob epcore adds for it, DOCKER_URL, and a startd cron job that advertises
DockerCachedImageSizeMb every DOCKER_CACHE_ADVERTISE_INTERVAL seconds. HTCondor's own DOCKER_*
knobs are already in epcore's default table; the runtime reads them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from epcore import hookimpl
from epcore.classad import ClassAd
from epcore.config import Config, KnobDefault
from epcore.types import ContainerRuntimeSpec, PythonCronJob
from epcore_docker.cache_record import cached_size_mb
from epcore_docker.runtime import NAME, DockerRuntime

#: The cron job's name (STARTD_CRON_DOCKER_CACHE_PREFIX, _PERIOD and _SLOTS apply to it).
CACHE_JOB = "DOCKER_CACHE"
#: DOCKER_CACHE_ADVERTISE_INTERVAL's default.
CACHE_INTERVAL = 1200.0
#: What a starter of a docker job imports that the startd does not (the zygote imports them
#: once, before the first such starter).
STARTER_MODULES = ("docker", "epcore_docker.container", "epcore_docker.images")


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
    return [ContainerRuntimeSpec(NAME, _build, starter_modules=STARTER_MODULES)]


def _cache_size_job(config: Config) -> PythonCronJob:
    runtime = DockerRuntime(config, logging.getLogger("epcore.docker.cache"))

    def run() -> list[ClassAd]:
        # From the cache's record alone: no docker connection from a thread of the startd's,
        # which forks starters meanwhile.
        ad = ClassAd()
        ad["DockerCachedImageSizeMb"] = cached_size_mb(runtime.spool)
        return [ad]

    interval = config.get_float("DOCKER_CACHE_ADVERTISE_INTERVAL", CACHE_INTERVAL)
    # Sent with the startd's next update, as HTCondor's startd advertises it.
    return PythonCronJob(CACHE_JOB, run, mode="Periodic", period=max(interval, 1.0), publish=False)


@hookimpl
def ep_cron_jobs(config: Config) -> Sequence[PythonCronJob]:
    """DockerCachedImageSizeMb: what the images the plugin pulled take (none when docker
    jobs are turned off)."""
    runtime = DockerRuntime(config)
    if runtime.configuration_problem() is not None:
        return []
    return [_cache_size_job(config)]
