"""Every hook a plugin may implement. Plugins mark implementations with ``epcore.hookimpl``.

The first line of each docstring says how the hook is called: "all results" hooks are called on
every plugin and their results are combined (a plugin may return an empty sequence, or None to
abstain); "first result" hooks stop at the first plugin that answers something other than None;
"notification" hooks are called on every plugin and their results are ignored. Hooks receive and
return the frozen records of :mod:`epcore.types`. Only :mod:`epcore.plugins` calls hooks.

Plugins are registered built-ins first, then entry points sorted by name. Results are combined
in registration order, and a first-result hook asks the latest registered plugin first. Where
records carry a name, one plugin's answer must not hold two of one name, and when two plugins
answer the same name the one registered later wins, so an installed plugin can replace a built-in
detector or backend (a configuration knob or ClassAd function defined twice is an error instead).
A plugin that returns anything but the declared records is a
:class:`~epcore.errors.PluginError` naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from epcore.config import Config, KnobDefault
    from epcore.types import (
        BackfillBackendSpec,
        ClassAdFunction,
        ContainerRuntimeSpec,
        DetectedResource,
        FetchWorkSource,
        HostReadings,
        IsolationBackendSpec,
        JobFinished,
        JobStarted,
        MachineAttribute,
        MachineHost,
        MachineInventory,
        PowerBackendSpec,
        PythonCronJob,
        ScratchFilesystemSpec,
        SlotStateChange,
    )

#: The pluggy project name, which is also the entry-point group third-party plugins register in.
PROJECT = "epcore"

hookspec = pluggy.HookspecMarker(PROJECT)


@hookspec
def ep_config_defaults() -> Sequence[KnobDefault] | None:
    """All results: configuration knobs the plugin adds, with their defaults and documentation.

    Called once when the configuration is read; the defaults join HTCondor's table, so
    ``ep config`` shows them and ``$(NAME)`` finds them. A plugin must not redefine a knob that
    epcore or another plugin already defines.
    """


@hookspec
def ep_detect_resources(config: Config, host: MachineHost) -> Sequence[DetectedResource] | None:
    """All results: resources the plugin finds on ``host`` (Cpus, Memory, Disk, Swap, GPUs...).

    Called once at startup and on reconfiguration. When two plugins report the same resource
    name, the one registered later wins (third-party plugins are registered after built-ins).
    A detector must not raise when its hardware is absent: it returns an empty sequence.
    """


@hookspec(firstresult=True)
def ep_host_readings(config: Config, host: MachineHost, now: float) -> HostReadings | None:
    """First result: the machine's load and idle times at ``now``.

    Called at every POLLING_INTERVAL / UPDATE_INTERVAL by the startd.
    """


@hookspec
def ep_machine_attributes(
    config: Config, inventory: MachineInventory
) -> Sequence[MachineAttribute] | None:
    """All results: attributes added to every slot ad (HasDocker, site tags...).

    Called when the startd builds its ads after startup or reconfiguration; values that change
    over time belong in cron jobs instead. A later plugin's attribute replaces an earlier one's.
    """


@hookspec
def ep_isolation_backends() -> Sequence[IsolationBackendSpec] | None:
    """All results: process-tracking and limiting backends (process group, cgroups...).

    The startd builds each with its configuration at startup, keeps those the configuration
    wants and the machine supports, and hands them to every starter it forks; a backend of a
    built-in one's name replaces it.
    """


@hookspec
def ep_container_runtimes() -> Sequence[ContainerRuntimeSpec] | None:
    """All results: container runtimes.

    The startd calls each factory with its configuration at startup and on reconfiguration;
    it builds a :class:`~epcore.types.ContainerRuntime` (built objects must not start
    anything). The runtimes' machine attributes join every slot ad, and a starter runs a job
    in the first runtime whose ``runs(job)`` is true.
    """


@hookspec
def ep_scratch_filesystems() -> Sequence[ScratchFilesystemSpec] | None:
    """All results: per-job scratch filesystems (an LVM logical volume as the sandbox).

    The startd builds each offered one with its configuration at startup (one of a built-in
    or earlier plugin's name is replaced), keeps the last one whose ``wanted()`` is true, calls
    its ``start()`` and hands it to every starter it forks: the starter has it make the job's
    filesystem on the empty sandbox before the sandbox gets anything, check it while the job
    runs and remove it after the job, before the sandbox directory goes.
    """


# -- backfill ---------------------------------------------------------------------------------


@hookspec
def ep_backfill_backends() -> Sequence[BackfillBackendSpec] | None:
    """All results: backfill systems (seed 000's BOINC), by the name BACKFILL_SYSTEM gives.

    With ENABLE_BACKFILL true the startd builds the one BACKFILL_SYSTEM names at startup and
    on reconfiguration; it runs its client through a starter, one per startd, shared by the
    slots in Backfill/Busy. A system of a built-in one's name replaces it.
    """


# -- cron and work ------------------------------------------------------------------------------


@hookspec
def ep_power_backends() -> Sequence[PowerBackendSpec] | None:
    """All results: backends that put the machine to sleep and describe its Wake-on-LAN.

    The startd builds the last one offered (a later plugin's replaces a built-in one of any
    name) when HIBERNATE_CHECK_INTERVAL turns power management on, and asks it for the sleep
    states, the network interface and, when HIBERNATE says so, to enter a state.
    """


@hookspec
def ep_cron_jobs(config: Config) -> Sequence[PythonCronJob] | None:
    """All results: startd cron jobs written in Python, run beside STARTD_CRON_JOBLIST's."""


@hookspec
def ep_fetch_work_sources(config: Config) -> Sequence[FetchWorkSource] | None:
    """All results: sources the startd pulls jobs from, beside the fetch-work job hooks; a
    source serves the slots whose hook keyword is its name (one per name, the later wins)."""


@hookspec
def ep_classad_functions() -> Sequence[ClassAdFunction] | None:
    """All results: extra ClassAd functions; a name already defined is an error.

    A name is already defined when it is one of the built-in functions or another plugin's
    (names compared without regard to case, as the ClassAd language compares them). Called once
    when a daemon or command reads its configuration: the functions join the built-in ones in
    the configuration's evaluation context, so the startd's policy and slot ads, matchmaking,
    the schedd's policies and ``ep eval``/``ep explain``/``ep simulate`` can call them. A
    function that raises, or answers no ClassAd value, is ERROR where it was called.
    """


@hookspec
def ep_slot_state_changed(change: SlotStateChange) -> None:
    """Notification: a slot changed State or Activity.

    Every plugin is told, even when another one raises; the daemon logs such an error.
    Notification hooks take no hook wrappers.
    """


@hookspec
def ep_job_started(event: JobStarted) -> None:
    """Notification: a job started on a slot."""


@hookspec
def ep_job_finished(event: JobFinished) -> None:
    """Notification: a job left a slot (exited, was evicted, held or removed)."""
