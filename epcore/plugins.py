"""Loading plugins and calling their hooks. This is the only module that calls ``pm.hook``.

Built-in plugins (:data:`BUILTIN_PLUGINS`, modules under :mod:`epcore.builtin`) are registered
exactly like third-party ones, which come from the ``epcore`` entry-point group and are
registered after them (so a third-party detector can replace a built-in one). A plugin that fails
to load is logged and skipped when ``strict`` is False (what the daemon does) and is a
:class:`~epcore.errors.PluginError` when it is True (what tests and ``ep plugins --strict`` do).

A plugin fails to load when its module raises at import, when a hook implementation does not
match its hookspec (an unknown ``ep_`` hook, an argument the spec does not have), or when it
defines an ``ep_`` function without marking it with ``epcore.hookimpl`` (which pluggy would
silently ignore). Hook results are checked against the records :mod:`epcore.hookspecs`
promises; a plugin that breaks that contract is a PluginError naming the plugin.
"""

from __future__ import annotations

import functools
import importlib
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

import attrs
import pluggy

from epcore import __version__, hookspecs
from epcore.classad import EvalContext
from epcore.classad.functions import function_table
from epcore.errors import PluginError
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

#: The plugins that ship with epcore, in registration order.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "epcore.builtin.detection",
    "epcore.builtin.nvidia",
    "epcore.builtin.isolation",
    "epcore.builtin.power",
)

_log = logging.getLogger("epcore.plugins")
_T = TypeVar("_T")
_S = TypeVar(
    "_S", IsolationBackendSpec, ContainerRuntimeSpec, PowerBackendSpec, ScratchFilesystemSpec
)

#: Hooks whose results are ignored; each plugin gets them even when another one fails.
NOTIFICATION_HOOKS = ("ep_slot_state_changed", "ep_job_started", "ep_job_finished")

_HOOK_PREFIX = "ep_"


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


def _is_sequence(value: object) -> TypeGuard[Sequence[object]]:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _holds(item: object) -> Callable[[object], bool]:
    """A test of one plugin's answer: does it hold ``item``?"""

    def holds(answer: object) -> bool:
        return _is_sequence(answer) and item in answer

    return holds


def _holds_name(key: str) -> Callable[[object], bool]:
    """A test of one plugin's answer: does it hold a record named ``key`` (any case)?"""

    def holds(answer: object) -> bool:
        return _is_sequence(answer) and any(
            str(getattr(other, "name", "")).lower() == key for other in answer
        )

    return holds


def _names(plugins: Sequence[str]) -> str:
    if not plugins:
        return "a plugin"
    label = "plugin" if len(plugins) == 1 else "plugins"
    return f"{label} {', '.join(plugins)}"


