"""``ep status``: the pool's slots (and other ads), as condor_status shows them.

When a pool runs (``ep run``) the ads come from its collector: the slots as the startd
advertised them, and with ``-schedd``, ``-submitters``, ``-negotiator``, ``-defrag`` or
``-any`` the other daemons' ads; ``-absent`` shows the absent ads of machines that stopped
reporting, ``-offline`` the offline ads of machines that went to sleep (HIBERNATE). When no
pool answers, the machine's slot ads are computed on the spot, the way the startd would
compute them at startup (every slot in the state a startd starts in, Owner/Idle).

Options follow condor_status (one dash, as it spells them; two dashes work too): ``-l``
(``-long``) prints every attribute, ``-af ATTR...`` (``-autoformat``) the values of the
attributes or expressions that follow, ``-constraint EXPR`` keeps the slots for which EXPR is
true, ``-json`` prints the ads as JSON; ``--config FILE`` reads FILE instead of the
configuration HTCondor would find; ``-pool HOST[:PORT]`` asks that collector over CEDAR
(HTCondor's wire protocol) instead of the local pool. Other arguments name slots or machines
to show.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

import attrs
import click

from epcore.classad import ClassAd, ClassAdSyntaxError
from epcore.config import Config
from epcore.errors import EpError
from epcore.views.ad_formats import (
    format_autoformat,
    format_json,
    format_long,
    select,
)
from epcore.views.tables import AD_COLUMNS, render_ads, render_slots

if TYPE_CHECKING:
    from epcore.plugins import Plugins
    from epcore.types import MachineHost

_LONG = frozenset({"-l", "-long"})
_JSON = frozenset({"-json"})
_AUTOFORMAT = frozenset({"-af", "-autoformat"})
_CONSTRAINT = frozenset({"-constraint", "-const"})
_CONFIG = frozenset({"-config"})
_POOL = frozenset({"-pool"})
_AD_TYPES = {
    "-schedd": "Scheduler",
    "-submitters": "Submitter",
    "-negotiator": "Negotiator",
    "-collector": "Collector",
    "-defrag": "Defrag",
    "-any": None,
}
_ABSENT = frozenset({"-absent"})
_OFFLINE = frozenset({"-offline"})
#: What ``-offline`` adds to the constraint: the ads a sleeping machine left in the collector.
OFFLINE_CONSTRAINT = "Offline =?= true"


class StatusFailure(click.ClickException):
    """Anything ``ep status`` cannot do: printed as ``ep status: <message>``, exit status 1."""

    exit_code = 1

    def show(self, file: IO[str] | None = None) -> None:
        """Print the message the way HTCondor's tools print theirs."""
        click.echo(f"ep status: {self.format_message()}", err=True)


@attrs.frozen
class StatusRequest:
    """What the arguments ask for."""

    long: bool = False
    json: bool = False
    autoformat: tuple[str, ...] = ()
    constraint: str | None = None
    config_file: str | None = None
    names: tuple[str, ...] = ()
    my_type: str | None = "Machine"
    absent: bool = False
    pool: str | None = None


def _spelling(arg: str) -> str:
    return arg[1:] if arg.startswith("--") else arg


def parse_arguments(args: Sequence[str]) -> StatusRequest:
    """Read condor_status-style arguments (raises StatusFailure on a bad one)."""
    long = as_json = False
    constraint: str | None = None
    config_file: str | None = None
    names: list[str] = []
    autoformat: list[str] = []
    my_type: str | None = "Machine"
    absent = offline = False
    pool: str | None = None
    position = 0
    while position < len(args):
        arg = args[position]
        option = _spelling(arg).lower()
        position += 1
        if option in _LONG:
            long = True
        elif option in _JSON:
            as_json = True
        elif option in _AD_TYPES:
            my_type = _AD_TYPES[option]
        elif option in _ABSENT:
            absent = True
        elif option in _OFFLINE:
            offline = True
        elif option in _AUTOFORMAT:
            # Like condor_status, -af takes every following argument that is not an option.
            start = position
            while position < len(args) and not args[position].startswith("-"):
                position += 1
            if position == start:
                raise StatusFailure(f"{arg} needs at least one attribute")
            autoformat.extend(args[start:position])
        elif option in _CONSTRAINT or option in _CONFIG or option in _POOL:
            if position >= len(args):
                raise StatusFailure(f"{arg} needs a value")
            if option in _CONSTRAINT:
                constraint = args[position]
            elif option in _POOL:
                pool = args[position]
            else:
                config_file = args[position]
            position += 1
        elif arg.startswith("-") and arg != "-":
            raise StatusFailure(f"unknown option {arg}")
        else:
            names.append(arg)
    if offline:
        wanted = OFFLINE_CONSTRAINT
        constraint = wanted if constraint is None else f"({wanted}) && ({constraint})"
    return StatusRequest(
        long=long,
        json=as_json,
        autoformat=tuple(autoformat),
        constraint=constraint,
        config_file=config_file,
        names=tuple(names),
        my_type=my_type,
        absent=absent,
        pool=pool,
    )


