"""Three process trackers for the starter: process group, PID namespace, tracking GID.

Each backend finds a job's processes its own way and does everything else (signals,
freeze by SIGSTOP, usage from psutil) the same way, in :class:`_PidSetTracking`. The PID a
tracker is attached to is the job's supervisor (see :mod:`epcore.starter.launch`), which is
a child subreaper and is itself never one of the job's processes.
"""

from __future__ import annotations

import abc
import contextlib
import fcntl
import os
import signal
from collections.abc import Collection, Iterable, Iterator

import psutil

from epcore.config import Config
from epcore.errors import ConfigError, IsolationError
from epcore.types import ChildSetup, IsolationBackendSpec, TrackedUsage, TrackingRequest

#: How often signal_all(SIGKILL) rescans for processes forked while it was killing.
_KILL_ROUNDS = 10
#: The largest group id Linux hands out ((gid_t)-1 means "no change").
_MAX_GID = 2**32 - 2


def _is_number(text: str) -> bool:
    """ASCII digits only (int() would also take other scripts' digits)."""
    return text.isascii() and text.isdigit()


def _live_pids() -> Iterator[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def parse_proc_status(text: str) -> tuple[str, frozenset[int]]:
    """The state letter and supplementary groups of a ``/proc/<pid>/status`` text.

    Raises ValueError when a ``State:`` or ``Groups:`` line does not parse; a missing line
    gives ``""`` or no groups.
    """
    state = ""
    groups: frozenset[int] = frozenset()
    # Only "\n" ends a line: a process name may hold any other character.
    for line in text.split("\n"):
        key, _, value = line.partition(":")
        if key == "State":
            fields = value.split()
            if not fields or len(fields[0]) != 1:
                raise ValueError(f"malformed State line in /proc status: {line!r}")
            state = fields[0]
        elif key == "Groups":
            words = value.split()
            if not all(_is_number(w) for w in words):
                raise ValueError(f"malformed Groups line in /proc status: {line!r}")
            groups = frozenset(int(w) for w in words)
    return state, groups


def _read_status(pid: int) -> tuple[str, frozenset[int]] | None:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as file:
            return parse_proc_status(file.read())
    except (OSError, ValueError):
        # The process vanished while we looked.
        return None


def _is_zombie(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def descendants(pid: int) -> set[int] | None:
    """Every descendant of ``pid``, from the kernel's ``/proc/<pid>/task/<tid>/children``
    lists (reading a job's few processes, where finding them through every process's parent
    reads all of /proc); None when the kernel keeps no such lists."""
    if not os.path.exists(f"/proc/{pid}/task/{pid}/children"):
        return None
    found: set[int] = set()
    stack = [pid]
    while stack:
        parent = stack.pop()
        try:
            threads = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue  # it exited meanwhile; its children went to the subreaper
        for thread in threads:
            try:
                with open(f"/proc/{parent}/task/{thread}/children", encoding="ascii") as file:
                    children = [int(child) for child in file.read().split()]
            except (OSError, ValueError):
                continue
            for child in children:
                if child not in found:
                    found.add(child)
                    stack.append(child)
    return found


class _PidSetTracking(abc.ABC):
    """Everything but :meth:`pids`, done process by process over :meth:`pids`."""

    def __init__(self) -> None:
        self._peak = 0
        self.supervisor: int | None = None

    def child_setup(self) -> ChildSetup:
        return ChildSetup()

    def attach(self, pid: int) -> None:
        self.supervisor = pid

    @abc.abstractmethod
    def pids(self) -> frozenset[int]:
        """Every live process of the job this tracker sees (each tracker says how)."""

    def _targets(self, signum: int) -> frozenset[int]:
        """The processes ``signum`` goes to (all of the job's, unless a backend knows better)."""
        del signum
        return self.pids()

    def _send(self, pids: Iterable[int], signum: int) -> None:
        for pid in pids:
            if pid in (os.getpid(), self.supervisor):
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)

    def signal_all(self, signum: int) -> None:
        if signum not in (signal.SIGKILL, signal.SIGSTOP):
            self._send(self._targets(signum), signum)
            return
        # Stop everything first, rescanning for processes forked meanwhile: stopped processes
        # can neither fork nor reap a killed child and exit on their own, so the kill that
        # follows hits the whole tree at once and the first process dies by SIGKILL.
        stopped: set[int] = set()
        for _ in range(_KILL_ROUNDS):
            fresh = self._targets(signal.SIGSTOP) - stopped
            if not fresh:
                break
            self._send(fresh, signal.SIGSTOP)
            stopped |= fresh
        if signum == signal.SIGKILL:
            self._send(stopped | self._targets(signal.SIGKILL), signal.SIGKILL)

    def freeze(self) -> bool:
        self.signal_all(signal.SIGSTOP)
        return True

    def thaw(self) -> bool:
        self.signal_all(signal.SIGCONT)
        return True

    def _measured(self) -> frozenset[int]:
        """The processes whose use :meth:`usage` adds up."""
        return self.pids()

    def usage(self) -> TrackedUsage:
        user = system = 0.0
        rss = 0
        for pid in self._measured():
            try:
                process = psutil.Process(pid)
                with process.oneshot():
                    times = process.cpu_times()
                    memory = process.memory_info()
            except psutil.Error:
                continue
            user += times.user
            system += times.system
            rss += memory.rss
        self._peak = max(self._peak, rss)
        return TrackedUsage(user, system, rss, self._peak)

    def out_of_memory(self) -> bool:
        return False

    def release(self) -> None:
        return None


class ProcessGroupTracking(_PidSetTracking):
    """The supervisor's live descendants plus every process in a session one of them leads."""

    def __init__(self) -> None:
        super().__init__()
        self._sessions: set[int] = set()

    def pids(self) -> frozenset[int]:
        if self.supervisor is None:
            return frozenset()
        listed = descendants(self.supervisor)
        if listed is not None:
            found = {pid for pid in listed if (_read_status(pid) or ("Z",))[0] != "Z"}
        else:
            try:
                children = psutil.Process(self.supervisor).children(recursive=True)
            except psutil.Error:
                children = []
            found = {p.pid for p in children if not _is_zombie(p)}
        # A session a job process leads holds only job processes; the starter's never counts.
        foreign = {os.getsid(0)}
        with contextlib.suppress(OSError):
            foreign.add(os.getsid(self.supervisor))
        for pid in found:
            try:
                if os.getsid(pid) == pid:
                    self._sessions.add(pid)
            except OSError:
                continue
        self._sessions -= foreign
        if self._sessions:
            members = self._session_members()
            # A session with no member left is forgotten: its number may be reused.
            self._sessions &= set(members.values())
            found |= set(members)
        return frozenset(found)

    def _session_members(self) -> dict[int, int]:
        members: dict[int, int] = {}
        for pid in _live_pids():
            try:
                sid = os.getsid(pid)
            except OSError:
                continue
            if sid in self._sessions:
                status = _read_status(pid)
                if status is not None and status[0] != "Z":
                    members[pid] = sid
        return members


class PidNamespaceTracking(_PidSetTracking):
    """Every process in the job's PID namespace, found by its /proc/<pid>/ns/pid link."""

    def __init__(self) -> None:
        super().__init__()
        self._namespace: str | None = None
        self._init: int | None = None

    def child_setup(self) -> ChildSetup:
        return ChildSetup(new_pid_namespace=True)

    def attach(self, pid: int) -> None:
        super().attach(pid)
        self._find_namespace()

    def _find_namespace(self) -> None:
        if self._namespace is not None or self.supervisor is None:
            return
        try:
            children = psutil.Process(self.supervisor).children()
            own = os.readlink("/proc/self/ns/pid")
        except (psutil.Error, OSError):
            return
        for child in children:
            try:
                link = os.readlink(f"/proc/{child.pid}/ns/pid")
            except OSError:
                continue
            if link != own:
                self._namespace, self._init = link, child.pid
                return

    def _namespace_alive(self) -> bool:
        """True while the namespace's init is still the supervisor's live child.

        Once the init is gone the namespace is empty, and its inode number may be handed to
        another job's namespace, so the link alone must no longer be trusted.
        """
        if self._init is None:
            return False
        try:
            init = psutil.Process(self._init)
            return init.ppid() == self.supervisor and not _is_zombie(init)
        except psutil.Error:
            return False

    def pids(self) -> frozenset[int]:
        self._find_namespace()
        if self._namespace is None or not self._namespace_alive():
            return frozenset()
        found = set()
        for pid in _live_pids():
            try:
                if os.readlink(f"/proc/{pid}/ns/pid") != self._namespace:
                    continue
            except OSError:
                continue
            status = _read_status(pid)
            if status is not None and status[0] != "Z":
                found.add(pid)
        return frozenset(found)

    def _measured(self) -> frozenset[int]:
        # The init is the namespace's machinery, not the job's work.
        return self.pids() - {self._init or 0}

    def _targets(self, signum: int) -> frozenset[int]:
        pids = self.pids()
        if self._init is None or self._init not in pids:
            return pids
        if signum == signal.SIGKILL:
            # The kernel kills everything in the namespace when its init dies.
            return frozenset({self._init})
        # The init forwards what it gets to the job; it must not pass a second copy on.
        return pids - {self._init}


class GidTracking(_PidSetTracking):
    """Every process carrying the job's tracking GID among its supplementary groups."""

    def __init__(self, gid: int, lock_fd: int) -> None:
        super().__init__()
        self.gid = gid
        self._lock_fd: int | None = lock_fd

    def child_setup(self) -> ChildSetup:
        return ChildSetup(extra_groups=(self.gid,))

    def pids(self) -> frozenset[int]:
        found = set()
        for pid in _live_pids():
            status = _read_status(pid)
            if status is not None and status[0] != "Z" and self.gid in status[1]:
                found.add(pid)
        return frozenset(found)

    def release(self) -> None:
        if self._lock_fd is None:
            return
        fd, self._lock_fd = self._lock_fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


# -- the backends --------------------------------------------------------------------------


class ProcessGroupBackend:
    """Tracks a job by its supervisor's descendants and its sessions; always available."""

    name = "process_group"

    def __init__(self, config: Config) -> None:
        self.config = config

    def available(self) -> bool:
        return True

    def wanted(self) -> bool:
        return True

    def reclaim(self, job_key: str) -> bool:
        """Nothing to take back: what this backend tracked lived in the starter that died."""
        return False

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        """Nothing outlives a starter in this backend."""
        return ()

    def track(self, request: TrackingRequest) -> ProcessGroupTracking:
        del request
        return ProcessGroupTracking()


class PidNamespaceBackend:
    """Runs each job in its own PID namespace (USE_PID_NAMESPACES); needs root."""

    name = "pid_namespace"

    def __init__(self, config: Config) -> None:
        self.config = config

    def available(self) -> bool:
        return os.geteuid() == 0 and os.path.exists("/proc/self/ns/pid")

    def wanted(self) -> bool:
        return self.config.get_bool("USE_PID_NAMESPACES", False)

    def reclaim(self, job_key: str) -> bool:
        """Nothing to take back: what this backend tracked lived in the starter that died."""
        return False

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        """Nothing outlives a starter in this backend."""
        return ()

    def track(self, request: TrackingRequest) -> PidNamespaceTracking:
        del request
        return PidNamespaceTracking()


def _gid_knob(config: Config, knob: str) -> int:
    text = config.get(knob)
    if text is None or not text.strip() or text.strip() == "0":
        raise ConfigError(f"USE_GID_PROCESS_TRACKING is true but {knob} is not set")
    if not _is_number(text.strip()):
        raise ConfigError(f"{knob} = {text!r} is not a group id")
    value = int(text.strip())
    if not 0 < value <= _MAX_GID:
        raise ConfigError(f"{knob} = {text!r} is not a group id (1..{_MAX_GID})")
    return value


def tracking_gid_range(config: Config) -> tuple[int, int]:
    """MIN_TRACKING_GID..MAX_TRACKING_GID; ConfigError naming the knob when unusable."""
    low = _gid_knob(config, "MIN_TRACKING_GID")
    high = _gid_knob(config, "MAX_TRACKING_GID")
    if low > high:
        raise ConfigError(f"MIN_TRACKING_GID ({low}) is greater than MAX_TRACKING_GID ({high})")
    return low, high


def _gids_in_use() -> set[int]:
    used: set[int] = set()
    for pid in _live_pids():
        status = _read_status(pid)
        if status is not None and status[0] != "Z":
            used |= status[1]
    return used


class GidBackend:
    """Gives each job a free GID of MIN_TRACKING_GID..MAX_TRACKING_GID to find its processes.

    A GID is taken by an exclusive flock on ``<lock_dir>/tracking_gid_<gid>.lock`` (LOCK by
    default), so starters on one machine never share one; a GID some live process still
    carries (a job left by a starter that died) is passed over.
    """

    name = "gid"

    def __init__(self, config: Config, lock_dir: str | None = None) -> None:
        self.config = config
        self.lock_dir = lock_dir if lock_dir is not None else config.get("LOCK")

    def available(self) -> bool:
        return os.geteuid() == 0 and os.path.isdir("/proc")

    def wanted(self) -> bool:
        """True when USE_GID_PROCESS_TRACKING is; then the GID range must be valid too."""
        if not self.config.get_bool("USE_GID_PROCESS_TRACKING", False):
            return False
        tracking_gid_range(self.config)
        return True

    def reclaim(self, job_key: str) -> bool:
        """Nothing to take back: what this backend tracked lived in the starter that died."""
        return False

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        """Nothing outlives a starter in this backend."""
        return ()

    def track(self, request: TrackingRequest) -> GidTracking:
        low, high = tracking_gid_range(self.config)
        if not self.lock_dir:
            raise ConfigError("LOCK is not set: no directory for the tracking GID locks")
        try:
            os.makedirs(self.lock_dir, mode=0o755, exist_ok=True)
        except OSError as exc:
            raise IsolationError(
                f"cannot make the tracking GID lock directory {self.lock_dir} (LOCK): {exc}"
            ) from exc
        # The slot's own GID first, so a slot usually keeps the same one.
        preferred = low + request.slot_id - 1
        order = [g for g in range(low, high + 1) if g != preferred]
        if low <= preferred <= high:
            order.insert(0, preferred)
        in_use = _gids_in_use()
        for gid in order:
            if gid in in_use:
                continue
            fd = self._lock(gid)
            if fd is not None:
                return GidTracking(gid, fd)
        raise IsolationError(
            f"no more tracking GIDs: all of MIN_TRACKING_GID..MAX_TRACKING_GID "
            f"({low}..{high}) are in use"
        )

    def _lock(self, gid: int) -> int | None:
        path = os.path.join(self.lock_dir or "", f"tracking_gid_{gid}.lock")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise IsolationError(f"cannot open the tracking GID lock {path}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except OSError as exc:
            os.close(fd)
            raise IsolationError(f"cannot lock the tracking GID lock {path}: {exc}") from exc
        return fd


def tracker_specs() -> tuple[IsolationBackendSpec, ...]:
    """The isolation backends of this module, for the plugin hook that offers backends."""
    return (
        IsolationBackendSpec(ProcessGroupBackend.name, ProcessGroupBackend),
        IsolationBackendSpec(PidNamespaceBackend.name, PidNamespaceBackend),
        IsolationBackendSpec(GidBackend.name, GidBackend),
    )
