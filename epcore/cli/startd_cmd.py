"""``ep startd``: run the startd in the foreground (until SIGTERM, SIGQUIT or ``Shutdown``)."""

from __future__ import annotations

import click

from epcore.errors import EpError


@click.command(name="startd")
@click.option("--config", "config_file", default=None, help="Read FILE instead of CONDOR_CONFIG.")
def startd_command(config_file: str | None) -> None:
    """Run the startd in the foreground; it logs to STARTD_LOG.

    SIGHUP re-reads the configuration, SIGTERM shuts down peacefully (running jobs finish, no
    new ones start), a second SIGTERM or SIGQUIT shuts down fast (jobs are killed). Jobs keep
    running across a crash or kill -9: the next startd takes them back.
    """
    from epcore.startd.main import run_startd

    try:
        run_startd(config_file)
    except EpError as error:
        raise click.ClickException(str(error)) from error
