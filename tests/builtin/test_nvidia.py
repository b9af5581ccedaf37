"""The NVIDIA detector against a fake NVML, its configuration rules, and the real pynvml's shape."""

from __future__ import annotations

import inspect
import logging
import re
import sys

import pytest
from fake_nvml import (
    NVML_ERROR_DRIVER_NOT_LOADED,
    NVML_ERROR_GPU_IS_LOST,
    NVML_ERROR_LIBRARY_NOT_FOUND,
    NVML_ERROR_NOT_SUPPORTED,
    NVML_ERROR_UNKNOWN,
    NVML_FEATURE_DISABLED,
    NVML_FUNCTIONS,
    FakeGpu,
    FakeNvml,
    PciInfo,
    fake_loader,
)

from epcore.builtin import nvidia
from epcore.builtin.nvidia import (
    detect_nvidia_gpus,
    gpu_discovery_plan,
    nvidia_fallback_wanted,
    program_available,
    short_gpu_id,
)
from epcore.config import Config
from epcore.config.host import CommandOutput
from epcore.testing import FakeMachineHost

A100 = FakeGpu("GPU-6a96bd13-784d-a422-e6df-726e913aa35d", pci=PciInfo(0, 0x3B, 0))
TITAN = FakeGpu(
    "GPU-487e38b2-4341-5424-b70e-f20f7787afb1",
    name="NVIDIA TITAN V",
    capability=(7, 0),
    memory_bytes=12050 * 1024 * 1024 + 12345,
    ecc=NVML_FEATURE_DISABLED,
    max_sm_clock=1455,
    pci=PciInfo(0, 0x86, 0),
)
DISCOVERY = "/usr/libexec/condor_gpu_discovery"


def _config(text: str, host: FakeMachineHost | None = None) -> Config:
    return Config.from_text(text, host=host or FakeMachineHost())


def test_two_gpus_are_reported_with_condor_gpu_discovery_properties() -> None:
    """Each GPU is a device named by its short UUID, with -properties style attributes."""
    found = detect_nvidia_gpus(FakeNvml([A100, TITAN], cuda_driver_version=12020))
    assert found is not None
    assert (found.name, found.quantity, found.source) == ("GPUs", 2, "nvidia")
    assert [d.id for d in found.devices] == ["GPU-6a96bd13", "GPU-487e38b2"]
    assert dict(found.devices[0].properties) == {
        "Capability": 8.0,
        "DeviceName": "NVIDIA A100-SXM4-40GB",
        "DriverVersion": 12.2,
        "MaxSupportedVersion": 12020,
        "ECCEnabled": True,
        "GlobalMemoryMb": 40536,
        "ClockMhz": 1410.0,
        "DeviceUuid": "6a96bd13-784d-a422-e6df-726e913aa35d",
        "DevicePciBusId": "0000:3B:00.0",
    }
    titan = found.devices[1].properties
    assert (titan["Capability"], titan["ECCEnabled"], titan["GlobalMemoryMb"]) == (
        7.0,
        False,
        12050,
    )
    assert titan["DevicePciBusId"] == "0000:86:00.0"


