"""Built-in plugin: NVIDIA GPUs found through NVML (the ``nvidia-ml-py`` package, ``pynvml``).

HTCondor finds GPUs by running ``condor_gpu_discovery``: through
``MACHINE_RESOURCE_INVENTORY_GPUs`` (what ``use FEATURE : GPUs`` sets), or, since HTCondor 24,
by itself whenever neither ``MACHINE_RESOURCE_INVENTORY_GPUs`` nor ``MACHINE_RESOURCE_GPUs``
is defined and ``STARTD_DETECT_GPUS`` holds discovery arguments (its default is
``-properties``; ``false`` or ``0`` turns it off). That program ships with HTCondor, not with
epcore. So: when GPU discovery is wanted and the configured discovery program does not exist
on the host, this plugin asks NVML instead and reports what ``condor_gpu_discovery
-properties`` would: one device per GPU, named by the short UUID (``GPU-6a96bd13``), with the
properties Capability, DeviceName, DriverVersion, MaxSupportedVersion, ECCEnabled,
GlobalMemoryMb, ClockMhz, DeviceUuid and DevicePciBusId. When the program exists,
:mod:`epcore.builtin.detection` runs it like any inventory script and this plugin stays out.

``pynvml`` is imported only when a detection runs, so epcore works without it; no driver, no
library or any NVML error means "no NVIDIA GPUs" and is logged, never raised.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import shlex
from typing import TYPE_CHECKING, Any

import attrs

from epcore import hookimpl
from epcore.types import DetectedResource, ResourceDevice

if TYPE_CHECKING:
    from epcore.config import Config
    from epcore.config.host import ConfigHost
    from epcore.types import MachineHost

_log = logging.getLogger("epcore.builtin.nvidia")

#: The resource name HTCondor gives GPUs.
GPU_RESOURCE = "GPUs"
_MIB = 1024 * 1024


@attrs.frozen
class GpuDiscoveryPlan:
    """How the configuration asks for GPUs: the resource ``tag`` and discovery ``command``
    (None when GPUs are not to be discovered), and why, for logs and ``ep plugins``."""

    tag: str
    command: str | None
    reason: str


def _defined(config: Config, name: str) -> str | None:
    """The knob name as the configuration spells it, when ``name`` is defined (any case)."""
    wanted = name.lower()
    for defined in config.names():
        bare = defined.rsplit(".", 1)[-1]
        if bare.lower() == wanted and config.get(bare) is not None:
            return bare
    return None


def gpu_discovery_plan(config: Config) -> GpuDiscoveryPlan:
    """Whether and how GPUs are discovered, following HTCondor 24+'s startd."""
    inventory = _defined(config, "MACHINE_RESOURCE_INVENTORY_GPUs")
    if inventory is not None:
        tag = inventory[len("MACHINE_RESOURCE_INVENTORY_") :]
        return GpuDiscoveryPlan(tag, config.get(inventory), f"{inventory} is set")
    if _defined(config, "MACHINE_RESOURCE_GPUs") is not None:
        return GpuDiscoveryPlan(GPU_RESOURCE, None, "MACHINE_RESOURCE_GPUs declares the GPUs")
    arguments = (config.get("STARTD_DETECT_GPUS") or "").strip()
    if not arguments or arguments.lower() in ("false", "0"):
        return GpuDiscoveryPlan(GPU_RESOURCE, None, "STARTD_DETECT_GPUS turns discovery off")
    if arguments.lower() in ("true", "1"):
        # HTCondor logs this as invalid: the knob holds arguments, not a switch.
        _log.error("invalid configuration: STARTD_DETECT_GPUS=%s (it takes arguments)", arguments)
        return GpuDiscoveryPlan(GPU_RESOURCE, None, "STARTD_DETECT_GPUS is not valid")
    command = config.expand("$(LIBEXEC)/condor_gpu_discovery $(STARTD_DETECT_GPUS)")
    return GpuDiscoveryPlan(GPU_RESOURCE, command, "STARTD_DETECT_GPUS asks for discovery")


def program_available(host: ConfigHost, command: str) -> bool:
    """True when the program ``command`` starts with exists on ``host`` (PATH is searched
    for a bare name, as exec does)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if not words:
        return False
    program = words[0]
    if "/" in program:
        return host.is_file(program)
    search = host.environ().get("PATH", os.defpath)
    return any(host.is_file(os.path.join(d or ".", program)) for d in search.split(os.pathsep))


def nvidia_fallback_wanted(config: Config, host: ConfigHost) -> bool:
    """True when GPUs are to be discovered but the discovery program is missing."""
    plan = gpu_discovery_plan(config)
    return plan.command is not None and not program_available(host, plan.command)


# -- NVML -----------------------------------------------------------------------------------


def _text(value: object) -> str:
    # Old pynvml releases return bytes; current ones decode to str.
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def short_gpu_id(uuid: str) -> str:
    """HTCondor's short device id: ``GPU-`` and the first 8 hex digits of the NVIDIA UUID."""
    bare = uuid.removeprefix("GPU-")
    return f"GPU-{bare[:8]}"


