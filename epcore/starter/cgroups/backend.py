"""The "cgroup" isolation backend: one cgroup per job, with HTCondor's limits.

Each job gets ``<BASE_CGROUP>/<job>`` in every hierarchy it uses (see
:mod:`epcore.starter.cgroups.mountinfo` for the choice of v1 or v2 per controller), its first
process joins them before exec (:meth:`CgroupTracking.child_setup`), and everything it starts
stays in them. Limits follow CGROUP_MEMORY_LIMIT_POLICY (as the starter passes it in the
:class:`~epcore.types.TrackingRequest`), cpu shares follow the slot's Cpus, and epcore's own
``CGROUP_PIDS_LIMIT`` caps the number of processes (fork bombs).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import signal
import time
from collections.abc import Collection
from pathlib import Path, PurePosixPath

import attrs

from epcore.config import Config
from epcore.errors import ConfigError, IsolationError
from epcore.starter.cgroups.files import make_dirs, process_state, remove_dirs, remove_tree
from epcore.starter.cgroups.mountinfo import CgroupLayout, read_layout
from epcore.starter.cgroups.v1 import V1Group
from epcore.starter.cgroups.v2 import CONTROLLERS as V2_CONTROLLERS
from epcore.starter.cgroups.v2 import V2Group
from epcore.types import (
    ChildSetup,
    IsolationBackend,
    JobTracking,
    TrackedUsage,
    TrackingRequest,
)

_log = logging.getLogger("epcore.starter.cgroups")

MB = 1024 * 1024
#: The v1 controllers a job's cgroup uses (cpu and cpuacct may be one co-mounted hierarchy).
FEATURES = ("memory", "cpu", "cpuacct", "freezer", "pids")
PIDS_KNOB = "CGROUP_PIDS_LIMIT"
#: How long a kill, a freeze or a release waits for the kernel, by default.
WAIT_SECONDS = 5.0

_UNSAFE = re.compile(r"[^A-Za-z0-9._@+=,:-]")
#: Names a job's directory must not take: the control files of a cgroup directory.
_RESERVED = re.compile(
    r"(tasks|notify_on_release|release_agent)$|"
    r"(cgroup|memory|cpu|cpuacct|cpuset|freezer|pids|io|blkio|devices|hugetlb|rdma|misc"
    r"|net_cls|net_prio|perf_event)\."
)
_MAX_NAME = 200
_INTEGER = re.compile(r"\s*\+?[0-9]+\s*")


def cgroup_name(job_key: str) -> str:
    """``job_key`` as one safe directory name: ``/`` and anything unusual become ``_``; a
    name a control file has (``tasks``, ``memory.x``) or ``.``/``..`` gets a prefix; a very
    long one is cut and made unique with a hash."""
    name = _UNSAFE.sub("_", job_key)
    if not name.strip(".") or _RESERVED.match(name):
        name = f"job_{name}"
    if len(name) > _MAX_NAME:
        digest = hashlib.sha256(job_key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        name = f"{name[: _MAX_NAME - 17]}_{digest}"
    return name


@attrs.frozen
class MemoryLimits:
    """A job's memory limits in bytes (None: leave alone): ``hard`` and ``soft``, ``memsw``
    (v1: memory plus swap) and ``swap`` (v2: swap alone)."""

    hard: int | None = None
    soft: int | None = None
    memsw: int | None = None
    swap: int | None = None

    def any(self) -> bool:
        return any(v is not None for v in (self.hard, self.soft, self.memsw, self.swap))


def memory_limits(request: TrackingRequest) -> MemoryLimits:
    """The limits CGROUP_MEMORY_LIMIT_POLICY gives (``request.memory_policy``).

    ``hard``: hard = Memory, soft = 90 % of it. ``soft``: soft = Memory, hard = the
    startd's memory (none when that is 0). ``none``: nothing, swap included. With a policy,
    swap is limited too: v1 memsw = hard + ``swap_limit_mb`` (None: memsw left alone), v2
    swap.max = ``swap_limit_mb``; ``disable_swap`` makes memsw = hard and swap.max = 0.
    IsolationError for another policy or a memory size that is not positive.
    """
    policy = request.memory_policy.strip().lower()
    if policy == "none":
        return MemoryLimits()
    if request.memory_mb <= 0:
        raise IsolationError(
            f"memory limit of {request.memory_mb} MB for {request.job_key} is not positive"
        )
    if policy == "hard":
        hard: int | None = request.memory_mb * MB
        soft = request.memory_mb * MB * 9 // 10
    elif policy == "soft":
        soft = request.memory_mb * MB
        hard = request.startd_memory_mb * MB if request.startd_memory_mb > 0 else None
    else:
        raise IsolationError(
            f"unknown memory limit policy {request.memory_policy!r} "
            "(CGROUP_MEMORY_LIMIT_POLICY: hard, soft or none)"
        )
    if request.disable_swap:
        return MemoryLimits(hard, soft, memsw=hard, swap=0)
    if request.swap_limit_mb is None:
        return MemoryLimits(hard, soft)
    swap = max(0, request.swap_limit_mb) * MB
    return MemoryLimits(hard, soft, memsw=None if hard is None else hard + swap, swap=swap)


def cpu_shares(cpus: float) -> int:
    """v1 ``cpu.shares`` for a slot of ``cpus``: Cpus x 100, within the kernel's 2..262144."""
    return min(262144, max(2, round(cpus * 100)))