def test_nvml_is_shut_down_after_a_detection() -> None:
    """Every successful nvmlInit is paired with nvmlShutdown."""
    module = FakeNvml([A100])
    detect_nvidia_gpus(module)
    assert module.initialized == 0
    assert module.calls[0] == "nvmlInit" and module.calls[-1] == "nvmlShutdown"


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (NVML_ERROR_LIBRARY_NOT_FOUND, "NVML cannot start"),
        (NVML_ERROR_DRIVER_NOT_LOADED, "NVML cannot start"),
    ],
)
def test_no_driver_means_no_gpus_and_a_log_line(
    code: int, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An NVMLError from nvmlInit (no library, no driver) gives no GPUs and is logged."""
    module = FakeNvml([A100], init_error=code)
    with caplog.at_level(logging.INFO, logger="epcore.builtin.nvidia"):
        assert detect_nvidia_gpus(module) is None
    assert message in caplog.text
    assert "nvmlShutdown" not in module.calls


def test_a_failing_device_count_means_no_gpus(caplog: pytest.LogCaptureFixture) -> None:
    """nvmlDeviceGetCount failing gives no GPUs, a warning, and NVML is still shut down."""
    module = FakeNvml([A100], count_error=NVML_ERROR_UNKNOWN)
    with caplog.at_level(logging.WARNING, logger="epcore.builtin.nvidia"):
        assert detect_nvidia_gpus(module) is None
    assert "cannot count devices" in caplog.text
    assert module.initialized == 0


def test_a_lost_gpu_is_skipped_and_the_others_are_kept(caplog: pytest.LogCaptureFixture) -> None:
    """A device whose handle or UUID cannot be read is left out with a warning."""
    lost = FakeGpu("GPU-ffffffff-0000", errors={"nvmlDeviceGetUUID": NVML_ERROR_GPU_IS_LOST})
    with caplog.at_level(logging.WARNING, logger="epcore.builtin.nvidia"):
        found = detect_nvidia_gpus(FakeNvml([lost, TITAN]))
    assert found is not None
    assert [d.id for d in found.devices] == ["GPU-487e38b2"]
    assert "skipping NVIDIA device 0" in caplog.text


def test_no_device_at_all_means_no_gpus() -> None:
    """A driver with zero devices reports no GPUs resource."""
    assert detect_nvidia_gpus(FakeNvml([])) is None


@pytest.mark.parametrize(
    ("code", "expected"),
    [(NVML_ERROR_NOT_SUPPORTED, False), (NVML_ERROR_UNKNOWN, None)],
)
def test_ecc_not_supported_reads_as_disabled(code: int, expected: bool | None) -> None:
    """A board without ECC reports ECCEnabled false; any other ECC error leaves it out."""
    gpu = FakeGpu("GPU-12345678-aaaa", errors={"nvmlDeviceGetEccMode": code})
    found = detect_nvidia_gpus(FakeNvml([gpu]))
    assert found is not None
    assert found.devices[0].properties.get("ECCEnabled") == expected


def test_a_refused_property_is_left_out_and_the_rest_kept() -> None:
    """An NVMLError reading one property drops only that property."""
    gpu = FakeGpu("GPU-12345678-aaaa", errors={"nvmlDeviceGetMaxClockInfo": NVML_ERROR_UNKNOWN})
    found = detect_nvidia_gpus(FakeNvml([gpu]))
    assert found is not None
    assert "ClockMhz" not in found.devices[0].properties
    assert found.devices[0].properties["DeviceName"] == "NVIDIA A100-SXM4-40GB"


def test_old_pynvml_byte_strings_are_decoded() -> None:
    """pynvml releases that answer bytes give the same ids and names."""
    found = detect_nvidia_gpus(FakeNvml([TITAN], bytes_strings=True))
    assert found is not None
    assert found.devices[0].id == "GPU-487e38b2"
    assert found.devices[0].properties["DeviceName"] == "NVIDIA TITAN V"


@pytest.mark.parametrize(
    ("encoded", "version"), [(12020, 12.2), (11080, 11.8), (13000, 13.0), (10010, 10.1)]
)
def test_cuda_driver_version_is_printed_as_major_dot_minor(encoded: int, version: float) -> None:
    """NVML's encoded CUDA version becomes condor_gpu_discovery's DriverVersion."""
    found = detect_nvidia_gpus(FakeNvml([A100], cuda_driver_version=encoded))
    assert found is not None
    assert found.devices[0].properties["DriverVersion"] == version
    assert found.devices[0].properties["MaxSupportedVersion"] == encoded


@pytest.mark.parametrize(
    ("uuid", "short"),
    [
        ("GPU-6a96bd13-784d-a422-e6df-726e913aa35d", "GPU-6a96bd13"),
        ("6a96bd13-784d-a422-e6df-726e913aa35d", "GPU-6a96bd13"),
        ("GPU-abc", "GPU-abc"),
    ],
)
def test_short_ids_keep_the_first_eight_hex_digits(uuid: str, short: str) -> None:
    """The device id is GPU- and the first 8 characters of the UUID."""
    assert short_gpu_id(uuid) == short


# -- when GPUs are wanted ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tag", "command_start"),
    [
        ("", "GPUs", DISCOVERY),  # HTCondor 24+: STARTD_DETECT_GPUS = -properties by default
        ("use FEATURE : GPUs", "GPUs", DISCOVERY),
        ("MACHINE_RESOURCE_INVENTORY_gpus = /opt/find-gpus -x", "gpus", "/opt/find-gpus"),
        ("STARTD_DETECT_GPUS = -properties -extra", "GPUs", DISCOVERY),
        ("STARTD_DETECT_GPUS = false", "GPUs", None),
        ("STARTD_DETECT_GPUS = 0", "GPUs", None),
        ("STARTD_DETECT_GPUS =", "GPUs", None),
        ("STARTD_DETECT_GPUS = true", "GPUs", None),
        ("MACHINE_RESOURCE_GPUs = 2", "GPUs", None),
        ("MACHINE_RESOURCE_GPUs = GPU-a GPU-b\nuse FEATURE : GPUs", "GPUs", DISCOVERY),
    ],
)
def test_gpu_discovery_follows_the_startd_rules(
    text: str, tag: str, command_start: str | None
) -> None:
    """The discovery command comes from the inventory knob, else from STARTD_DETECT_GPUS."""
    plan = gpu_discovery_plan(_config(text))
    assert plan.tag == tag
    if command_start is None:
        assert plan.command is None
    else:
        assert plan.command is not None and plan.command.startswith(command_start)


def test_an_invalid_detect_switch_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """STARTD_DETECT_GPUS = true is an error HTCondor logs (the knob holds arguments)."""
    with caplog.at_level(logging.ERROR, logger="epcore.builtin.nvidia"):
        gpu_discovery_plan(_config("STARTD_DETECT_GPUS = true"))
    assert "STARTD_DETECT_GPUS=true" in caplog.text


@pytest.mark.parametrize(
    ("files", "environment", "command", "available"),
    [
        ({DISCOVERY: ""}, {}, f"{DISCOVERY} -properties", True),
        ({}, {}, f"{DISCOVERY} -properties", False),
        ({"/opt/bin/finder": ""}, {"PATH": "/usr/bin:/opt/bin"}, "finder -a", True),
        ({"/opt/bin/finder": ""}, {"PATH": "/usr/bin"}, "finder -a", False),
        ({}, {}, "", False),
        ({DISCOVERY: ""}, {}, f"{DISCOVERY} 'unbalanced", False),
    ],
)
def test_a_program_is_available_when_its_file_exists(
    files: dict[str, str], environment: dict[str, str], command: str, available: bool
) -> None:
    """Absolute programs are looked up as files, bare names along the host's PATH."""
    host = FakeMachineHost(files=files, environment=environment)
    assert program_available(host, command) is available


def test_nvml_stands_in_only_when_the_discovery_program_is_missing() -> None:
    """With condor_gpu_discovery installed the NVIDIA plugin stays out."""
    config_text = "use FEATURE : GPUs"
    missing = FakeMachineHost()
    installed = FakeMachineHost(files={DISCOVERY: ""})
    assert nvidia_fallback_wanted(_config(config_text, missing), missing)
    assert not nvidia_fallback_wanted(_config(config_text, installed), installed)


# -- the plugin hook --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "files", "expected"),
    [
        ("use FEATURE : GPUs", {}, [("GPUs", 2)]),
        ("", {}, [("GPUs", 2)]),
        ("MACHINE_RESOURCE_INVENTORY_gpus = /opt/find-gpus", {}, [("gpus", 2)]),
        ("use FEATURE : GPUs", {DISCOVERY: ""}, []),
        ("STARTD_DETECT_GPUS = false", {}, []),
        ("MACHINE_RESOURCE_GPUs = 4", {}, []),
    ],
)
def test_the_hook_reports_nvml_gpus_only_as_a_stand_in(
    text: str,
    files: dict[str, str],
    expected: list[tuple[str, int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hook answers GPUs from NVML when discovery is wanted and its program is missing."""
    monkeypatch.setattr(nvidia, "_load_nvml", fake_loader(FakeNvml([A100, TITAN])))
    host = FakeMachineHost(files=files)
    found = nvidia.ep_detect_resources(config=_config(text, host), host=host)
    assert [(r.name, r.quantity) for r in found] == expected


def test_the_hook_reports_nothing_without_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """No driver: the hook returns an empty list, not a zero-GPU resource."""
    module = FakeNvml([A100], init_error=NVML_ERROR_LIBRARY_NOT_FOUND)
    monkeypatch.setattr(nvidia, "_load_nvml", fake_loader(module))
    host = FakeMachineHost()
    assert nvidia.ep_detect_resources(config=_config("use FEATURE : GPUs", host), host=host) == []


def test_a_missing_pynvml_means_no_gpus(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Without nvidia-ml-py installed the detector logs the extra to install and finds none."""
    monkeypatch.setitem(sys.modules, "pynvml", None)  # what a missing module looks like
    with caplog.at_level(logging.INFO, logger="epcore.builtin.nvidia"):
        assert detect_nvidia_gpus() is None
    assert "epcore[gpu]" in caplog.text


def test_the_discovery_script_wins_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """With both plugins loaded and the program installed, GPUs come from its output only."""
    from epcore.builtin import detection
    from epcore.plugins import load_plugins

    monkeypatch.setattr(nvidia, "_load_nvml", fake_loader(FakeNvml([A100, TITAN])))
    plugins = load_plugins(
        builtins=False,
        entry_points_group=None,
        extra=[("detection", detection), ("nvidia", nvidia)],
        strict=True,
    )
    for files, quantity in (({DISCOVERY: ""}, 1), ({}, 2)):
        host = FakeMachineHost(files=files)
        config = _config("use FEATURE : GPUs", host)
        command = config.get("MACHINE_RESOURCE_INVENTORY_GPUs")
        assert command is not None
        host.commands[command] = CommandOutput('DetectedGPUs="GPU-0000aaaa"\n', 0)
        gpus = [r for r in plugins.detect_resources(config, host) if r.name == "GPUs"]
        assert [g.quantity for g in gpus] == [quantity]


# -- the real module --------------------------------------------------------------------------


def test_the_fake_matches_the_real_pynvml_functions() -> None:
    """Every NVML function the fake offers exists in pynvml and takes the same parameters."""
    pynvml = pytest.importorskip("pynvml")
    for name in NVML_FUNCTIONS:
        real = inspect.signature(getattr(pynvml, name))
        fake = inspect.signature(getattr(FakeNvml, name))
        required = [p for p in real.parameters.values() if p.default is inspect.Parameter.empty]
        assert len(required) == len(fake.parameters) - 1, name  # the fake's `self`
    for constant in ("NVML_ERROR_NOT_SUPPORTED", "NVML_FEATURE_ENABLED", "NVML_CLOCK_SM"):
        assert getattr(pynvml, constant) == getattr(FakeNvml, constant), constant
    assert pynvml.NVMLError(NVML_ERROR_LIBRARY_NOT_FOUND).value == NVML_ERROR_LIBRARY_NOT_FOUND


def test_the_real_pynvml_runs_without_raising() -> None:
    """On this machine the real module either finds GPUs with well-formed ids or finds none."""
    pytest.importorskip("pynvml")
    found = detect_nvidia_gpus()
    if found is not None:
        assert all(re.fullmatch(r"GPU-[0-9a-f]{8}", d.id) for d in found.devices)
        assert found.quantity == len(found.devices) > 0
