"""The detection plugin on fake machines: standard resources, inventory output, readings."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.builtin import detection
from epcore.builtin.detection import (
    INFINITE_IDLE,
    cpu_is_busy,
    free_disk_kb,
    idle_times,
    inventory_commands,
    parse_inventory_output,
    quantity_or_ids,
    track_cpu_busy,
)
from epcore.classad import ClassAd, ClassAdSyntaxError
from epcore.config import Config
from epcore.config.host import CommandOutput
from epcore.errors import ClassAdError, ConfigError
from epcore.plugins import BUILTIN_PLUGINS, load_plugins
from epcore.testing import FakeMachineHost
from epcore.types import DetectedResource, HostReadings, ResourceDevice

NOW = 1_700_000_000.0
CONSOLE = frozenset({"console", "mouse"})


def _config(text: str, host: FakeMachineHost) -> Config:
    return Config.from_text(text, host=host)


def _detect(text: str, host: FakeMachineHost) -> dict[str, DetectedResource]:
    found = detection.ep_detect_resources(config=_config(text, host), host=host)
    return {resource.name: resource for resource in found}


# -- standard resources ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("", 16), ("COUNT_HYPERTHREAD_CPUS = true", 16), ("COUNT_HYPERTHREAD_CPUS = false", 8)],
)
def test_cpus_count_hyperthreads_unless_told_not_to(text: str, cpus: int) -> None:
    """Cpus is the logical CPU count, or the physical one when COUNT_HYPERTHREAD_CPUS is false."""
    host = FakeMachineHost(logical_cpus=16, physical_cpus=8)
    assert _detect(text, host)["Cpus"].quantity == cpus


def test_memory_and_swap_are_the_hosts() -> None:
    """Memory (MB) and Swap (KB) are what the host reports, before MEMORY or RESERVED_*."""
    host = FakeMachineHost(physical_memory_mb=65536, swap_space_kb=4096)
    found = _detect("MEMORY = 100\nRESERVED_MEMORY = 10", host)
    assert (found["Memory"].quantity, found["Swap"].quantity) == (65536, 4096)


@pytest.mark.parametrize(
    ("disks", "execute", "expected"),
    [
        ({"/scratch/execute": 500, "/": 9}, "/scratch/execute", 500),
        ({"/scratch": 700, "/": 9}, "/scratch/condor/execute", 700),
        ({"/": 9}, "/var/lib/condor/execute/", 9),
        ({}, "/var/lib/condor/execute", 0),
    ],
)
def test_disk_is_free_space_of_execute_or_its_nearest_existing_parent(
    disks: dict[str, int], execute: str, expected: int
) -> None:
    """Disk is measured at EXECUTE, or at the closest parent that exists; 0 when none does."""
    host = FakeMachineHost(free_disk_kb=disks)
    assert _detect(f"EXECUTE = {execute}", host)["Disk"].quantity == expected


def test_unmeasurable_disk_and_swap_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    """A failing disk or swap reading gives 0 and an error naming what failed."""
    host = FakeMachineHost(free_disk_kb={}, fail={"swap_kb"})
    with caplog.at_level(logging.ERROR, logger="epcore.builtin.detection"):
        found = _detect("EXECUTE = /x/execute", host)
    assert (found["Disk"].quantity, found["Swap"].quantity) == (0, 0)
    assert "EXECUTE (/x/execute)" in caplog.text and "swap" in caplog.text


def test_free_disk_raises_when_no_ancestor_can_be_measured() -> None:
    """free_disk_kb walks up to / and then gives up with the OSError."""
    with pytest.raises(OSError):
        free_disk_kb(FakeMachineHost(free_disk_kb={}), "/a/b")


# -- inventory output -------------------------------------------------------------------------

GPU_OUTPUT = """\
DetectedGPUs="GPU-ddc1c098, GPU-9dc7c6d6"
Common=[ DriverVersion=12.2; ECCEnabled=false; DeviceName="Tesla V100" ]
GPU_ddc1c098=[ id="GPU-ddc1c098"; Capability=8.0; GlobalMemoryMb=40536 ]
GPU_9dc7c6d6=[ id="GPU-9dc7c6d6"; Capability=7.0; GlobalMemoryMb=16000; DeviceName="Other" ]
"""


def test_nested_gpu_output_gives_devices_with_merged_properties() -> None:
    """Common properties go to every device; a device's own ad overrides them; id is dropped."""
    report = parse_inventory_output("GPUs", GPU_OUTPUT, "gpu-script")
    assert report.resource == DetectedResource(
        "GPUs",
        2,
        (
            ResourceDevice(
                "GPU-ddc1c098",
                {
                    "DriverVersion": 12.2,
                    "ECCEnabled": False,
                    "DeviceName": "Tesla V100",
                    "Capability": 8.0,
                    "GlobalMemoryMb": 40536,
                },
            ),
            ResourceDevice(
                "GPU-9dc7c6d6",
                {
                    "DriverVersion": 12.2,
                    "ECCEnabled": False,
                    "DeviceName": "Other",
                    "Capability": 7.0,
                    "GlobalMemoryMb": 16000,
                },
            ),
        ),
        source="gpu-script",
    )
    assert dict(report.attributes) == {}