def cpu_weight(shares: int) -> int:
    """v2 ``cpu.weight`` for v1 ``shares``: ``1 + (shares - 2) * 9999 / 262142`` (1..10000)."""
    return min(10000, max(1, 1 + (shares - 2) * 9999 // 262142))


def _config_error(config: Config, knob: str, message: str) -> ConfigError:
    origin = config.origin(knob)
    if origin is None or origin.source == "<Default>":
        return ConfigError(message)
    return ConfigError(message, origin.source, origin.line)


def read_base_cgroup(config: Config) -> PurePosixPath | None:
    """BASE_CGROUP as a relative path (``htcondor``, ``system.slice/htcondor``); None when
    empty. ConfigError naming the knob for ``.`` or ``..`` in it."""
    text = (config.get("BASE_CGROUP") or "").strip()
    parts = [part for part in text.split("/") if part]
    if any(part in (".", "..") or "\0" in part for part in parts):
        raise _config_error(config, "BASE_CGROUP", f"BASE_CGROUP: {text!r} is not a cgroup name")
    return PurePosixPath(*parts) if parts else None


def read_pids_limit(config: Config) -> int | None:
    """CGROUP_PIDS_LIMIT (epcore's own knob): the most processes a job may have at once;
    None when unset or 0. ConfigError naming the knob when it is not a whole number >= 0."""
    text = config.get(PIDS_KNOB)
    if text is None:
        return None
    if not _INTEGER.fullmatch(text):
        raise _config_error(
            config, PIDS_KNOB, f"{PIDS_KNOB}: {text.strip()!r} is not a whole number >= 0"
        )
    value = int(text)
    return value or None


class CgroupTracking:
    """One job's cgroups: its v1 groups (one per hierarchy used) and its v2 group.

    Each kind of work goes to the group that can do it: memory, cpu shares and pids to the
    v1 hierarchy carrying that controller, else to v2 when v2 has the controller; CPU
    accounting to v1 cpuacct else v2's cpu.stat; freezing to the v1 freezer else v2.
    """

    def __init__(
        self,
        root: Path,
        v1_groups: list[V1Group],
        v2_group: V2Group | None,
        *,
        ignore_cache: bool = True,
        wait_seconds: float = WAIT_SECONDS,
    ) -> None:
        self.root = root
        self.v1_groups = tuple(v1_groups)
        self.v2_group = v2_group
        self.ignore_cache = ignore_cache
        self.wait_seconds = wait_seconds
        self.pid: int | None = None
        self._released = False
        self._kernel_kill = v2_group is not None

        def v1(controller: str) -> V1Group | None:
            return next((g for g in self.v1_groups if controller in g.controllers), None)

        def v2(controller: str) -> V2Group | None:
            if v2_group is None:
                return None
            return v2_group if controller in v2_group.controllers else None

        self.memory_group: V1Group | V2Group | None = v1("memory") or v2("memory")
        self.cpu_group: V1Group | V2Group | None = v1("cpu") or v2("cpu")
        self.pids_group: V1Group | V2Group | None = v1("pids") or v2("pids")
        self.cpuacct_group: V1Group | V2Group | None = v1("cpuacct") or v2_group
        self.freezer_group: V1Group | V2Group | None = v1("freezer") or v2_group

    def __repr__(self) -> str:
        groups = [repr(g) for g in self.v1_groups]
        if self.v2_group is not None:
            groups.append(repr(self.v2_group))
        return f"CgroupTracking({', '.join(groups)})"

    @property
    def directories(self) -> tuple[Path, ...]:
        """The job's group directories (the v1 ones, then the v2 one)."""
        v2 = () if self.v2_group is None else (self.v2_group.path,)
        return tuple(g.path for g in self.v1_groups) + v2

    # -- limits --------------------------------------------------------------------------

    def apply_limits(
        self, request: TrackingRequest, limits: MemoryLimits, pids_limit: int | None
    ) -> None:
        """Write the memory, cpu and pids limits where this job's groups can take them; a
        limit no group can take is skipped with a logged note."""
        memory = self.memory_group
        if limits.any():
            if isinstance(memory, V1Group):
                memory.set_memory(limits.hard, limits.soft, limits.memsw)
            elif isinstance(memory, V2Group):
                memory.set_memory(limits.hard, limits.soft, limits.swap)
            else:
                _log.warning(
                    "memory limits of %s skipped: no memory controller (%s policy)",
                    request.job_key,
                    request.memory_policy,
                )
        shares = cpu_shares(request.cpus)
        if isinstance(self.cpu_group, V1Group):
            self.cpu_group.write("cpu.shares", shares)
        elif isinstance(self.cpu_group, V2Group):
            self.cpu_group.write("cpu.weight", cpu_weight(shares))
        else:
            _log.info("cpu shares of %s skipped: no cpu controller", request.job_key)
        if pids_limit is not None:
            if self.pids_group is not None:
                self.pids_group.write("pids.max", pids_limit)
            else:
                _log.warning("%s of %s skipped: no pids controller", PIDS_KNOB, request.job_key)

    # -- JobTracking ---------------------------------------------------------------------

    def child_setup(self) -> ChildSetup:
        """The job's first process writes its PID into every group's ``cgroup.procs``."""
        files = [str(g.procs_file) for g in self.v1_groups]
        if self.v2_group is not None:
            files.append(str(self.v2_group.procs_file))
        return ChildSetup(join_files=tuple(files))

    def attach(self, pid: int) -> None:
        """Remember ``pid``; move it into any group it did not join itself."""
        self.pid = pid
        for group in self.v1_groups:
            group.add(pid)
        if self.v2_group is not None:
            self.v2_group.add(pid)

    def pids(self) -> frozenset[int]:
        """Every process in the job's groups, less zombies and processes gone meanwhile."""
        listed: set[int] = set()
        for group in self.v1_groups:
            listed.update(group.procs())
        if self.v2_group is not None:
            listed.update(self.v2_group.procs())
        return frozenset(pid for pid in listed if process_state(self.root, pid) not in (None, "Z"))

    def _signal_each(self, signum: int) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def _kill_by_kernel(self) -> bool:
        if self.v2_group is None or not self._kernel_kill:
            return False
        self._kernel_kill = self.v2_group.kill()
        return self._kernel_kill

    def signal_all(self, signum: int) -> None:
        """Send ``signum`` to every process of the job.

        SIGKILL is repeated until no process is left (at most ``wait_seconds``): through v2's
        ``cgroup.kill`` when there is one, else by signalling each process while the group is
        frozen, so that none can fork meanwhile.
        """
        if signum != signal.SIGKILL:
            self._signal_each(signum)
            return
        deadline = time.monotonic() + self.wait_seconds
        rounds = 0
        while True:
            if self._kill_by_kernel():
                if rounds:
                    # Anything outside the v2 group (attached to v1 only) goes one by one.
                    self._signal_each(signum)
            else:
                self.freeze()
                try:
                    self._signal_each(signum)
                finally:
                    # Thawed even when the freeze did not complete (or the group was frozen
                    # before): a killed process in a frozen group never dies.
                    self.thaw()
            rounds += 1
            pause = min(deadline, time.monotonic() + 0.2)
            while self.pids() and time.monotonic() < pause:
                time.sleep(0.01)
            left = self.pids()
            if not left:
                return
            if time.monotonic() >= deadline:
                _log.warning(
                    "%s: processes %s survive SIGKILL after %.1f s",
                    self,
                    sorted(left),
                    self.wait_seconds,
                )
                return

    def freeze(self) -> bool:
        """Freeze the job (v1 freezer, else v2 cgroup.freeze); False when it has neither or
        the kernel does not report it frozen in time."""
        if self.freezer_group is None:
            return False
        return self.freezer_group.freeze(self.wait_seconds)

    def thaw(self) -> bool:
        """Thaw the job; False when it has no freezer."""
        if self.freezer_group is None:
            return False
        return self.freezer_group.thaw()

    def usage(self) -> TrackedUsage:
        """CPU from cpuacct.stat (v1) or cpu.stat (v2); memory from memory.stat's RSS and
        swap (v1, CGROUP_IGNORE_CACHE_MEMORY) or usage_in_bytes, or memory.current (v2)."""
        user = system = None
        if self.cpuacct_group is not None:
            user, system = self.cpuacct_group.cpu_seconds()
        current = peak = None
        if isinstance(self.memory_group, V1Group):
            current, peak = self.memory_group.memory_bytes(self.ignore_cache)
        elif isinstance(self.memory_group, V2Group):
            current, peak = self.memory_group.memory_bytes()
        return TrackedUsage(user, system, current, peak)

    def out_of_memory(self) -> bool:
        """True once the memory limit made the kernel kill a process of the job."""
        if self.memory_group is None:
            return False
        return self.memory_group.oom_kills() > 0

    def _empty(self) -> bool:
        if any(group.procs() for group in self.v1_groups):
            return False
        return self.v2_group is None or not self.v2_group.populated()

    def release(self) -> None:
        """Wait (at most ``wait_seconds``) for the groups to empty, then remove them, leaf
        first. IsolationError naming the groups that cannot go; a call after one that
        succeeded does nothing."""
        if self._released:
            return
        # Usually the job's processes are gone by now: the groups are removed at once, and
        # only a refusal (a process still in one) makes it wait for them to empty. Looking
        # first would read every group's process list, as much work as the removal itself.
        failures = self._remove_groups()
        if failures:
            deadline = time.monotonic() + self.wait_seconds
            while not self._empty() and time.monotonic() < deadline:
                time.sleep(0.02)
            failures = self._remove_groups()
        if failures:
            raise IsolationError(f"cannot remove cgroup {'; '.join(failures)}")
        self._released = True

    def _remove_groups(self) -> list[str]:
        """Remove every group still there, leaf first; why each that stays could not go."""
        failures: list[str] = []
        groups = [] if self.v2_group is None else [self.v2_group.path]
        groups += [g.path for g in self.v1_groups]
        for path in groups:
            try:
                remove_tree(path)
            except OSError as exc:
                failures.append(f"{exc.filename or path}: {exc.strerror or exc}")
        return failures


class CgroupBackend:
    """The isolation backend named "cgroup": built from a configuration, it tracks each job
    in its own cgroup below BASE_CGROUP.

    ``root`` is where the file system starts (``/``; a temporary tree in tests).
    ``layout`` replaces the one read from ``<root>/proc/self/mountinfo`` (a test forces
    "v2 for everything" with ``read_layout().only_v2()``). ``wait_seconds`` bounds the
    waits for the kernel (kill, freeze, release).
    """

    name = "cgroup"

    def __init__(
        self,
        config: Config,
        root: str | Path = "/",
        *,
        layout: CgroupLayout | None = None,
        wait_seconds: float = WAIT_SECONDS,
    ) -> None:
        self.root = Path(root)
        self.base = read_base_cgroup(config)
        self.pids_limit = read_pids_limit(config)
        self.ignore_cache = config.get_bool("CGROUP_IGNORE_CACHE_MEMORY", True)
        self.wait_seconds = wait_seconds
        self._layout = layout

    def layout(self) -> CgroupLayout:
        """The machine's cgroup layout (read once); MountinfoError when it cannot be read."""
        if self._layout is None:
            self._layout = read_layout(self.root)
            _log.debug("cgroup layout: %s", self._layout.describe())
        return self._layout

    def wanted(self) -> bool:
        """True when BASE_CGROUP is not empty."""
        return self.base is not None

    def available(self) -> bool:
        """True when running as root with a writable memory (v1) or v2 hierarchy mounted."""
        if os.geteuid() != 0:
            return False
        try:
            layout = self.layout()
        except IsolationError as exc:
            _log.info("cgroup backend not available: %s", exc)
            return False
        candidates = [layout.v2] if layout.v2 is not None else []
        if "memory" in layout.v1:
            candidates.append(layout.v1["memory"].path)
        return any(os.access(path, os.W_OK) for path in candidates)

    def track(self, request: TrackingRequest) -> CgroupTracking:
        """Make the job's groups, set its limits; IsolationError naming the path when a
        group cannot be made or a limit cannot be written (nothing made is left then)."""
        if self.base is None:
            raise IsolationError("BASE_CGROUP is empty: the cgroup backend is off")
        layout = self.layout()
        limits = memory_limits(request)
        relative = self.base / cgroup_name(request.job_key)
        hierarchies: dict[Path, frozenset[str]] = {}
        for feature in FEATURES:
            hierarchy = layout.v1.get(feature)
            if hierarchy is not None:
                hierarchies[hierarchy.path] = hierarchy.controllers
        use_v2 = layout.v2 is not None and any(layout.version(f) == 2 for f in FEATURES)
        if not hierarchies and not use_v2:
            raise IsolationError(
                f"no cgroup hierarchy for {', '.join(FEATURES)} ({layout.describe()})"
            )
        made: list[Path] = []
        try:
            v1_groups = []
            for mount, controllers in hierarchies.items():
                made += make_dirs(mount, relative)
                v1_groups.append(V1Group(mount.joinpath(*relative.parts), controllers))
            v2_group = None
            if use_v2 and layout.v2 is not None:
                wanted = frozenset(c for c in V2_CONTROLLERS if layout.version(c) == 2)
                v2_group = V2Group(layout.v2, relative, wanted)
                made += v2_group.create()
            tracking = CgroupTracking(
                self.root,
                v1_groups,
                v2_group,
                ignore_cache=self.ignore_cache,
                wait_seconds=self.wait_seconds,
            )
            # A group made just now holds no process; one that was there already may.
            fresh = set(made)
            existing = [d for d in tracking.directories if d not in fresh]
            busy = tracking.pids() if existing else frozenset()
            if busy:
                raise IsolationError(
                    f"cgroup {tracking.directories[0]} already holds processes {sorted(busy)}"
                )
            tracking.apply_limits(request, limits, self.pids_limit)
        except BaseException:
            remove_dirs(reversed(made))
            raise
        _log.debug("tracking %s in %s", request.job_key, tracking)
        return tracking

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        """Reclaim every job group below BASE_CGROUP named for one of ``prefixes`` whose job
        is not in ``keep``."""
        if self.base is None:
            return ()
        layout = self.layout()
        kept = {cgroup_name(key) for key in keep}
        roots = [h.path / self.base for h in layout.v1.values()]
        if layout.v2 is not None:
            roots.append(layout.v2 / self.base)
        found: set[str] = set()
        for root in roots:
            if root.is_dir():
                found |= {
                    p.name
                    for p in root.iterdir()
                    if p.is_dir()
                    and p.name not in kept
                    and any(p.name.startswith(cgroup_name(prefix)) for prefix in prefixes)
                }
        swept = []
        for name in sorted(found):
            try:
                if self.reclaim(name):
                    swept.append(name)
            except IsolationError as exc:
                _log.error("cannot remove the stale job group %s: %s", name, exc)
        return tuple(swept)

    def reclaim(self, job_key: str) -> bool:
        """Kill every process left in the job's groups and remove them (its starter died)."""
        if self.base is None:
            return False
        layout = self.layout()
        relative = self.base / cgroup_name(job_key)
        v1_groups = [
            V1Group(h.path.joinpath(*relative.parts), h.controllers)
            for h in {layout.v1[f].path: layout.v1[f] for f in FEATURES if f in layout.v1}.values()
        ]
        v1_groups = [g for g in v1_groups if g.path.is_dir()]
        v2_group = None
        if layout.v2 is not None and (layout.v2 / relative).is_dir():
            v2_group = V2Group(layout.v2, relative, frozenset())
        if not v1_groups and v2_group is None:
            return False
        tracking = CgroupTracking(self.root, v1_groups, v2_group, wait_seconds=self.wait_seconds)
        tracking.signal_all(signal.SIGKILL)
        tracking.release()
        return True


def _conforms(
    backend: CgroupBackend, tracking: CgroupTracking
) -> tuple[IsolationBackend, JobTracking]:
    """Never called: lets mypy check both classes against the Protocols they implement."""
    return backend, tracking
