"""The typed hooks of the loaded plugins: each method calls one hook (or builds what a
spec offers) and checks the answers against the records :mod:`epcore.hookspecs` promises."""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

from epcore.classad import EvalContext
from epcore.classad.functions import function_table
from epcore.errors import PluginError
from epcore.plugins.answers import holding, last_wins
from epcore.plugins.registry import PluginRegistry
from epcore.types import (
    BackfillBackend,
    BackfillBackendSpec,
    ClassAdFunction,
    ContainerRuntime,
    ContainerRuntimeSpec,
    DetectedResource,
    FetchWorkSource,
    HostReadings,
    IsolationBackend,
    IsolationBackendSpec,
    JobFinished,
    JobStarted,
    MachineAttribute,
    MachineHost,
    MachineInventory,
    PowerBackend,
    PowerBackendSpec,
    PythonCronJob,
    ScratchFilesystem,
    ScratchFilesystemSpec,
    SlotStateChange,
)

if TYPE_CHECKING:
    from epcore.config import Config, KnobDefault

# One logger for the whole plugin manager: ``ep plugins`` and the daemons' logs listen to it.
_log = logging.getLogger("epcore.plugins")


class Plugins(PluginRegistry):
    """The loaded plugins and typed access to their hooks. Build it with
    :func:`~epcore.plugins.load_plugins`.

    ``strict`` decides what a plugin failing in a notification hook does: a PluginError when
    True, a logged error (and the other plugins still notified) when False.
    """

    # -- hooks --------------------------------------------------------------------------

    def config_defaults(self) -> tuple[KnobDefault, ...]:
        """The knobs plugins add; a knob defined twice (or one of epcore's) is a PluginError."""
        from epcore.config.defaults import KNOB_DEFAULTS, KnobDefault

        epcore_knobs = {knob.name.lower() for knob in KNOB_DEFAULTS}
        knobs: list[KnobDefault] = self._collect("ep_config_defaults", KnobDefault)
        return tuple(
            self._new_names(
                "ep_config_defaults", knobs, epcore_knobs, "epcore's", "configuration knob"
            )
        )

    def knob_defaults(self) -> tuple[KnobDefault, ...]:
        """Every default a configuration is read with beyond HTCondor's table: the plugins'
        knobs (:meth:`config_defaults`), and epcore's own benchmark programs as the defaults
        of BENCHMARKS_MIPS/KFLOPS_EXECUTABLE and _ARGS, in place of HTCondor's condor_mips and
        condor_kflops, which an epcore machine does not have. The startd and ``ep config``
        both read configuration with these, so ``ep config`` shows what the startd runs."""
        from epcore.builtin.benchmarks import benchmark_defaults

        return (*self.config_defaults(), *benchmark_defaults())

    def detect_resources(self, config: Config, host: MachineHost) -> list[DetectedResource]:
        """Every resource the detectors report, one per name (compared without regard to case).

        When two plugins report one resource, the one registered later wins; the resource
        keeps the place where it was first reported.
        """
        kwargs = {"config": config, "host": host}
        found = self._collect("ep_detect_resources", DetectedResource, kwargs, named=True)
        for resource in found:
            if not math.isfinite(resource.quantity) or resource.quantity < 0:
                culprit = self._blame("ep_detect_resources", kwargs, holding(resource))
                raise PluginError(
                    f"ep_detect_resources of {culprit} returned {resource!r}, "
                    "whose quantity is not a finite number >= 0"
                )
        return last_wins(found)

    def host_readings(self, config: Config, host: MachineHost, now: float) -> HostReadings:
        """The machine's load and idle times; zeros and "never idle" when no plugin answers."""
        readings = self._manager.hook.ep_host_readings(config=config, host=host, now=now)
        if readings is None:
            return HostReadings(0.0, 0.0, 0, 0)
        if not isinstance(readings, HostReadings):
            kwargs = {"config": config, "host": host, "now": now}
            culprit = self._blame(
                "ep_host_readings",
                kwargs,
                lambda answer: answer is not None and not isinstance(answer, HostReadings),
            )
            raise PluginError(f"ep_host_readings of {culprit} returned {readings!r}")
        return readings

    def machine_attributes(
        self, config: Config, inventory: MachineInventory
    ) -> list[MachineAttribute]:
        """Attributes plugins add to every slot ad, one per name (the later plugin wins)."""
        kwargs = {"config": config, "inventory": inventory}
        return last_wins(
            self._collect("ep_machine_attributes", MachineAttribute, kwargs, named=True)
        )

    def isolation_backends(self) -> list[IsolationBackendSpec]:
        """The isolation backends offered, one per name (the later plugin wins)."""
        return self._offered("ep_isolation_backends", IsolationBackendSpec)

    def container_runtimes(self) -> list[ContainerRuntimeSpec]:
        """The container runtimes offered, one per name (the later plugin wins)."""
        return self._offered("ep_container_runtimes", ContainerRuntimeSpec)

    def build_isolation_backend(
        self, spec: IsolationBackendSpec, config: Config
    ) -> IsolationBackend:
        """The backend ``spec``'s factory builds for ``config``; one that is not an
        :class:`~epcore.types.IsolationBackend` of the spec's name is a PluginError naming the
        plugin. What the factory raises goes through."""
        return self._built("ep_isolation_backends", spec, config, IsolationBackend)

    def build_container_runtime(
        self, spec: ContainerRuntimeSpec, config: Config
    ) -> ContainerRuntime:
        """The runtime ``spec``'s factory builds for ``config``; one that is not a
        :class:`~epcore.types.ContainerRuntime` of the spec's name is a PluginError naming the
        plugin. What the factory raises goes through."""
        return self._built("ep_container_runtimes", spec, config, ContainerRuntime)

    def power_backends(self) -> list[PowerBackendSpec]:
        """The power backends offered, one per name (the later plugin wins)."""
        return self._offered("ep_power_backends", PowerBackendSpec)

    def build_power_backend(self, spec: PowerBackendSpec, config: Config) -> PowerBackend:
        """The backend ``spec``'s factory builds for ``config``; one that is not a
        :class:`~epcore.types.PowerBackend` of the spec's name is a PluginError naming the
        plugin. What the factory raises goes through."""
        return self._built("ep_power_backends", spec, config, PowerBackend)

    def scratch_filesystems(self) -> list[ScratchFilesystemSpec]:
        """The scratch filesystems offered, one per name (the later plugin wins)."""
        return self._offered("ep_scratch_filesystems", ScratchFilesystemSpec)

    def build_scratch_filesystem(
        self, spec: ScratchFilesystemSpec, config: Config
    ) -> ScratchFilesystem:
        """The filesystem ``spec``'s factory builds for ``config``; one that is not a
        :class:`~epcore.types.ScratchFilesystem` of the spec's name is a PluginError naming
        the plugin. What the factory raises goes through."""
        return self._built("ep_scratch_filesystems", spec, config, ScratchFilesystem)

    # -- backfill -----------------------------------------------------------------------------

    def backfill_backends(self) -> list[BackfillBackendSpec]:
        """The backfill systems offered, one per name without case (the later plugin wins)."""
        return self._offered("ep_backfill_backends", BackfillBackendSpec)

    def build_backfill_backend(self, spec: BackfillBackendSpec, config: Config) -> BackfillBackend:
        """The backfill system ``spec``'s factory builds for ``config``; one that is not a
        :class:`~epcore.types.BackfillBackend` of the spec's name is a PluginError naming the
        plugin. What the factory raises (a ConfigError naming a knob) goes through."""
        return self._built("ep_backfill_backends", spec, config, BackfillBackend)

    # -- cron and work ------------------------------------------------------------------------

    def cron_jobs(self, config: Config) -> list[PythonCronJob]:
        """Cron jobs written in Python, one per name (the later plugin wins)."""
        kwargs = {"config": config}
        return last_wins(self._collect("ep_cron_jobs", PythonCronJob, kwargs, named=True))

    def fetch_work_sources(self, config: Config) -> list[FetchWorkSource]:
        """Python sources of fetched work, one per name (the later plugin wins)."""
        kwargs = {"config": config}
        return last_wins(self._collect("ep_fetch_work_sources", None, kwargs, named=True))

    def classad_functions(self) -> list[ClassAdFunction]:
        """Extra ClassAd functions; a name defined twice, or a built-in one, is a PluginError."""
        from epcore.classad.functions import builtin_functions

        builtin = set(builtin_functions())
        functions: list[ClassAdFunction] = self._collect(
            "ep_classad_functions", ClassAdFunction, named=True
        )
        return self._new_names(
            "ep_classad_functions", functions, builtin, "the built-in", "ClassAd function"
        )

    def eval_context(self) -> EvalContext:
        """The evaluation context a daemon or tool reads its configuration with: the built-in
        ClassAd functions and every plugin's (:meth:`classad_functions`), so that START, RANK,
        the slot ads, matchmaking, the schedd's policies and ``ep eval`` can all call them.

        A plugin function that raises, or answers something that is not a ClassAd value, is
        ERROR in that evaluation (logged): a plugin must not stop a daemon's policy pass.
        """
        extra = {function.name: function.impl for function in self.classad_functions()}
        return EvalContext(functions=function_table(extra, _log.error))

    def slot_state_changed(self, change: SlotStateChange) -> None:
        """Tell every plugin that a slot changed State or Activity."""
        self._notify("ep_slot_state_changed", change=change)

    def job_started(self, event: JobStarted) -> None:
        """Tell every plugin that a job started."""
        self._notify("ep_job_started", event=event)

    def job_finished(self, event: JobFinished) -> None:
        """Tell every plugin that a job finished."""
        self._notify("ep_job_finished", event=event)
