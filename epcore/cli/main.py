"""The ``ep`` command group, the entry point of the ``ep`` console script."""

from __future__ import annotations

from collections.abc import Sequence

import click

from epcore import __version__
from epcore.cli.config_cmd import config_command
from epcore.cli.eval_cmd import eval_command
from epcore.cli.explain_cmd import explain_command
from epcore.cli.jobs_cmd import (
    hold_command,
    queue_command,
    release_command,
    remove_command,
    submit_command,
)
from epcore.cli.plugins_cmd import plugins_command
from epcore.cli.pool_admin_cmd import (
    drain_command,
    run_command,
    userprio_command,
    vacate_command,
)
from epcore.cli.simulate_cmd import simulate_command
from epcore.cli.startd_cmd import startd_command
from epcore.cli.status_cmd import status_command


@click.group(name="ep", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="ep", message="%(prog)s %(version)s")
def ep() -> None:
    """epcore: HTCondor's Execution Point as a Python framework.

    Run "ep COMMAND --help" for the options of one command.
    """


ep.add_command(eval_command)
ep.add_command(config_command)
ep.add_command(status_command)
ep.add_command(plugins_command)
ep.add_command(simulate_command)
ep.add_command(explain_command)
ep.add_command(startd_command)
for _command in (
    run_command,
    submit_command,
    queue_command,
    remove_command,
    hold_command,
    release_command,
    userprio_command,
    vacate_command,
    drain_command,
):
    ep.add_command(_command)


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``ep`` with ``argv`` (default: the process arguments) and exit with its status."""
    ep.main(args=list(argv) if argv is not None else None, prog_name="ep")


if __name__ == "__main__":
    main()