@pytest.mark.parametrize(
    ("output", "quantity", "ids"),
    [
        ("DetectedX = 4", 4, ()),
        ("DetectedX = 2.5", 2.5, ()),
        ('DetectedX = "6"', 6, ()),
        ('DetectedX = "2 * 3"', 6, ()),
        ('DetectedX = "X0, X1,X2 X3"', 4, ("X0", "X1", "X2", "X3")),
        ('detectedx = "a b"', 2, ("a", "b")),
        ('DetectedX = "a, b, c"\nOfflineX = "b"', 2, ("a", "c")),
        ('DetectedX = "a, b"\nOfflineX = "zz"', 2, ("a", "b")),
        ('DetectedX = 5\nOfflineX = "2"', 3, ()),
        ('DetectedX = 5\nOfflineX = "p, q"', 3, ()),
        ("DetectedX = 5\nOfflineX = 2", 5, ()),  # only a string takes devices offline
        ("DetectedX = -3", 0, ()),
        ("DetectedX = 0\n# a comment\n\nX = 99", 0, ()),
        ('DetectedX = "a, a"', 2, ("a", "a")),
    ],
)
def test_detected_value_rules(output: str, quantity: float, ids: tuple[str, ...]) -> None:
    """Detected<name> is a count, a numeric string, or an id list; Offline<name> removes."""
    resource = parse_inventory_output("X", output, "script").resource
    assert (resource.quantity, tuple(d.id for d in resource.devices)) == (quantity, ids)


def test_offline_ids_are_reported() -> None:
    """The ids a script takes offline are kept for OfflineX."""
    report = parse_inventory_output("X", 'DetectedX = "a b c"\nOfflineX = "c, a"', "s")
    assert report.offline == ("c", "a")


def test_other_attributes_go_to_the_machine_ad() -> None:
    """Non-nested attributes and nested ads of unknown devices are kept as machine attributes."""
    output = (
        'DetectedGPUs = "CUDA0"\n'
        "CUDACapability = 7.5\n"
        'CUDA0DeviceName = "T4"\n'
        'GPU_ffff = [ id = "GPU-ffff"; Capability = 1.0 ]\n'
        "GPUs = 12\n"
    )
    report = parse_inventory_output("GPUs", output, "s")
    values = {name: expr.evaluate() for name, expr in report.attributes.items()}
    assert set(values) == {"CUDACapability", "CUDA0DeviceName", "GPU_ffff"}
    assert (values["CUDACapability"], values["CUDA0DeviceName"]) == (7.5, "T4")
    unknown = values["GPU_ffff"]
    assert isinstance(unknown, ClassAd) and unknown.evaluate("Capability") == 1.0
    assert report.resource.devices == (ResourceDevice("CUDA0", {}),)


def test_a_nested_ad_without_id_is_matched_by_its_name() -> None:
    """A property ad lacking an id applies to the device named like the attribute."""
    report = parse_inventory_output("X", 'DetectedX = "dev0"\ndev0 = [ Speed = 3 ]', "s")
    assert report.resource.devices == (ResourceDevice("dev0", {"Speed": 3}),)


