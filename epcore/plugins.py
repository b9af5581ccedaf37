"""Loading plugins and calling their hooks. This is the only module that calls ``pm.hook``.

Built-in plugins (:data:`BUILTIN_PLUGINS`, modules under :mod:`epcore.builtin`) are registered
exactly like third-party ones, which come from the ``epcore`` entry-point group and are
registered after them (so a third-party detector can replace a built-in one). A plugin that fails
to import is logged and skipped when ``strict`` is False (what the daemon does) and is a
:class:`~epcore.errors.PluginError` when it is True (what tests and ``ep plugins --strict`` do).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Sequence
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar

import attrs
import pluggy

from epcore import __version__, hookspecs
from epcore.errors import PluginError
from epcore.types import (
    BackendSpec,
    ClassAdFunction,
    DetectedResource,
    FetchWorkSource,
    HostReadings,
    JobFinished,
    JobStarted,
    MachineAttribute,
    MachineHost,
    PythonCronJob,
    SlotStateChange,
)

if TYPE_CHECKING:
    from epcore.config import Config, KnobDefault

#: The plugins that ship with epcore, in registration order.
BUILTIN_PLUGINS: tuple[str, ...] = ("epcore.builtin.detection",)

_log = logging.getLogger("epcore.plugins")
_T = TypeVar("_T")

#: Backend kinds and the hook that offers each.
BACKEND_KINDS = ("isolation", "container", "vm", "backfill", "power")


@attrs.frozen
class PluginInfo:
    """One loaded plugin as ``ep plugins`` shows it."""

    name: str
    distribution: str
    version: str
    hooks: tuple[str, ...]


@attrs.frozen
class PluginFailure:
    """A plugin that could not be loaded: its name, where it came from, and the error."""

    name: str
    origin: str
    error: str


@attrs.frozen
class _Source:
    distribution: str
    version: str


class Plugins:
    """The loaded plugins and typed access to their hooks. Build it with :func:`load_plugins`."""

    def __init__(self, manager: pluggy.PluginManager) -> None:
        self._manager = manager
        self._sources: dict[str, _Source] = {}
        self.failures: list[PluginFailure] = []

    # -- registration -------------------------------------------------------------------

    def register(self, plugin: object, name: str, distribution: str, version: str) -> None:
        """Register ``plugin`` (a module or an object with hook implementations)."""
        try:
            self._manager.register(plugin, name=name)
        except (ValueError, pluggy.PluginValidationError) as exc:
            raise PluginError(f"plugin {name} ({distribution}) is not valid: {exc}") from exc
        self._sources[name] = _Source(distribution, version)

    def describe(self) -> list[PluginInfo]:
        """Every registered plugin with its distribution, version and the hooks it implements."""
        infos = []
        for name, plugin in self._manager.list_name_plugin():
            if plugin is None:
                continue
            callers = self._manager.get_hookcallers(plugin) or []
            source = self._sources.get(name, _Source("?", "?"))
            hooks = tuple(sorted(caller.name for caller in callers))
            infos.append(PluginInfo(name, source.distribution, source.version, hooks))
        return infos

    # -- hooks --------------------------------------------------------------------------

    def _all(self, results: Iterable[Sequence[_T] | None]) -> list[_T]:
        # pluggy returns the last registered plugin's result first; callers get registration
        # order so that later plugins override earlier ones when results are folded.
        combined: list[_T] = []
        for result in reversed(list(results)):
            if result:
                combined.extend(result)
        return combined

    def config_defaults(self) -> tuple[KnobDefault, ...]:
        """The knobs plugins add; two plugins defining one knob is a PluginError."""
        from epcore.config.defaults import KNOB_DEFAULTS

        known = {knob.name.lower() for knob in KNOB_DEFAULTS}
        added: list[KnobDefault] = []
        for knob in self._all(self._manager.hook.ep_config_defaults()):
            key = knob.name.lower()
            if key in known:
                raise PluginError(f"a plugin redefines the configuration knob {knob.name}")
            known.add(key)
            added.append(knob)
        return tuple(added)

    def detect_resources(self, config: Config, host: MachineHost) -> list[DetectedResource]:
        """Every resource the detectors report, in registration order (later ones win)."""
        return self._all(self._manager.hook.ep_detect_resources(config=config, host=host))

    def host_readings(self, config: Config, host: MachineHost, now: float) -> HostReadings:
        """The machine's load and idle times; zeros and "never idle" when no plugin answers."""
        readings = self._manager.hook.ep_host_readings(config=config, host=host, now=now)
        if readings is None:
            return HostReadings(0.0, 0.0, 0, 0)
        assert isinstance(readings, HostReadings)
        return readings

    def machine_attributes(self, config: Config, inventory: object) -> list[MachineAttribute]:
        """Attributes plugins add to every slot ad."""
        hook = self._manager.hook.ep_machine_attributes
        return self._all(hook(config=config, inventory=inventory))

    def backends(self, kind: str) -> list[BackendSpec]:
        """The backends of ``kind`` ("isolation", "container", "vm", "backfill", "power")."""
        hooks = {
            "isolation": self._manager.hook.ep_isolation_backends,
            "container": self._manager.hook.ep_container_runtimes,
            "vm": self._manager.hook.ep_vm_backends,
            "backfill": self._manager.hook.ep_backfill_backends,
            "power": self._manager.hook.ep_power_backends,
        }
        if kind not in hooks:
            raise PluginError(f"unknown backend kind {kind!r}; known: {', '.join(BACKEND_KINDS)}")
        specs: list[BackendSpec] = self._all(hooks[kind]())
        for spec in specs:
            if spec.kind != kind:
                raise PluginError(f"backend {spec.name} is of kind {spec.kind}, offered as {kind}")
        return specs

    def cron_jobs(self, config: Config) -> list[PythonCronJob]:
        """Cron jobs written in Python."""
        return self._all(self._manager.hook.ep_cron_jobs(config=config))

    def fetch_work_sources(self, config: Config) -> list[FetchWorkSource]:
        """Python sources of fetched work."""
        return self._all(self._manager.hook.ep_fetch_work_sources(config=config))

    def classad_functions(self) -> list[ClassAdFunction]:
        """Extra ClassAd functions; a name defined twice is a PluginError."""
        functions = self._all(self._manager.hook.ep_classad_functions())
        seen: set[str] = set()
        for function in functions:
            key = function.name.lower()
            if key in seen:
                raise PluginError(f"two plugins define the ClassAd function {function.name}")
            seen.add(key)
        return functions

    def slot_state_changed(self, change: SlotStateChange) -> None:
        """Tell every plugin that a slot changed State or Activity."""
        self._manager.hook.ep_slot_state_changed(change=change)

    def job_started(self, event: JobStarted) -> None:
        """Tell every plugin that a job started."""
        self._manager.hook.ep_job_started(event=event)

    def job_finished(self, event: JobFinished) -> None:
        """Tell every plugin that a job finished."""
        self._manager.hook.ep_job_finished(event=event)