def _cuda_version(encoded: int) -> float:
    """NVML's 12020 as the 12.2 condor_gpu_discovery prints for DriverVersion."""
    return encoded // 1000 + (encoded % 1000) // 10 / 10


def _device_properties(nvml: Any, handle: object, uuid: str, cuda: int | None) -> dict[str, object]:
    """condor_gpu_discovery's properties for one device; a property NVML refuses is left out."""
    properties: dict[str, object] = {}

    def read(name: str, reader: Any) -> None:
        try:
            properties[name] = reader()
        except nvml.NVMLError as exc:
            _log.debug("NVML cannot report %s of %s: %s", name, uuid, exc)

    def capability() -> float:
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
        return float(f"{int(major)}.{int(minor)}")

    def ecc() -> bool:
        try:
            current, _pending = nvml.nvmlDeviceGetEccMode(handle)
        except nvml.NVMLError as exc:
            if getattr(exc, "value", None) != nvml.NVML_ERROR_NOT_SUPPORTED:
                raise
            return False  # consumer boards have no ECC; CUDA reports it as disabled
        return bool(current == nvml.NVML_FEATURE_ENABLED)

    def bus_id() -> str:
        pci = nvml.nvmlDeviceGetPciInfo(handle)
        return f"{int(pci.domain):04X}:{int(pci.bus):02X}:{int(pci.device):02X}.0"

    read("Capability", capability)
    read("DeviceName", lambda: _text(nvml.nvmlDeviceGetName(handle)))
    if cuda is not None:
        properties["DriverVersion"] = _cuda_version(cuda)
        properties["MaxSupportedVersion"] = cuda
    read("ECCEnabled", ecc)
    read("GlobalMemoryMb", lambda: int(nvml.nvmlDeviceGetMemoryInfo(handle).total) // _MIB)
    read("ClockMhz", lambda: float(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)))
    properties["DeviceUuid"] = uuid.removeprefix("GPU-")
    read("DevicePciBusId", bus_id)
    return properties


def _load_nvml() -> Any:
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        _log.info("nvidia-ml-py is not installed (pip install 'epcore[gpu]'); no NVIDIA GPUs")
        return None


def detect_nvidia_gpus(nvml: Any = None) -> DetectedResource | None:
    """The NVIDIA GPUs NVML sees, or None when there are none or NVML cannot tell.

    ``nvml`` is the ``pynvml`` module (imported here when not given; tests pass a fake).
    """
    if nvml is None:
        nvml = _load_nvml()
        if nvml is None:
            return None
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        _log.info("no NVIDIA GPUs: NVML cannot start (%s)", exc)
        return None
    try:
        return _devices(nvml)
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


def _devices(nvml: Any) -> DetectedResource | None:
    try:
        count = int(nvml.nvmlDeviceGetCount())
    except nvml.NVMLError as exc:
        _log.warning("no NVIDIA GPUs: NVML cannot count devices (%s)", exc)
        return None
    try:
        cuda: int | None = int(nvml.nvmlSystemGetCudaDriverVersion())
    except nvml.NVMLError as exc:
        _log.debug("NVML cannot report the CUDA driver version: %s", exc)
        cuda = None
    devices: list[ResourceDevice] = []
    for index in range(count):
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            uuid = _text(nvml.nvmlDeviceGetUUID(handle))
        except nvml.NVMLError as exc:
            _log.warning("skipping NVIDIA device %d: %s", index, exc)
            continue
        properties = _device_properties(nvml, handle, uuid, cuda)
        devices.append(ResourceDevice(short_gpu_id(uuid), properties))
    if not devices:
        _log.info("no NVIDIA GPUs: NVML reports %d usable devices", len(devices))
        return None
    _log.info("NVML found %d NVIDIA GPUs: %s", len(devices), ", ".join(d.id for d in devices))
    return DetectedResource(GPU_RESOURCE, len(devices), tuple(devices), source="nvidia")


# -- plugin hook ----------------------------------------------------------------------------


@hookimpl
def ep_detect_resources(config: Config, host: MachineHost) -> list[DetectedResource]:
    """GPUs from NVML when GPU discovery is wanted and its program is missing on ``host``."""
    plan = gpu_discovery_plan(config)
    if plan.command is None or program_available(host, plan.command):
        return []
    _log.info("%s, but %s cannot be run; asking NVML", plan.reason, plan.command.split()[0])
    found = detect_nvidia_gpus()
    if found is None:
        return []
    return [attrs.evolve(found, name=plan.tag)]
