"""``ep run``, ``ep userprio``, ``ep vacate``, ``ep drain``: running and administering the pool.

``ep run`` starts the whole personal pool in the foreground. The others talk to it over its
socket; changing priorities, vacating and draining are for QUEUE_SUPER_USERS (root and the
user running the pool). With ``-pool HOST[:PORT]`` they speak CEDAR instead, to any
HTCondor-compatible pool (:mod:`epcore.net.tools`), which authorizes them as it authorizes
condor_userprio, condor_vacate and condor_drain (ADMINISTRATOR for the changes).
"""

from __future__ import annotations

import os
import time

import click

from epcore.cli.pool_access import (
    PoolCommandError,
    config_option,
    connect,
    daemon_name_option,
    is_remote,
    pool_options,
    tool_config,
)
from epcore.errors import EpError
from epcore.pool.personal import config_file_for, write_personal_config
from epcore.pool.roles import ROLES
from epcore.views.ad_formats import format_json, format_long
from epcore.views.group_tables import render_limits, render_quotas, rolled_up
from epcore.views.tables import render_userprio

_SETTINGS = {"help_option_names": ["-h", "--help"]}


@click.command(name="run", context_settings=_SETTINGS)
@config_option
@click.option(
    "--role",
    type=click.Choice(list(ROLES)),
    default=None,
    help="Run these daemons (personal: all; central-manager: collector and negotiator; "
    "submit: the schedd; execute: the startd). Default: as DAEMON_LIST says, else personal.",
)
def run_command(config_file: str | None, role: str | None) -> None:
    """Run the personal pool in the foreground: collector, negotiator, job queue and startd.

    Without a configuration (no --config, CONDOR_CONFIG or /etc/condor/condor_config) it
    writes the personal pool's own, one partitionable slot with the whole machine, to
    /var/lib/epcore/condor_config (root) or ~/.epcore/condor_config. Logs go to LOG
    (SchedLog, NegotiatorLog, StartLog...). SIGTERM or Ctrl-C shuts down peacefully (running
    jobs finish), a second one or SIGQUIT fast (jobs are killed and go back to idle); SIGHUP
    re-reads the configuration. With --role (or a DAEMON_LIST naming daemons) it runs only
    those, reaching the pool's collector elsewhere at COLLECTOR_HOST (else CONDOR_HOST) over
    CEDAR; a role that cannot work alone is refused naming the knob to set.
    """
    from epcore.pool.main import run_pool

    path, personal = config_file_for(
        config_file, os.environ, uid=os.getuid(), home=os.environ.get("HOME")
    )
    if personal and not os.path.exists(path):
        try:
            write_personal_config(path)
        except OSError as error:
            raise PoolCommandError("run", f"cannot write {path}: {error.strerror}") from error
        click.echo(f"ep run: wrote the personal pool's configuration to {path}", err=True)
    click.echo(f"ep run: starting the pool with {path}; submit jobs with: ep submit FILE", err=True)
    try:
        run_pool(path, role)
    except EpError as error:
        raise PoolCommandError("run", str(error)) from error
    click.echo("ep run: the pool has shut down", err=True)


@click.command(name="userprio", context_settings=_SETTINGS)
@click.option("-setfactor", "--setfactor", nargs=2, default=None, metavar="USER FACTOR")
@click.option("-setceil", "--setceil", nargs=2, default=None, metavar="USER CEILING")
@click.option("-set-floor", "--set-floor", "set_floor", nargs=2, default=None, metavar="USER FLOOR")
@click.option("-resetusage", "--resetusage", default=None, metavar="USER")
@click.option("-delete", "--delete", default=None, metavar="USER")
@click.option(
    "-allusers", "--allusers", "all_users", is_flag=True, help="Every submitter, active or not."
)
@click.option(
    "-all",
    "--all",
    "all_fields",
    is_flag=True,
    help="Every column: also the real priority and the usage start and last usage times.",
)
@click.option("-most", "--most", "most", is_flag=True, help="The default columns.")
@click.option(
    "-grouprollup",
    "--grouprollup",
    "group_rollup",
    is_flag=True,
    help="List the accounting groups too, each with its subgroups' usage added.",
)
@click.option("-quotas", "--quotas", "quotas", is_flag=True, help="The groups' quotas and demand.")
@click.option(
    "-limits",
    "--limits",
    "limits",
    is_flag=True,
    help="Each concurrency limit's use and maximum (also in -l's Accountant ad).",
)
@click.option("-l", "-long", "--long", "long_", is_flag=True, help="Every attribute.")
@click.option("-json", "--json", "as_json", is_flag=True, help="The ads as JSON.")
@pool_options
@daemon_name_option
def userprio_command(
    setfactor: tuple[str, str] | None,
    setceil: tuple[str, str] | None,
    set_floor: tuple[str, str] | None,
    resetusage: str | None,
    delete: str | None,
    all_users: bool,
    all_fields: bool,
    most: bool,
    group_rollup: bool,
    quotas: bool,
    limits: bool,
    long_: bool,
    as_json: bool,
    config_file: str | None,
    pool_socket: str | None,
    daemon_name: str | None,
) -> None:
    """Show the submitters' priorities, or change them, like condor_userprio.

    As condor_userprio's: -allusers lists inactive submitters too, -all shows every column,
    -most the default ones, -grouprollup adds the accounting groups with their subgroups'
    usage, -quotas shows the groups' quotas; -limits the concurrency limits' use.
    """
    changes: list[tuple[str, str, float | None]] = []
    for command, pair in (
        ("SetFactor", setfactor),
        ("SetCeiling", setceil),
        ("SetFloor", set_floor),
    ):
        if pair is not None:
            user, text = pair
            try:
                value = float(text)
            except ValueError as error:
                raise PoolCommandError("userprio", f"{text!r} is not a number") from error
            if command == "SetFactor" and value < 1.0:
                raise PoolCommandError("userprio", "the priority factor must be at least 1.0")
            changes.append((command, user, value))
    if resetusage:
        changes.append(("ResetUsage", resetusage, None))
    if delete:
        changes.append(("DeleteSubmitter", delete, None))
    try:
        if pool_socket is not None and is_remote(pool_socket):
            # Imported here: the CEDAR client (and its cryptography) costs the local
            # commands' start nothing.
            from epcore.net import tools

            config = tool_config("userprio", config_file)
            host, port, _ = tools.locate(pool_socket, config, "negotiator", daemon_name)
            for command, user, number in changes:
                tools.set_submitter((host, port), config, command, user, number)
                click.echo(f"{command} of {user} done.")
            if changes:
                return
            ads = tools.priorities((host, port), config)
        else:
            client = connect("userprio", config_file, pool_socket)
            for command, user, number in changes:
                client.set_submitter(command, user, number)
                click.echo(f"{command} of {user} done.")
            if changes:
                return
            ads = client.user_prio(all_users=all_users)
    except EpError as error:
        raise PoolCommandError("userprio", str(error)) from error
    if as_json:
        click.echo(format_json(ads), nl=False)
    elif long_:
        click.echo(format_long(ads), nl=False)
    elif quotas:
        click.echo(render_quotas(ads), nl=False)
    elif limits:
        click.echo(render_limits(ads), nl=False)
    else:
        shown = rolled_up(ads) if group_rollup else ads
        click.echo(
            render_userprio(
                shown,
                now=time.time(),
                all_users=all_users,
                all_fields=all_fields,
                groups=group_rollup,
            ),
            nl=False,
        )


