"""One job's group in the cgroup v2 hierarchy.

The job's group is ``<mount>/<BASE_CGROUP>/<job>``: limits, accounting, freezing and killing
act on it (all of them cover its descendants). Its processes live in the leaf ``<job>/job``:
v2's "no internal processes" rule forbids processes in a group that hands controllers to its
children, and the job's group must hand them down for the leaf to be limited. Controllers
(``memory``, ``cpu``, ``pids``) are enabled with ``+name`` in the ``cgroup.subtree_control``
of every ancestor of the leaf, from the mount down. The core files (``cgroup.procs``,
``cgroup.freeze``, ``cgroup.kill``, ``cgroup.events``, ``cpu.stat``) need no controller.
"""

from __future__ import annotations

import errno
import logging
import time
from pathlib import Path, PurePosixPath

from epcore.errors import IsolationError
from epcore.starter.cgroups.files import (
    make_dirs,
    move_process,
    read_int,
    read_keyed,
    read_pids,
    read_text,
    remove_dirs,
    remove_tree,
    write_control,
    write_value,
)

_log = logging.getLogger("epcore.starter.cgroups")

#: The v2 controllers the backend enables, in the order it writes them.
CONTROLLERS = ("memory", "cpu", "pids")
LEAF = "job"


class V2Group:
    """The job's v2 group ``<mount>/<relative>`` and its leaf, with the ``controllers``
    (a subset of :data:`CONTROLLERS`) to enable for it."""

    def __init__(self, mount: Path, relative: PurePosixPath, controllers: frozenset[str]) -> None:
        self.mount = mount
        self.relative = relative
        self.path = mount.joinpath(*relative.parts)
        self.leaf = self.path / LEAF
        self.controllers = controllers

    def __repr__(self) -> str:
        return f"V2Group({str(self.path)!r}, {','.join(sorted(self.controllers)) or '-'})"

    @property
    def procs_file(self) -> Path:
        """The leaf's ``cgroup.procs``: where the job's processes go."""
        return self.leaf / "cgroup.procs"

    def create(self) -> list[Path]:
        """Make the group and its leaf, enabling the controllers in every ancestor of the
        leaf; the directories made. IsolationError naming the path when that fails (nothing
        made is left then)."""
        made = make_dirs(self.mount, self.relative)
        try:
            directory = self.mount
            self._enable(directory)
            for part in self.relative.parts:
                directory = directory / part
                self._enable(directory)
            made += make_dirs(self.path, PurePosixPath(LEAF))
        except IsolationError:
            remove_dirs(reversed(made))
            raise
        return made

    def _enable(self, directory: Path) -> None:
        if not self.controllers:
            return
        control = directory / "cgroup.subtree_control"
        try:
            enabled = set(read_text(control).split())
        except OSError:
            enabled = set()
        missing = [c for c in CONTROLLERS if c in self.controllers and c not in enabled]
        if not missing:
            return
        value = " ".join(f"+{c}" for c in missing)
        try:
            write_value(control, value)
        except OSError as exc:
            raise IsolationError(
                f"cannot enable {value!r} in {control}: {exc.strerror or exc}"
            ) from exc

    def write(self, name: str, value: str | int) -> None:
        """Write a control file of the job's group; IsolationError naming it when refused."""
        write_control(self.path / name, value)

    # -- processes -----------------------------------------------------------------------

    def procs(self) -> list[int]:
        """The PIDs in the leaf and (should any be there) in the group itself."""
        return read_pids(self.procs_file) + read_pids(self.path / "cgroup.procs")

    def add(self, pid: int) -> None:
        """Move ``pid`` into the leaf unless it is there; nothing when it has exited."""
        move_process(self.procs_file, pid, self.procs())

    def populated(self) -> bool:
        """Whether any process is left in the group or below (``populated`` of
        ``cgroup.events``; the ``cgroup.procs`` files when there is no such file)."""
        events = read_keyed(self.path / "cgroup.events")
        if events is not None and "populated" in events:
            return events["populated"] != 0
        return bool(self.procs())

    def kill(self) -> bool:
        """``1`` to ``cgroup.kill`` (SIGKILL to the whole tree, kernel 5.14+); False when the
        file is not there or refuses."""
        try:
            write_value(self.path / "cgroup.kill", "1")
        except OSError as exc:
            _log.info("cgroup.kill of %s not usable: %s", self.path, exc)
            return False
        return True

    # -- freezer -------------------------------------------------------------------------

    def freeze(self, wait_seconds: float) -> bool:
        """``1`` to ``cgroup.freeze``, then wait for ``frozen 1`` in ``cgroup.events``;
        False when the group is gone or not frozen after ``wait_seconds``."""
        try:
            write_value(self.path / "cgroup.freeze", "1")
        except OSError as exc:
            _log.warning("cannot freeze %s: %s", self.path, exc)
            return False
        deadline = time.monotonic() + wait_seconds
        while True:
            events = read_keyed(self.path / "cgroup.events")
            if events is None:
                return False
            if events.get("frozen") == 1:
                return True
            if time.monotonic() >= deadline:
                _log.warning("%s not frozen after %.1f s", self.path, wait_seconds)
                return False
            time.sleep(0.005)

    def thaw(self) -> bool:
        """``0`` to ``cgroup.freeze``; False when the group is gone."""
        try:
            write_value(self.path / "cgroup.freeze", "0")
        except OSError as exc:
            _log.warning("cannot thaw %s: %s", self.path, exc)
            return False
        return True

    # -- limits --------------------------------------------------------------------------

    def set_memory(self, maximum: int | None, high: int | None, swap_max: int | None) -> None:
        """``memory.max``, ``memory.high`` and ``memory.swap.max`` in bytes (None: leave
        alone). ``memory.swap.max`` is absent without swap accounting: logged, tolerated."""
        if maximum is not None:
            self.write("memory.max", maximum)
        if high is not None:
            self.write("memory.high", high)
        if swap_max is not None:
            path = self.path / "memory.swap.max"
            try:
                write_value(path, swap_max)
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.EINVAL):
                    raise IsolationError(
                        f"cannot write {swap_max} to {path}: {exc.strerror or exc}"
                    ) from exc
                _log.info("swap limit not set: cannot write %s to %s: %s", swap_max, path, exc)

    # -- accounting ----------------------------------------------------------------------

    def cpu_seconds(self) -> tuple[float | None, float | None]:
        """(user, system) CPU seconds from ``cpu.stat`` (``user_usec``, ``system_usec``)."""
        stat = read_keyed(self.path / "cpu.stat")
        if stat is None:
            return None, None
        user, system = stat.get("user_usec"), stat.get("system_usec")
        return (
            None if user is None else user / 1e6,
            None if system is None else system / 1e6,
        )

    def memory_bytes(self) -> tuple[int | None, int | None]:
        """(``memory.current``, ``memory.peak``); the peak is absent before Linux 5.19."""
        return read_int(self.path / "memory.current"), read_int(self.path / "memory.peak")

    def oom_kills(self) -> int:
        """``oom_kill`` of ``memory.events``: processes the memory limit killed."""
        events = read_keyed(self.path / "memory.events")
        return 0 if events is None else events.get("oom_kill", 0)

    def remove(self) -> None:
        """rmdir the leaf, then the group; OSError when one cannot go."""
        remove_tree(self.path)