@pytest.mark.parametrize(
    ("output", "line"),
    [
        ("DetectedX = 1\nthis is not classad\n", 2),
        ('DetectedX = "a"\nA = 1\nB = (2 +\n', 3),
        ("= 3\n", 1),
    ],
)
def test_malformed_output_names_the_script_and_line(output: str, line: int) -> None:
    """A line that is not 'Attr = expression' raises with the script and 1-based line."""
    with pytest.raises(ClassAdSyntaxError) as caught:
        parse_inventory_output("X", output, "/opt/bin/find-x")
    assert (caught.value.line, caught.value.source) == (line, "/opt/bin/find-x")
    assert str(caught.value).startswith(f"/opt/bin/find-x:{line}:")
    assert output.split("\n")[line - 1].strip() in str(caught.value)


@pytest.mark.parametrize(
    "output",
    ["", "Something = 1", "DetectedX = true", "DetectedX = undefined", "DetectedX = {1, 2}"],
)
def test_output_without_a_usable_detected_attribute_is_refused(output: str) -> None:
    """Detected<name> must exist and be a number or a string."""
    with pytest.raises(ClassAdError, match=r"DetectedX"):
        parse_inventory_output("X", output, "s")


_IDS = st.lists(
    st.from_regex(r"[A-Za-z][A-Za-z0-9_:\-]{0,12}", fullmatch=True).filter(
        lambda s: not s.lower().startswith(("true", "false", "undefined", "error", "inf", "nan"))
    ),
    min_size=1,
    max_size=8,
)


@given(ids=_IDS, separator=st.sampled_from([", ", ",", " ", " ,  "]))
def test_id_lists_round_trip(ids: list[str], separator: str) -> None:
    """Ids written with any separator HTCondor accepts come back in order."""
    written = f'DetectedX = "{separator.join(ids)}"'
    resource = parse_inventory_output("X", written, "s").resource
    assert [d.id for d in resource.devices] == ids
    assert resource.quantity == len(ids)


@given(quantity=st.integers(min_value=0, max_value=10**6))
def test_counts_round_trip(quantity: int) -> None:
    """A count written as a number or as a numeric string reads back unchanged."""
    for written in (f"DetectedX = {quantity}", f'DetectedX = "{quantity}"'):
        assert parse_inventory_output("X", written, "s").resource.quantity == quantity


@pytest.mark.parametrize(
    ("text", "expected"),
    [("3", 3.0), (" 1e2 ", 100.0), ("4/2", 2.0), ("a,b", ("a", "b")), ("", ())],
)
def test_quantity_or_ids(text: str, expected: float | tuple[str, ...]) -> None:
    """A value is a C number, a numeric expression, or a list of ids."""
    assert quantity_or_ids(text) == expected


# -- inventory scripts through the hook -----------------------------------------------------