@click.command(name="vacate", context_settings=_SETTINGS)
@click.argument("slots", nargs=-1, metavar="[SLOT]...")
@click.option("-fast", "--fast", is_flag=True, help="Kill the jobs at once (no vacate time).")
@pool_options
@daemon_name_option
def vacate_command(
    slots: tuple[str, ...],
    fast: bool,
    config_file: str | None,
    pool_socket: str | None,
    daemon_name: str | None,
) -> None:
    """Vacate the jobs of the named slots (default: every slot), like condor_vacate; the jobs
    go back to idle in the queue. With -pool, the startd -name names (else the first) is
    sent the vacate, which HTCondor's startd does not answer."""
    try:
        if pool_socket is not None and is_remote(pool_socket):
            # Imported here: the CEDAR client (and its cryptography) costs the local
            # commands' start nothing.
            from epcore.net import tools

            config = tool_config("vacate", config_file)
            host, port, _ = tools.locate(pool_socket, config, "startd", daemon_name)
            for slot in slots or (None,):
                tools.vacate((host, port), config, slot, fast)
                click.echo(f"Sent the vacate of {slot or 'every slot'} to <{host}:{port}>.")
            return
        client = connect("vacate", config_file, pool_socket)
        done = []
        for slot in slots or (None,):
            done.extend(client.vacate(slot, fast))
    except EpError as error:
        raise PoolCommandError("vacate", str(error)) from error
    for name in done:
        click.echo(f"Vacated {name}.")
    if not done:
        click.echo("No claimed slot to vacate.")


@click.command(name="drain", context_settings=_SETTINGS)
@click.option(
    "-how",
    "--how",
    type=click.Choice(["graceful", "quick", "fast"]),
    default="graceful",
    show_default=True,
)
@click.option("-graceful", "how", flag_value="graceful", help="Same as -how graceful.")
@click.option("-quick", "how", flag_value="quick", help="Same as -how quick.")
@click.option("-fast", "how", flag_value="fast", help="Same as -how fast.")
@click.option("-check", "--check", default=None, metavar="EXPR", help="Drain only if EXPR holds.")
@click.option("-start", "--start", default=None, metavar="EXPR", help="START while draining.")
@click.option("-cancel", "--cancel", is_flag=True, help="Cancel the drain.")
@pool_options
@daemon_name_option
def drain_command(
    how: str,
    check: str | None,
    start: str | None,
    cancel: bool,
    config_file: str | None,
    pool_socket: str | None,
    daemon_name: str | None,
) -> None:
    """Drain the machine's slots, or cancel a drain, like condor_drain.

    With -pool, the startd -name names, else the first the collector knows.
    """
    try:
        if pool_socket is not None and is_remote(pool_socket):
            # Imported here: the CEDAR client (and its cryptography) costs the local
            # commands' start nothing.
            from epcore.net import tools

            config = tool_config("drain", config_file)
            address = tools.locate(pool_socket, config, "startd", daemon_name)[:2]
            if cancel:
                tools.cancel_drain(address, config)
                click.echo("Drain cancelled.")
            else:
                tools.drain(address, config, how, check, start)
                click.echo(f"Draining ({how}).")
            return
        client = connect("drain", config_file, pool_socket)
        if cancel:
            client.cancel_drain()
            click.echo("Drain cancelled.")
        else:
            client.drain(how, check, start)
            click.echo(f"Draining ({how}).")
    except EpError as error:
        raise PoolCommandError("drain", str(error)) from error