class Plugins:
    """The loaded plugins and typed access to their hooks. Build it with :func:`load_plugins`.

    ``strict`` decides what a plugin failing in a notification hook does: a PluginError when
    True, a logged error (and the other plugins still notified) when False.
    """

    def __init__(self, manager: pluggy.PluginManager, *, strict: bool = False) -> None:
        self._manager = manager
        self._sources: dict[str, _Source] = {}
        self.strict = strict
        self.failures: list[PluginFailure] = []

    # -- registration -------------------------------------------------------------------

    def register(self, plugin: object, name: str, distribution: str, version: str) -> None:
        """Register ``plugin`` (a module or an object with hook implementations).

        A plugin that does not fit the hookspecs is left unregistered (none of its hooks is
        ever called) and is a PluginError naming it.
        """
        try:
            self._manager.register(plugin, name=name)
            problem = self._hook_problem(plugin)
        except (ValueError, pluggy.PluginValidationError) as exc:
            problem = str(exc)
        if problem is not None:
            # pluggy keeps the hooks it registered before a failing one; drop them all.
            if self._manager.get_plugin(name) is plugin:
                self._manager.unregister(plugin)
            raise PluginError(f"plugin {name} ({distribution}) is not valid: {problem}")
        self._sources[name] = _Source(distribution, version)

    def _hook_problem(self, plugin: object) -> str | None:
        """What is wrong with the freshly registered ``plugin``'s hooks, or None."""
        for caller in self._manager.get_hookcallers(plugin) or []:
            impls = [impl for impl in caller.get_hookimpls() if impl.plugin is plugin]
            if caller.spec is None and not all(impl.optionalhook for impl in impls):
                return f"{caller.name} is not an epcore hook (see epcore.hookspecs)"
            if caller.name in NOTIFICATION_HOOKS and any(
                impl.wrapper or impl.hookwrapper for impl in impls
            ):
                return f"{caller.name} is a notification hook and takes no wrappers"
        for attribute in dir(plugin):
            if not attribute.startswith(_HOOK_PREFIX):
                continue
            value = getattr(plugin, attribute, None)
            marked = self._manager.parse_hookimpl_opts(plugin, attribute) is not None
            is_spec = hasattr(value, f"{hookspecs.PROJECT}_spec")
            if callable(value) and not marked and not is_spec:
                return f"{attribute} is not marked with @epcore.hookimpl"
        return None

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

    # -- calling hooks --------------------------------------------------------------------

    def _answers(self, hook: str, kwargs: Mapping[str, object]) -> list[tuple[str, object]]:
        """Each plugin's own answer to ``hook``, to say which plugin broke a contract.

        Only used once a combined result is known to be wrong, so calling every
        implementation a second time does no harm; wrappers are left out.
        """
        answers = []
        for impl in getattr(self._manager.hook, hook).get_hookimpls():
            if impl.wrapper or impl.hookwrapper:
                continue
            answers.append((impl.plugin_name, impl.function(*(kwargs[a] for a in impl.argnames))))
        return answers

    def _blame(self, hook: str, kwargs: Mapping[str, object], bad: Callable[[object], bool]) -> str:
        """Name the plugins whose answer is ``bad``: "plugin A" or "plugins A, B"."""
        return _names([name for name, answer in self._answers(hook, kwargs) if bad(answer)])

    def _collect(
        self,
        hook: str,
        record: type | None,
        kwargs: Mapping[str, object] | None = None,
        *,
        named: bool = False,
    ) -> list[Any]:
        """Call an "all results" hook; the plugins' answers in registration order, flattened.

        ``record`` is the type every item must have (None for Protocols, which cannot be
        checked with isinstance). ``named`` items must each have a ``name``, unique within one
        plugin's answer (without regard to case): a plugin cannot mean both.
        """
        kwargs = kwargs or {}

        def wrong(answer: object) -> str | None:
            if answer is None:
                return None
            if not _is_sequence(answer):
                return "is not a sequence"
            expected = record.__name__ if record is not None else "object"
            if record is not None and not all(isinstance(item, record) for item in answer):
                return f"holds something that is not a {expected}"
            if named:
                names = [_name_of(item) for item in answer]
                if any(not name for name in names):
                    return "holds a record without a name"
                if len({name.lower() for name in names}) != len(names):
                    return "holds two records of one name"
            return None

        results = getattr(self._manager.hook, hook)(**kwargs)
        # pluggy returns the last registered plugin's answer first; callers get registration
        # order so that later plugins override earlier ones when results are folded.
        combined: list[Any] = []
        for answer in reversed(results):
            problem = wrong(answer)
            if problem is not None:
                culprit = self._blame(hook, kwargs, lambda other: wrong(other) is not None)
                raise PluginError(f"{hook} of {culprit} returned {answer!r}, which {problem}")
            combined.extend(answer)
        return combined

    def _notify(self, hook: str, **kwargs: object) -> None:
        """Call a notification hook on every plugin, in pluggy's order.

        One plugin failing must not keep the others from hearing of the event, nor stop the
        daemon: its error is logged (or is a PluginError when ``strict``).
        """
        for impl in reversed(getattr(self._manager.hook, hook).get_hookimpls()):
            try:
                impl.function(*(kwargs[a] for a in impl.argnames))
            except Exception as exc:
                message = f"plugin {impl.plugin_name} failed in {hook}: {type(exc).__name__}: {exc}"
                if self.strict:
                    raise PluginError(message) from exc
                _log.error("%s", message, exc_info=exc)

    # -- hooks --------------------------------------------------------------------------

    def config_defaults(self) -> tuple[KnobDefault, ...]:
        """The knobs plugins add; a knob defined twice (or one of epcore's) is a PluginError."""
        from epcore.config.defaults import KNOB_DEFAULTS, KnobDefault

        epcore_knobs = {knob.name.lower() for knob in KNOB_DEFAULTS}
        added: dict[str, KnobDefault] = {}
        for knob in self._collect("ep_config_defaults", KnobDefault):
            key = knob.name.lower()
            if key in epcore_knobs or key in added:
                culprit = self._blame("ep_config_defaults", {}, _holds_name(key))
                owner = "epcore's" if key in epcore_knobs else "an already added"
                raise PluginError(
                    f"{culprit}: ep_config_defaults redefines {owner} configuration knob "
                    f"{knob.name}"
                )
            added[key] = knob
        return tuple(added.values())

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
                culprit = self._blame("ep_detect_resources", kwargs, _holds(resource))
                raise PluginError(
                    f"ep_detect_resources of {culprit} returned {resource!r}, "
                    "whose quantity is not a finite number >= 0"
                )
        return _last_wins(found)

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
        return _last_wins(
            self._collect("ep_machine_attributes", MachineAttribute, kwargs, named=True)
        )

    def isolation_backends(self) -> list[IsolationBackendSpec]:
        """The isolation backends offered, one per name (the later plugin wins)."""
        specs = self._collect("ep_isolation_backends", IsolationBackendSpec, named=True)
        return _last_wins(self._callable_factories("ep_isolation_backends", specs))

    def container_runtimes(self) -> list[ContainerRuntimeSpec]:
        """The container runtimes offered, one per name (the later plugin wins)."""
        specs = self._collect("ep_container_runtimes", ContainerRuntimeSpec, named=True)
        return _last_wins(self._callable_factories("ep_container_runtimes", specs))

    def build_isolation_backend(
        self, spec: IsolationBackendSpec, config: Config
    ) -> IsolationBackend:
        """The backend ``spec``'s factory builds for ``config``; one that is not an
        :class:`~epcore.types.IsolationBackend` of the spec's name is a PluginError naming the
        plugin. What the factory raises goes through."""
        built = spec.factory(config)
        if isinstance(built, IsolationBackend) and built.name == spec.name:
            return built
        raise self._misbuilt("ep_isolation_backends", spec, built, IsolationBackend)

    def build_container_runtime(
        self, spec: ContainerRuntimeSpec, config: Config
    ) -> ContainerRuntime:
        """The runtime ``spec``'s factory builds for ``config``; one that is not a
        :class:`~epcore.types.ContainerRuntime` of the spec's name is a PluginError naming the
        plugin. What the factory raises goes through."""
        built = spec.factory(config)
        if isinstance(built, ContainerRuntime) and built.name == spec.name:
            return built
        raise self._misbuilt("ep_container_runtimes", spec, built, ContainerRuntime)

    def power_backends(self) -> list[PowerBackendSpec]:
        """The power backends offered, one per name (the later plugin wins)."""
        specs = self._collect("ep_power_backends", PowerBackendSpec, named=True)
        return _last_wins(self._callable_factories("ep_power_backends", specs))

    def build_power_backend(self, spec: PowerBackendSpec, config: Config) -> PowerBackend:
        """The backend ``spec``'s factory builds for ``config``; one that is not a
        :class:`~epcore.types.PowerBackend` of the spec's name is a PluginError naming the
        plugin. What the factory raises goes through."""
        built = spec.factory(config)
        if isinstance(built, PowerBackend) and built.name == spec.name:
            return built
        raise self._misbuilt("ep_power_backends", spec, built, PowerBackend)

    def scratch_filesystems(self) -> list[ScratchFilesystemSpec]:
        """The scratch filesystems offered, one per name (the later plugin wins)."""
        specs = self._collect("ep_scratch_filesystems", ScratchFilesystemSpec, named=True)
        return _last_wins(self._callable_factories("ep_scratch_filesystems", specs))

    def build_scratch_filesystem(
        self, spec: ScratchFilesystemSpec, config: Config
    ) -> ScratchFilesystem:
        """The filesystem ``spec``'s factory builds for ``config``; one that is not a
        :class:`~epcore.types.ScratchFilesystem` of the spec's name is a PluginError naming
        the plugin. What the factory raises goes through."""
        built = spec.factory(config)
        if isinstance(built, ScratchFilesystem) and built.name == spec.name:
            return built
        raise self._misbuilt("ep_scratch_filesystems", spec, built, ScratchFilesystem)

    def _misbuilt(
        self,
        hook: str,
        spec: IsolationBackendSpec
        | ContainerRuntimeSpec
        | PowerBackendSpec
        | BackfillBackendSpec
        | ScratchFilesystemSpec,
        built: object,
        protocol: type,
    ) -> PluginError:
        """The error for ``spec`` whose factory built ``built``: not a ``protocol`` (the
        kind's), or not named like the spec (the factories are typed, but a plugin's Python
        is not checked)."""
        named = f"an object named {spec.name}"
        expected = named if isinstance(built, protocol) else f"a {protocol.__name__}"
        culprit = self._offerer(hook, spec)
        return PluginError(
            f"{hook} of {culprit}: the factory of {spec.name} built {built!r}, not {expected}"
        )

    def _callable_factories(self, hook: str, specs: list[_S]) -> list[_S]:
        """``specs``, each checked to have a callable factory (a PluginError naming the
        plugin otherwise: the daemon calls it much later, far from the plugin's answer)."""
        for spec in specs:
            if not callable(getattr(spec, "factory", None)):
                culprit = self._offerer(hook, spec)
                raise PluginError(
                    f"{hook} of {culprit}: the factory of {_name_of(spec)} is not callable"
                )
        return specs

    def _offerer(self, hook: str, spec: object) -> str:
        """Which plugin answered ``hook`` with ``spec`` (by equality; by name when its
        factory is a fresh closure on every call)."""
        culprit = self._blame(hook, {}, _holds(spec))
        if culprit == _names([]):
            culprit = self._blame(hook, {}, _holds_name(_name_of(spec).lower()))
        return culprit

    # -- backfill -----------------------------------------------------------------------------

    def backfill_backends(self) -> list[BackfillBackendSpec]:
        """The backfill systems offered, one per name without case (the later plugin wins)."""
        specs = self._collect("ep_backfill_backends", BackfillBackendSpec, named=True)
        return _last_wins(self._callable_factories("ep_backfill_backends", specs))

    def build_backfill_backend(self, spec: BackfillBackendSpec, config: Config) -> BackfillBackend:
        """The backfill system ``spec``'s factory builds for ``config``; one that is not a
        :class:`~epcore.types.BackfillBackend` of the spec's name is a PluginError naming the
        plugin. What the factory raises (a ConfigError naming a knob) goes through."""
        built = spec.factory(config)
        if isinstance(built, BackfillBackend) and built.name == spec.name:
            return built
        raise self._misbuilt("ep_backfill_backends", spec, built, BackfillBackend)

    # -- cron and work ------------------------------------------------------------------------

    def cron_jobs(self, config: Config) -> list[PythonCronJob]:
        """Cron jobs written in Python, one per name (the later plugin wins)."""
        kwargs = {"config": config}
        return _last_wins(self._collect("ep_cron_jobs", PythonCronJob, kwargs, named=True))

    def fetch_work_sources(self, config: Config) -> list[FetchWorkSource]:
        """Python sources of fetched work, one per name (the later plugin wins)."""
        kwargs = {"config": config}
        return _last_wins(self._collect("ep_fetch_work_sources", None, kwargs, named=True))

    def classad_functions(self) -> list[ClassAdFunction]:
        """Extra ClassAd functions; a name defined twice, or a built-in one, is a PluginError."""
        from epcore.classad.functions import builtin_functions

        builtin = set(builtin_functions())
        functions: list[ClassAdFunction] = self._collect(
            "ep_classad_functions", ClassAdFunction, named=True
        )
        seen: set[str] = set()
        for function in functions:
            key = function.name.lower()
            if key in builtin or key in seen:
                culprit = self._blame("ep_classad_functions", {}, _holds_name(key))
                owner = "the built-in" if key in builtin else "an already added"
                raise PluginError(
                    f"{culprit}: ep_classad_functions redefines {owner} ClassAd function "
                    f"{function.name}"
                )
            seen.add(key)
        return functions

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


