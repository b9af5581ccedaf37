"""Which daemons ``ep run`` runs: a role, as ``--role`` names it or the configuration says.

The roles are HTCondor's: ``personal`` (the whole pool in one process), ``central-manager``
(collector and negotiator), ``submit`` (the schedd) and ``execute`` (the startd). Without
``--role`` the configuration's DAEMON_LIST decides (as ``use ROLE:...`` sets it); one that
names none of these daemons (the default DAEMON_LIST, or no configuration) means the
personal pool.

A role runs alone, its peers elsewhere: a startd or a schedd without a collector here
advertises to the collector that COLLECTOR_HOST (by default CONDOR_HOST) names, over CEDAR
(:mod:`epcore.links.collector`), and a schedd finds the negotiator through the collector's
Negotiator ad, as HTCondor's do. Refused, with the knob to set, is only what cannot work: a
startd or schedd with no collector named anywhere, and the daemons that work on the
collector's store in the same process (the negotiator, defrag, the rooster) without it.

The defrag daemon and the rooster run only when DAEMON_LIST names them (DEFRAG, ROOSTER), as
in HTCondor (no role has them by default); with ``--role`` each joins a role that runs the
collector it needs.
"""

from __future__ import annotations

from collections.abc import Collection

from epcore.config import Config
from epcore.errors import PoolError

COLLECTOR = "collector"
NEGOTIATOR = "negotiator"
SCHEDD = "schedd"
STARTD = "startd"
DEFRAG = "defrag"
#: The rooster (power management) runs only when DAEMON_LIST names it, as in HTCondor.
ROOSTER = "rooster"
#: Every daemon ``ep run`` can run, in the order their services run in a turn.
DAEMONS = (STARTD, SCHEDD, COLLECTOR, NEGOTIATOR, DEFRAG, ROOSTER)
#: Daemons that run only when DAEMON_LIST names them.
OPTIONAL = frozenset({DEFRAG, ROOSTER})

#: The daemons of each role.
ROLES: dict[str, frozenset[str]] = {
    "personal": frozenset({STARTD, SCHEDD, COLLECTOR, NEGOTIATOR}),
    "central-manager": frozenset({COLLECTOR, NEGOTIATOR}),
    "submit": frozenset({SCHEDD}),
    "execute": frozenset({STARTD}),
}

#: The daemons that read the collector's store in their own process.
_BESIDE_COLLECTOR = (NEGOTIATOR, DEFRAG, ROOSTER)
#: The daemons that reach a collector elsewhere when none runs here.
_ADVERTISERS = (STARTD, SCHEDD)


def daemons_of(role: str | None, config: Config) -> frozenset[str]:
    """The daemons to run for ``role`` (None: as the configuration's DAEMON_LIST says)."""
    listed = {name.lower() for name in config.get_list("DAEMON_LIST")}
    optional = listed & OPTIONAL
    if role is not None:
        try:
            daemons = ROLES[role]
        except KeyError:
            known = ", ".join(ROLES)
            raise PoolError(f"no role {role!r}; the roles are {known}") from None
        return daemons | optional if COLLECTOR in daemons else daemons
    chosen = frozenset(listed & set(DAEMONS) - OPTIONAL)
    return (chosen or ROLES["personal"]) | optional


def collector_named(config: Config) -> str | None:
    """Where COLLECTOR_HOST (else CONDOR_HOST) says the pool's collector is; None when
    neither names one."""
    for knob in ("COLLECTOR_HOST", "CONDOR_HOST"):
        words = (config.get(knob) or "").replace(",", " ").split()
        if words:
            return words[0]
    return None


def check_reachable(daemons: Collection[str], config: Config) -> None:
    """PoolError naming the knob (or the daemon) that a set of daemons lacks (module
    docstring)."""
    if COLLECTOR in daemons:
        return
    for daemon in _BESIDE_COLLECTOR:
        if daemon in daemons:
            raise PoolError(
                f"the {daemon} runs only beside its collector: add COLLECTOR to DAEMON_LIST "
                "(or run ep run --role central-manager)"
            )
    alone = [daemon for daemon in _ADVERTISERS if daemon in daemons]
    if alone and collector_named(config) is None:
        raise PoolError(
            f"the {alone[0]} needs the pool's collector, which does not run in this process: "
            "set COLLECTOR_HOST (or CONDOR_HOST) to the central manager's host[:port]"
        )


def role_names(daemons: Collection[str]) -> list[str]:
    """The daemons in their turn order, for messages."""
    return [daemon for daemon in DAEMONS if daemon in daemons]
