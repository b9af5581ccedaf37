"""Which daemons ``ep run`` runs: a role, as ``--role`` names it or the configuration says.

The roles are HTCondor's: ``personal`` (the whole pool in one process), ``central-manager``
(collector and negotiator), ``submit`` (the schedd) and ``execute`` (the startd). Without
``--role`` the configuration's DAEMON_LIST decides (as ``use ROLE:...`` sets it); one that
names none of these daemons (the default DAEMON_LIST, or no configuration) means the
personal pool.

Until the network links come (issue 22), daemons reach each other only inside one process:
a set of daemons that needs a peer running elsewhere is refused with the knob that names the
peer, rather than started as half a pool. What can run alone does: a startd with its control
socket (its ads stay in ``$(SPOOL)/startd_ads``), a collector with a negotiator answering
queries.

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

#: What each daemon cannot work without, and the knob that says where that peer is.
_NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    SCHEDD: ((COLLECTOR, "COLLECTOR_HOST"), (NEGOTIATOR, "NEGOTIATOR_HOST")),
    NEGOTIATOR: ((COLLECTOR, "COLLECTOR_HOST"),),
    DEFRAG: ((COLLECTOR, "COLLECTOR_HOST"),),
    ROOSTER: ((COLLECTOR, "COLLECTOR_HOST"),),
}


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


def check_reachable(daemons: Collection[str], config: Config) -> None:
    """PoolError naming the knob of the first peer a daemon needs that does not run here."""
    for daemon in DAEMONS:
        if daemon not in daemons:
            continue
        for peer, knob in _NEEDS.get(daemon, ()):
            if peer not in daemons:
                where = config.get(knob) or config.get("CONDOR_HOST") or "unset"
                raise PoolError(
                    f"the {daemon} needs a {peer}, which does not run in this process; "
                    f"{knob} ({where}) is reached over the network only once issue 22 "
                    "lands: run the roles together (ep run --role personal)"
                )


def role_names(daemons: Collection[str]) -> list[str]:
    """The daemons in their turn order, for messages."""
    return [daemon for daemon in DAEMONS if daemon in daemons]