@attrs.frozen
class MachineAds:
    """The slot ads of the machine, and the configuration problems met building them."""

    ads: tuple[ClassAd, ...]
    problems: tuple[str, ...] = ()


def machine_ads(
    config_file: str | None,
    now: float,
    *,
    host: MachineHost | None = None,
    plugins: Plugins | None = None,
) -> MachineAds:
    """The slot ads the startd would advertise for this machine at ``now``.

    ``host`` defaults to the local machine and ``plugins`` to every installed plugin.
    """
    # Imported here: building this machine's slots is the rare branch (no pool answers), and
    # the slot model and plugins would double the start of every ep status.
    from epcore.plugins import load_plugins
    from epcore.slots.ads import build_slot_ads, slot_ad_problems
    from epcore.slots.inventory import build_inventory, execute_disks_kb
    from epcore.slots.layout import plan_slots

    if host is None:
        from epcore.builtin.host import LocalHost

        host = LocalHost()
    if plugins is None:
        plugins = load_plugins()
    config = Config.load(
        config_file,
        host=host,
        defaults=plugins.knob_defaults(),
        eval_context=plugins.eval_context(),
    )
    detected = plugins.detect_resources(config, host)
    inventory = build_inventory(config, detected, execute_disks_kb=execute_disks_kb(config, host))
    layout = plan_slots(config, inventory)
    readings = plugins.host_readings(config, host, now)
    extras = plugins.machine_attributes(config, inventory)
    host_name = config.get("FULL_HOSTNAME") or host.facts().full_hostname
    ads = build_slot_ads(
        config,
        inventory,
        layout,
        readings,
        {},
        now,
        host_name=host_name,
        extra_attributes=extras,
        utc_offset=time.localtime(now).tm_gmtoff,
    )
    return MachineAds(tuple(ads), tuple(slot_ad_problems(config, layout)))


def _named(ads: Sequence[ClassAd], names: Sequence[str]) -> list[ClassAd]:
    if not names:
        return list(ads)
    wanted = {name.lower() for name in names}

    def chosen(ad: ClassAd) -> bool:
        name = ad.evaluate("Name")
        machine = ad.evaluate("Machine")
        candidates = {str(name).lower(), str(machine).lower()}
        if isinstance(name, str) and "@" in name:
            candidates.add(name.split("@", 1)[0].lower())
        return bool(candidates & wanted)

    return [ad for ad in ads if chosen(ad)]


def render(request: StatusRequest, ads: Sequence[ClassAd], now: float) -> str:
    """The output ``request`` asks for, for ``ads`` (raises StatusFailure on a bad constraint
    or -af expression)."""
    try:
        chosen = select(_named(ads, request.names), request.constraint, now)
    except ClassAdSyntaxError as error:
        raise StatusFailure(f"constraint {request.constraint!r} does not parse: {error}") from error
    if request.json:
        return format_json(chosen)
    if request.long:
        return format_long(chosen)
    if request.autoformat:
        try:
            return format_autoformat(chosen, request.autoformat, now)
        except ClassAdSyntaxError as error:
            raise StatusFailure(f"-af expression does not parse: {error}") from error
    if request.my_type != "Machine":
        return render_ads(chosen, AD_COLUMNS.get(request.my_type, AD_COLUMNS[None]))
    return render_slots(chosen, now=now)


