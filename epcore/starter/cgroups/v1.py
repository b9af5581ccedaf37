"""One job's group in one cgroup v1 hierarchy, and the v1 control files the backend uses.

A v1 hierarchy carries one or more controllers (``cpu,cpuacct`` may be co-mounted); the job
gets the directory ``<mount>/<BASE_CGROUP>/<job>`` in each hierarchy it uses, and its
processes join every one of them through their ``cgroup.procs``.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from pathlib import Path

from epcore.errors import IsolationError
from epcore.starter.cgroups.files import (
    move_process,
    read_int,
    read_keyed,
    read_pids,
    read_text,
    write_control,
    write_value,
)

_log = logging.getLogger("epcore.starter.cgroups")

#: What ``memory.limit_in_bytes`` reads when there is no limit (PAGE_COUNTER_MAX pages).
UNLIMITED = 9223372036854771712


class V1Group:
    """The job's directory in one v1 hierarchy: ``path``, with the ``controllers`` that
    hierarchy carries."""

    def __init__(self, path: Path, controllers: frozenset[str]) -> None:
        self.path = path
        self.controllers = controllers
        # Made once: every look at the job's processes reads it.
        self.procs_file = path / "cgroup.procs"

    def __repr__(self) -> str:
        return f"V1Group({str(self.path)!r}, {','.join(sorted(self.controllers))})"

    def procs(self) -> list[int]:
        """The PIDs in the group (empty when it is gone)."""
        return read_pids(self.procs_file)

    def add(self, pid: int) -> None:
        """Move ``pid`` into the group unless it is there; nothing when it has exited."""
        move_process(self.procs_file, pid, self.procs())

    def write(self, name: str, value: str | int) -> None:
        """Write a control file of the group; IsolationError naming it when refused."""
        write_control(self.path / name, value)

    # -- limits --------------------------------------------------------------------------

    def set_memory(self, hard: int | None, soft: int | None, memsw: int | None) -> None:
        """Hard and soft limits and the memory+swap limit, in bytes (None: leave alone).

        ``memory.memsw.limit_in_bytes`` must never be below ``memory.limit_in_bytes``, so
        when the hard limit rises above the current memsw limit memsw is written first, else
        after it. memsw is absent without swap accounting (or refused with EINVAL/EBUSY on
        some kernels): that is logged and tolerated.
        """
        memsw_path = self.path / "memory.memsw.limit_in_bytes"
        current_memsw = read_int(memsw_path)
        memsw_first = (
            memsw is not None
            and hard is not None
            and current_memsw is not None
            and hard > current_memsw
        )
        if memsw_first:
            self._set_memsw(memsw_path, memsw)
        if hard is not None:
            self.write("memory.limit_in_bytes", hard)
        if soft is not None:
            self.write("memory.soft_limit_in_bytes", soft)
        if memsw is not None and not memsw_first:
            self._set_memsw(memsw_path, memsw)

    def _set_memsw(self, path: Path, value: int | None) -> None:
        try:
            write_value(path, str(value))
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.EINVAL, errno.EBUSY, errno.EACCES):
                _log.info("swap limit not set: cannot write %s to %s: %s", value, path, exc)
                return
            raise IsolationError(f"cannot write {value} to {path}: {exc.strerror or exc}") from exc

    # -- freezer -------------------------------------------------------------------------

    def freeze(self, wait_seconds: float) -> bool:
        """FROZEN, then poll ``freezer.state`` until it reads FROZEN; False when the group is
        gone or it is still FREEZING after ``wait_seconds``."""
        state = self.path / "freezer.state"
        try:
            write_value(state, "FROZEN")
        except OSError as exc:
            _log.warning("cannot freeze %s: %s", self.path, exc)
            return False
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                if read_text(state).strip() == "FROZEN":
                    return True
            except OSError:
                return False
            if time.monotonic() >= deadline:
                _log.warning("%s still not FROZEN after %.1f s", state, wait_seconds)
                return False
            time.sleep(0.005)

    def thaw(self) -> bool:
        """THAWED; False when the group is gone."""
        try:
            write_value(self.path / "freezer.state", "THAWED")
        except OSError as exc:
            _log.warning("cannot thaw %s: %s", self.path, exc)
            return False
        return True

    # -- accounting ----------------------------------------------------------------------

    def cpu_seconds(self) -> tuple[float | None, float | None]:
        """(user, system) CPU seconds from ``cpuacct.stat`` (USER_HZ ticks)."""
        stat = read_keyed(self.path / "cpuacct.stat")
        if stat is None:
            return None, None
        hertz = os.sysconf("SC_CLK_TCK")
        user, system = stat.get("user"), stat.get("system")
        return (
            None if user is None else user / hertz,
            None if system is None else system / hertz,
        )

    def memory_bytes(self, ignore_cache: bool) -> tuple[int | None, int | None]:
        """(current, peak) memory. With ``ignore_cache`` current is the resident set plus
        swap of ``memory.stat`` (``total_rss + total_swap``), HTCondor's RSS; else
        ``memory.usage_in_bytes``, which counts page cache too."""
        current: int | None
        if ignore_cache:
            stat = read_keyed(self.path / "memory.stat")
            if stat is None or "total_rss" not in stat:
                current = None
            else:
                current = stat["total_rss"] + stat.get("total_swap", 0)
        else:
            current = read_int(self.path / "memory.usage_in_bytes")
        return current, read_int(self.path / "memory.max_usage_in_bytes")

    def oom_kills(self) -> int:
        """How many processes the memory limit killed (``oom_kill`` of memory.oom_control).
        Not memory.failcnt: it stays 0 when the memsw limit equals the memory limit."""
        control = read_keyed(self.path / "memory.oom_control")
        return 0 if control is None else control.get("oom_kill", 0)
