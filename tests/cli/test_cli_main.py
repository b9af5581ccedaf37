"""The ``ep`` command group: help, version and the installed console script."""

from __future__ import annotations

import gc
import shutil
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

import epcore
from epcore.cli.main import COMMANDS, ep, main
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


def test_main_leaves_the_collector_as_it_found_it() -> None:
    """After ``main(argv)`` returns to its caller, the cyclic garbage collector runs and
    holds nothing frozen, whether or not main loaded a command."""
    for argv in (["eval", "-quiet", "1"], ["--version"]):
        with pytest.raises(SystemExit):
            main(argv)
        assert gc.isenabled()
        assert gc.get_freeze_count() == 0


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


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter has imported after running ``code``."""
    script = f"import sys\n{code}\nprint('\\n'.join(sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_importing_main_imports_no_subcommand() -> None:
    """Importing ``epcore.cli.main`` imports no sub-command module and no ClassAd engine."""
    loaded = _modules_after("import epcore.cli.main")
    assert "epcore.cli.main" in loaded
    command_modules = {entry.module for entry in COMMANDS.values()}
    assert not loaded & command_modules
    assert "epcore.classad" not in loaded


def test_group_help_imports_no_subcommand() -> None:
    """``ep --help`` lists the commands from the lazy table without importing their modules."""
    code = (
        "from epcore.cli.main import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    )
    loaded = _modules_after(code)
    assert not loaded & {entry.module for entry in COMMANDS.values()}


def test_group_help_lists_every_command() -> None:
    """``ep --help`` has one row per command, each with its short help."""
    result = CliRunner().invoke(ep, ["--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    listed = result.stdout.split("Commands:\n", 1)[1].splitlines()
    rows = {line.split(maxsplit=1)[0]: line.split(maxsplit=1)[1] for line in listed if line}
    assert rows == {name: entry.short_help for name, entry in COMMANDS.items()}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_lazy_entry_is_the_command(name: str) -> None:
    """Each lazy entry loads a click command of that name whose short help is the table's."""
    command = COMMANDS[name].load()
    assert isinstance(command, click.Command)
    assert command.name == name
    assert command.get_short_help_str(limit=1000) == COMMANDS[name].short_help


def test_group_resolves_each_name_to_its_command() -> None:
    """The group hands out, for each name, the command the lazy entry loads."""
    context = click.Context(ep)
    for name, entry in COMMANDS.items():
        assert ep.get_command(context, name) is entry.load()
    assert ep.get_command(context, "no-such-command") is None


#: What each pool command's module must not import: the heavy parts it needs not, which
#: each ``ep submit``, ``ep q`` or ``ep status`` would otherwise pay for at its start.
UNNEEDED = {
    "epcore.cli.submit_cmd": (
        "epcore.views",
        "epcore.schedd.jobqueue",
        "epcore.interfaces",
        "epcore.runtime.pool_server",
        "pluggy",
        "regex",
        "sqlite3",
    ),
    "epcore.cli.jobs_cmd": (
        "epcore.submit",
        "epcore.schedd.jobqueue",
        "epcore.interfaces",
        "pluggy",
        "sqlite3",
    ),
    "epcore.cli.status_cmd": ("epcore.slots.ads", "epcore.plugins", "pluggy", "sqlite3"),
}


@pytest.mark.parametrize("module", sorted(UNNEEDED))
def test_pool_command_imports_only_what_it_needs(module: str) -> None:
    """A pool command's module imports none of the heavy modules it does not use."""
    loaded = _modules_after(f"import {module}")
    assert module in loaded
    assert not loaded & set(UNNEEDED[module])
