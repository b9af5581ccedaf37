"""epcore-docker as a distribution: found through the ``epcore`` entry-point group, installable
with pip into a fresh virtual environment, and never imported by the core."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import epcore_docker
import pytest

from epcore.testing.process import EP_MODULE
from epcore.testing.system import missing
from epcore.testing.venv import (
    can_build_wheels,
    install_this_epcore,
    make_venv,
    output_of,
    pip_install,
    real_venv,
    run_command,
)

PLUGIN_ROOT = Path(__file__).resolve().parent.parent
REPOSITORY = PLUGIN_ROOT.parent.parent
CORE = REPOSITORY / "epcore"


def test_pyproject_declares_the_distribution_and_entry_point() -> None:
    """pyproject.toml names epcore-docker, its entry point and its version attribute."""
    project = tomllib.loads((PLUGIN_ROOT / "pyproject.toml").read_text())
    assert project["project"]["name"] == "epcore-docker"
    assert project["project"]["entry-points"]["epcore"] == {"docker": "epcore_docker.plugin"}
    assert project["tool"]["setuptools"]["packages"] == ["epcore_docker"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "epcore_docker.__version__"
    }
    assert "epcore" in project["project"]["dependencies"]
    assert "docker>=7" in project["project"]["dependencies"]


def test_installed_metadata_matches_the_package() -> None:
    """The installed distribution carries the package's version and the docker entry point."""
    assert importlib.metadata.version("epcore-docker") == epcore_docker.__version__ == "0.1.0"
    entries = importlib.metadata.entry_points(group="epcore", name="docker")
    assert [entry.value for entry in entries] == ["epcore_docker.plugin"]


def test_importing_the_package_does_not_import_the_sdk() -> None:
    """``import epcore_docker`` has no side effects: the docker SDK stays unimported."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys, epcore_docker; print('docker' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "False"


def test_plugin_is_loaded_through_the_entry_point_group() -> None:
    """``ep plugins`` finds the plugin "docker" from distribution epcore-docker, without
    failure."""
    done = subprocess.run(
        [sys.executable, "-m", EP_MODULE, "plugins", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    listing = json.loads(done.stdout)
    loaded = {plugin["name"]: plugin for plugin in listing["plugins"]}
    failures = {failure["name"]: failure["error"] for failure in listing["failures"]}
    assert "docker" not in failures, failures.get("docker")
    assert loaded["docker"]["distribution"] == "epcore-docker"
    assert loaded["docker"]["version"] == epcore_docker.__version__
    assert loaded["docker"]["hooks"]


def _imported_modules(source: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
    return modules


CORE_SOURCES = sorted(CORE.rglob("*.py"))


@pytest.mark.parametrize("forbidden", ["docker", "epcore_docker"])
def test_core_never_imports_the_plugin_or_the_sdk(forbidden: str) -> None:
    """No module under epcore/ imports the plugin or the docker SDK, nor names the plugin."""
    assert CORE_SOURCES, f"no sources found under {CORE}"
    offenders = [
        str(source.relative_to(REPOSITORY))
        for source in CORE_SOURCES
        if any(
            module == forbidden or module.startswith(f"{forbidden}.")
            for module in _imported_modules(source)
        )
        or (forbidden == "epcore_docker" and forbidden in source.read_text())
    ]
    assert offenders == []


@real_venv
def test_pip_installs_the_plugin_into_a_fresh_venv(tmp_path: Path) -> None:
    """Real venv, real pip (offline): ``pip install ./plugins/docker`` makes ``ep plugins``
    list docker, loaded from the venv's own copy of the package."""
    if not can_build_wheels():
        missing("setuptools cannot build wheels offline here: pip install wheel")
    # Built from a copy: pip builds in place and would leave build/ and egg-info behind.
    source = tmp_path / "src" / "docker"
    shutil.copytree(
        PLUGIN_ROOT, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info")
    )
    python = make_venv(tmp_path)
    install_this_epcore(python, tmp_path)
    pip_install(python, tmp_path, source)

    where = output_of(
        run_command([python, "-c", "import epcore_docker; print(epcore_docker.__file__)"], tmp_path)
    )
    assert Path(where.strip()).is_relative_to(tmp_path / "venv"), where
    ep = [python, "-c", "from epcore.cli.main import main; main()", "plugins"]
    listing = json.loads(output_of(run_command([*ep, "--json"], tmp_path)))
    plugins = {plugin["name"]: plugin for plugin in listing["plugins"]}
    assert [failure for failure in listing["failures"] if failure["name"] == "docker"] == []
    assert plugins["docker"]["distribution"] == "epcore-docker"
    assert plugins["docker"]["version"] == epcore_docker.__version__
    assert plugins["docker"]["hooks"]
