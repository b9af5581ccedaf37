"""A fake ``pynvml`` module: the functions epcore's NVIDIA detector calls, over a list of GPUs.

Errors follow pynvml: ``NVMLError(code)`` builds the subclass registered for ``code``
(``NVMLError_LibraryNotFound`` for 12...), and ``.value`` holds the code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import attrs

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_UNKNOWN = 999
NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1
NVML_CLOCK_SM = 1


class NVMLError(Exception):
    """pynvml's error: constructing it with a code gives the subclass for that code."""

    _by_code: ClassVar[dict[int, type[NVMLError]]] = {}
    value: int

    def __new__(cls, value: int) -> NVMLError:
        chosen = NVMLError._by_code.get(value, cls) if cls is NVMLError else cls
        error = Exception.__new__(chosen)
        error.value = value
        return error

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return f"NVML error {self.value}"


def _subclass(name: str, code: int) -> type[NVMLError]:
    cls = type(name, (NVMLError,), {})
    NVMLError._by_code[code] = cls
    return cls


NVMLError_NotSupported = _subclass("NVMLError_NotSupported", NVML_ERROR_NOT_SUPPORTED)
NVMLError_DriverNotLoaded = _subclass("NVMLError_DriverNotLoaded", NVML_ERROR_DRIVER_NOT_LOADED)
NVMLError_LibraryNotFound = _subclass("NVMLError_LibraryNotFound", NVML_ERROR_LIBRARY_NOT_FOUND)
NVMLError_GpuIsLost = _subclass("NVMLError_GpuIsLost", NVML_ERROR_GPU_IS_LOST)


@attrs.frozen
class Memory:
    """What nvmlDeviceGetMemoryInfo returns (bytes)."""

    total: int
    free: int = 0
    used: int = 0


@attrs.frozen
class PciInfo:
    """What nvmlDeviceGetPciInfo returns."""

    domain: int
    bus: int
    device: int


@attrs.define
class FakeGpu:
    """One board. ``errors`` maps a function name to the NVML code it fails with."""

    uuid: str
    name: str = "NVIDIA A100-SXM4-40GB"
    capability: tuple[int, int] = (8, 0)
    memory_bytes: int = 40536 * 1024 * 1024
    ecc: int = NVML_FEATURE_ENABLED
    max_sm_clock: int = 1410
    pci: PciInfo = PciInfo(0, 0x3B, 0)
    errors: dict[str, int] = attrs.field(factory=dict)


@attrs.define
class FakeNvml:
    """The module: ``init_error`` / ``count_error`` make those calls fail with the code;
    ``bytes_strings`` answers names and UUIDs as bytes (pynvml before 11.5)."""

    gpus: list[FakeGpu] = attrs.field(factory=list)
    cuda_driver_version: int = 12020
    init_error: int | None = None
    count_error: int | None = None
    bytes_strings: bool = False
    initialized: int = 0
    calls: list[str] = attrs.field(factory=list)

    NVMLError: ClassVar[type[NVMLError]] = NVMLError
    NVMLError_NotSupported: ClassVar[type[NVMLError]] = NVMLError_NotSupported
    NVML_ERROR_NOT_SUPPORTED: ClassVar[int] = NVML_ERROR_NOT_SUPPORTED
    NVML_FEATURE_ENABLED: ClassVar[int] = NVML_FEATURE_ENABLED
    NVML_CLOCK_SM: ClassVar[int] = NVML_CLOCK_SM

    def _enter(self, name: str) -> None:
        self.calls.append(name)
        if name not in ("nvmlInit", "nvmlShutdown") and self.initialized <= 0:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)

    def _device(self, name: str, handle: FakeGpu) -> FakeGpu:
        self._enter(name)
        if name in handle.errors:
            raise NVMLError(handle.errors[name])
        return handle

    def _string(self, text: str) -> str | bytes:
        return text.encode() if self.bytes_strings else text

    def nvmlInit(self) -> None:
        self._enter("nvmlInit")
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialized += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        self.initialized -= 1

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        if self.count_error is not None:
            raise NVMLError(self.count_error)
        return len(self.gpus)

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._enter("nvmlSystemGetCudaDriverVersion")
        return self.cuda_driver_version

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        self._enter("nvmlDeviceGetHandleByIndex")
        gpu = self.gpus[index]
        if "nvmlDeviceGetHandleByIndex" in gpu.errors:
            raise NVMLError(gpu.errors["nvmlDeviceGetHandleByIndex"])
        return gpu

    def nvmlDeviceGetUUID(self, handle: FakeGpu) -> str | bytes:
        return self._string(self._device("nvmlDeviceGetUUID", handle).uuid)

    def nvmlDeviceGetName(self, handle: FakeGpu) -> str | bytes:
        return self._string(self._device("nvmlDeviceGetName", handle).name)

    def nvmlDeviceGetCudaComputeCapability(self, handle: FakeGpu) -> tuple[int, int]:
        return self._device("nvmlDeviceGetCudaComputeCapability", handle).capability

    def nvmlDeviceGetMemoryInfo(self, handle: FakeGpu) -> Memory:
        return Memory(self._device("nvmlDeviceGetMemoryInfo", handle).memory_bytes)

    def nvmlDeviceGetEccMode(self, handle: FakeGpu) -> list[int]:
        ecc = self._device("nvmlDeviceGetEccMode", handle).ecc
        return [ecc, ecc]

    def nvmlDeviceGetMaxClockInfo(self, handle: FakeGpu, type: int) -> int:
        assert type == NVML_CLOCK_SM
        return self._device("nvmlDeviceGetMaxClockInfo", handle).max_sm_clock

    def nvmlDeviceGetPciInfo(self, handle: FakeGpu) -> PciInfo:
        return self._device("nvmlDeviceGetPciInfo", handle).pci


#: The functions of FakeNvml that stand for pynvml functions, for the API-shape test.
NVML_FUNCTIONS: tuple[str, ...] = tuple(
    name for name in dir(FakeNvml) if name.startswith("nvml") and callable(getattr(FakeNvml, name))
)


def fake_loader(module: FakeNvml) -> Callable[[], Any]:
    """A replacement for the detector's pynvml import that hands out ``module``."""
    return lambda: module
