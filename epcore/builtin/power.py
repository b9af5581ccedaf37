"""Built-in plugin: the power backend that puts a Linux machine to sleep.

Linux offers three ways in (HTCondor's hibernator tries them in this order; the first found
wins, LINUX_HIBERNATION_METHOD keeps only one): ``pm-utils`` (``pm-is-supported`` says which
states work, ``pm-suspend``/``pm-hibernate`` enter them), ``/sys`` (the tokens of
``/sys/power/state``: standby S1, mem S3, disk S4; ``/sys/power/disk``: platform S4, shutdown
S5; a state is entered by writing its token) and ``/proc`` (``/proc/acpi/sleep``). S5 is
``/sbin/poweroff``. A site script named by HIBERNATION_PLUGIN replaces all three: it is run as
``PLUGIN [-d] [ARGS] ad`` (its output an ad with HibernationSupportedStates) and
``PLUGIN [-d] [ARGS] set S3``, as HTCondor runs condor_power_state.

Every path is a knob this plugin adds, so a test or a site can point them elsewhere:
POWER_SYSFS_ROOT, POWER_PROC_ROOT, POWER_PROGRAM_ROOT (the root pm-utils and poweroff are
found under), POWER_NETWORK_INTERFACE (the public interface; unset: the default route's) and
POWER_ETHTOOL_WOL (``SUPPORTED ENABLED`` masks in place of the kernel's ethtool answer).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from epcore import hookimpl
from epcore.classad import ClassAdSyntaxError, parse_ad
from epcore.config import Config, KnobDefault
from epcore.errors import PowerError
from epcore.types import PowerBackend, PowerBackendSpec, WakeOnLanFacts

NAME = "linux"
#: The methods LINUX_HIBERNATION_METHOD may name, in detection order.
METHODS = ("pm-utils", "/sys", "/proc")

_SYS_STATE_TOKENS = {"standby": "S1", "mem": "S3", "disk": "S4"}
_SYS_DISK_TOKENS = {"platform": "S4", "shutdown": "S5"}
_STATES = ("S1", "S2", "S3", "S4", "S5")

#: Runs a program; its exit code and standard output.
Runner = Callable[[Sequence[str]], tuple[int, str]]


def run_program(argv: Sequence[str]) -> tuple[int, str]:
    """Run ``argv`` to its end (a minute at most); exit code and output. OSError when it
    cannot start or runs too long."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired as error:
        raise OSError(f"{argv[0]} ran for more than a minute") from error
    return done.returncode, done.stdout + done.stderr


