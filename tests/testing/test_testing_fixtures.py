"""The fixtures of epcore's pytest plugin: fake clock, fake host, fake sysfs, plugins_with."""

from __future__ import annotations

import ast
import math
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

import epcore.testing.fixtures as fixtures_module
from epcore import hookimpl
from epcore.config import Config
from epcore.errors import PluginError
from epcore.plugins import BUILTIN_PLUGINS, Plugins
from epcore.testing.clock import DEFAULT_START, FakeClock
from epcore.testing.host import FakeMachineHost, FakeSysfs
from epcore.types import DetectedResource

ROOT = Path(__file__).resolve().parents[2]
PluginsWith = Callable[..., Plugins]


# -- fake_clock -------------------------------------------------------------------------------


def test_fake_clock_starts_at_a_fixed_time(fake_clock: FakeClock) -> None:
    """The clock starts at DEFAULT_START with a monotonic reading of 0, and stays there."""
    assert (fake_clock.now(), fake_clock.monotonic()) == (DEFAULT_START, 0.0)
    assert fake_clock.now() == fake_clock.now() == DEFAULT_START


@pytest.mark.parametrize("steps", [[1.0], [0.0, 2.5], [60.0, 0.25, 3600.0]])
def test_fake_clock_advances_both_readings(fake_clock: FakeClock, steps: list[float]) -> None:
    """advance and sleep move now() and monotonic() by exactly the time asked."""
    for index, step in enumerate(steps):
        if index % 2:
            fake_clock.sleep(step)
        else:
            assert fake_clock.advance(step) == fake_clock.now()
    assert fake_clock.monotonic() == sum(steps)
    assert fake_clock.now() == DEFAULT_START + sum(steps)


@pytest.mark.parametrize("step", [-1.0, math.nan, math.inf])
def test_fake_clock_refuses_to_go_back(fake_clock: FakeClock, step: float) -> None:
    """A negative or non-finite step is a ValueError and changes nothing."""
    with pytest.raises(ValueError, match="cannot advance"):
        fake_clock.advance(step)
    assert (fake_clock.now(), fake_clock.monotonic()) == (DEFAULT_START, 0.0)


def test_fake_clock_set_time_moves_the_wall_clock_only(fake_clock: FakeClock) -> None:
    """set_time jumps now() (even backwards) but not monotonic(); advance then moves both."""
    fake_clock.advance(10)
    fake_clock.set_time(1_000.0)
    assert (fake_clock.now(), fake_clock.monotonic()) == (1_000.0, 10.0)
    fake_clock.advance(5)
    assert (fake_clock.now(), fake_clock.monotonic()) == (1_005.0, 15.0)


def test_fake_clock_start_is_chosen_by_the_test() -> None:
    """A FakeClock built with another start reports it."""
    assert FakeClock(start=86_400.0).now() == 86_400.0


# -- fake_host and fake_sysfs -----------------------------------------------------------------


def test_fake_host_is_the_documented_machine(fake_host: FakeMachineHost) -> None:
    """fake_host is a 4-core, 8192 MB FakeMachineHost that Config reads as the same machine."""
    assert isinstance(fake_host, FakeMachineHost)
    assert fake_host.cpu_counts() == (4, 4)
    assert fake_host.memory_mb() == 8192
    config = Config.from_text("", host=fake_host)
    assert config.get("DETECTED_CORES") == "4"
    assert config.get("DETECTED_MEMORY") == "8192"


def test_fake_sysfs_is_an_empty_tree_under_tmp_path(fake_sysfs: FakeSysfs, tmp_path: Path) -> None:
    """fake_sysfs writes real files under tmp_path, starting from an empty root."""
    assert isinstance(fake_sysfs, FakeSysfs)
    assert fake_sysfs.root.is_relative_to(tmp_path)
    assert list(fake_sysfs.root.iterdir()) == []
    written = fake_sysfs.write("/proc/loadavg", "0.50 0.40 0.30 1/99 42\n")
    assert written == fake_sysfs.root / "proc" / "loadavg"
    assert written.read_text(encoding="utf-8").startswith("0.50")


