"""The built-in Linux power backend against fake sysfs, /proc, pm-utils and ethtool answers."""

from __future__ import annotations

import stat
from collections.abc import Sequence
from pathlib import Path

import pytest

import epcore.builtin.power
from epcore.builtin.power import LinuxPower, ScriptPower, power_backend
from epcore.config import Config
from epcore.errors import PowerError
from epcore.plugins import load_plugins
from epcore.testing.power_contracts import PowerBackendContract
from epcore.types import WakeOnLanFacts

MAC = "00:1a:2b:3c:4d:5e"


class Programs:
    """A fake runner: the exit code per program's last path part and first argument."""

    def __init__(self, codes: dict[tuple[str, str], int] | None = None) -> None:
        self.codes = codes or {}
        self.ran: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> tuple[int, str]:
        self.ran.append(list(argv))
        key = (Path(argv[0]).name, argv[1] if len(argv) > 1 else "")
        return self.codes.get(key, 0), "output"


def _sysfs(root: Path, state: str | None = "freeze mem disk", disk: str | None = None) -> Path:
    sysfs = root / "sys"
    (sysfs / "power").mkdir(parents=True)
    if state is not None:
        (sysfs / "power" / "state").write_text(state + "\n")
    if disk is not None:
        (sysfs / "power" / "disk").write_text(disk + "\n")
    (sysfs / "class" / "net" / "eth7").mkdir(parents=True)
    (sysfs / "class" / "net" / "eth7" / "address").write_text(MAC.upper() + "\n")
    return sysfs


def _linux(tmp_path: Path, **kwargs: object) -> LinuxPower:
    defaults: dict[str, object] = {
        "sysfs_root": tmp_path / "sys",
        "proc_root": tmp_path / "proc",
        "program_root": tmp_path / "root",
        "run": Programs(),
    }
    defaults.update(kwargs)
    return LinuxPower(**defaults)  # type: ignore[arg-type]


def test_sys_state_tokens_map_to_states_and_unknown_ones_are_ignored(tmp_path: Path) -> None:
    """standby, mem and disk in /sys/power/state are S1, S3 and S4; freeze is ignored."""
    _sysfs(tmp_path, "freeze standby mem disk")
    backend = _linux(tmp_path)
    assert backend.supported_states() == ("S1", "S3", "S4")
    assert backend.detected == "/sys"


def test_sys_power_disk_adds_s4_and_s5(tmp_path: Path) -> None:
    """platform and shutdown in /sys/power/disk (brackets or not) are S4 and S5."""
    _sysfs(tmp_path, "mem", "[platform] shutdown reboot suspend")
    assert _linux(tmp_path).supported_states() == ("S3", "S4", "S5")


def test_an_empty_sys_power_state_offers_nothing(tmp_path: Path) -> None:
    """This machine's empty /sys/power/state: the /sys method with no state."""
    _sysfs(tmp_path, "")
    backend = _linux(tmp_path)
    assert backend.supported_states() == ()


def test_pm_utils_is_tried_first_and_asked_per_state(tmp_path: Path) -> None:
    """With pm-is-supported present, its answers decide: --suspend gives S1 and S3."""
    _sysfs(tmp_path, "mem disk")
    probe = tmp_path / "root" / "usr" / "bin" / "pm-is-supported"
    probe.parent.mkdir(parents=True)
    probe.write_text("")
    runner = Programs({("pm-is-supported", "--hibernate"): 1})
    backend = _linux(tmp_path, run=runner)
    assert backend.supported_states() == ("S1", "S3")
    assert backend.detected == "pm-utils"
    backend.enter("S3")
    assert runner.ran[-1] == [str(tmp_path / "root" / "usr" / "sbin" / "pm-suspend")]


def test_proc_acpi_sleep_is_the_last_method(tmp_path: Path) -> None:
    """Without pm-utils or /sys, /proc/acpi/sleep's S tokens are the states; S3 writes 3."""
    sleep = tmp_path / "proc" / "acpi" / "sleep"
    sleep.parent.mkdir(parents=True)
    sleep.write_text("S0 S1 S3 S4 S5\n")
    backend = _linux(tmp_path)
    assert backend.supported_states() == ("S1", "S3", "S4", "S5")
    assert backend.detected == "/proc"
    backend.enter("S3")
    assert sleep.read_text() == "3"


def test_no_method_offers_nothing(tmp_path: Path) -> None:
    """A machine with none of the three methods has no sleep state."""
    backend = _linux(tmp_path)
    assert backend.supported_states() == ()
    assert backend.detected == "NONE"


