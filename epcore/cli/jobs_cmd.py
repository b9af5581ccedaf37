"""``ep submit``, ``ep q``, ``ep rm``, ``ep hold``, ``ep release``: a user's jobs in the pool.

They talk to the running pool (``ep run``) over its socket; the pool knows who runs them
from the socket itself. Options follow condor_submit and condor_q, with one dash as
HTCondor spells them (two dashes work too).
"""

from __future__ import annotations

import os
import pwd
import sys
import time
from collections.abc import Sequence

import click

from epcore.classad import ClassAd
from epcore.cli.pool_access import PoolCommandError, connect, pool_config, pool_options
from epcore.config import Config
from epcore.errors import EpError
from epcore.pool.requests import PoolClient
from epcore.schedd.jobqueue import JobStatus
from epcore.submit import LocalSubmitHost, SubmitContext, build_jobs, parse_submit
from epcore.views.ad_formats import format_autoformat, format_json, format_long
from epcore.views.tables import render_hold_reasons, render_queue

_SETTINGS = {"help_option_names": ["-h", "--help"]}


def _user() -> str:
    """Who runs the command: the account of the process's uid (not $USER, which anyone
    can set; the pool checks the uid anyway)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


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


# -- ep submit -------------------------------------------------------------------------------


@click.command(name="submit", context_settings=_SETTINGS)
@click.argument("submit_file", metavar="FILE")
@click.argument("assignments", nargs=-1, metavar="[NAME=VALUE]...")
@click.option("-terse", "--terse", is_flag=True, help="Print only the job ids.")
@pool_options
def submit_command(
    submit_file: str,
    assignments: tuple[str, ...],
    terse: bool,
    config_file: str | None,
    pool_socket: str | None,
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
    client = connect("submit", config_file, pool_socket)
    source = "<stdin>" if submit_file == "-" else submit_file
    try:
        description = parse_submit(text, source=source)
        context = SubmitContext(
            owner=_user(),
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
    client: PoolClient, cluster_id: int, cluster_ad: ClassAd, procs: Sequence[ClassAd]
) -> list[str]:
    # The client splits the jobs into requests; the first says how many there are in all.
    return client.submit(cluster_id, cluster_ad, procs, submission_size=len(procs))


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
) -> None:
    """Show jobs in the queue, like condor_q (by default your own, one line each)."""
    attributes = [i for i in items if not _is_job_id(i)] if autoformat else []
    chosen = [i for i in items if _is_job_id(i)] if autoformat else list(items)
    if autoformat and not attributes:
        raise PoolCommandError("q", "-af needs at least one attribute")
    names_user = any(not _is_job_id(i) for i in chosen)
    if not allusers and not names_user and not any(_is_job_id(i) for i in chosen):
        chosen.append(_user())
    statuses = [s for s, on in ((JobStatus.HELD, hold), (JobStatus.RUNNING, run)) if on]
    if idle:
        statuses.append(JobStatus.IDLE)
    expression = selection(chosen, constraint)
    if statuses:
        wanted = " || ".join(f"JobStatus == {int(s)}" for s in statuses)
        expression = f"({expression}) && ({wanted})" if expression else wanted
    client = connect("q", config_file, pool_socket)
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
    def command(
        items: tuple[str, ...],
        all_jobs: bool,
        constraint: str | None,
        reason: str | None,
        config_file: str | None,
        pool_socket: str | None,
    ) -> None:
        if not items and not constraint and not all_jobs:
            raise PoolCommandError(name, "name jobs (ids or owners), -constraint or -all")
        expression = selection(items, constraint)
        if all_jobs and expression is None:
            expression = "true" if os.getuid() == 0 else selection([_user()], None)
        client = connect(name, config_file, pool_socket)
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