# -- plugins_with -----------------------------------------------------------------------------


class Cogs:
    """Reports four cogs."""

    @hookimpl
    def ep_detect_resources(self, config: Config, host: object) -> list[DetectedResource]:
        return [DetectedResource("Cogs", 4)]


class Broken:
    """Implements a hook with an argument the hookspec does not have."""

    @hookimpl
    def ep_detect_resources(self, config: Config, host: object, mood: str) -> list[object]:
        return []


def test_plugins_with_loads_exactly_the_given_plugins(plugins_with: PluginsWith) -> None:
    """Only the given plugins are loaded: no built-in one, no installed one."""
    plugins = plugins_with(Cogs())
    assert [(info.name, info.hooks) for info in plugins.describe()] == [
        ("Cogs", ("ep_detect_resources",))
    ]


def test_plugins_with_numbers_plugins_sharing_a_name(plugins_with: PluginsWith) -> None:
    """Two plugins of one class are registered under distinct names."""
    plugins = plugins_with(Cogs(), Cogs(), Cogs())
    assert [info.name for info in plugins.describe()] == ["Cogs", "Cogs#2", "Cogs#3"]


def test_plugins_with_can_add_the_builtins(plugins_with: PluginsWith) -> None:
    """builtins=True registers the built-in plugins first."""
    plugins = plugins_with(Cogs(), builtins=True)
    names = [info.name for info in plugins.describe()]
    assert names == [*(m.rsplit(".", 1)[-1] for m in BUILTIN_PLUGINS), "Cogs"]


def test_plugins_with_is_strict(plugins_with: PluginsWith) -> None:
    """A plugin that does not fit the hookspecs fails the test with a PluginError naming it."""
    with pytest.raises(PluginError, match="plugin Broken"):
        plugins_with(Broken())


def test_plugins_with_results_come_from_the_plugins(
    plugins_with: PluginsWith, fake_host: FakeMachineHost
) -> None:
    """The loaded plugins answer hooks through the usual Plugins methods."""
    plugins = plugins_with(Cogs())
    config = Config.from_text("", host=fake_host)
    assert plugins.detect_resources(config, fake_host) == [DetectedResource("Cogs", 4)]


# -- how the plugin is installed --------------------------------------------------------------


def test_pytest_entry_point_names_the_fixtures_module() -> None:
    """pyproject registers epcore.testing.fixtures as the pytest plugin "epcore"."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["entry-points"]["pytest11"] == {"epcore": "epcore.testing.fixtures"}


def test_fixtures_module_offers_the_documented_fixtures() -> None:
    """The module's pytest fixtures are exactly the four its docstring documents."""
    tree = ast.parse(Path(fixtures_module.__file__).read_text(encoding="utf-8"))
    fixtures = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(ast.unparse(d) == "pytest.fixture" for d in node.decorator_list)
    ]
    assert fixtures == ["fake_clock", "fake_host", "fake_sysfs", "plugins_with"]
    for name in fixtures:
        assert f"``{name}``" in (fixtures_module.__doc__ or "")


def test_fixtures_module_imports_little_at_load_time() -> None:
    """At module level the plugin imports only pytest, the clock and the standard library, since
    pytest loads it in every session of an environment holding epcore."""
    tree = ast.parse(Path(fixtures_module.__file__).read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    allowed = {"__future__", "collections.abc", "pathlib", "typing", "pytest"}
    assert imported <= allowed | {"epcore.testing.clock"}


def test_the_ep_command_group_does_not_import_pytest() -> None:
    """Importing the ``ep`` command group (as every daemon process does) leaves pytest out: the
    simulator's clock and fake host do not need it, and a smaller process forks faster."""
    code = "import sys, epcore.cli.main; print('pytest' in sys.modules)"
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert found.stdout.strip() == "False"
