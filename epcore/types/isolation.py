"""Isolation backends (``ep_isolation_backends``): what the starter asks of one for a job, and
the Protocols of the backend and of its hold on one job.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

if TYPE_CHECKING:
    from epcore.config import Config


@attrs.frozen
class TrackingRequest:
    """What the starter asks of every isolation backend for one job.

    ``job_key`` names the job uniquely on the machine (HTCondor's cgroup name: the sandbox
    path with ``/`` turned into ``_``, then the slot name); ``slot_id`` picks the slot's
    tracking GID. The limits are the slot's: ``cpus`` for CPU shares (Cpus x 100),
    ``memory_mb`` for the memory limit under ``memory_policy`` ("hard", "soft" or "none", as
    CGROUP_MEMORY_LIMIT_POLICY), ``startd_memory_mb`` for the hard limit of the soft policy,
    ``swap_limit_mb`` for the swap a job may add (None: no swap limit), ``disable_swap`` as
    DISABLE_SWAP_FOR_JOB.
    """

    job_key: str
    slot_name: str
    slot_id: int
    cpus: float
    memory_mb: int
    memory_policy: str = "none"
    startd_memory_mb: int = 0
    swap_limit_mb: int | None = None
    disable_swap: bool = False


@attrs.frozen
class ChildSetup:
    """What the job's first process must do between fork and exec, merged over backends.

    ``extra_groups`` join its supplementary groups (a tracking GID), it writes its own PID to
    each of ``join_files`` (``cgroup.procs`` files), with ``new_pid_namespace`` it is
    started as the init of a new PID namespace, and with ``mount_namespace`` (a
    ``/proc/<pid>/task/<tid>/ns/mnt`` file) it enters that mount namespace first: the
    starter's private one, where a hidden scratch filesystem is mounted. Everything it starts
    inherits all four.
    """

    extra_groups: tuple[int, ...] = ()
    join_files: tuple[str, ...] = ()
    new_pid_namespace: bool = False
    mount_namespace: str = ""

    def merged(self, other: ChildSetup) -> ChildSetup:
        """Both setups at once (``other``'s mount namespace when both name one)."""
        return ChildSetup(
            self.extra_groups + other.extra_groups,
            self.join_files + other.join_files,
            self.new_pid_namespace or other.new_pid_namespace,
            other.mount_namespace or self.mount_namespace,
        )


@attrs.frozen
class TrackedUsage:
    """Resource use of a tracked job as its backend measures it; None where it cannot tell.

    CPU in seconds, memory in bytes (``memory_peak``: the most it ever used).
    """

    user_cpu: float | None = None
    system_cpu: float | None = None
    memory_current: int | None = None
    memory_peak: int | None = None


class JobTracking(Protocol):
    """One backend's hold on one job, from before its first process starts until cleanup.

    The starter calls :meth:`child_setup` before it forks the job, :meth:`attach` with the
    PID it started, then any of :meth:`pids`, :meth:`signal_all`, :meth:`freeze`,
    :meth:`thaw`, :meth:`usage`, :meth:`out_of_memory` while the job runs, and
    :meth:`release` once no process is left (it may be called again; the second call does
    nothing). Methods never raise for a process that vanished meanwhile.
    """

    def child_setup(self) -> ChildSetup:
        """What the job's first process must do before exec to be tracked."""
        ...

    def attach(self, pid: int) -> None:
        """The job's first process is ``pid`` (in the starter's PID namespace)."""
        ...

    def pids(self) -> frozenset[int]:
        """Every live process of the job this backend can see (zombies left out)."""
        ...

    def signal_all(self, signum: int) -> None:
        """Send ``signum`` to every process of the job."""
        ...

    def freeze(self) -> bool:
        """Stop every process of the job at once; False when this backend cannot."""
        ...

    def thaw(self) -> bool:
        """Undo :meth:`freeze`; False when this backend cannot."""
        ...

    def usage(self) -> TrackedUsage:
        """The job's resource use so far."""
        ...

    def out_of_memory(self) -> bool:
        """True when the job's memory limit made the kernel kill one of its processes."""
        ...

    def release(self) -> None:
        """Give back what tracking took (remove the cgroup, free the GID)."""
        ...


@runtime_checkable
class IsolationBackend(Protocol):
    """Tracks and limits jobs' processes (process group, PID namespace, GIDs, cgroups).

    Built by its :class:`IsolationBackendSpec` factory from the configuration; the starter asks
    :meth:`wanted` and :meth:`available`, then :meth:`track` once per job.
    """

    name: str

    def available(self) -> bool:
        """True when this machine supports the backend (checked once at startup)."""
        ...

    def wanted(self) -> bool:
        """True when the configuration turns the backend on (USE_PID_NAMESPACES...)."""
        ...

    def track(self, request: TrackingRequest) -> JobTracking:
        """Start tracking one job; raises IsolationError when it cannot."""
        ...

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        """At startup: reclaim every job this backend still holds whose key starts with one
        of ``prefixes`` (this startd's jobs, not another daemon's) and is not in ``keep``
        (left by a startd that died); the keys reclaimed."""
        ...

    def reclaim(self, job_key: str) -> bool:
        """Kill whatever this backend still tracks for the job ``job_key`` and give back its
        tracking, after the starter that tracked it died; False when it has nothing left for
        that job (or cannot find it: a process-group backend loses the job with its starter).
        """
        ...


@attrs.frozen
class IsolationBackendSpec:
    """An isolation backend a plugin offers (``ep_isolation_backends``): its ``name`` (what
    the configuration turns on, and what a later plugin offers to replace it) and the
    ``factory`` that builds it for a configuration without starting anything."""

    name: str
    factory: Callable[[Config], IsolationBackend]
