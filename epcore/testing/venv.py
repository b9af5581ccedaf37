"""Real virtual environments for packaging tests: a fresh venv, an offline pip install into it,
and commands run in it as a user's shell would run them (no PYTHONPATH, no user site).

A plugin's packaging test builds its distribution from a copy of its sources, installs it into
:func:`make_venv`'s environment with :func:`pip_install`, and asks that environment's ``ep``
(``python -c "from epcore.cli.main import main; main()" plugins --json``) what it loaded. Such a
test is slow: mark it with :data:`real_venv` (the ``venv`` marker, which this module registers
when it is loaded as a pytest plugin).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

import epcore

#: Marks a test that builds a real virtual environment and pip-installs into it.
real_venv = pytest.mark.venv

#: Prints where epcore is imported from and whether its pytest plugin is registered.
_WHERE_IS_EPCORE = """
import epcore, importlib.metadata as m
print(epcore.__file__)
print(any(e.name == "epcore" for e in m.entry_points(group="pytest11")))
"""


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``venv`` marker (pytest runs with --strict-markers)."""
    config.addinivalue_line(
        "markers", "venv: builds a real virtual environment and pip-installs packages into it"
    )


def can_build_wheels() -> bool:
    """setuptools can build wheels without downloading anything (bdist_wheel is there)."""
    return any(
        importlib.util.find_spec(name) is not None
        for name in ("wheel", "setuptools.command.bdist_wheel")
    )


def run_command(
    argv: Sequence[str | Path], cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in ``cwd`` without this process's PYTHONPATH and user site, so that a
    venv's python sees only what is installed in it; its output captured as text."""
    environment = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONNOUSERSITE": "1"}
    environment.pop("PYTHONPATH", None)
    return subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def output_of(done: subprocess.CompletedProcess[str]) -> str:
    """The standard output of a command that succeeded; AssertionError with its output if not."""
    assert done.returncode == 0, f"{done.args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def make_venv(where: Path) -> Path:
    """``python -m venv --system-site-packages`` in ``where/venv``; its python, which sees this
    environment's packages.

    When this interpreter is itself a venv, --system-site-packages would only show the base
    installation, so this environment's site directories are added through a .pth file
    (processed like site-packages, editable installs included).
    """
    venv = where / "venv"
    output_of(
        run_command(
            [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], where
        )
    )
    python = venv / "bin" / "python"
    if sys.prefix != sys.base_prefix:
        site_dir = output_of(
            run_command([python, "-c", "import site; print(site.getsitepackages()[0])"], where)
        )
        lines = [
            f"import site; site.addsitedir({d!r})" for d in sys.path if d.endswith("site-packages")
        ]
        Path(site_dir.strip(), "_parent_environment.pth").write_text("\n".join(lines) + "\n")
    return python


def pip_install(python: Path, where: Path, *targets: str | Path) -> None:
    """``pip install --no-deps --no-build-isolation --no-index TARGETS`` with ``python``:
    offline, from local sources only."""
    output_of(
        run_command(
            [
                python,
                "-m",
                "pip",
                "install",
                "--no-deps",
                "--no-build-isolation",
                "--no-index",
                *targets,
            ],
            where,
        )
    )


def install_this_epcore(python: Path, where: Path) -> None:
    """Make the venv of ``python`` import the epcore this process runs, with its pytest plugin
    registered: when the environment holds another checkout (or older metadata), this one is
    pip-installed into the venv in editable mode."""
    package = Path(epcore.__file__).resolve().parent
    found = output_of(run_command([python, "-c", _WHERE_IS_EPCORE], where)).split()
    if Path(found[0]).resolve().parent != package or found[1] != "True":
        pip_install(python, where, "-e", package.parent)
        location = output_of(run_command([python, "-c", _WHERE_IS_EPCORE], where)).split()[0]
        assert Path(location).resolve().parent == package, location
