"""The docker knobs: read once from the configuration, then applied to each job.

:func:`read_settings` checks every DOCKER_* knob the plugin uses and parses its expressions,
so that a bad configuration is reported when the startd starts, not when a job arrives.
:func:`job_options` then evaluates those expressions for one job (MY is the machine ad, TARGET
the job ad) and says what to mount, which network to use and whether to drop capabilities.
Nothing here does I/O, reads the clock or imports the docker SDK.
"""

from __future__ import annotations

import re

import attrs

from epcore.api import HoldCode, split_list
from epcore.classad import UNDEFINED, ClassAd, EvalContext, Expr, parse_expr
from epcore.config import Config
from epcore.errors import ClassAdSyntaxError, ConfigError, JobSetupError
from epcore.types import MachineAttribute
from epcore_docker.extra_args import ExtraArguments, parse_extra_arguments

DEFAULT_IMAGE_CACHE_SIZE = 8
_DEFAULT_SOURCE = "<Default>"
_VOLUME_NAME = re.compile(r"[A-Za-z0-9_]+")
_NETWORK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_BUILTIN_NETWORKS = ("none", "host")


class DockerSettingsError(ConfigError):
    """A DOCKER_* knob with a value the plugin cannot use; the message names the knob."""


@attrs.frozen
class Volume:
    """One of DOCKER_VOLUMES: ``DOCKER_VOLUME_DIR_<name>`` read into paths.

    ``always`` is true when the name is in DOCKER_MOUNT_VOLUMES: only those volumes are ever
    mounted, and then only for jobs for which ``mount_if`` (when set) evaluates to true.
    """

    name: str
    host_path: str
    container_path: str
    read_only: bool
    mount_if: Expr | None
    always: bool


@attrs.frozen
class DockerSettings:
    """The docker knobs, checked and parsed."""

    volumes: tuple[Volume, ...]
    networks: tuple[str, ...]
    image_cache_size: int
    drop_all_capabilities: Expr
    shm_size: Expr | None
    extra: ExtraArguments


@attrs.frozen
class Mount:
    """A host directory bind-mounted into one job's container."""

    host_path: str
    container_path: str
    read_only: bool


@attrs.frozen
class ContainerOptions:
    """What the docker knobs say about one job's container.

    ``network_mode`` None means docker's default network. ``shm_size`` is DOCKER_SHM_SIZE's
    value when it is usable, else ``--shm-size`` of DOCKER_EXTRA_ARGUMENTS, else None (docker's
    default).
    ``warnings`` explain knobs whose value for this job could not be used as written.
    """

    mounts: tuple[Mount, ...]
    network_mode: str | None
    drop_all_capabilities: bool
    shm_size: int | None
    warnings: tuple[str, ...]


def read_settings(config: Config) -> DockerSettings:
    """Check and parse the docker knobs of ``config``; DockerSettingsError names a bad one."""
    extra_text = config.get("DOCKER_EXTRA_ARGUMENTS")
    if extra_text is None:
        extra = ExtraArguments.empty()
    else:
        source, line = _location(config, "DOCKER_EXTRA_ARGUMENTS")
        extra = parse_extra_arguments(extra_text, source=source, line=line)
    drop_all = _expression(config, "DOCKER_DROP_ALL_CAPABILITIES")
    return DockerSettings(
        volumes=_read_volumes(config),
        networks=_read_networks(config),
        image_cache_size=_read_image_cache_size(config),
        drop_all_capabilities=parse_expr("true") if drop_all is None else drop_all,
        shm_size=_expression(config, "DOCKER_SHM_SIZE"),
        extra=extra,
    )


def machine_attributes(settings: DockerSettings) -> list[MachineAttribute]:
    """HasDockerVolume<NAME> = true for each volume, DockerNetworks when networks are offered."""
    attributes = [MachineAttribute(f"HasDockerVolume{v.name}", True) for v in settings.volumes]
    if settings.networks:
        attributes.append(MachineAttribute("DockerNetworks", ",".join(settings.networks)))
    return attributes


def job_options(
    settings: DockerSettings, machine: ClassAd, job: ClassAd, *, now: float
) -> ContainerOptions:
    """The container options for ``job`` on ``machine`` at time ``now``.

    Raises JobSetupError (hold code 6) when the job asks for a network this machine does not
    offer.
    """
    context = EvalContext(now=now)
    warnings: list[str] = []
    mounts = tuple(
        Mount(volume.host_path, volume.container_path, volume.read_only)
        for volume in settings.volumes
        if volume.always and _wants_mount(volume, machine, job, context, warnings)
    )
    drop = settings.drop_all_capabilities.evaluate(machine, job, context=context)
    if not isinstance(drop, bool):
        # A broken security knob must not open the container up.
        warnings.append(
            f"DOCKER_DROP_ALL_CAPABILITIES = {settings.drop_all_capabilities} gave {drop!r},"
            " not a boolean: all capabilities are dropped"
        )
    return ContainerOptions(
        mounts=mounts,
        network_mode=_network_mode(settings, job, machine, context),
        drop_all_capabilities=drop is not False,
        shm_size=_shm_size(settings, machine, job, context, warnings),
        warnings=tuple(warnings),
    )


def _wants_mount(
    volume: Volume, machine: ClassAd, job: ClassAd, context: EvalContext, warnings: list[str]
) -> bool:
    if volume.mount_if is None:
        return True
    value = volume.mount_if.evaluate(machine, job, context=context)
    if isinstance(value, bool):
        return value
    if value is not UNDEFINED:
        warnings.append(
            f"DOCKER_VOLUME_DIR_{volume.name}_MOUNT_IF = {volume.mount_if} gave {value!r},"
            f" not a boolean: volume {volume.name} is not mounted"
        )
    return False


