"""setup.py compiles nothing unless asked: epcore installs where there is no C compiler."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of what setup.py builds from (mypyc type-checks the package as a whole)."""
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path)
    ignored = shutil.ignore_patterns("__pycache__", "*.so")
    shutil.copytree(ROOT / "epcore", tmp_path / "epcore", ignore=ignored)
    return tmp_path


def _environment(**changes: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "EPCORE_MYPYC"}
    env.update(changes)
    return env


def test_without_the_opt_in_the_build_needs_no_compiler(project: Path) -> None:
    """Building the extensions without EPCORE_MYPYC=1, with a C compiler that always fails,
    succeeds and leaves the fast path as Python source."""
    built = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=project,
        env=_environment(CC="/bin/false", CXX="/bin/false", LDSHARED="/bin/false"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    assert not list(project.rglob("*.so"))


def test_the_opt_in_compiles_the_fast_path_only(project: Path) -> None:
    """With EPCORE_MYPYC=1 setup.py asks for the parser's fast path, its scanner and their one
    shared mypyc library only."""
    probe = (
        "import runpy, setuptools; setuptools.setup = lambda **kw: print("
        "' '.join(sorted(e.name for e in kw['ext_modules']))); runpy.run_path('setup.py')"
    )
    listed = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=project,
        env=_environment(EPCORE_MYPYC="1"),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert listed.stdout.split() == [
        "epcore.classad.compiled__mypyc",
        "epcore.classad.fastparse",
        "epcore.classad.scanner",
    ]
