"""The local machine as a :class:`~epcore.types.MachineHost`: files, commands, detection.

This is the one module that reads the machine; psutil is imported here and nowhere else. For
the configuration layer it detects what HTCondor puts into the configuration before reading any
file: core and memory counts, the platform names (``ARCH``, ``OPSYS``, ``OPSYSANDVER``...), the
host name and address, the user and process ids. For resource detection it reads CPU counts,
memory, swap, free disk, the load average and the access times of terminals and input devices.

Every command that reads a configuration (``ep submit``, ``ep q``...) detects those values, so
they are read from the kernel directly (sysconf, sysfs, /proc, an ioctl), as psutil reads them:
importing psutil and what it imports cost such a command 8% of its instructions (about 13 ms).
psutil is imported only for the readings a startd takes (swap, free disk).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import platform
import pwd
import re
import shlex
import signal
import socket
import struct
from collections.abc import Mapping
from functools import cached_property

import attrs

from epcore.config.host import CommandOutput, HostFacts

#: Seconds a command (``include command``, an inventory script) may run before it counts as hung.
COMMAND_TIMEOUT = 60.0

_MIB = 1024 * 1024
#: Virtual consoles (``tty1``...), not ``/dev/tty`` itself (the caller's controlling terminal).
_VIRTUAL_CONSOLE = re.compile(r"tty[0-9]+")
#: The console devices HTCondor's CONSOLE_DEVICES names by default, looked for under /dev.
_CONSOLE_NAMES = ("console", "mouse")
#: Linux's ioctl for an interface's (primary) IPv4 address; the answer's address is at 20.
_SIOCGIFADDR = 0x8915
_CPU_SYSFS = "/sys/devices/system/cpu"


def _os_release(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip().strip('"').strip("'")
    return fields


def platform_macros(os_release: str, uname_arch: str, uname_opsys: str) -> dict[str, str]:
    """``ARCH``, ``OPSYS*`` and ``UNAME_*`` as HTCondor derives them on Linux."""
    arch = {"x86_64": "X86_64", "amd64": "X86_64"}.get(uname_arch.lower(), uname_arch)
    if uname_arch.lower() in ("i386", "i486", "i586", "i686"):
        arch = "INTEL"
    fields = _os_release(os_release)
    name = fields.get("NAME", uname_opsys).split()[0] if fields.get("NAME") else uname_opsys
    version = fields.get("VERSION_ID", "0")
    parts = ([*version.split("."), "0"])[:2]
    major = parts[0] if parts[0].isdigit() else "0"
    minor = parts[1] if parts[1].isdigit() else "0"
    pretty = fields.get("PRETTY_NAME", f"{name} {version}")
    long_name = pretty.split(" (")[0]
    return {
        "ARCH": arch,
        "OPSYS": "LINUX" if uname_opsys.lower() == "linux" else uname_opsys.upper(),
        "OPSYSLEGACY": "LINUX" if uname_opsys.lower() == "linux" else uname_opsys.upper(),
        "OPSYSNAME": name,
        "OPSYSSHORTNAME": name,
        "OPSYSLONGNAME": long_name,
        "OPSYSMAJORVER": major,
        "OPSYSVER": str(int(major) * 100 + int(minor)),
        "OPSYSANDVER": f"{name}{major}",
        "UNAME_ARCH": uname_arch,
        "UNAME_OPSYS": uname_opsys,
    }


def usable_ipv4(address: str) -> bool:
    """Neither loopback (127/8) nor link-local (169.254/16)."""
    return not address.startswith(("127.", "169.254."))


def usable_ipv6(hex_address: str) -> bool:
    """Neither loopback (::1) nor link-local (fe80::/10), for 32 hex digits as /proc has them."""
    return hex_address != "0" * 31 + "1" and not hex_address.lower().startswith(
        ("fe8", "fe9", "fea", "feb")
    )


def first_ipv6(if_inet6: str, order: Mapping[str, int]) -> str:
    """The first usable address of /proc/net/if_inet6 (``if_inet6``: its text), interfaces
    taken in ``order`` (name to position) as the kernel lists them; "" when there is none."""
    found: list[tuple[int, str]] = []
    for line in if_inet6.splitlines():
        fields = line.split()
        if len(fields) == 6 and len(fields[0]) == 32 and usable_ipv6(fields[0]):
            found.append((order.get(fields[5], len(order)), fields[0]))
    if not found:
        return ""
    # min() keeps the first of equal positions: an interface's addresses in the file's order.
    packed = bytes.fromhex(min(found, key=lambda item: item[0])[1])
    return socket.inet_ntop(socket.AF_INET6, packed)


def _addresses() -> tuple[str, str]:
    """The first usable IPv4 and IPv6 addresses (non-loopback, non-link-local), or "", with
    the interfaces in the kernel's order (as psutil lists them). Of IPv4 addresses, each
    interface's primary one is read: a secondary address is not looked at."""
    interfaces = [name for _, name in socket.if_nameindex()]
    v4 = ""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for name in interfaces:
            request = struct.pack("256s", name.encode()[:15])
            try:
                reply = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, request)
            except OSError:
                # No IPv4 address on this interface.
                continue
            address = socket.inet_ntoa(reply[20:24])
            if usable_ipv4(address):
                v4 = address
                break
    try:
        with open("/proc/net/if_inet6", encoding="utf-8") as listing:
            if_inet6 = listing.read()
    except OSError:
        # IPv6 disabled in this kernel.
        if_inet6 = ""
    return v4, first_ipv6(if_inet6, {name: index for index, name in enumerate(interfaces)})


