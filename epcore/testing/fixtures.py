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
only pytest and attrs at module level; everything else is imported when a fixture is used.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import pytest

if TYPE_CHECKING:
    from epcore.plugins import Plugins
    from epcore.testing.host import FakeMachineHost, FakeSysfs

#: Where a FakeClock starts: 2023-11-14 22:13:20 UTC, a Tuesday.
DEFAULT_START = 1_700_000_000.0


@attrs.define
class FakeClock:
    """A clock that only moves when told to.

    ``now()`` is wall-clock time in seconds since the epoch; ``monotonic()`` never goes back and
    is what timers should measure intervals with. ``advance`` moves both; ``set_time`` moves only
    the wall clock (as when the machine's clock is reset), which is how a test checks that
    intervals are not measured with the wall clock.
    """

    start: float = DEFAULT_START
    _wall_offset: float = attrs.field(default=0.0, init=False)
    _elapsed: float = attrs.field(default=0.0, init=False)

    def now(self) -> float:
        """Wall-clock time, in seconds since the epoch."""
        return self.start + self._wall_offset + self._elapsed

    def monotonic(self) -> float:
        """Seconds since the clock was made; never decreases."""
        return self._elapsed

    def advance(self, seconds: float) -> float:
        """Let ``seconds`` (>= 0) pass; returns the new ``now()``."""
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"a clock cannot advance by {seconds!r} seconds")
        self._elapsed += seconds
        return self.now()

    def sleep(self, seconds: float) -> None:
        """Like ``time.sleep``, without the waiting: the clock advances at once."""
        self.advance(seconds)

    def set_time(self, when: float) -> None:
        """Set the wall clock to ``when`` (epoch seconds); ``monotonic()`` is not affected."""
        if not math.isfinite(when):
            raise ValueError(f"{when!r} is not a time")
        self._wall_offset = when - self.start - self._elapsed


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