class LinuxPower:
    """The Linux methods (module docstring); ``method`` is LINUX_HIBERNATION_METHOD (None:
    detect), ``ethtool`` answers (supported, enabled) for an interface, ``addresses`` its
    (IP, mask)."""

    name = NAME

    def __init__(
        self,
        *,
        sysfs_root: Path = Path("/sys"),
        proc_root: Path = Path("/proc"),
        program_root: Path = Path("/"),
        method: str | None = None,
        interface: str | None = None,
        ethtool: Callable[[str], tuple[int, int]] | None = None,
        addresses: Callable[[str], tuple[str, str]] | None = None,
        run: Runner = run_program,
    ) -> None:
        from epcore.builtin import wol

        self.sysfs = sysfs_root
        self.proc = proc_root
        self.programs = program_root
        self.method = method
        self.interface = interface
        self.ethtool = ethtool if ethtool is not None else wol.ethtool_wol
        self.addresses = addresses if addresses is not None else wol.interface_addresses
        self.run = run
        #: The method detected by the last :meth:`supported_states` ("NONE" before).
        self.detected = "NONE"
        #: What the last :meth:`supported_states` answered (None: never asked).
        self.offered: tuple[str, ...] | None = None

    def _program(self, path: str) -> str:
        return str(self.programs / path.lstrip("/"))

    # -- detection ------------------------------------------------------------------------

    def supported_states(self) -> tuple[str, ...]:
        """The states of the first method found (of the forced one only); PowerError naming
        a forced method that is unknown or not found here."""
        wanted: tuple[str, ...] = METHODS
        if self.method is not None:
            forced = next((m for m in METHODS if m.lower() == self.method.lower()), None)
            if forced is None:
                raise PowerError(
                    f"LINUX_HIBERNATION_METHOD '{self.method}' is not one of "
                    f"{', '.join(METHODS)}; hibernation disabled"
                )
            wanted = (forced,)
        self.offered = ()
        for method in wanted:
            states = self._detect(method)
            if states is not None:
                self.detected = method
                self.offered = states
                return states
        self.detected = "NONE"
        if self.method is not None:
            raise PowerError(f"hibernator: '{self.method}' not detected; hibernation disabled")
        return ()

    def _detect(self, method: str) -> tuple[str, ...] | None:
        """The states ``method`` offers, None when the machine does not have it."""
        if method == "pm-utils":
            return self._detect_pm_utils()
        if method == "/sys":
            return self._detect_sys()
        return self._detect_proc()

    def _detect_pm_utils(self) -> tuple[str, ...] | None:
        probe = self._program("/usr/bin/pm-is-supported")
        if not Path(probe).exists():
            return None
        found: set[str] = set()
        for flag, states in (("--suspend", ("S1", "S3")), ("--hibernate", ("S4",))):
            try:
                code, _ = self.run([probe, flag])
            except OSError:
                continue
            if code == 0:
                found.update(states)
        return tuple(s for s in _STATES if s in found)

    def _detect_sys(self) -> tuple[str, ...] | None:
        try:
            tokens = (self.sysfs / "power" / "state").read_text().split()
        except OSError:
            return None
        found = {_SYS_STATE_TOKENS[t] for t in tokens if t in _SYS_STATE_TOKENS}
        try:
            disk = (self.sysfs / "power" / "disk").read_text().replace("[", " ").replace("]", " ")
        except OSError:
            disk = ""
        found.update(_SYS_DISK_TOKENS[t] for t in disk.split() if t in _SYS_DISK_TOKENS)
        return tuple(s for s in _STATES if s in found)

    def _detect_proc(self) -> tuple[str, ...] | None:
        try:
            tokens = (self.proc / "acpi" / "sleep").read_text().split()
        except OSError:
            return None
        return tuple(s for s in _STATES if s in tokens)

    # -- switching ------------------------------------------------------------------------

    def _check_offered(self, state: str) -> None:
        """PowerError unless ``state`` is one the last detection offered (detected now if
        never): a state nobody announced is never entered (S5 would power the machine off)."""
        offered = self.offered if self.offered is not None else self.supported_states()
        if state not in offered:
            shown = ",".join(offered) or "none"
            raise PowerError(f"this machine does not offer {state} (it offers {shown})")

    def enter(self, state: str) -> None:
        """Enter ``state`` by the detected method; PowerError when it is not offered or
        entering it fails."""
        self._check_offered(state)
        try:
            self._enter(state)
        except OSError as error:
            raise PowerError(f"cannot enter {state} by {self.detected}: {error}") from error

    def _enter(self, state: str) -> None:
        if state == "S5":
            self._must_run([self._program("/sbin/poweroff")])
        elif self.detected == "pm-utils":
            program = "/usr/sbin/pm-hibernate" if state == "S4" else "/usr/sbin/pm-suspend"
            self._must_run([self._program(program)])
        elif self.detected == "/sys":
            if state == "S4":
                (self.sysfs / "power" / "disk").write_text("platform")
                self._write_state("disk")
            else:
                # The write returns when the machine has resumed (S1 is entered as suspend,
                # as HTCondor's hibernator does).
                self._write_state("mem")
        elif self.detected == "/proc":
            digit = "3" if state == "S1" else state[1:]
            (self.proc / "acpi" / "sleep").write_text(digit)
        else:
            raise PowerError(f"no sleep method on this machine for {state}")

    def _write_state(self, token: str) -> None:
        with open(self.sysfs / "power" / "state", "w") as state:
            state.write(token)

    def _must_run(self, argv: Sequence[str]) -> None:
        code, output = self.run(argv)
        if code != 0:
            raise PowerError(f"{argv[0]} exited with {code}: {output.strip()[:200]}")

    # -- the network ----------------------------------------------------------------------

    def wake_on_lan(self) -> WakeOnLanFacts | None:
        """The public interface: POWER_NETWORK_INTERFACE, else the default route's."""
        from epcore.builtin import wol

        interface = self.interface or wol.default_interface(self.proc, self.sysfs)
        if interface is None:
            return None
        mac = wol.hardware_address(self.sysfs, interface)
        if mac is None:
            return None
        try:
            ip, mask = self.addresses(interface)
        except OSError:
            ip, mask = "0.0.0.0", "0.0.0.0"
        try:
            supported, enabled = self.ethtool(interface)
        except OSError:
            # The kernel answers EOPNOTSUPP for interfaces without Wake-on-LAN (loopback,
            # virtual NICs): not wake-able, which is no error.
            supported, enabled = 0, 0
        return WakeOnLanFacts(interface, mac, mask, ip, supported, enabled)