def _shm_size(
    settings: DockerSettings,
    machine: ClassAd,
    job: ClassAd,
    context: EvalContext,
    warnings: list[str],
) -> int | None:
    if settings.shm_size is None:
        return settings.extra.shm_size
    value = settings.shm_size.evaluate(machine, job, context=context)
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return int(value)
    if settings.extra.shm_size is None:
        fallback = "docker's default size"
    else:
        fallback = "the --shm-size of DOCKER_EXTRA_ARGUMENTS"
    warnings.append(
        f"DOCKER_SHM_SIZE = {settings.shm_size} gave {value!r}, not a non-negative number of"
        f" bytes: /dev/shm gets {fallback}"
    )
    return settings.extra.shm_size


def _network_mode(
    settings: DockerSettings, job: ClassAd, machine: ClassAd, context: EvalContext
) -> str | None:
    requested = job.evaluate("DockerNetworkType", machine, context=context)
    if requested is UNDEFINED or requested == "":
        return None
    if isinstance(requested, str):
        for offered in (*_BUILTIN_NETWORKS, *settings.networks):
            if offered.lower() == requested.lower():
                return offered
    offered_text = ", ".join((*_BUILTIN_NETWORKS, *settings.networks))
    message = (
        f"DockerNetworkType {requested!r} is not offered by this machine"
        f" (offered: {offered_text}; DOCKER_NETWORKS lists the custom ones)"
    )
    raise JobSetupError(message, HoldCode.FAILED_TO_CREATE_PROCESS)


def _read_volumes(config: Config) -> tuple[Volume, ...]:
    names = _unique(split_list(config.get("DOCKER_VOLUMES")))
    for name in names:
        if not _VOLUME_NAME.fullmatch(name):
            message = (
                f"DOCKER_VOLUMES: {name!r} is not a volume name (letters, digits and _ only,"
                " as it becomes part of DOCKER_VOLUME_DIR_<NAME> and HasDockerVolume<NAME>)"
            )
            raise _error(config, message, "DOCKER_VOLUMES")
    mounted = _unique(split_list(config.get("DOCKER_MOUNT_VOLUMES")))
    known = {name.lower() for name in names}
    for name in mounted:
        if name.lower() not in known:
            message = (
                f"DOCKER_MOUNT_VOLUMES: {name!r} is not one of DOCKER_VOLUMES"
                f" ({', '.join(names) or 'none configured'})"
            )
            raise _error(config, message, "DOCKER_MOUNT_VOLUMES")
    always = {name.lower() for name in mounted}
    return tuple(_read_volume(config, name, name.lower() in always) for name in names)


def _read_volume(config: Config, name: str, always: bool) -> Volume:
    knob = f"DOCKER_VOLUME_DIR_{name}"
    text = config.get(knob)
    if text is None:
        message = f"{knob} is not set, but DOCKER_VOLUMES names the volume {name}"
        raise _error(config, message, knob, "DOCKER_VOLUMES")
    parts = [part.strip() for part in text.strip().split(":")]
    mode = parts[2].lower() if len(parts) == 3 else "rw"
    if len(parts) > 3 or mode not in ("ro", "rw") or not all(parts[:2]):
        message = f"{knob} = {text!r} is not HOST_PATH[:CONTAINER_PATH[:ro|:rw]]"
        raise _error(config, message, knob)
    for path in parts[:2]:
        if not path.startswith("/"):
            raise _error(config, f"{knob} = {text!r}: {path!r} is not an absolute path", knob)
    return Volume(
        name=name,
        host_path=parts[0],
        container_path=parts[1] if len(parts) > 1 else parts[0],
        read_only=mode == "ro",
        mount_if=_expression(config, f"{knob}_MOUNT_IF"),
        always=always,
    )


def _read_networks(config: Config) -> tuple[str, ...]:
    networks = _unique(split_list(config.get("DOCKER_NETWORKS")))
    for network in networks:
        if not _NETWORK_NAME.fullmatch(network):
            message = f"DOCKER_NETWORKS: {network!r} is not a docker network name"
            raise _error(config, message, "DOCKER_NETWORKS")
    return tuple(networks)


def _read_image_cache_size(config: Config) -> int:
    knob = "DOCKER_IMAGE_CACHE_SIZE"
    text = config.get(knob)
    if text is None:
        return DEFAULT_IMAGE_CACHE_SIZE
    try:
        value = parse_expr(text).evaluate()
    except ClassAdSyntaxError:
        value = None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        message = f"{knob} = {text!r} is not a whole number of images (1 or more)"
        raise _error(config, message, knob)
    return value


def _expression(config: Config, knob: str) -> Expr | None:
    text = config.get(knob)
    if text is None:
        return None
    try:
        return parse_expr(text)
    except ClassAdSyntaxError as error:
        message = f"{knob} = {text!r} is not a ClassAd expression: {error}"
        raise _error(config, message, knob) from error


def _unique(names: list[str]) -> list[str]:
    """``names`` without case-insensitive repeats, keeping the first spelling."""
    seen: dict[str, str] = {}
    for name in names:
        seen.setdefault(name.lower(), name)
    return list(seen.values())


def _location(config: Config, *knobs: str) -> tuple[str | None, int | None]:
    """Where the first of ``knobs`` set outside the default table was set."""
    for knob in knobs:
        origin = config.origin(knob)
        if origin is not None and origin.source != _DEFAULT_SOURCE:
            return origin.source, origin.line
    return None, None


def _error(config: Config, message: str, *knobs: str) -> DockerSettingsError:
    return DockerSettingsError(message, *_location(config, *knobs))
