"""The ``ep`` command group: help, version and the installed console script."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from click.testing import CliRunner

import epcore
from epcore.cli.main import ep, main
from epcore.testing.system import missing


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_group_help_lists_eval(flag: str) -> None:
    """``ep --help`` succeeds and lists the eval command."""
    result = CliRunner().invoke(ep, [flag])
    assert result.exit_code == 0, result.output
    assert "Usage: ep" in result.stdout
    assert "eval" in result.stdout


def test_group_version() -> None:
    """``ep --version`` prints the program name and epcore's version."""
    result = CliRunner().invoke(ep, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"ep {epcore.__version__}"


def test_unknown_command_is_a_usage_error() -> None:
    """An unknown sub-command exits with click's usage-error status 2."""
    result = CliRunner().invoke(ep, ["no-such-command"])
    assert result.exit_code == 2
    assert "no-such-command" in result.stderr


def test_main_exits_with_the_command_status(capsys: pytest.CaptureFixture[str]) -> None:
    """``main(argv)`` runs the group and exits with its status."""
    with pytest.raises(SystemExit) as stop:
        main(["eval", "-quiet", "6 * 7"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == "42\n"


def test_console_script_runs_eval_help() -> None:
    """The installed ``ep`` script answers README's ``ep eval --help``."""
    script = shutil.which("ep")
    if script is None:
        missing("the ep console script is not on PATH (pip install -e . not done?)")
    done = subprocess.run(
        [script, "eval", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "-target-file" in done.stdout
