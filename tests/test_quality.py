"""The linters as tests: ``ruff check`` and ``mypy --strict`` must pass for the suite to pass."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from epcore.testing.system import missing

ROOT = Path(__file__).resolve().parent.parent

# Each tool runs with the settings in pyproject.toml, from the project root.
TOOLS = [
    pytest.param("ruff", ["check", "."], id="ruff"),
    pytest.param("mypy", ["--strict"], id="mypy"),
]


@pytest.mark.parametrize(("tool", "args"), TOOLS)
def test_tool_reports_no_problem(tool: str, args: list[str]) -> None:
    """The tool exits 0 on the project; its own report is the failure message otherwise."""
    if importlib.util.find_spec(tool) is None:
        missing(f"{tool} is not installed (pip install -e '.[test]')")
    done = subprocess.run(
        [sys.executable, "-m", tool, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        report = (done.stdout + done.stderr).strip()
        pytest.fail(f"{tool} {' '.join(args)} failed:\n{report}", pytrace=False)


def test_test_modules_have_unique_names() -> None:
    """No two test modules share a file name (without packages pytest cannot collect both)."""
    seen: dict[str, Path] = {}
    clashes = []
    for path in sorted(
        [*ROOT.glob("tests/**/test_*.py"), *ROOT.glob("plugins/*/tests/**/test_*.py")]
    ):
        if path.name in seen:
            clashes.append(f"{seen[path.name].relative_to(ROOT)} and {path.relative_to(ROOT)}")
        seen.setdefault(path.name, path)
    assert not clashes, "test modules with the same name: " + "; ".join(clashes)
