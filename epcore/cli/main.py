"""The ``ep`` command group, the entry point of the ``ep`` console script.

Sub-commands are imported only when one is invoked: importing every command module up front
cost ``ep --version`` and each pool command a few hundred milliseconds of imports they never
used (the ClassAd engine, the configuration reader, the policy simulator, the plugin manager).
:data:`COMMANDS` names each command's module and attribute and carries its short help, so
``ep --help`` lists them all without importing any; a test holds the table to the commands.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Sequence

import click
from click.utils import make_default_short_help

from epcore import __version__


class LazyCommand:
    """Where a sub-command lives (``module:attribute``) and the short help ``ep --help`` shows."""

    __slots__ = ("attribute", "module", "short_help")

    def __init__(self, target: str, short_help: str) -> None:
        self.module, _, self.attribute = target.partition(":")
        self.short_help = short_help

    def load(self) -> click.Command:
        """Import the command's module and return its click command."""
        command = getattr(importlib.import_module(self.module), self.attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.module}:{self.attribute} is not a click command")
        return command


_CLI = "epcore.cli."

#: Every sub-command of ``ep``; the short help is the first sentence of the command's own help.
COMMANDS: dict[str, LazyCommand] = {
    "eval": LazyCommand(
        _CLI + "eval_cmd:eval_command", "Evaluate ClassAd expressions, like classad_eval."
    ),
    "config": LazyCommand(
        _CLI + "config_cmd:config_command", "Show configuration values, like condor_config_val."
    ),
    "status": LazyCommand(
        _CLI + "status_cmd:status_command",
        "Show the pool's slots (or this machine's, when no pool runs), like condor_status.",
    ),
    "plugins": LazyCommand(
        _CLI + "plugins_cmd:plugins_command",
        "List loaded plugins: name, distribution, version, hooks.",
    ),
    "simulate": LazyCommand(
        _CLI + "simulate_cmd:simulate_command",
        "Run the policy scenario FILE.toml and print every slot transition.",
    ),
    "explain": LazyCommand(
        _CLI + "explain_cmd:explain_command",
        "Explain why SLOT (default: the first slot) is in its state, and with --job FILE whether"
        " that job would start there.",
    ),
    "startd": LazyCommand(
        _CLI + "startd_cmd:startd_command",
        "Run the startd in the foreground; it logs to STARTD_LOG.",
    ),
    "run": LazyCommand(
        _CLI + "pool_admin_cmd:run_command",
        "Run the personal pool in the foreground: collector, negotiator, job queue and startd.",
    ),
    "submit": LazyCommand(
        _CLI + "submit_cmd:submit_command",
        "Submit the jobs a submit description FILE describes (``-`` reads standard input).",
    ),
    "q": LazyCommand(
        _CLI + "jobs_cmd:queue_command",
        "Show jobs in the queue, like condor_q (by default your own, one line each).",
    ),
    "rm": LazyCommand(_CLI + "jobs_cmd:remove_command", "Remove jobs, like condor_rm."),
    "hold": LazyCommand(_CLI + "jobs_cmd:hold_command", "Hold jobs, like condor_hold."),
    "release": LazyCommand(_CLI + "jobs_cmd:release_command", "Release jobs, like condor_release."),
    "userprio": LazyCommand(
        _CLI + "pool_admin_cmd:userprio_command",
        "Show the submitters' priorities, or change them, like condor_userprio.",
    ),
    "vacate": LazyCommand(
        _CLI + "pool_admin_cmd:vacate_command",
        "Vacate the jobs of the named slots (default: every slot), like condor_vacate; the jobs go"
        " back to idle in the queue.",
    ),
    "token": LazyCommand(
        _CLI + "token_cmd:token_command",
        "Make IDTOKENS for remote users, like condor_token_create.",
    ),
    "power": LazyCommand(
        _CLI + "power_cmd:power_command",
        "Power management: wake sleeping machines, like condor_power.",
    ),
    "drain": LazyCommand(
        _CLI + "pool_admin_cmd:drain_command",
        "Drain the machine's slots, or cancel a drain, like condor_drain.",
    ),
}


class LazyGroup(click.Group):
    """A click group whose sub-commands come from :data:`COMMANDS`, imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            # Kept once loaded, so a command invoked twice in one process is imported once.
            self.add_command(COMMANDS[cmd_name].load(), cmd_name)
            _resume_collector()
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own listing asks each command for its short help, which would import them all.
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            loaded = self.commands.get(name)
            if loaded is not None:
                if not loaded.hidden:
                    rows.append((name, loaded.get_short_help_str(limit)))
                continue
            text = make_default_short_help(COMMANDS[name].short_help, limit)
            rows.append((name, text))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(name="ep", cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="ep", message="%(prog)s %(version)s")
def ep() -> None:
    """epcore: HTCondor's Execution Point as a Python framework.

    Run "ep COMMAND --help" for the options of one command.
    """


def _resume_collector() -> None:
    """Run the cyclic garbage collector again if :func:`main` paused it, with every object
    start-up made (modules, classes, tables) frozen out of its passes."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``ep`` with ``argv`` (default: the process arguments) and exit with its status."""
    # Loading a command (ep submit's: some 120 modules) leaves about 20,000 objects for the
    # cyclic collector to track and no garbage, yet it would run about 30 times over them
    # (1% of ep submit's instructions, about 1.5 ms): paused until the command is loaded.
    gc.disable()
    try:
        ep.main(args=list(argv) if argv is not None else None, prog_name="ep")
    finally:
        # For a caller that goes on (a test): its objects are collectable again.
        gc.unfreeze()
        gc.enable()


if __name__ == "__main__":
    main()
