"""The plugin manager's machinery: registering plugins (checked against the hookspecs),
describing them, and calling hooks with every answer checked, naming the plugin that broke a
contract. :class:`~epcore.plugins.manager.Plugins` builds the typed hooks on it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import attrs
import pluggy

from epcore import hookspecs
from epcore.errors import PluginError
from epcore.plugins.answers import (
    holding,
    holding_name,
    is_sequence,
    last_wins,
    name_of,
    name_plugins,
)
from epcore.types import (
    BackfillBackendSpec,
    ContainerRuntimeSpec,
    IsolationBackendSpec,
    PowerBackendSpec,
    ScratchFilesystemSpec,
)

if TYPE_CHECKING:
    from epcore.config import Config

# One logger for the whole plugin manager: ``ep plugins`` and the daemons' logs listen to it.
_log = logging.getLogger("epcore.plugins")
_S = TypeVar(
    "_S",
    IsolationBackendSpec,
    ContainerRuntimeSpec,
    PowerBackendSpec,
    BackfillBackendSpec,
    ScratchFilesystemSpec,
)
_Backend = TypeVar("_Backend", bound="_Named")
_Record = TypeVar("_Record", bound="_Named")
_Backend_co = TypeVar("_Backend_co", bound="_Named", covariant=True)


class _Named(Protocol):
    """A backend (whatever its kind, it has the name its spec gives) or a named record."""

    @property
    def name(self) -> str: ...


class _Spec(Protocol[_Backend_co]):
    """A backend spec of any kind (IsolationBackendSpec...): a name and a typed factory."""

    @property
    def name(self) -> str: ...

    @property
    def factory(self) -> Callable[[Config], _Backend_co]: ...


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
class PluginSource:
    """Where a plugin came from, for ``ep plugins``: its distribution and version."""

    distribution: str
    version: str


class PluginRegistry:
    """The registered plugins and the checked calling of their hooks; the typed hooks are
    :class:`~epcore.plugins.manager.Plugins`, which :func:`~epcore.plugins.load_plugins`
    builds."""

    def __init__(self, manager: pluggy.PluginManager, *, strict: bool = False) -> None:
        self._manager = manager
        self._sources: dict[str, PluginSource] = {}
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
        self._sources[name] = PluginSource(distribution, version)

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
            source = self._sources.get(name, PluginSource("?", "?"))
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
        return name_plugins([name for name, answer in self._answers(hook, kwargs) if bad(answer)])

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
            if not is_sequence(answer):
                return "is not a sequence"
            expected = record.__name__ if record is not None else "object"
            if record is not None and not all(isinstance(item, record) for item in answer):
                return f"holds something that is not a {expected}"
            if named:
                names = [name_of(item) for item in answer]
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

    # -- checking what a spec offers and what its factory builds ------------------------------

    def _new_names(
        self, hook: str, records: list[_Record], taken: Collection[str], owner: str, what: str
    ) -> list[_Record]:
        """``records``, refused when one of them redefines a name of ``taken`` (lower case:
        ``owner``'s, epcore's own) or one of an earlier record (names without regard to
        case): a PluginError naming the plugin, as "``hook`` redefines ``owner`` ``what`` X"."""
        seen: set[str] = set()
        for record in records:
            key = record.name.lower()
            if key in taken or key in seen:
                culprit = self._blame(hook, {}, holding_name(key))
                redefined = owner if key in taken else "an already added"
                raise PluginError(f"{culprit}: {hook} redefines {redefined} {what} {record.name}")
            seen.add(key)
        return records

    def _offered(self, hook: str, record: type[_S]) -> list[_S]:
        """The specs of one backend kind that plugins offer through ``hook``, one per name
        (without regard to case; the later plugin wins), each checked to have a callable
        factory (a PluginError naming the plugin otherwise: the daemon calls it much later,
        far from the plugin's answer)."""
        specs: list[_S] = self._collect(hook, record, named=True)
        for spec in specs:
            if not callable(getattr(spec, "factory", None)):
                culprit = self._offerer(hook, spec)
                raise PluginError(
                    f"{hook} of {culprit}: the factory of {name_of(spec)} is not callable"
                )
        return last_wins(specs)

    def _built(self, hook: str, spec: _Spec[_Backend], config: Config, protocol: type) -> _Backend:
        """What ``spec``'s factory builds for ``config``: one that is not a ``protocol`` (the
        kind's), or not named like the spec, is a PluginError naming the plugin that offered
        it through ``hook`` (the factories are typed, but a plugin's Python is not checked).
        What the factory raises goes through."""
        built = spec.factory(config)
        if isinstance(built, protocol) and built.name == spec.name:
            return built
        named = f"an object named {spec.name}"
        expected = named if isinstance(built, protocol) else f"a {protocol.__name__}"
        culprit = self._offerer(hook, spec)
        raise PluginError(
            f"{hook} of {culprit}: the factory of {spec.name} built {built!r}, not {expected}"
        )

    def _offerer(self, hook: str, spec: object) -> str:
        """Which plugin answered ``hook`` with ``spec`` (by equality; by name when its
        factory is a fresh closure on every call)."""
        culprit = self._blame(hook, {}, holding(spec))
        if culprit == name_plugins([]):
            culprit = self._blame(hook, {}, holding_name(name_of(spec).lower()))
        return culprit