@pytest.mark.parametrize("spelling", ["/SYS", "/sys"])
def test_linux_hibernation_method_restricts_detection(tmp_path: Path, spelling: str) -> None:
    """LINUX_HIBERNATION_METHOD (any case) keeps only that method, even if pm-utils is there."""
    _sysfs(tmp_path, "mem")
    probe = tmp_path / "root" / "usr" / "bin" / "pm-is-supported"
    probe.parent.mkdir(parents=True)
    probe.write_text("")
    backend = _linux(tmp_path, method=spelling)
    assert backend.supported_states() == ("S3",)
    assert backend.detected == "/sys"


def test_a_forced_method_the_machine_lacks_disables_hibernation(tmp_path: Path) -> None:
    """Forcing a method that is not detected is HTCondor's "not detected" error."""
    backend = _linux(tmp_path, method="pm-utils")
    with pytest.raises(PowerError, match="'pm-utils' not detected; hibernation disabled"):
        backend.supported_states()


def test_an_unknown_forced_method_is_an_error(tmp_path: Path) -> None:
    """LINUX_HIBERNATION_METHOD naming no method is a PowerError listing the methods."""
    with pytest.raises(PowerError, match="pm-utils, /sys, /proc"):
        _linux(tmp_path, method="acpi").supported_states()


def test_s3_writes_mem_to_sys_power_state(tmp_path: Path) -> None:
    """Suspend by /sys writes mem to power/state."""
    sysfs = _sysfs(tmp_path, "mem disk")
    backend = _linux(tmp_path)
    backend.supported_states()
    backend.enter("S3")
    assert (sysfs / "power" / "state").read_text() == "mem"


def test_s4_writes_platform_then_disk(tmp_path: Path) -> None:
    """Hibernate by /sys writes platform to power/disk, then disk to power/state."""
    sysfs = _sysfs(tmp_path, "mem disk", "[platform] shutdown")
    backend = _linux(tmp_path)
    backend.supported_states()
    backend.enter("S4")
    assert (sysfs / "power" / "disk").read_text() == "platform"
    assert (sysfs / "power" / "state").read_text() == "disk"


def test_s5_runs_poweroff_and_its_failure_is_a_power_error(tmp_path: Path) -> None:
    """S5 runs poweroff under the program root; a non-zero exit is a PowerError."""
    _sysfs(tmp_path, "mem", "shutdown")
    runner = Programs({("poweroff", ""): 1})
    backend = _linux(tmp_path, run=runner)
    backend.supported_states()
    with pytest.raises(PowerError, match="exited with 1"):
        backend.enter("S5")
    assert runner.ran == [[str(tmp_path / "root" / "sbin" / "poweroff")]]


def test_a_state_not_offered_is_never_entered(tmp_path: Path) -> None:
    """Entering a state detection did not offer is a PowerError and runs nothing."""
    _sysfs(tmp_path, "mem")
    runner = Programs()
    backend = _linux(tmp_path, run=runner)
    with pytest.raises(PowerError, match="does not offer S5"):
        backend.enter("S5")
    assert runner.ran == []


def test_a_write_that_fails_is_a_power_error(tmp_path: Path) -> None:
    """A power/state the kernel refuses to take is a PowerError naming the method."""
    sysfs = _sysfs(tmp_path, "mem")
    backend = _linux(tmp_path)
    backend.supported_states()
    (sysfs / "power" / "state").unlink()
    (sysfs / "power" / "state").mkdir()
    with pytest.raises(PowerError, match="by /sys"):
        backend.enter("S3")


def test_wake_on_lan_facts_come_from_sysfs_ethtool_and_the_addresses(tmp_path: Path) -> None:
    """The interface's MAC (lower case), its address and mask, and ethtool's masks."""
    _sysfs(tmp_path)
    backend = _linux(
        tmp_path,
        interface="eth7",
        ethtool=lambda name: (0x21, 0x20),
        addresses=lambda name: ("10.1.2.3", "255.255.255.0"),
    )
    assert backend.wake_on_lan() == WakeOnLanFacts(
        "eth7", MAC, "255.255.255.0", "10.1.2.3", 0x21, 0x20
    )


def test_an_interface_ethtool_cannot_answer_for_is_not_wakeable(tmp_path: Path) -> None:
    """EOPNOTSUPP from ethtool (loopback, virtual NICs) means no Wake-on-LAN at all."""
    _sysfs(tmp_path)

    def refuse(name: str) -> tuple[int, int]:
        raise OSError(95, "Operation not supported")

    facts = _linux(tmp_path, interface="eth7", ethtool=refuse).wake_on_lan()
    assert facts is not None
    assert (facts.supported, facts.enabled) == (0, 0)


def test_the_default_route_names_the_interface(tmp_path: Path) -> None:
    """Without POWER_NETWORK_INTERFACE the default route's interface is the public one."""
    _sysfs(tmp_path)
    route = tmp_path / "proc" / "net" / "route"
    route.parent.mkdir(parents=True)
    route.write_text("Iface\tDestination\tGateway\neth7\t00000000\t0102A8C0\n")
    facts = _linux(tmp_path, ethtool=lambda name: (0, 0)).wake_on_lan()
    assert facts is not None and facts.interface == "eth7"


