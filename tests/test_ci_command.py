"""CI runs README's test command as it stands, and that command runs the suite in parallel with
the tests of the machine in their groups (tests/parallel_groups.py)."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: README's test command: the line of its first code block that installs the test extra.
README_COMMAND = re.compile(r"^python3 -m pip install -e '\.\[test\]'.*$", re.MULTILINE)


def readme_command() -> str:
    """The test command README.md gives."""
    found = README_COMMAND.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert found is not None, "README.md gives no test command (python3 -m pip install -e ...)"
    return found.group(0)


def pytest_arguments() -> list[str]:
    """The arguments README's command gives pytest, after pyproject.toml's addopts."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    addopts = shlex.split(settings["tool"]["pytest"]["ini_options"]["addopts"])
    command = shlex.split(readme_command())
    return addopts + command[command.index("pytest") + 1 :]


def test_ci_runs_the_readme_command() -> None:
    """.ci/run runs README's test command, character for character."""
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(rf"^{re.escape(readme_command())} \|\| status=\$\?$", ci_run, re.MULTILINE)


def test_the_readme_command_runs_in_parallel_by_groups() -> None:
    """The command starts pytest-xdist workers and schedules by xdist groups."""
    arguments = pytest_arguments()
    assert "-n" in arguments and int(arguments[arguments.index("-n") + 1]) > 1
    assert "--dist" in arguments and arguments[arguments.index("--dist") + 1] == "loadgroup"
