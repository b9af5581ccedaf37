"""ALLOW_<level> and DENY_<level>: who may run the commands of a level, in HTCondor's syntax.

Each knob is a list (commas or spaces) of entries ``user@domain/host``; an entry without a
``/`` is a user when it holds an ``@`` and a host otherwise; ``*`` matches any run of
characters in either part (``*@example.org``, ``10.0.*``, ``*/*``); a host may also be a
network, ``10.0.0.0/8`` or ``10.0.0.0/255.0.0.0``. A peer that did not authenticate is the
user ``unauthenticated@unmapped``. A level's knob falls back to ALLOW_DEFAULT / DENY_DEFAULT.

The decision is HTCondor's (condor_ipverify.cpp): a DENY entry that matches refuses; else an
ALLOW entry of the level, or of a level that implies it (DAEMON implies WRITE implies READ,
ADMINISTRATOR implies WRITE), admits; a level with no ALLOW list at all admits nobody. Every
decision comes with its reason, for the log line of a refusal.
"""

from __future__ import annotations

import fnmatch
import ipaddress
from typing import Final

import attrs

from epcore.config import Config
from epcore.net.commands import ALLOW, IMPLIES, LEVELS

#: Who a peer is when it did not authenticate (HTCondor's name).
UNAUTHENTICATED: Final = "unauthenticated@unmapped"


@attrs.frozen
class Entry:
    """One ALLOW/DENY entry: a user pattern and a host pattern (or network)."""

    user: str
    host: str
    text: str

    @classmethod
    def parse(cls, text: str) -> Entry:
        if "/" in text:
            user, _, host = text.partition("/")
            if "@" not in user and _network(text) is not None:
                return cls("*", text, text)
            return cls(user or "*", host or "*", text)
        if "@" in text:
            return cls(text, "*", text)
        return cls("*", text, text)

    def matches(self, user: str, ip: str) -> bool:
        if not fnmatch.fnmatchcase(user, self.user) and not (
            "@" not in self.user and fnmatch.fnmatchcase(user.partition("@")[0], self.user)
        ):
            return False
        if self.host == "*":
            return True
        network = _network(self.host)
        if network is not None:
            try:
                return ipaddress.ip_address(ip) in network
            except ValueError:
                return False
        return fnmatch.fnmatch(ip.lower(), self.host.lower())


def _network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    if "/" not in text:
        return None
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _entries(value: str | None) -> tuple[Entry, ...] | None:
    if value is None or not value.strip():
        return None
    return tuple(Entry.parse(item) for item in value.replace(",", " ").split())


@attrs.frozen
class Decision:
    """Whether a peer may run a command of a level, and why (for the log)."""

    allowed: bool
    reason: str


@attrs.frozen
class Authorization:
    """The ALLOW and DENY lists of every level (module docstring)."""

    allow: dict[str, tuple[Entry, ...] | None]
    deny: dict[str, tuple[Entry, ...] | None]

    @classmethod
    def from_config(cls, config: Config, subsystem: str | None = None) -> Authorization:
        """The lists as configured; with ``subsystem``, a daemon's own list of a level
        (ALLOW_NEGOTIATOR_SCHEDD) comes before the level's (ALLOW_NEGOTIATOR), as HTCondor
        reads ALLOW_<level>_<subsystem>."""

        def knob(kind: str, level: str) -> tuple[Entry, ...] | None:
            if subsystem is not None:
                daemons = _entries(config.get(f"{kind}_{level}_{subsystem}"))
                if daemons is not None:
                    return daemons
            own = _entries(config.get(f"{kind}_{level}"))
            return own if own is not None else _entries(config.get(f"{kind}_DEFAULT"))

        return cls(
            allow={level: knob("ALLOW", level) for level in LEVELS},
            deny={level: knob("DENY", level) for level in LEVELS},
        )

    def decide(self, level: str, user: str | None, ip: str) -> Decision:
        """May ``user`` (None: unauthenticated) at ``ip`` run a command of ``level``?"""
        who = user or UNAUTHENTICATED
        if level == ALLOW:
            return Decision(True, "the command is open to everyone (ALLOW)")
        for entry in self.deny.get(level) or ():
            if entry.matches(who, ip):
                return Decision(False, f"DENY_{level} matches {who} at {ip} ({entry.text})")
        for granting in _granting(level):
            for entry in self.allow.get(granting) or ():
                if entry.matches(who, ip):
                    return Decision(True, f"ALLOW_{granting} admits {who} at {ip} ({entry.text})")
        if self.allow.get(level) is None:
            return Decision(False, f"ALLOW_{level} is not set: no one may run {level} commands")
        return Decision(False, f"no entry of ALLOW_{level} matches {who} at {ip}")


def _granting(level: str) -> list[str]:
    """``level`` and every level that implies it (ALLOW_DAEMON grants WRITE and READ)."""
    found = [level]
    changed = True
    while changed:
        changed = False
        for higher, lower in IMPLIES.items():
            if lower in found and higher not in found:
                found.append(higher)
                changed = True
    return found
