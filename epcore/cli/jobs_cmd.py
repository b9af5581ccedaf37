"""``ep q``, ``ep rm``, ``ep hold``, ``ep release``: a user's jobs in the pool.

They talk to the running pool (``ep run``) over its socket; the pool knows who runs them
from the socket itself. Options follow condor_q, with one dash as HTCondor spells them (two
dashes work too). ``ep submit`` is :mod:`epcore.cli.submit_cmd`, a module of its own so that
submitting imports neither the views nor the queue's model.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

import click

from epcore.classad import ClassAd
from epcore.cli.pool_access import (
    PoolCommandError,
    connect_jobs,
    name_option,
    pool_options,
    user_name,
)
from epcore.errors import EpError
from epcore.schedd.jobqueue_model import JobStatus
from epcore.views.ad_formats import format_autoformat, format_json, format_long
from epcore.views.tables import render_hold_reasons, render_queue

_SETTINGS = {"help_option_names": ["-h", "--help"]}


def _is_job_id(text: str) -> bool:
    head, _, tail = text.partition(".")
    return head.isdigit() and (not tail or tail.isdigit())


def selection(items: Sequence[str], constraint: str | None) -> str | None:
    """A constraint for job ids (``12``, ``12.3``) and owners named on the command line,
    ANDed with ``constraint``."""
    clauses = []
    for item in items:
        if _is_job_id(item):
            cluster, _, proc = item.partition(".")
            clause = f"ClusterId == {int(cluster)}"
            if proc:
                clause += f" && ProcId == {int(proc)}"
            clauses.append(f"({clause})")
        else:
            quoted = item.replace("\\", "\\\\").replace('"', '\\"')
            clauses.append(f'(Owner == "{quoted}")')
    chosen = " || ".join(clauses) if clauses else None
    if chosen and constraint:
        return f"({chosen}) && ({constraint})"
    return chosen or constraint


# -- ep q ------------------------------------------------------------------------------------


@click.command(name="q", context_settings=_SETTINGS)
@click.argument("items", nargs=-1, metavar="[ID|OWNER|ATTR]...")
@click.option(
    "-allusers",
    "-all-users",
    "-all",
    "--allusers",
    "--all-users",
    "--all",
    "allusers",
    is_flag=True,
    help="Every user's jobs (default: yours); condor_q takes -all as short for -allusers.",
)
@click.option("-constraint", "--constraint", default=None, help="Jobs for which EXPR is true.")
@click.option("-l", "-long", "--long", "long_", is_flag=True, help="Every attribute.")
@click.option("-json", "--json", "as_json", is_flag=True, help="The ads as JSON.")
@click.option(
    "-af",
    "-autoformat",
    "--autoformat",
    "autoformat",
    is_flag=True,
    help="Print the values of the ATTRs (arguments that are not job ids).",
)
@click.option("-hold", "--hold", is_flag=True, help="Held jobs and why.")
@click.option("-run", "--run", is_flag=True, help="Running jobs only.")
@click.option("-idle", "--idle", is_flag=True, help="Idle jobs only.")
@click.option(
    "-better-analyze",
    "-analyze",
    "--better-analyze",
    "--analyze",
    "analyze",
    is_flag=True,
    help="Why each idle job does or does not match the pool's slots.",
)
@click.option("-history", "--history", is_flag=True, help="Jobs that left the queue.")
@pool_options
@name_option
def queue_command(
    items: tuple[str, ...],
    allusers: bool,
    constraint: str | None,
    long_: bool,
    as_json: bool,
    autoformat: bool,
    hold: bool,
    run: bool,
    idle: bool,
    analyze: bool,
    history: bool,
    config_file: str | None,
    pool_socket: str | None,
    schedd_name: str | None,
) -> None:
    """Show jobs in the queue, like condor_q (by default your own, one line each)."""
    attributes = [i for i in items if not _is_job_id(i)] if autoformat else []
    chosen = [i for i in items if _is_job_id(i)] if autoformat else list(items)
    if autoformat and not attributes:
        raise PoolCommandError("q", "-af needs at least one attribute")
    names_user = any(not _is_job_id(i) for i in chosen)
    if not allusers and not names_user and not any(_is_job_id(i) for i in chosen):
        chosen.append(user_name())
    statuses = [s for s, on in ((JobStatus.HELD, hold), (JobStatus.RUNNING, run)) if on]
    if idle:
        statuses.append(JobStatus.IDLE)
    expression = selection(chosen, constraint)
    if statuses:
        wanted = " || ".join(f"JobStatus == {int(s)}" for s in statuses)
        expression = f"({expression}) && ({wanted})" if expression else wanted
    client = connect_jobs("q", config_file, pool_socket, schedd_name)
    now = time.time()
    try:
        jobs = client.query_jobs(expression, history=history)
        if analyze:
            texts = [
                client.analyze(f"{job.evaluate('ClusterId')}.{job.evaluate('ProcId')}")
                for job in jobs
                if job.evaluate("JobStatus") == int(JobStatus.IDLE)
            ]
    except EpError as error:
        raise PoolCommandError("q", str(error)) from error
    jobs.sort(key=lambda j: (_number(j, "ClusterId"), _number(j, "ProcId")))
    if analyze:
        click.echo("\n".join(texts) if texts else "No idle jobs to analyze.\n", nl=False)
    elif as_json:
        click.echo(format_json(jobs), nl=False)
    elif long_:
        click.echo(format_long(jobs), nl=False)
    elif autoformat:
        click.echo(format_autoformat(jobs, attributes, now), nl=False)
    elif hold:
        click.echo(render_hold_reasons(jobs), nl=False)
    else:
        click.echo(render_queue(jobs, now=now), nl=False)


def _number(job: ClassAd, name: str) -> int:
    value = job.evaluate(name)
    return value if isinstance(value, int) else 0


# -- ep rm / hold / release ------------------------------------------------------------------


def _action_command(name: str, request: str, verb: str) -> click.Command:
    @click.command(name=name, context_settings=_SETTINGS)
    @click.argument("items", nargs=-1, metavar="[ID|OWNER]...")
    @click.option("-all", "--all", "all_jobs", is_flag=True, help="Every job you may act on.")
    @click.option("-constraint", "--constraint", default=None, help="Jobs for which EXPR is true.")
    @click.option("-reason", "--reason", default=None, help="The reason recorded in the job.")
    @pool_options
    @name_option
    def command(
        items: tuple[str, ...],
        all_jobs: bool,
        constraint: str | None,
        reason: str | None,
        config_file: str | None,
        pool_socket: str | None,
        schedd_name: str | None,
    ) -> None:
        if not items and not constraint and not all_jobs:
            raise PoolCommandError(name, "name jobs (ids or owners), -constraint or -all")
        expression = selection(items, constraint)
        if all_jobs and expression is None:
            expression = "true" if os.getuid() == 0 else selection([user_name()], None)
        client = connect_jobs(name, config_file, pool_socket, schedd_name)
        try:
            done, refused = client.act(request, constraint=expression, reason=reason)
        except EpError as error:
            raise PoolCommandError(name, str(error)) from error
        for job_id in done:
            click.echo(f"Job {job_id} {verb}.")
        for why in refused:
            click.echo(f"ep {name}: {why}", err=True)
        if not done:
            if not refused:
                click.echo(f"ep {name}: no job matched", err=True)
            raise SystemExit(1)

    command.help = f"{request} jobs, like condor_{name}."
    return command


remove_command = _action_command("rm", "Remove", "marked for removal")
hold_command = _action_command("hold", "Hold", "held")
release_command = _action_command("release", "Release", "released")
