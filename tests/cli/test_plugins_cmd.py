"""``ep plugins``: every loaded plugin with its distribution, version and hooks, and failures."""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import epcore
from epcore.cli.main import ep
from epcore.cli.plugins_cmd import describe_text
from epcore.plugins import BUILTIN_PLUGINS, PluginFailure, PluginInfo

BUILTIN_NAMES = [module.rsplit(".", 1)[-1] for module in BUILTIN_PLUGINS]
_counter = itertools.count()

GIZMO_MODULE = """
from epcore import hookimpl
from epcore.types import DetectedResource, MachineAttribute

@hookimpl
def ep_detect_resources(config, host):
    return [DetectedResource("Gizmos", 2)]

@hookimpl
def ep_machine_attributes(config, inventory):
    return [MachineAttribute("HasGizmo", True)]
"""

IDLE_MODULE = '"""A plugin that implements no hook yet."""\n'


def run(*args: str) -> Result:
    return CliRunner().invoke(ep, ["plugins", *args])


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """Install a distribution declaring ``epcore`` entry points into a directory on sys.path
    (as an unpacked wheel is), so that ``ep plugins`` finds it like any installed plugin."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    modules: list[str] = []

    def install(dist: str, version: str, plugins: dict[str, str]) -> None:
        info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        metadata = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
        info.joinpath("METADATA").write_text(metadata, encoding="utf-8")
        entries = ["[epcore]"]
        for name, text in plugins.items():
            module = f"{name}_plugin_{os.getpid()}_{next(_counter)}"
            site.joinpath(f"{module}.py").write_text(text, encoding="utf-8")
            modules.append(module)
            entries.append(f"{name} = {module}")
        info.joinpath("entry_points.txt").write_text("\n".join(entries) + "\n", encoding="utf-8")

    yield install
    for module in modules:
        sys.modules.pop(module, None)


def test_table_lists_the_builtins_first() -> None:
    """The default table has a header and a row per built-in plugin, distribution "epcore"."""
    result = run()
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAME", "DISTRIBUTION", "VERSION", "HOOKS"]
    # The detectors find resources; the isolation plugin offers process trackers, the power
    # plugin the Linux power backend.
    hooks = {"isolation": "ep_isolation_backends", "power": "ep_power_backends"}
    for line, name in zip(lines[1:], BUILTIN_NAMES, strict=False):
        assert line.split()[:3] == [name, "epcore", epcore.__version__]
        assert hooks.get(name, "ep_detect_resources") in line


def test_json_lists_the_builtins() -> None:
    """--json gives plugins (name, distribution, version, hooks) and an empty failure list."""
    result = run("--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert set(document) == {"plugins", "failures"}
    builtins = document["plugins"][: len(BUILTIN_NAMES)]
    assert [p["name"] for p in builtins] == BUILTIN_NAMES
    for plugin in builtins:
        assert set(plugin) == {"name", "distribution", "version", "hooks"}
        assert (plugin["distribution"], plugin["version"]) == ("epcore", epcore.__version__)
        assert plugin["hooks"] == sorted(plugin["hooks"]) and plugin["hooks"]


def test_installed_plugins_and_failures_are_listed(installed: Callable[..., None]) -> None:
    """An installed plugin appears with its distribution, version and hooks; one that raises
    at import is listed with its error; the command still succeeds and logs nothing."""
    installed("epcore-gizmo", "3.1.4", {"gizmo": GIZMO_MODULE, "idle": IDLE_MODULE})
    installed("epcore-cracked", "0.0.1", {"cracked": "raise RuntimeError('cracked at import')\n"})
    result = run()
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    rows = {line.split()[0]: line.split(None, 3) for line in result.stdout.splitlines() if line}
    assert rows["gizmo"] == [
        "gizmo",
        "epcore-gizmo",
        "3.1.4",
        "ep_detect_resources, ep_machine_attributes",
    ]
    assert rows["idle"] == ["idle", "epcore-gizmo", "3.1.4", "(none)"]
    assert "Failed to load (1; the daemon skips these):" in result.stdout
    assert "  cracked (cracked_plugin_" in result.stdout
    assert result.stdout.rstrip().endswith("RuntimeError: cracked at import")


def test_installed_plugins_and_failures_in_json(installed: Callable[..., None]) -> None:
    """--json lists the installed plugin after the built-ins and the failure with its origin."""
    installed("epcore-gizmo", "3.1.4", {"gizmo": GIZMO_MODULE})
    installed("epcore-cracked", "0.0.1", {"cracked": "raise RuntimeError('cracked at import')\n"})
    document = json.loads(run("--json").stdout)
    names = [p["name"] for p in document["plugins"]]
    assert names[: len(BUILTIN_NAMES)] == BUILTIN_NAMES and "gizmo" in names
    gizmo = document["plugins"][names.index("gizmo")]
    assert gizmo == {
        "name": "gizmo",
        "distribution": "epcore-gizmo",
        "version": "3.1.4",
        "hooks": ["ep_detect_resources", "ep_machine_attributes"],
    }
    (failure,) = document["failures"]
    assert failure["name"] == "cracked"
    assert failure["origin"].startswith("cracked_plugin_")
    assert failure["error"] == "RuntimeError: cracked at import"


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_strict_fails_when_a_plugin_fails(installed: Callable[..., None], as_json: bool) -> None:
    """--strict: the listing is still printed, a failure makes the exit status 1."""
    installed("epcore-cracked", "0.0.1", {"cracked": "raise RuntimeError('cracked at import')\n"})
    result = run("--strict", *(["--json"] if as_json else []))
    assert result.exit_code == 1
    assert "cracked" in result.stdout
    assert result.stderr == "ep plugins: failed to load: cracked\n"


def test_strict_succeeds_when_every_plugin_loads(installed: Callable[..., None]) -> None:
    """--strict with nothing failing exits 0."""
    installed("epcore-gizmo", "3.1.4", {"gizmo": GIZMO_MODULE})
    result = run("--strict")
    assert result.exit_code == 0, result.output
    assert "Failed to load" not in result.stdout


def test_describe_text_without_plugins() -> None:
    """With no plugin loaded the listing says so instead of printing an empty table."""
    assert describe_text([], []) == ["No plugin is loaded."]


def test_describe_text_aligns_columns() -> None:
    """Columns are padded to the widest cell; an empty version shows as "-"."""
    infos = [
        PluginInfo("a", "epcore", "0.1.0", ("ep_x",)),
        PluginInfo("longer-name", "dist", "", ()),
    ]
    failures = [PluginFailure("bad", "bad.plugin", "ImportError: no")]
    assert describe_text(infos, failures) == [
        "NAME         DISTRIBUTION  VERSION  HOOKS",
        "a            epcore        0.1.0    ep_x",
        "longer-name  dist          -        (none)",
        "",
        "Failed to load (1; the daemon skips these):",
        "  bad (bad.plugin): ImportError: no",
    ]


def test_help_describes_the_options() -> None:
    """ep plugins --help documents --json and --strict, and ep --help lists the command."""
    result = run("--help")
    assert result.exit_code == 0
    assert "--json" in result.stdout and "--strict" in result.stdout
    assert "plugins" in CliRunner().invoke(ep, ["--help"]).stdout