def _physical_cores() -> int | None:
    """Distinct cores: the distinct sibling lists in sysfs (None when sysfs has none)."""
    siblings: set[bytes] = set()
    with contextlib.suppress(OSError):
        for entry in os.listdir(_CPU_SYSFS):
            if not (entry.startswith("cpu") and entry[3:].isdigit()):
                continue
            topology = os.path.join(_CPU_SYSFS, entry, "topology")
            # core_cpus_list is the newer name of thread_siblings_list.
            for name in ("core_cpus_list", "thread_siblings_list"):
                with contextlib.suppress(OSError), open(os.path.join(topology, name), "rb") as f:
                    siblings.add(f.read().strip())
                    break
    return len(siblings) or None


def _cpu_counts() -> tuple[int, int]:
    # What psutil counts (os.cpu_count() may be overridden by PYTHON_CPU_COUNT).
    logical = os.sysconf("SC_NPROCESSORS_ONLN") or 1
    # None when the kernel does not say how cores map to packages.
    physical = _physical_cores() or logical
    return logical, physical


def _memory_mb() -> int:
    # The kernel's total usable memory: /proc/meminfo's MemTotal, which psutil reports too.
    return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // _MIB)


def _atime(path: str) -> float | None:
    try:
        return os.stat(path).st_atime
    except OSError:
        # Gone since listed, a dangling link, or not ours to stat: it tells nothing.
        return None


