"""The records plugins and the core exchange, and the Protocols backends implement.

Hooks (see :mod:`epcore.hookspecs`) take and return these frozen values; nothing crosses the
plugin boundary as a bare dict. Backend Protocols describe what a plugin's object must offer; a
plugin returns a *spec* record naming the backend and a factory that builds it for a
configuration, so that nothing is started before the daemon asks for it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

from epcore.config.host import ConfigHost

if TYPE_CHECKING:
    import logging

    from epcore.classad import ClassAd
    from epcore.classad.calls import FunctionCall
    from epcore.config import Config

# -- machine resources ----------------------------------------------------------------------

#: Names of the resources every machine has; every other resource name is a custom resource.
STANDARD_RESOURCES = ("Cpus", "Memory", "Disk", "Swap")


@attrs.frozen
class ResourceDevice:
    """One instance of a custom resource (a GPU), with the property ad a slot constraint reads.

    ``id`` is what ``Assigned<name>`` lists and a string constraint matches
    (``"GPU-6a96bd13"``); ``properties`` are ClassAd values (``Capability = 8.0``).
    """

    id: str
    properties: Mapping[str, object] = attrs.field(factory=dict)


@attrs.frozen
class DetectedResource:
    """A resource a detector found: its name, how much there is, and its devices if countable.

    Standard names are ``Cpus``, ``Memory`` (MB), ``Disk`` (KB of the EXECUTE partition) and
    ``Swap`` (KB); any other name is a custom resource. ``quantity`` equals ``len(devices)``
    when devices are given. ``source`` says which detector found it (for ``ep plugins`` and logs).
    ``offline`` lists the ids a detector found but took out of service (``Offline<name>``), and
    ``attributes`` the other attributes it reported, which go into the machine ad as HTCondor
    copies an inventory script's extra output (values are ClassAd values or expressions).
    """

    name: str
    quantity: float
    devices: tuple[ResourceDevice, ...] = ()
    source: str = ""
    offline: tuple[str, ...] = ()
    attributes: Mapping[str, object] = attrs.field(factory=dict)


@attrs.frozen
class MachineInventory:
    """What the startd divides among its slots, after configuration has had its say.

    ``cpus`` and ``memory_mb`` already honour NUM_CPUS / MEMORY / RESERVED_MEMORY; ``disk_kb`` is
    the free space of the EXECUTE partition less RESERVED_DISK; ``disk_by_path`` holds the same
    for every execute directory a slot may use (SLOT<N>_EXECUTE). ``detected_cpus`` and
    ``detected_memory_mb`` are what the hardware has, before configuration.
    """

    cpus: int
    physical_cpus: int
    memory_mb: int
    disk_kb: int
    swap_kb: int
    detected_cpus: int
    detected_memory_mb: int
    custom: Mapping[str, DetectedResource] = attrs.field(factory=dict)
    disk_by_path: Mapping[str, int] = attrs.field(factory=dict)


@attrs.frozen
class HostReadings:
    """Machine-wide readings at one moment; the startd splits the loads among slots.

    ``keyboard_idle`` and ``console_idle`` are seconds since the last input on a terminal or
    input device (and on the console); ``cpu_busy_time`` is how long the non-HTCondor load has
    been above HighLoad (0 when it is not), ``cpu_is_busy`` whether it is now.
    """

    load_avg: float
    condor_load_avg: float
    keyboard_idle: int
    console_idle: int
    cpu_busy_time: int = 0
    cpu_is_busy: bool = False


@attrs.frozen
class MachineAttribute:
    """An attribute a plugin adds to every slot ad: a ClassAd value or expression text.

    ``expression`` True means ``value`` is ClassAd expression text to be parsed (``"HasFoo &&
    Cpus > 2"``); otherwise it is a plain value (bool, int, float, str).
    """

    name: str
    value: object
    expression: bool = False


class MachineHost(ConfigHost, Protocol):
    """The machine as detection sees it: a configuration host plus hardware and usage readings.

    ``epcore.builtin.host.LocalHost`` reads the real machine (through psutil and /proc);
    ``epcore.testing`` provides a fake one. Every method may raise ``OSError``.
    """

    def cpu_counts(self) -> tuple[int, int]:
        """(logical CPUs, physical cores)."""
        ...

    def memory_mb(self) -> int:
        """Physical memory in MB."""
        ...

    def swap_kb(self) -> int:
        """Swap space in KB."""
        ...

    def disk_free_kb(self, path: str) -> int:
        """Free space in KB of the file system holding ``path``."""
        ...

    def load_average(self) -> float:
        """The one-minute load average."""
        ...

    def device_access_times(self) -> Mapping[str, float]:
        """Last access time (epoch seconds) of each terminal and input device, by path.

        Console devices (``/dev/console``, ``/dev/tty<N>``, ``/dev/input/*``) and pseudo
        terminals (``/dev/pts/*``) are both included; detection tells them apart by path.
        """
        ...


# -- backends -------------------------------------------------------------------------------


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


@attrs.frozen(eq=False)
class ContainerJob:
    """What the starter asks a container runtime to run: one job, ready to start.

    ``argv`` is the command inside the container (empty: the image's own entry point and
    command); ``sandbox`` is the job's scratch directory on the host, mounted at the same path
    inside and used as the working directory; ``stdin``, ``stdout`` and ``stderr`` are host
    paths (``/dev/null`` when the job has none). The container runs as ``uid``:``gid`` and
    ``extra_gids``, limited to the slot's ``cpus`` and ``memory_mb``. ``job_key`` is the job's
    tracking key (its cgroup name): runtimes label their containers with it so that
    :meth:`ContainerRuntime.sweep` and :meth:`ContainerRuntime.reclaim` find them after the
    starter is gone. ``kill_signal`` is the job's KillSig; ``vacate_seconds`` how long a
    vacated job has after it before it is killed. ``job`` and ``machine`` are copies.
    ``child_setup`` is what a process must do to join the job's tracking (its cgroups, for a
    runtime that is ``tracked_by_starter``): such a runtime applies it before the job's
    program runs, so that the job is tracked, limited and frozen like any other; a runtime
    whose job a daemon starts (docker) gets an empty one.
    """

    job_key: str
    slot_name: str
    job: ClassAd
    machine: ClassAd
    argv: tuple[str, ...]
    environment: tuple[tuple[str, str], ...]
    sandbox: str
    stdin: str
    stdout: str
    stderr: str
    uid: int
    gid: int
    cpus: float
    memory_mb: int
    kill_signal: int
    vacate_seconds: float
    extra_gids: tuple[int, ...] = ()
    child_setup: ChildSetup = ChildSetup()


class RunningContainer(JobTracking, Protocol):
    """One job's container, from its start until :meth:`release` removed it.

    It is the job's tracking as well (:class:`JobTracking`: its processes, freeze for suspend,
    usage, the out-of-memory verdict), and :meth:`fileno` lets the starter wait for it with
    its other descriptors. Methods never raise for a container that vanished meanwhile.
    """

    def fileno(self) -> int:
        """A descriptor that becomes readable once the container has stopped."""
        ...

    def exit_status(self) -> tuple[int | None, int | None] | None:
        """``(exit_code, signal)`` once the container stopped (one of them None), else None."""
        ...

    def stop(self, signum: int, grace_seconds: float) -> None:
        """Send ``signum`` to the job now and SIGKILL after ``grace_seconds`` (returns at once)."""
        ...

    def collect_output(self) -> str | None:
        """Write what the container printed to the job's stdout and stderr files; None when
        done, else why it could not be (the job is then held with code 12).

        It may raise JobSetupError when the container ended without running the job (a
        runtime that failed before the job's command): the job is then held or requeued by
        the error's codes, as for a job that could not be started."""
        ...


@runtime_checkable
class ContainerRuntime(Protocol):
    """Runs jobs in containers (docker, apptainer); advertises what it can run.

    Built once by the startd from its :class:`ContainerRuntimeSpec` factory, then inherited by every
    starter it forks (an object holding a connection must open its own in each process).

    A runtime whose job is the starter's own child (apptainer, not a daemon's like docker's)
    sets the class attribute ``tracked_by_starter = True`` (read with
    :func:`tracked_by_starter`; absent means False): its jobs get their cgroups prepared and
    are tracked by the starter's isolation backends as a vanilla job, and the runtime joins
    them through :attr:`ContainerJob.child_setup`.
    """

    name: str

    def machine_attributes(self) -> Sequence[MachineAttribute]:
        """HasDocker, DockerVersion and friends, read when the startd starts or reconfigures;
        a runtime that does not work says so here (HasDocker = false and why), never raises."""
        ...

    def runs(self, job: ClassAd, machine: ClassAd | None = None) -> bool:
        """True when ``job`` asks for this runtime (WantDocker for docker).

        ``machine`` is the slot's ad where the job is placed (the startd starting its
        starter, the starter choosing the runtime), so that a knob like SINGULARITY_JOB can
        be evaluated with the slot as MY and the job as TARGET, as HTCondor's starter does.
        It is None only where no slot ad is at hand (the startd preparing cgroups asks only
        runtimes that are not :func:`tracked_by_starter`).
        """
        ...

    def start(self, request: ContainerJob, log: logging.Logger) -> RunningContainer:
        """Create and start the job's container; raises JobSetupError (the job is held with
        its code) when it cannot, after removing whatever it made."""
        ...

    def sweep(self, keep: Collection[str], prefixes: Collection[str]) -> tuple[str, ...]:
        """At startd start: remove every container of a job whose key starts with one of
        ``prefixes`` and is not in ``keep``; the keys removed."""
        ...

    def reclaim(self, job_key: str) -> bool:
        """Remove the container of ``job_key`` after its starter died; False when none."""
        ...


class FetchWorkSource(Protocol):
    """A source of jobs the startd pulls, like the fetch-work job hooks but in Python.

    ``name`` is a hook keyword: the slots whose ``SLOT<N>_JOB_HOOK_KEYWORD`` (else
    ``STARTD_JOB_HOOK_KEYWORD``) is that name (any case) ask this source instead of running
    ``<name>_HOOK_FETCH_WORK``, ``_REPLY_FETCH`` and ``_EVICT_CLAIM`` (see
    :mod:`epcore.startd.fetch_work`). The methods are called from the startd's loop: ``fetch``
    should answer at once. What they raise is logged and the startd goes on; each gets its own
    copies of the ads.
    """

    name: str

    def fetch(self, slot_ad: ClassAd) -> ClassAd | None:
        """A job ad for the slot described by ``slot_ad``, or None when there is no work (the
        slot's idle fetched claim, if it has one, is then evicted)."""
        ...

    def reply(self, accepted: bool, job_ad: ClassAd, slot_ad: ClassAd) -> None:
        """Whether the startd accepted ``job_ad`` (which now carries ``HookKeyword``); the
        reason is in the StartLog (advisory)."""
        ...

    def evict_claim(self, job_ad: ClassAd, slot_ad: ClassAd) -> None:
        """The claim of ``job_ad`` (its last job) is being evicted: no more work, a vacate,
        a preemption or a lost claim (advisory)."""
        ...


@attrs.frozen
class IsolationBackendSpec:
    """An isolation backend a plugin offers (``ep_isolation_backends``): its ``name`` (what
    the configuration turns on, and what a later plugin offers to replace it) and the
    ``factory`` that builds it for a configuration without starting anything."""

    name: str
    factory: Callable[[Config], IsolationBackend]


def tracked_by_starter(runtime: ContainerRuntime) -> bool:
    """True when ``runtime``'s jobs are the starter's children, tracked like vanilla jobs
    (an optional attribute, so that a runtime written before it still conforms)."""
    return getattr(runtime, "tracked_by_starter", False) is True


@attrs.frozen
class ContainerRuntimeSpec:
    """A container runtime a plugin offers (``ep_container_runtimes``): its ``name`` and the
    ``factory`` that builds it for a configuration without starting anything.

    ``starter_modules`` names the modules a starter needs to run a container that the startd
    itself does not import (a client library): the startd's zygote imports them once, when
    it first forks a starter of a job this runtime runs, so that no starter pays for them."""

    name: str
    factory: Callable[[Config], ContainerRuntime]
    starter_modules: tuple[str, ...] = ()


#: Wake-on-LAN bits of the kernel's ethtool interface (``WAKE_*`` in linux/ethtool.h).
WAKE_MAGIC = 0x20


@attrs.frozen
class WakeOnLanFacts:
    """The machine's public network interface as a sleeping machine's waker needs it.

    ``supported`` and ``enabled`` are the kernel's Wake-on-LAN bit masks (``ETHTOOL_GWOL``:
    WAKE_PHY 0x1 ... WAKE_MAGIC 0x20, WAKE_MAGICSECURE 0x40); ``hardware_address`` is lower
    case hex with colons, ``subnet_mask`` and ``ip_address`` dotted quads."""

    interface: str
    hardware_address: str
    subnet_mask: str
    ip_address: str
    supported: int = 0
    enabled: int = 0


@runtime_checkable
class PowerBackend(Protocol):
    """Puts the machine to sleep (HTCondor's hibernator): built by a
    :class:`PowerBackendSpec` factory, asked once at startup and at each reconfiguration."""

    name: str

    def supported_states(self) -> tuple[str, ...]:
        """The sleep states the machine offers, as ``S1``..``S5``; PowerError when the
        backend cannot tell (a site script that fails)."""
        ...

    def enter(self, state: str) -> None:
        """Put the machine into ``state`` (``S3``...); returns once it has woken up again
        (the call blocks for as long as the machine sleeps). PowerError when it cannot."""
        ...

    def wake_on_lan(self) -> WakeOnLanFacts | None:
        """The public network interface and its Wake-on-LAN abilities; None when the
        machine has no usable interface."""
        ...


@attrs.frozen
class PowerBackendSpec:
    """A power backend a plugin offers (``ep_power_backends``): its ``name`` and the
    ``factory`` that builds it for a configuration without touching the machine."""

    name: str
    factory: Callable[[Config], PowerBackend]


@attrs.frozen
class PythonCronJob:
    """A startd cron job written in Python: ``run`` returns the ads to merge, like a cron script's
    output; ``mode`` and ``period`` follow STARTD_CRON_<NAME>_MODE / _PERIOD.

    Each ad may carry SlotMergeConstraint, SlotName, SlotTypeId or SlotId to choose its slots,
    as a script's ads do; a run's ads replace all those of the job's previous run and, with
    ``publish`` (the default), are sent to the collector at once; without it they go with the
    next update (as a script's ``- update:false``). STARTD_CRON_<NAME>_PREFIX, _SLOTS and
    _PERIOD apply when configured. ``run`` is called in a thread of its own, so one that hangs
    holds up only itself; the startd forks starters meanwhile, so a run should not take locks
    a forked child could need (connections, imports)."""

    name: str
    run: Callable[[], Sequence[ClassAd]]
    mode: str = "Periodic"
    period: float = 300.0
    publish: bool = True


@attrs.frozen
class ClassAdFunction:
    """An extra ClassAd function: ``name`` as written in expressions, ``impl`` called with the
    evaluation's call record (see epcore.classad.calls.FunctionCall)."""

    name: str
    impl: Callable[[FunctionCall], object]


# -- notifications --------------------------------------------------------------------------


@attrs.frozen
class SlotStateChange:
    """A slot moved from one State/Activity to another at ``at`` because of ``reason``."""

    slot: str
    old_state: str
    old_activity: str
    new_state: str
    new_activity: str
    at: float
    reason: str = ""


@attrs.frozen
class JobStarted:
    """A job started on ``slot``."""

    slot: str
    job_id: str
    at: float


@attrs.frozen
class JobFinished:
    """A job left ``slot``: its exit code (None when it did not exit by itself) and why."""

    slot: str
    job_id: str
    at: float
    exit_code: int | None = None
    reason: str = ""


# -- backfill (ep_backfill_backends) ---------------------------------------------------------


@attrs.frozen
class BackfillStatus:
    """What a backfill client is doing: whether it runs, how many CPUs it may use, how many
    tasks it computes and the CPU seconds those tasks have used so far; ``detail`` is a line
    for logs and ``ep status`` (the project, an error)."""

    running: bool
    cpus: int = 0
    tasks: int = 0
    cpu_seconds: float = 0.0
    detail: str = ""


@runtime_checkable
class BackfillBackend(Protocol):
    """A backfill system (seed 000: BOINC) the startd runs on the slots no job wants.

    The startd runs the client as a local vanilla job through its starters (so it has a
    sandbox, cgroups, soft and hard kill), one client per startd shared by every slot in
    Backfill/Busy: :meth:`start` prepares the client's files and returns the job ad to run;
    :meth:`resize` tells the running client how many CPUs it may use as slots come and go;
    :meth:`stop` asks it to end its work cleanly before the startd's soft kill; :meth:`status`
    asks it what it does. None of them may block for more than a second or so: the startd
    calls them from its loop.
    """

    name: str

    def start(self, cpus: int) -> ClassAd:
        """Prepare a client that may use ``cpus`` CPUs; the job ad the starter runs (Cmd,
        Iwd, Owner, Arguments, Environment, Out, Err, JobUniverse)."""
        ...

    def resize(self, cpus: int) -> None:
        """The running client may use ``cpus`` CPUs from now on (at least 1)."""
        ...

    def stop(self) -> None:
        """The client is about to be killed: let it leave its work cleanly (best effort)."""
        ...

    def status(self) -> BackfillStatus:
        """What the client is doing now (``running`` False when it cannot be asked)."""
        ...


@attrs.frozen
class BackfillBackendSpec:
    """A backfill system a plugin offers (``ep_backfill_backends``): its ``name`` as
    BACKFILL_SYSTEM names it (compared without case) and the ``factory`` that builds it for a
    configuration without starting anything; the factory raises
    :class:`~epcore.errors.ConfigError` naming the knob for a configuration it cannot run (a
    missing or bad BOINC_* value, a client program that is not there)."""

    name: str
    factory: Callable[[Config], BackfillBackend]


# -- per-job scratch filesystems ----------------------------------------------------------------


@attrs.frozen(eq=False)
class ScratchRequest:
    """What a starter asks a scratch filesystem for: one job's sandbox, before it holds
    anything.

    ``path`` is the sandbox directory, just made, empty and still root's (the filesystem is
    mounted on it); ``disk_kib`` the slot's provisioned ``Disk``, the size the job may fill;
    ``uid``/``gid`` the job's user, who owns the mounted filesystem's root; ``job`` the job's ad
    (a backend may refuse a job it cannot hold, a docker job under a hidden mount)."""

    path: str
    slot_name: str
    slot_id: int
    starter_id: int
    disk_kib: int
    uid: int
    gid: int
    job: ClassAd


@attrs.frozen
class ScratchVolume:
    """A job's scratch filesystem once made: its backend's ``name`` for it (the volume), the
    ``path`` it is mounted on, the block ``device`` and the ``size_kib`` the job may fill.
    ``mount_namespace`` names the private mount namespace it is mounted in (LVM_HIDE_MOUNT),
    which the job then enters; empty when it is mounted where every process sees it."""

    name: str
    path: str
    device: str
    size_kib: int
    mount_namespace: str = ""


@attrs.frozen
class ScratchVerdict:
    """What a periodic check of a job's scratch filesystem found that ends the job:
    ``hold`` True holds it with ``code``/``subcode`` (34, over its request_disk), False sends
    it back to idle (``code`` a vacate code: a thin pool that stays full)."""

    hold: bool
    reason: str
    code: int
    subcode: int = 0


@runtime_checkable
class ScratchFilesystem(Protocol):
    """Gives each job a filesystem of its own as its sandbox (seed 000's per-job ephemeral
    scratch filesystems: an LVM logical volume sized from the slot's Disk).

    Built by its :class:`ScratchFilesystemSpec` factory without touching the machine. The
    startd asks :meth:`wanted`, then calls :meth:`start` once at startup (make the backing
    store, remove the volumes no job holds) and advertises :meth:`machine_attributes`; every
    starter it forks calls :meth:`prepare` after making the empty sandbox directory and before
    writing anything into it, :meth:`check` every :attr:`check_interval` seconds while the job
    runs, and :meth:`remove` after the job's processes are gone, before the sandbox directory
    itself is removed.
    """

    name: str
    #: Seconds between two :meth:`check` calls while a job runs.
    check_interval: float

    def wanted(self) -> bool:
        """True when the configuration turns per-job scratch filesystems on."""
        ...

    def start(self) -> None:
        """At startd start: make what the volumes come from and remove volumes left by a
        startd that died. Never raises: a machine that cannot do it makes the backend
        unavailable, which :meth:`machine_attributes` says with the reason."""
        ...

    def available(self) -> bool:
        """True when :meth:`start` succeeded: starters get volumes; otherwise jobs run in
        plain sandboxes without disk enforcement."""
        ...

    def machine_attributes(self) -> Sequence[MachineAttribute]:
        """What every slot ad says about it (IsEnforcingDiskUsage, why not...)."""
        ...

    def prepare(self, request: ScratchRequest) -> ScratchVolume:
        """Make, format and mount the job's filesystem on ``request.path``; raises
        :class:`~epcore.errors.JobSetupError` (a vacate code: the job goes back to idle) when
        it cannot."""
        ...

    def check(self, volume: ScratchVolume) -> ScratchVerdict | None:
        """The usage of ``volume`` now: None while the job may go on."""
        ...

    def remove(self, volume: ScratchVolume) -> None:
        """Unmount and destroy ``volume``; raises :class:`~epcore.errors.EpError` when it
        cannot (the next startd start removes it)."""
        ...


@attrs.frozen
class ScratchFilesystemSpec:
    """A scratch filesystem a plugin offers (``ep_scratch_filesystems``): its ``name`` and
    the ``factory`` that builds it for a configuration without touching the machine."""

    name: str
    factory: Callable[[Config], ScratchFilesystem]
