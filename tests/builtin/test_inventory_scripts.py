"""Inventory scripts run as real processes through LocalHost and the detection plugin."""

from __future__ import annotations

import logging
import os
import stat
import textwrap
import time
from pathlib import Path

import pytest

from epcore.builtin import detection
from epcore.builtin.host import LocalHost
from epcore.config import Config
from epcore.types import DetectedResource

#: What condor_gpu_discovery -properties prints on a two-GPU machine (nested form).
GPU_DISCOVERY_OUTPUT = """\
DetectedGPUs="GPU-32235e0a, GPU-487e38b2"
Common=[ Capability=7.0; DeviceName="NVIDIA TITAN V"; DriverVersion=13.0; ECCEnabled=false; \
GlobalMemoryMb=12050; MaxSupportedVersion=13000; ]
GPU_32235e0a=[ id="GPU-32235e0a"; DevicePciBusId="0000:3B:00.0"; \
DeviceUuid="32235e0a-784d-a422-e6df-726e913aa35d"; ]
GPU_487e38b2=[ id="GPU-487e38b2"; DevicePciBusId="0000:86:00.0"; \
DeviceUuid="487e38b2-4341-5424-b70e-f20f7787afb1"; ]
"""


def _script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _detect(text: str, timeout: float = 10.0) -> dict[str, DetectedResource]:
    host = LocalHost(command_timeout=timeout)
    config = Config.from_text(text + "\nSTARTD_DETECT_GPUS = false\n", host=host)
    return {r.name: r for r in detection.ep_detect_resources(config=config, host=host)}


def test_a_script_listing_ids_gives_a_custom_resource(tmp_path: Path) -> None:
    """DetectedX="X0, X1, X2" from a real script is three X devices."""
    script = _script(tmp_path, "x.sh", "echo 'DetectedX=\"X0, X1, X2\"'\n")
    found = _detect(f"MACHINE_RESOURCE_INVENTORY_X = {script}")
    assert [d.id for d in found["X"].devices] == ["X0", "X1", "X2"]
    assert found["X"].quantity == 3


def test_arguments_on_the_command_line_reach_the_script(tmp_path: Path) -> None:
    """The knob's value is a command line: its words become the script's arguments."""
    script = _script(tmp_path, "count.sh", 'echo "DetectedSquids = $(($1 * $2))"\n')
    found = _detect(f"MACHINE_RESOURCE_INVENTORY_Squids = {script} 3 4")
    assert found["Squids"].quantity == 12


def test_gpu_discovery_style_output_gives_gpus_with_properties(tmp_path: Path) -> None:
    """A script printing condor_gpu_discovery's nested form yields GPUs with property ads."""
    output = tmp_path / "gpus.txt"
    output.write_text(GPU_DISCOVERY_OUTPUT)
    script = _script(tmp_path, "gpus.sh", f"cat {output}\n")
    gpus = _detect(f"MACHINE_RESOURCE_INVENTORY_GPUs = {script} -properties")["GPUs"]
    assert [d.id for d in gpus.devices] == ["GPU-32235e0a", "GPU-487e38b2"]
    first = gpus.devices[0].properties
    assert first["Capability"] == 7.0 and first["DeviceName"] == "NVIDIA TITAN V"
    assert first["DevicePciBusId"] == "0000:3B:00.0"
    assert gpus.devices[1].properties["DeviceUuid"] == "487e38b2-4341-5424-b70e-f20f7787afb1"


def test_several_scripts_each_give_their_resource(tmp_path: Path) -> None:
    """Every MACHINE_RESOURCE_INVENTORY_<name> runs, in any spelling of the prefix."""
    cogs = _script(tmp_path, "cogs.sh", "echo DetectedCogs = 16\n")
    act = _script(tmp_path, "act.sh", "echo 'DetectedActuator = \"a b\"'\n")
    found = _detect(
        f"MACHINE_RESOURCE_INVENTORY_Cogs = {cogs}\nmachine_resource_inventory_Actuator = {act}"
    )
    assert (found["Cogs"].quantity, found["Actuator"].quantity) == (16, 2)


@pytest.mark.parametrize(
    ("body", "logged"),
    [
        ("echo 'DetectedX = 2'\necho 'this line is wrong'\n", ":2:"),
        ("echo 'DetectedX = (1 +'\n", ":1:"),
        ("echo 'Nothing = 1'\n", "no DetectedX"),
        ("echo 'DetectedX = 2'\nexit 4\n", "exited with status 4"),
    ],
)
def test_bad_scripts_are_logged_with_script_and_line(
    tmp_path: Path, body: str, logged: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Malformed output or a failing exit gives no resource and an error naming the script."""
    script = _script(tmp_path, "bad.sh", body)
    with caplog.at_level(logging.ERROR, logger="epcore.builtin.detection"):
        found = _detect(f"MACHINE_RESOURCE_INVENTORY_X = {script}")
    assert "X" not in found
    assert str(script) in caplog.text and logged in caplog.text


def test_a_hung_script_is_bounded_by_the_timeout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A script that never ends is killed after the timeout, logged, and skipped."""
    script = _script(tmp_path, "hang.sh", "echo 'DetectedX = 1'\nsleep 300\n")
    started = time.monotonic()
    with caplog.at_level(logging.ERROR, logger="epcore.builtin.detection"):
        found = _detect(f"MACHINE_RESOURCE_INVENTORY_X = {script}", timeout=0.5)
    assert time.monotonic() - started < 10
    assert "X" not in found
    assert "did not finish within 0.5 seconds" in caplog.text


def test_a_missing_script_is_logged_and_the_rest_detected(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A script that does not exist is skipped; the standard resources are still reported."""
    with caplog.at_level(logging.ERROR, logger="epcore.builtin.detection"):
        found = _detect(f"MACHINE_RESOURCE_INVENTORY_X = {tmp_path}/absent.sh")
    assert {"Cpus", "Memory", "Disk", "Swap"} <= set(found) and "X" not in found
    assert "absent.sh" in caplog.text


def test_standard_resources_on_this_machine(tmp_path: Path) -> None:
    """On the real machine Cpus, Memory and Disk (of EXECUTE) come from the hardware."""
    found = _detect(f"EXECUTE = {tmp_path}")
    assert found["Cpus"].quantity == os.cpu_count()
    assert found["Memory"].quantity == LocalHost().memory_mb()
    assert found["Disk"].quantity > 0