@attrs.define
class LocalHost:
    """The machine this process runs on.

    ``command_timeout`` bounds every command run through :meth:`run_command`; ``dev_root`` is
    where device files are looked for (tests point it at a fake tree), while the paths
    :meth:`device_access_times` reports always read ``/dev/...``.
    """

    command_timeout: float = COMMAND_TIMEOUT
    dev_root: str = "/dev"

    @cached_property
    def _facts(self) -> HostFacts:
        logical, physical = _cpu_counts()
        try:
            limit = min(logical, len(os.sched_getaffinity(0)))
        except (AttributeError, OSError):
            limit = logical
        memory_mb = _memory_mb()
        try:
            with open("/etc/os-release", encoding="utf-8") as release:
                os_release = release.read()
        except OSError:
            os_release = ""
        uname = platform.uname()
        detected = {
            "DETECTED_CORES": str(logical),
            "DETECTED_PHYSICAL_CPUS": str(physical),
            "DETECTED_CPUS_LIMIT": str(limit),
            "DETECTED_MEMORY": str(memory_mb),
            **platform_macros(os_release, uname.machine, uname.system),
            "UTSNAME_SYSNAME": uname.system,
            "UTSNAME_NODENAME": uname.node,
            "UTSNAME_RELEASE": uname.release,
            "UTSNAME_VERSION": uname.version,
            "UTSNAME_MACHINE": uname.machine,
        }
        with contextlib.suppress(KeyError):
            detected["TILDE"] = pwd.getpwnam("condor").pw_dir
        v4, v6 = _addresses()
        try:
            username = pwd.getpwuid(os.geteuid()).pw_name
        except KeyError:
            username = str(os.geteuid())
        # HTCondor calls the configuration "admin" only for its own service account.
        detected["CondorIsAdmin"] = "true" if username == "condor" else "false"
        specials = {
            "DETECTED_CPUS": str(logical),
            "USERNAME": username,
            "PID": str(os.getpid()),
            "PPID": str(os.getppid()),
            "REAL_UID": str(os.getuid()),
            "REAL_GID": str(os.getgid()),
            "IP_ADDRESS": v4 or v6 or "127.0.0.1",
            "IPV4_ADDRESS": v4,
            "IPV6_ADDRESS": v6,
            "IP_ADDRESS_IS_IPV6": "true" if not v4 and v6 else "false",
        }
        name = socket.gethostname()
        return HostFacts(
            hostname=name.split(".")[0],
            full_hostname=name,
            detected=detected,
            specials={k: v for k, v in specials.items() if v},
        )

    def facts(self) -> HostFacts:
        """The detected values (computed once per LocalHost)."""
        return self._facts

    def read_text(self, path: str) -> str:
        """Read a file as text (undecodable bytes are replaced, not fatal)."""
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def is_file(self, path: str) -> bool:
        """True when ``path`` is a readable regular file."""
        return os.path.isfile(path) and os.access(path, os.R_OK)

    def write_text(self, path: str, text: str) -> None:
        """Write ``text`` to ``path`` (mode 0644, as HTCondor creates its cache files)."""
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)

    def list_dir(self, path: str) -> list[str]:
        """Names of the non-directory entries of ``path``."""
        return [e.name for e in os.scandir(path) if not e.is_dir()]

    def run_command(self, command: str) -> CommandOutput:
        """Run ``command`` without a shell and capture its standard output.

        A command still running after ``command_timeout`` seconds is killed together with
        every process it started and raises TimeoutError (an OSError, like a missing program).
        Standard error is captured and dropped, as HTCondor does for these commands.
        """
        import subprocess

        # A session of its own lets the whole process group be killed: killing only the direct
        # child would leave e.g. a script's `sleep` holding the output pipe open.
        with subprocess.Popen(
            shlex.split(command),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        ) as process:
            try:
                stdout, _ = process.communicate(timeout=self.command_timeout)
            except subprocess.TimeoutExpired as exc:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                raise TimeoutError(
                    f"command '{command}' did not finish within {self.command_timeout:g} seconds"
                ) from exc
        return CommandOutput(stdout=stdout, exit_status=process.returncode)

    def environ(self) -> Mapping[str, str]:
        """The process environment."""
        return os.environ

    # -- MachineHost: hardware and usage readings --------------------------------------------

    def cpu_counts(self) -> tuple[int, int]:
        """(logical CPUs, physical cores), counted as psutil counts them."""
        return _cpu_counts()

    def memory_mb(self) -> int:
        """Physical memory in MB (the same figure as DETECTED_MEMORY)."""
        return _memory_mb()

    def swap_kb(self) -> int:
        """What HTCondor advertises as VirtualMemory on Linux: free swap plus physical memory,
        in KB (its sysapi adds total RAM to the free swap space)."""
        import psutil

        return int((psutil.swap_memory().free + psutil.virtual_memory().total) // 1024)

    def disk_free_kb(self, path: str) -> int:
        """KB available to unprivileged users on the file system holding ``path``."""
        import psutil

        return int(psutil.disk_usage(path).free // 1024)

    def load_average(self) -> float:
        """The one-minute load average."""
        return os.getloadavg()[0]

    def device_access_times(self) -> Mapping[str, float]:
        """Access times of ``console``, ``mouse``, ``tty<N>``, ``pts/*`` and ``input/*``.

        Devices that do not exist or cannot be examined are left out; names are reported
        as ``/dev/<name>`` whatever ``dev_root`` is.
        """
        names: list[str] = list(_CONSOLE_NAMES)
        with contextlib.suppress(OSError):
            names += [n for n in os.listdir(self.dev_root) if _VIRTUAL_CONSOLE.fullmatch(n)]
        for folder in ("pts", "input"):
            with contextlib.suppress(OSError):
                names += [
                    f"{folder}/{entry.name}"
                    for entry in os.scandir(os.path.join(self.dev_root, folder))
                    if entry.name != "ptmx" and not entry.is_dir()
                ]
        times: dict[str, float] = {}
        for name in sorted(names):
            atime = _atime(os.path.join(self.dev_root, name))
            if atime is not None:
                times[f"/dev/{name}"] = atime
        return times