class ScriptPower(LinuxPower):
    """HIBERNATION_PLUGIN: a site script that detects and switches (module docstring); the
    network is described as :class:`LinuxPower` does (``base`` gives its paths)."""

    def __init__(
        self,
        plugin: str,
        args: Sequence[str],
        *,
        debug: bool,
        base: LinuxPower,
        run: Runner = run_program,
    ) -> None:
        super().__init__(
            sysfs_root=base.sysfs,
            proc_root=base.proc,
            program_root=base.programs,
            interface=base.interface,
            ethtool=base.ethtool,
            addresses=base.addresses,
            run=run,
        )
        self.plugin = plugin
        self.args = tuple(args)
        self.debug = debug

    def supported_states(self) -> tuple[str, ...]:
        """The states in the script's ``ad`` answer; PowerError when it fails or its ad
        lacks HibernationSupportedStates or names an unknown state."""
        try:
            code, output = self.run([self.plugin, *self.args, "ad"])
        except OSError as error:
            raise PowerError(f"hibernation plugin {self.plugin} failed: {error}") from error
        if code != 0:
            raise PowerError(f"hibernation plugin {self.plugin} exited with {code}")
        self.detected = "plugin"
        self.offered = ()
        if not output.strip():
            return ()
        try:
            ad = parse_ad(output, source=self.plugin)
        except ClassAdSyntaxError as error:
            raise PowerError(f"hibernation plugin {self.plugin}: {error}") from error
        value = ad.evaluate("HibernationSupportedStates")
        if not isinstance(value, str):
            raise PowerError("HibernationSupportedStates missing in ad from hibernation plugin")
        states = [s.strip().upper() for s in value.split(",") if s.strip()]
        bad = [s for s in states if s not in _STATES]
        if bad:
            raise PowerError(f"hibernation plugin: invalid '{bad[0]}' in supported states")
        self.offered = tuple(s for s in _STATES if s in states)
        return self.offered

    def enter(self, state: str) -> None:
        """``PLUGIN [-d] [ARGS] set STATE``; PowerError when it fails."""
        self._check_offered(state)
        argv = [self.plugin, *(["-d"] if self.debug else []), *self.args, "set", state]
        try:
            self._must_run(argv)
        except OSError as error:
            raise PowerError(f"hibernation plugin {self.plugin} failed: {error}") from error


def _wol_answer(text: str) -> Callable[[str], tuple[int, int]]:
    """POWER_ETHTOOL_WOL's ``SUPPORTED ENABLED`` masks as the answer for any interface."""
    try:
        supported, enabled = (int(word, 0) for word in text.split())
    except ValueError:
        raise PowerError(f"POWER_ETHTOOL_WOL = {text!r} is not two masks") from None
    return lambda _interface: (supported, enabled)


def power_backend(config: Config) -> PowerBackend:
    """The backend the configuration describes (module docstring); touches nothing."""
    wol_text = config.get("POWER_ETHTOOL_WOL")
    linux = LinuxPower(
        sysfs_root=Path(config.get("POWER_SYSFS_ROOT") or "/sys"),
        proc_root=Path(config.get("POWER_PROC_ROOT") or "/proc"),
        program_root=Path(config.get("POWER_PROGRAM_ROOT") or "/"),
        method=config.get("LINUX_HIBERNATION_METHOD") or None,
        interface=config.get("POWER_NETWORK_INTERFACE") or None,
        ethtool=_wol_answer(wol_text) if wol_text else None,
    )
    plugin = config.get("HIBERNATION_PLUGIN")
    if not plugin:
        return linux
    return ScriptPower(
        plugin,
        (config.get("HIBERNATION_PLUGIN_ARGS") or "").split(),
        debug=config.get_bool("HIBERNATION_DEBUG", False),
        base=linux,
    )


_KNOBS = (
    KnobDefault(
        "HIBERNATION_PLUGIN", None, "path", "Site script that detects and enters sleep states."
    ),
    KnobDefault(
        "HIBERNATION_PLUGIN_ARGS", None, "string", "Extra arguments of HIBERNATION_PLUGIN."
    ),
    KnobDefault("HIBERNATION_DEBUG", "false", "bool", "Run HIBERNATION_PLUGIN's set with -d."),
    KnobDefault(
        "HIBERNATION_OVERRIDE_WOL",
        "false",
        "bool",
        "Hibernate even when the public network interface cannot wake the machine.",
    ),
    KnobDefault("POWER_SYSFS_ROOT", "/sys", "path", "Where the power backend reads sysfs."),
    KnobDefault("POWER_PROC_ROOT", "/proc", "path", "Where the power backend reads /proc."),
    KnobDefault(
        "POWER_PROGRAM_ROOT", "/", "path", "Root under which pm-utils and poweroff are found."
    ),
    KnobDefault(
        "POWER_NETWORK_INTERFACE",
        None,
        "string",
        "The public network interface for Wake-on-LAN; unset: the default route's.",
    ),
    KnobDefault(
        "POWER_ETHTOOL_WOL",
        None,
        "string",
        "Supported and enabled Wake-on-LAN masks in place of the kernel's ethtool answer.",
    ),
)


@hookimpl
def ep_config_defaults() -> Sequence[KnobDefault]:
    """The power knobs HTCondor's table lacks, and the backend's paths."""
    return _KNOBS


@hookimpl
def ep_power_backends() -> Sequence[PowerBackendSpec]:
    """The Linux backend."""
    return (PowerBackendSpec(NAME, power_backend),)