def test_inventory_scripts_become_custom_resources() -> None:
    """Each MACHINE_RESOURCE_INVENTORY_<name> is run and its resource reported under <name>."""
    host = FakeMachineHost(
        commands={
            "/opt/cogs --all": CommandOutput("DetectedCogs = 16\n", 0),
            "/opt/act": CommandOutput('DetectedActuator = "a1 a2"\n', 0),
        }
    )
    text = (
        "MACHINE_RESOURCE_INVENTORY_Cogs = /opt/cogs --all\n"
        "STARTD.MACHINE_RESOURCE_INVENTORY_Actuator = /opt/act\n"
        "STARTD_DETECT_GPUS = false\n"
    )
    found = _detect(text, host)
    assert found["Cogs"].quantity == 16
    assert [d.id for d in found["Actuator"].devices] == ["a1", "a2"]
    assert found["Cogs"].source == "/opt/cogs --all"
    assert set(found) == {"Cpus", "Memory", "Disk", "Swap", "Cogs", "Actuator"}


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (CommandOutput("DetectedX = 1\n", 3), "exited with status 3"),
        (CommandOutput("DetectedX 1\n", 0), "/opt/x:1:"),
        (CommandOutput("Y = 1\n", 0), "no DetectedX"),
    ],
)
def test_a_failing_script_is_logged_and_skipped(
    output: CommandOutput, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Bad exit status or bad output: no resource, an error naming the script."""
    host = FakeMachineHost(commands={"/opt/x": output})
    with caplog.at_level(logging.ERROR, logger="epcore.builtin.detection"):
        found = _detect("MACHINE_RESOURCE_INVENTORY_X = /opt/x", host)
    assert "X" not in found
    assert message in caplog.text and "inventory script for X" in caplog.text


def test_a_script_that_cannot_run_is_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    """A command the host cannot run gives no resource and an error."""
    host = FakeMachineHost()
    with caplog.at_level(logging.ERROR, logger="epcore.builtin.detection"):
        found = _detect("MACHINE_RESOURCE_INVENTORY_X = /missing/prog", host)
    assert "X" not in found
    assert "/missing/prog" in caplog.text and "could not run" in caplog.text


@pytest.mark.parametrize("name", ["Memory", "cpus", "RAM", "Disk", "swap", "MEM", "CPU"])
def test_reserved_names_are_a_config_error_naming_the_knob(name: str) -> None:
    """An inventory script may not define a standard resource."""
    host = FakeMachineHost()
    with pytest.raises(ConfigError, match=f"MACHINE_RESOURCE_INVENTORY_{name} is invalid"):
        inventory_commands(_config(f"MACHINE_RESOURCE_INVENTORY_{name} = /x", host))


@pytest.mark.parametrize(
    ("text", "program_installed", "expected"),
    [
        ("use FEATURE : GPUs", True, 1),
        ("use FEATURE : GPUs", False, None),
        ("", True, 1),  # HTCondor 24+ discovers GPUs without being asked
        ("STARTD_DETECT_GPUS = false", True, None),
        ("MACHINE_RESOURCE_GPUs = 3", True, None),
    ],
)
def test_gpu_discovery_runs_only_when_wanted_and_installed(
    text: str, program_installed: bool, expected: int | None
) -> None:
    """The GPU discovery command runs when asked for and present; otherwise NVML stands in."""
    files = {"/usr/libexec/condor_gpu_discovery": ""} if program_installed else {}
    host = FakeMachineHost(files=files)
    config = _config(text, host)
    for command in (
        config.get("MACHINE_RESOURCE_INVENTORY_GPUs"),
        config.expand("$(LIBEXEC)/condor_gpu_discovery $(STARTD_DETECT_GPUS)"),
    ):
        if command:
            host.commands[command] = CommandOutput('DetectedGPUs = "GPU-01234567"\n', 0)
    gpus = _detect(text, host).get("GPUs")
    assert (gpus.quantity if gpus else None) == expected


def test_the_builtin_plugins_load_strictly_and_detect() -> None:
    """The modules named in BUILTIN_PLUGINS register without error and report resources."""
    plugins = load_plugins(builtins=True, entry_points_group=None, strict=True)
    host = FakeMachineHost()
    names = [r.name for r in plugins.detect_resources(_config("", host), host)]
    assert names[:4] == ["Cpus", "Memory", "Disk", "Swap"]
    assert "epcore.builtin.detection" in BUILTIN_PLUGINS
    readings = plugins.host_readings(_config("", host), host, NOW)
    assert readings.keyboard_idle == INFINITE_IDLE


# -- idle times -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("atimes", "keyboard", "console"),
    [
        ({}, INFINITE_IDLE, INFINITE_IDLE),
        ({"/dev/pts/0": NOW - 30}, 30, INFINITE_IDLE),
        ({"/dev/pts/0": NOW - 30, "/dev/console": NOW - 500}, 30, 500),
        ({"/dev/pts/0": NOW - 900, "/dev/tty2": NOW - 40}, 40, 40),
        ({"/dev/input/event3": NOW - 7, "/dev/pts/1": NOW - 100}, 7, 7),
        ({"/dev/mouse": NOW - 12.9}, 12, 12),
        ({"/dev/pts/0": NOW + 60, "/dev/console": NOW + 5}, 0, 0),
        ({"/dev/ttyS0": NOW - 3}, 3, INFINITE_IDLE),  # a serial line is not the console
    ],
)
def test_keyboard_and_console_idle(atimes: dict[str, float], keyboard: int, console: int) -> None:
    """ConsoleIdle counts console and input devices; KeyboardIdle counts pseudo terminals too."""
    assert idle_times(atimes, NOW, CONSOLE) == (keyboard, console)


def test_console_devices_come_from_the_configuration() -> None:
    """CONSOLE_DEVICES decides which /dev names are the console (with or without /dev/)."""
    host = FakeMachineHost(device_atimes={"/dev/ttyS0": NOW - 5, "/dev/console": NOW - 1})
    config = _config("CONSOLE_DEVICES = /dev/ttyS0", host)
    readings = detection.ep_host_readings(config=config, host=host, now=NOW)
    assert (readings.keyboard_idle, readings.console_idle) == (1, 5)


@given(
    atimes=st.dictionaries(
        st.sampled_from(
            ["/dev/pts/0", "/dev/pts/7", "/dev/console", "/dev/tty1", "/dev/input/mice", "/dev/x"]
        ),
        st.floats(min_value=NOW - 10**7, max_value=NOW + 10**4),
    )
)
def test_keyboard_idle_never_exceeds_console_idle(atimes: dict[str, float]) -> None:
    """Whatever the devices say, 0 <= KeyboardIdle <= ConsoleIdle."""
    keyboard, console = idle_times(atimes, NOW, CONSOLE)
    assert 0 <= keyboard <= console <= INFINITE_IDLE


def test_readings_come_from_the_host() -> None:
    """LoadAvg is the host's load; CondorLoadAvg is left 0 for the daemon to fill."""
    host = FakeMachineHost(one_minute_load=1.75, device_atimes={"/dev/pts/3": NOW - 61})
    readings = detection.ep_host_readings(config=_config("", host), host=host, now=NOW)
    assert readings == HostReadings(1.75, 0.0, 61, INFINITE_IDLE, 0, False)


def test_failed_readings_are_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    """An unreadable load or device list is logged; the readings fall back to 0 and infinite."""
    host = FakeMachineHost(fail={"load_average", "device_access_times"})
    with caplog.at_level(logging.ERROR, logger="epcore.builtin.detection"):
        readings = detection.ep_host_readings(config=_config("", host), host=host, now=NOW)
    assert (readings.load_avg, readings.keyboard_idle) == (0.0, INFINITE_IDLE)
    assert "load average" in caplog.text and "input devices" in caplog.text


# -- CpuIsBusy ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "load", "busy"),
    [
        ("", 10.0, False),  # HTCondor's default configuration defines no CpuBusy
        ("use POLICY : Desktop", 0.6, True),
        ("use POLICY : Desktop", 0.4, False),
        ("use POLICY : Desktop\nHighLoad = 2", 1.9, False),
        ("CpuBusy = KeyboardIdle < 60", 0.0, True),
        ("CpuBusy = SomethingUndefined > 1", 5.0, False),
        ("CpuBusy = time() > 0", 0.0, True),
    ],
)
def test_cpu_is_busy_evaluates_the_configured_cpubusy(text: str, load: float, busy: bool) -> None:
    """CpuIsBusy is the configuration's CpuBusy expression over the machine readings."""
    host = FakeMachineHost()
    assert cpu_is_busy(_config(text, host), load, 0.0, 30, 30, NOW) is busy


def test_a_cpubusy_that_does_not_parse_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """A broken CpuBusy counts as not busy and is reported."""
    host = FakeMachineHost()
    with caplog.at_level(logging.ERROR, logger="epcore.builtin.detection"):
        assert cpu_is_busy(_config("CpuBusy = (LoadAvg >", host), 9.0, 0.0, 0, 0, NOW) is False
    assert "CpuBusy" in caplog.text


@pytest.mark.parametrize(
    ("since", "busy", "now", "expected"),
    [
        (None, False, 100.0, (None, 0)),
        (None, True, 100.0, (100.0, 0)),
        (40.0, True, 100.0, (40.0, 60)),
        (40.0, False, 100.0, (None, 0)),
    ],
)
def test_cpu_busy_time_is_tracked_across_readings(
    since: float | None, busy: bool, now: float, expected: tuple[float | None, int]
) -> None:
    """CpuBusyTime counts from the first busy reading and resets when the CPU is not busy."""
    assert track_cpu_busy(since, busy, now) == expected