def _fail(plugins: Plugins, failure: PluginFailure, strict: bool, exc: BaseException) -> None:
    message = f"plugin {failure.name} ({failure.origin}) failed to load: {failure.error}"
    if strict:
        raise PluginError(message) from exc
    _log.error("%s; skipped", message)
    plugins.failures.append(failure)


def _entry_point_source(entry: EntryPoint) -> _Source:
    dist = entry.dist
    if dist is None:
        return _Source("?", "?")
    return _Source(dist.metadata["Name"] or "?", dist.version)


def load_plugins(
    *,
    builtins: bool = True,
    entry_points_group: str | None = hookspecs.PROJECT,
    extra: Sequence[tuple[str, object]] = (),
    strict: bool = False,
) -> Plugins:
    """Register the built-in plugins, then the entry points of ``entry_points_group``, then
    ``extra`` (name, plugin) pairs (for tests and embedding).

    ``strict`` turns a plugin that fails to import into a PluginError instead of a logged skip.
    """
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    plugins = Plugins(manager)
    if builtins:
        for module_name in BUILTIN_PLUGINS:
            module = importlib.import_module(module_name)
            plugins.register(module, module_name.rsplit(".", 1)[-1], "epcore", __version__)
    if entry_points_group is not None:
        for entry in sorted(entry_points(group=entry_points_group), key=lambda e: e.name):
            try:
                loaded = entry.load()
            except Exception as exc:
                failure = PluginFailure(entry.name, entry.value, f"{type(exc).__name__}: {exc}")
                _fail(plugins, failure, strict, exc)
                continue
            source = _entry_point_source(entry)
            try:
                plugins.register(loaded, entry.name, source.distribution, source.version)
            except PluginError as exc:
                _fail(plugins, PluginFailure(entry.name, entry.value, str(exc)), strict, exc)
    for name, plugin in extra:
        distribution = plugin.__name__ if isinstance(plugin, ModuleType) else type(plugin).__name__
        plugins.register(plugin, name, distribution, "")
    return plugins