def test_an_interface_without_a_hardware_address_is_no_usable_interface(tmp_path: Path) -> None:
    """No address file for the interface: no Wake-on-LAN facts."""
    _sysfs(tmp_path)
    assert _linux(tmp_path, interface="wlan9").wake_on_lan() is None


def _script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "power_state"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_hibernation_plugin_ad_gives_the_states_and_set_enters(tmp_path: Path) -> None:
    """The site script's ad answer names the states; set is run with -d and the extra args."""
    log = tmp_path / "calls"
    script = _script(
        tmp_path,
        f'echo "$@" >> {log}\n'
        'if [ "$2" = ad ]; then echo \'HibernationSupportedStates = "S3,S4"\'; fi\n',
    )
    config = Config.from_text(
        f"HIBERNATION_PLUGIN = {script}\nHIBERNATION_PLUGIN_ARGS = --site\n"
        "HIBERNATION_DEBUG = true\n",
        defaults=load_plugins(entry_points_group=None).config_defaults(),
    )
    backend = power_backend(config)
    assert isinstance(backend, ScriptPower)
    assert backend.supported_states() == ("S3", "S4")
    backend.enter("S4")
    assert log.read_text().splitlines() == ["--site ad", "-d --site set S4"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("echo 'Other = 1'\n", "HibernationSupportedStates missing"),
        ("echo 'HibernationSupportedStates = \"S3,S9\"'\n", "invalid 'S9'"),
        ("exit 3\n", "exited with 3"),
    ],
)
def test_a_failing_or_wrong_hibernation_plugin_is_a_power_error(
    tmp_path: Path, body: str, message: str
) -> None:
    """A script without the states, with a bad state, or failing, is a PowerError."""
    backend = ScriptPower(str(_script(tmp_path, body)), (), debug=False, base=_linux(tmp_path))
    with pytest.raises(PowerError, match=message):
        backend.supported_states()


def test_power_ethtool_wol_stands_in_for_the_kernel(tmp_path: Path) -> None:
    """POWER_ETHTOOL_WOL's two masks are the ethtool answer; other knobs set the paths."""
    sysfs = _sysfs(tmp_path)
    config = Config.from_text(
        f"POWER_SYSFS_ROOT = {sysfs}\nPOWER_NETWORK_INTERFACE = eth7\nPOWER_ETHTOOL_WOL = 0x20 32\n"
    )
    facts = power_backend(config).wake_on_lan()
    assert facts is not None
    assert (facts.supported, facts.enabled, facts.hardware_address) == (0x20, 0x20, MAC)


def test_a_bad_power_ethtool_wol_is_a_power_error() -> None:
    """POWER_ETHTOOL_WOL that is not two numbers is a PowerError naming the knob."""
    with pytest.raises(PowerError, match="POWER_ETHTOOL_WOL"):
        power_backend(Config.from_text("POWER_ETHTOOL_WOL = magic\n"))


class TestLinuxPowerContract(PowerBackendContract):
    """The built-in backend passes the power contract on a machine with nothing."""

    backend_name = "linux"
    config_text = (
        "POWER_SYSFS_ROOT = /nonexistent\nPOWER_PROC_ROOT = /nonexistent\n"
        "POWER_PROGRAM_ROOT = /nonexistent\n"
    )

    @pytest.fixture
    def plugin(self) -> object:
        return epcore.builtin.power


class TestLinuxPowerContractOnThisMachine(PowerBackendContract):
    """The built-in backend passes the power contract on this machine's own sysfs."""

    backend_name = "linux"

    @pytest.fixture
    def plugin(self) -> object:
        return epcore.builtin.power


def test_the_method_and_the_proc_and_program_roots_are_knobs(tmp_path: Path) -> None:
    """LINUX_HIBERNATION_METHOD, POWER_PROC_ROOT and POWER_PROGRAM_ROOT reach the backend."""
    sleep = tmp_path / "proc" / "acpi" / "sleep"
    sleep.parent.mkdir(parents=True)
    sleep.write_text("S3\n")
    probe = tmp_path / "root" / "usr" / "bin" / "pm-is-supported"
    probe.parent.mkdir(parents=True)
    probe.write_text("")
    config = Config.from_text(
        f"LINUX_HIBERNATION_METHOD = /PROC\nPOWER_PROC_ROOT = {tmp_path / 'proc'}\n"
        f"POWER_PROGRAM_ROOT = {tmp_path / 'root'}\nPOWER_SYSFS_ROOT = {tmp_path / 'none'}\n"
    )
    backend = power_backend(config)
    assert isinstance(backend, LinuxPower)
    assert backend.supported_states() == ("S3",)
    assert backend.detected == "/proc"
    assert backend.programs == tmp_path / "root"
