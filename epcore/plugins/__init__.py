"""Loading plugins and calling their hooks. This package is the only code that calls ``pm.hook``.

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

The package holds the loading here, the calling machinery in :mod:`~epcore.plugins.registry`
and the typed hooks in :mod:`~epcore.plugins.manager`; every public name is importable from
``epcore.plugins``.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable, Sequence
from importlib.metadata import EntryPoint, entry_points

import pluggy

from epcore import __version__, hookspecs
from epcore.errors import PluginError
from epcore.plugins.manager import Plugins
from epcore.plugins.registry import NOTIFICATION_HOOKS, PluginFailure, PluginInfo, PluginSource

__all__ = [
    "BUILTIN_PLUGINS",
    "NOTIFICATION_HOOKS",
    "PluginFailure",
    "PluginInfo",
    "Plugins",
    "load_plugins",
]

#: The plugins that ship with epcore, in registration order.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "epcore.builtin.detection",
    "epcore.builtin.nvidia",
    "epcore.builtin.isolation",
    "epcore.builtin.power",
)

# One logger for the whole plugin manager: ``ep plugins`` and the daemons' logs listen to it.
_log = logging.getLogger("epcore.plugins")


def _fail(plugins: Plugins, failure: PluginFailure, strict: bool, exc: BaseException) -> None:
    message = f"plugin {failure.name} ({failure.origin}) failed to load: {failure.error}"
    if strict:
        raise PluginError(message) from exc
    _log.error("%s; skipped", message)
    # The traceback helps the plugin's author; an admin's log only needs the line above.
    _log.debug("why plugin %s failed to load", failure.name, exc_info=exc)
    plugins.failures.append(failure)


def _entry_point_source(entry: EntryPoint) -> PluginSource:
    dist = entry.dist
    if dist is None:
        return PluginSource("?", "?")
    return PluginSource(dist.metadata["Name"] or "?", dist.version)


def _load_one(
    plugins: Plugins, name: str, origin: str, load: Callable[[], object], source: PluginSource
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
                PluginSource("epcore", __version__),
            )
    if entry_points_group is not None:
        for entry in sorted(entry_points(group=entry_points_group), key=lambda e: e.name):
            _load_one(plugins, entry.name, entry.value, entry.load, _entry_point_source(entry))
    for name, plugin in extra:
        distribution = getattr(plugin, "__name__", None) or type(plugin).__name__
        plugins.register(plugin, name, str(distribution), "")
    return plugins
