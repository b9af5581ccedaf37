"""Which cgroup hierarchies this machine has, and which version serves each controller.

``/proc/self/mountinfo`` lists the cgroup v1 hierarchies (file system type ``cgroup``, one
per set of co-mounted controllers, named in the super options: ``rw,cpu,cpuacct``) and the
cgroup2 mount (type ``cgroup2``); the controllers v2 can use are those listed in
``cgroup.controllers`` at its root. A controller bound to a v1 hierarchy cannot be enabled in
v2, so the choice is made per controller: v1 where it is mounted as v1, v2 where it is
enabled there. Hybrid hosts (memory, cpu, pids, freezer on v1; process tracking on v2) are
common. v2's core files (``cgroup.procs``, ``cgroup.freeze``, ``cgroup.kill``,
``cgroup.events``, ``cpu.stat``) need no controller, so the freezer and CPU accounting
(``cpuacct`` in v1) are available wherever v2 is mounted.

Everything is read below an injectable ``root`` (default ``/``) so tests can build a fake
``proc/self/mountinfo`` and ``sys/fs/cgroup`` tree in a temporary directory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs

from epcore.errors import IsolationError

MOUNTINFO = "proc/self/mountinfo"

#: The controllers a cgroup v1 hierarchy may carry (``name=...`` hierarchies carry none).
V1_CONTROLLERS = frozenset(
    {
        "blkio",
        "cpu",
        "cpuacct",
        "cpuset",
        "debug",
        "devices",
        "freezer",
        "hugetlb",
        "memory",
        "misc",
        "net_cls",
        "net_prio",
        "perf_event",
        "pids",
        "rdma",
    }
)

#: v1 controllers whose work v2's core files do without any controller: ``cgroup.freeze``
#: for the freezer, ``cpu.stat`` (usage_usec, user_usec, system_usec) for cpuacct.
V2_CORE_FEATURES = frozenset({"freezer", "cpuacct"})

_NUMBER = re.compile(r"[0-9]+")
_DEVICE = re.compile(r"[0-9]+:[0-9]+")
_ESCAPE = re.compile(r"\\([0-7]{3})")


class MountinfoError(IsolationError):
    """A mountinfo file that cannot be read, or a line of it that is not a mount entry;
    names the file and the 1-based line."""


@attrs.frozen
class MountEntry:
    """One line of mountinfo (see proc(5)); paths have their octal escapes decoded."""

    mount_id: int
    parent_id: int
    device: str
    root: str
    mount_point: str
    options: tuple[str, ...]
    fstype: str
    source: str
    super_options: tuple[str, ...]


def _unescape(text: str) -> str:
    """Undo the kernel's ``\\ooo`` escapes (space, tab, newline, backslash). A byte above
    127 becomes its surrogate escape, as Python decodes file names."""

    def char(match: re.Match[str]) -> str:
        value = int(match.group(1), 8)
        if value < 0x80:
            return chr(value)
        if value < 0x100:
            return chr(0xDC00 + value)
        return match.group(0)

    return _ESCAPE.sub(char, text)


def parse_line(line: str, source: str = "/" + MOUNTINFO, number: int = 1) -> MountEntry:
    """One mountinfo line; MountinfoError naming ``source`` and ``number`` when it is not
    ``id parent major:minor root mount-point options [optional...] - type source super``."""

    def bad(reason: str) -> MountinfoError:
        return MountinfoError(f"{source}, line {number}: {reason}: {line!r}")

    fields = line.split()
    try:
        separator = fields.index("-", 6)
    except ValueError:
        raise bad("no '-' separator after the six leading fields") from None
    if len(fields) - separator != 4:
        raise bad(f"{len(fields) - separator - 1} fields after '-' (expected 3)")
    mount_id, parent_id, device, root, mount_point, options = fields[:6]
    if not _NUMBER.fullmatch(mount_id) or not _NUMBER.fullmatch(parent_id):
        raise bad("mount ids are not numbers")
    if not _DEVICE.fullmatch(device):
        raise bad(f"device {device!r} is not major:minor")
    if not mount_point.startswith("/"):
        raise bad(f"mount point {mount_point!r} is not absolute")
    fstype, mount_source, super_options = fields[separator + 1 :]
    return MountEntry(
        mount_id=int(mount_id),
        parent_id=int(parent_id),
        device=device,
        root=_unescape(root),
        mount_point=_unescape(mount_point),
        options=tuple(options.split(",")),
        fstype=_unescape(fstype),
        source=_unescape(mount_source),
        super_options=tuple(super_options.split(",")),
    )


def parse_mountinfo(text: str, source: str = "/" + MOUNTINFO) -> list[MountEntry]:
    """Every entry of a mountinfo file's ``text`` (blank lines skipped); MountinfoError
    naming ``source`` and the line for the first line that is not a mount entry."""
    entries = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            entries.append(parse_line(line, source, number))
    return entries


@attrs.frozen
class V1Hierarchy:
    """A mounted cgroup v1 hierarchy: where it is (below the root), its controllers, and the
    cgroup its mount shows (``/`` unless the mount is of a sub-group, as in containers)."""

    path: Path
    controllers: frozenset[str]
    cgroup_root: str = "/"


@attrs.frozen
class CgroupLayout:
    """The cgroup hierarchies of one machine and the version chosen for each controller.

    ``v1`` maps each v1-mounted controller to its hierarchy (co-mounted controllers share
    one); ``v2`` is the cgroup2 mount point (None when not mounted) and ``v2_controllers``
    what ``cgroup.controllers`` lists at its root.
    """

    v1: Mapping[str, V1Hierarchy] = attrs.field(factory=dict)
    v2: Path | None = None
    v2_controllers: frozenset[str] = frozenset()

    def version(self, controller: str) -> int | None:
        """1 or 2 for the version that serves ``controller`` here, None when neither does.

        A controller mounted as v1 uses v1. Otherwise it uses v2 when v2 lists it, and
        ``freezer`` and ``cpuacct`` use v2's core files whenever v2 is mounted.
        """
        if controller in self.v1:
            return 1
        if self.v2 is None:
            return None
        if controller in self.v2_controllers or controller in V2_CORE_FEATURES:
            return 2
        return None

    def only_v2(self) -> CgroupLayout:
        """This layout without its v1 hierarchies: every controller on v2 (if v2 lists it).

        For tests that run the v2 code on a hybrid host's ``unified`` mount, where limits are
        then skipped while freezing, killing and tracking still work.
        """
        return CgroupLayout(v2=self.v2, v2_controllers=self.v2_controllers)

    def describe(self) -> str:
        """One line for logs: ``v1 cpu,cpuacct=/sys/fs/cgroup/cpu,cpuacct ...; v2 ...``."""
        seen: dict[Path, V1Hierarchy] = {}
        for hierarchy in self.v1.values():
            seen.setdefault(hierarchy.path, hierarchy)
        v1 = " ".join(f"{','.join(sorted(h.controllers))}={p}" for p, h in seen.items())
        v2 = f"{self.v2} ({' '.join(sorted(self.v2_controllers)) or 'no controllers'})"
        return f"v1 {v1 or 'none'}; v2 {v2 if self.v2 is not None else 'none'}"


def _below(root: Path, mount_point: str) -> Path:
    return root / mount_point.lstrip("/")


def _v2_controllers(path: Path) -> frozenset[str]:
    try:
        text = (path / "cgroup.controllers").read_text(encoding="ascii", errors="replace")
    except (OSError, ValueError):
        return frozenset()
    return frozenset(text.split())


def layout_from_mounts(entries: Iterable[MountEntry], root: str | Path = "/") -> CgroupLayout:
    """The layout the cgroup mounts among ``entries`` give, their paths taken below ``root``.

    When a hierarchy is mounted more than once the first mount of its whole tree (mount root
    ``/``) is used, else its first mount; likewise for cgroup2.
    """
    base = Path(root)
    v1: dict[str, V1Hierarchy] = {}
    v2_entry: MountEntry | None = None
    for entry in entries:
        if entry.fstype == "cgroup2":
            if v2_entry is None or (v2_entry.root != "/" and entry.root == "/"):
                v2_entry = entry
        elif entry.fstype == "cgroup":
            controllers = frozenset(entry.super_options) & V1_CONTROLLERS
            if not controllers:
                continue
            hierarchy = V1Hierarchy(_below(base, entry.mount_point), controllers, entry.root)
            for controller in controllers:
                known = v1.get(controller)
                if known is None or (known.cgroup_root != "/" and entry.root == "/"):
                    v1[controller] = hierarchy
    if v2_entry is None:
        return CgroupLayout(v1=v1)
    v2 = _below(base, v2_entry.mount_point)
    return CgroupLayout(v1=v1, v2=v2, v2_controllers=_v2_controllers(v2))


def read_layout(root: str | Path = "/") -> CgroupLayout:
    """The layout of the machine whose file system starts at ``root``: its mountinfo
    parsed, and v2's ``cgroup.controllers`` read; MountinfoError when mountinfo cannot be
    read or parsed."""
    path = Path(root) / MOUNTINFO
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MountinfoError(f"cannot read {path}: {exc.strerror or exc}") from exc
    text = data.decode("utf-8", errors="surrogateescape")
    return layout_from_mounts(parse_mountinfo(text, str(path)), root)