@click.command(
    name="status",
    context_settings={
        "ignore_unknown_options": True,
        "allow_extra_args": True,
        # Not -h: click would read -schedd as -s -c -h... and show the help.
        "help_option_names": ["-help", "--help"],
    },
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def status_command(args: tuple[str, ...]) -> None:
    """Show the pool's slots (or this machine's, when no pool runs), like condor_status.

    \b
    ep status                      the default table
    ep status -schedd | -submitters | -negotiator | -defrag | -any | -absent | -offline
    ep status -l                   every attribute of every slot
    ep status -af Name Cpus State  values of attributes or expressions
    ep status -constraint 'Cpus > 1'
    ep status -json
    ep status --config FILE        read FILE instead of the usual configuration
    ep status -pool HOST[:PORT]    ask that collector over CEDAR (HTCondor's or epcore's)
    """
    request = parse_arguments(args)
    now = time.time()
    if request.pool is not None:
        click.echo(render(request, remote_ads(request), now), nl=False)
        return
    pooled = pool_ads(request)
    if pooled is not None:
        click.echo(render(request, pooled, now), nl=False)
        return
    if request.my_type != "Machine" or request.absent:
        raise StatusFailure("no pool is running here to ask for those ads (start one: ep run)")
    try:
        found = machine_ads(request.config_file, now)
    except (EpError, OSError) as error:
        raise StatusFailure(str(error)) from error
    for problem in found.problems:
        click.echo(f"ep status: warning: {problem}", err=True)
    click.echo(render(request, found.ads, now), nl=False)


def pool_ads(request: StatusRequest) -> list[ClassAd] | None:
    """The ads of the running pool's collector, or None when no pool answers."""
    import os

    from epcore.pool.personal import config_file_for
    from epcore.pool.requests import PoolClient
    from epcore.pool.setup import PoolPaths

    path, _ = config_file_for(
        request.config_file, os.environ, uid=os.getuid(), home=os.environ.get("HOME")
    )
    try:
        config = Config.load(path, subsystem="TOOL")
        client = PoolClient(PoolPaths.from_config(config).control_socket, timeout=10)
        return client.query_ads(request.my_type, absent=request.absent)
    except (EpError, OSError):  # ControlError too: no pool answers there
        return None


#: The query command of each ad type ``ep status`` shows (condor_commands.h).
_QUERY_COMMANDS = {
    "Machine": 5,
    "Scheduler": 6,
    "Submitter": 12,
    "Collector": 20,
    "Negotiator": 50,
    # Ads of other types are generic: the query names the type (condor_status -defrag).
    "Defrag": 74,
    None: 48,
}


#: The ad types asked for with QUERY_GENERIC_ADS, which names them in TargetType.
_GENERIC = {"Defrag": "Defrag"}


def remote_ads(request: StatusRequest) -> list[ClassAd]:
    """The ads of the collector ``-pool`` names, over CEDAR (StatusFailure when it cannot be
    asked); the security policy is the CLIENT level's of the usual configuration."""
    import os

    from epcore.net.client import query_collector
    from epcore.net.sinful import SinfulError, parse_sinful
    from epcore.pool.personal import config_file_for

    assert request.pool is not None
    where = request.pool if ":" in request.pool.strip("<>") else f"{request.pool}:9618"
    try:
        address = parse_sinful(where)
    except SinfulError as error:
        raise StatusFailure(f"-pool {request.pool}: {error.reason}") from None
    path, _ = config_file_for(
        request.config_file, os.environ, uid=os.getuid(), home=os.environ.get("HOME")
    )
    try:
        config = Config.load(path if os.path.exists(path) else None, subsystem="TOOL")
    except (EpError, OSError):
        config = Config.from_text("", subsystem="TOOL")
    try:
        return query_collector(
            address.host,
            address.port,
            _QUERY_COMMANDS[request.my_type],
            config,
            constraint="Absent =?= true" if request.absent else None,
            target_type="Any" if request.my_type is None else _GENERIC.get(request.my_type),
        )
    except (EpError, OSError) as error:
        raise StatusFailure(f"cannot query the collector at {address}: {error}") from None