def _name_of(item: object) -> str:
    name = getattr(item, "name", None)
    return name if isinstance(name, str) else ""


def _last_wins(items: Iterable[_T]) -> list[_T]:
    """One item per name (without regard to case): the last one, at the first one's place."""
    by_name: dict[str, _T] = {}
    for item in items:
        by_name[_name_of(item).lower()] = item
    return list(by_name.values())


def _fail(plugins: Plugins, failure: PluginFailure, strict: bool, exc: BaseException) -> None:
    message = f"plugin {failure.name} ({failure.origin}) failed to load: {failure.error}"
    if strict:
        raise PluginError(message) from exc
    _log.error("%s; skipped", message)
    # The traceback helps the plugin's author; an admin's log only needs the line above.
    _log.debug("why plugin %s failed to load", failure.name, exc_info=exc)
    plugins.failures.append(failure)


def _entry_point_source(entry: EntryPoint) -> _Source:
    dist = entry.dist
    if dist is None:
        return _Source("?", "?")
    return _Source(dist.metadata["Name"] or "?", dist.version)


def _load_one(
    plugins: Plugins, name: str, origin: str, load: Callable[[], object], source: _Source
) -> None:
    """Import one plugin and register it; a failure is logged and skipped, or raised."""
    try:
        loaded = load()
    except Exception as exc:
        failure = PluginFailure(name, origin, f"{type(exc).__name__}: {exc}")
        _fail(plugins, failure, plugins.strict, exc)
        return
    try:
        plugins.register(loaded, name, source.distribution, source.version)
    except PluginError as exc:
        _fail(plugins, PluginFailure(name, origin, str(exc)), plugins.strict, exc)


