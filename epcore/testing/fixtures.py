"""pytest fixtures for epcore's own tests and for plugin authors (the ``epcore`` pytest plugin).

Installing epcore registers this module with pytest (entry point ``pytest11``), so every test
session in an environment where epcore is installed has these fixtures without an import:

``fake_clock``
    A :class:`FakeClock`: ``now()`` (epoch seconds) and ``monotonic()`` move only when the test
    calls ``advance(seconds)`` (or ``sleep``), so timers and policy expressions that read the
    time give the same answer on every run.
``fake_host``
    A :class:`~epcore.testing.host.FakeMachineHost`: 4 cores, 8192 MB, 100 GiB free on "/",
    idle; change its attributes (``fake_host.logical_cpus = 64``) or build your own.
``fake_sysfs``
    A :class:`~epcore.testing.host.FakeSysfs`: a real, empty file tree under ``tmp_path`` that
    stands in for ``/`` (``fake_sysfs.write("/proc/loadavg", "0.50 0.40 0.30 1/99 42")``).
``plugins_with``
    ``plugins_with(plugin, ...)`` loads exactly the given plugins (modules or objects with
    ``@epcore.hookimpl`` functions) into a :class:`~epcore.plugins.Plugins`, strictly: a plugin
    that does not fit the hookspecs fails the test. Installed plugins are left out, and the
    built-in ones too unless ``builtins=True``.

A plugin's own tests look like this::

    from epcore.config import Config
    from epcore_gizmo import plugin

    def test_finds_the_gizmos(plugins_with, fake_host):
        plugins = plugins_with(plugin)
        config = Config.from_text("", host=fake_host)
        found = plugins.detect_resources(config, fake_host)
        assert [r.name for r in found] == ["Gizmos"]

Contract tests every plugin of a kind should pass are in :mod:`epcore.testing.contracts`.
Where the entry point is not installed (epcore imported from a source tree), enable the plugin
in a root ``conftest.py`` with ``pytest_plugins = ["epcore.testing.fixtures"]``.

pytest imports this module in every session of an environment holding epcore, so it imports
only pytest and the clock at module level; everything else is imported when a fixture is used.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from epcore.testing.clock import FakeClock

if TYPE_CHECKING:
    from epcore.plugins import Plugins
    from epcore.testing.host import FakeMachineHost, FakeSysfs

PluginsFactory = Callable[..., "Plugins"]


def plugins_from(*plugins: object, builtins: bool = False) -> Plugins:
    """Load exactly ``plugins`` (and the built-in ones when ``builtins``), strictly.

    Each plugin is registered under its ``__name__`` (a module's dotted name, a class's name)
    or its class name, numbered when two share one. What ``plugins_with`` calls.
    """
    from epcore.plugins import load_plugins

    named: list[tuple[str, object]] = []
    taken: set[str] = set()
    for plugin in plugins:
        base = str(getattr(plugin, "__name__", None) or type(plugin).__name__)
        name, number = base, 1
        while name in taken:
            number += 1
            name = f"{base}#{number}"
        taken.add(name)
        named.append((name, plugin))
    return load_plugins(builtins=builtins, entry_points_group=None, extra=named, strict=True)


@pytest.fixture
def fake_clock() -> FakeClock:
    """A clock at 2023-11-14 22:13:20 UTC that moves only with ``advance``."""
    return FakeClock()


@pytest.fixture
def fake_host() -> FakeMachineHost:
    """A fake 4-core, 8192 MB machine with 100 GiB free on "/" and no other hardware."""
    from epcore.testing.host import FakeMachineHost

    return FakeMachineHost()


@pytest.fixture
def fake_sysfs(tmp_path: Path) -> FakeSysfs:
    """An empty file tree under ``tmp_path`` standing in for ``/``."""
    from epcore.testing.host import FakeSysfs

    root = tmp_path / "fake-root"
    root.mkdir()
    return FakeSysfs(root)


@pytest.fixture
def plugins_with() -> PluginsFactory:
    """A factory: ``plugins_with(plugin, ..., builtins=False)`` loads exactly those plugins."""
    return plugins_from
