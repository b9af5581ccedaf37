"""``ep submit``: jobs from a submit description file into the running pool.

A module of its own, importing only what a submission needs (the submit language, the
configuration, the pool's client), because its start-up is part of every job's latency.
Options follow condor_submit, with one dash as HTCondor spells them (two dashes work too).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from epcore.classad import ClassAd
from epcore.cli.pool_access import (
    PoolCommandError,
    connect_jobs,
    is_remote,
    name_option,
    pool_config,
    pool_options,
    user_name,
)
from epcore.config import Config
from epcore.errors import EpError
from epcore.pool.requests import PoolClient
from epcore.submit import LocalSubmitHost, SubmitContext, build_jobs, parse_submit

if TYPE_CHECKING:
    from epcore.net.schedd_client import RemoteSchedd

_SETTINGS = {"help_option_names": ["-h", "--help"]}


@click.command(name="submit", context_settings=_SETTINGS)
@click.argument("submit_file", metavar="FILE")
@click.argument("assignments", nargs=-1, metavar="[NAME=VALUE]...")
@click.option("-terse", "--terse", is_flag=True, help="Print only the job ids.")
@pool_options
@name_option
def submit_command(
    submit_file: str,
    assignments: tuple[str, ...],
    terse: bool,
    config_file: str | None,
    pool_socket: str | None,
    schedd_name: str | None,
) -> None:
    """Submit the jobs a submit description FILE describes (``-`` reads standard input).

    NAME=VALUE arguments set macros before the file is read, as condor_submit's do.
    """
    try:
        text = sys.stdin.read() if submit_file == "-" else _read(submit_file)
    except OSError as error:
        raise PoolCommandError("submit", f"cannot read {submit_file}: {error.strerror}") from error
    macros = []
    for assignment in assignments:
        name, equals, value = assignment.partition("=")
        if not equals or not name.strip():
            raise PoolCommandError("submit", f"{assignment!r} is not NAME=VALUE")
        macros.append((name.strip(), value.strip()))
    config = pool_config("submit", config_file) if not pool_socket else _config_or_defaults()
    if is_remote(pool_socket) and config_file:
        config = pool_config("submit", config_file)
    client = connect_jobs("submit", config_file, pool_socket, schedd_name, config=config)
    source = "<stdin>" if submit_file == "-" else submit_file
    try:
        description = parse_submit(text, source=source)
        context = SubmitContext(
            owner=user_name(),
            submit_dir=os.getcwd(),
            now=int(time.time()),
            config=config,
            extra_macros=tuple(macros),
            environ=tuple(os.environ.items()),
        )
        cluster_id = client.new_cluster()
        cluster = build_jobs(description, context, LocalSubmitHost(), cluster_id=cluster_id)
        ids = _send(client, cluster_id, cluster.cluster_ad, cluster.procs)
    except EpError as error:
        raise PoolCommandError("submit", str(error)) from error
    if terse:
        click.echo("\n".join(ids))
        return
    click.echo("Submitting job(s)" + "." * len(ids))
    click.echo(f"{len(ids)} job(s) submitted to cluster {cluster_id}.")


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _config_or_defaults() -> Config:
    try:
        return pool_config("submit", None)
    except PoolCommandError:
        return Config.from_text("", subsystem="TOOL")


def _send(
    client: PoolClient | RemoteSchedd,
    cluster_id: int,
    cluster_ad: ClassAd,
    procs: Sequence[ClassAd],
) -> list[str]:
    # The client splits the jobs into requests; the first says how many there are in all.
    return client.submit(cluster_id, cluster_ad, procs, submission_size=len(procs))