def load_plugins(
    *,
    builtins: bool = True,
    entry_points_group: str | None = hookspecs.PROJECT,
    extra: Sequence[tuple[str, object]] = (),
    strict: bool = False,
) -> Plugins:
    """Register the built-in plugins, then the entry points of ``entry_points_group``, then
    ``extra`` (name, plugin) pairs (for tests and embedding).

    ``strict`` turns a plugin that fails to load into a PluginError instead of a logged skip
    (built-in plugins are treated like the others). An ``extra`` plugin that does not fit the
    hookspecs is always a PluginError: whoever passed it is there to hear about it.
    """
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    plugins = Plugins(manager, strict=strict)
    if builtins:
        for module_name in BUILTIN_PLUGINS:
            _load_one(
                plugins,
                module_name.rsplit(".", 1)[-1],
                module_name,
                functools.partial(importlib.import_module, module_name),
                _Source("epcore", __version__),
            )
    if entry_points_group is not None:
        for entry in sorted(entry_points(group=entry_points_group), key=lambda e: e.name):
            _load_one(plugins, entry.name, entry.value, entry.load, _entry_point_source(entry))
    for name, plugin in extra:
        distribution = getattr(plugin, "__name__", None) or type(plugin).__name__
        plugins.register(plugin, name, str(distribution), "")
    return plugins
