"""Universes the machine failed: a starter's report turns a universe off on every slot.

HTCondor's starter tells its startd ``HasVM = false`` with ``VMOfflineReason`` when the
hypervisor failed a VM job (not the job's fault); the startd then advertises on all slots
``<Universe>OfflineReason``, ``<Universe>OfflineTime`` and ``OfflineUniverses`` (the name and
the JobUniverse of each), so that no further job of that universe matches. The mark lasts
until the startd restarts or is reconfigured (the plugins test the universe again then), or
until a re-test every ``<U>_RECHECK_INTERVAL`` seconds (HTCondor's VM_RECHECK_INTERVAL, 600 by
default) finds ``Has<U>`` true again.

The starter's report is its FINISHED message's ``protocol.OFFLINE_*`` attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from epcore.classad import ClassAd
from epcore.classad.unparse import quote_string
from epcore.config import Config
from epcore.starter import protocol
from epcore.types import MachineAttribute


@attrs.frozen
class OfflineMark:
    """One universe off: its attribute name (``VM``), JobUniverse, why and since when."""

    universe: str
    number: int
    reason: str
    since: float


#: HTCondor's VM_RECHECK_INTERVAL default, for every universe's ``<U>_RECHECK_INTERVAL``.
RECHECK_SECONDS = 600.0


def recheck_interval(config: Config, universe: str) -> float:
    """Seconds between two re-tests of an offline ``universe`` (``VM_RECHECK_INTERVAL``)."""
    return max(config.get_float(f"{universe.upper()}_RECHECK_INTERVAL", RECHECK_SECONDS), 1.0)


def reported(message: ClassAd, now: float) -> OfflineMark | None:
    """The universe a starter's FINISHED message reports offline, if any (and well formed)."""
    universe = message.evaluate(protocol.OFFLINE_UNIVERSE)
    number = message.evaluate(protocol.OFFLINE_UNIVERSE_NUMBER)
    reason = message.evaluate(protocol.OFFLINE_REASON)
    if not isinstance(universe, str) or not universe.isidentifier():
        return None
    if not isinstance(number, int) or isinstance(number, bool):
        return None
    return OfflineMark(universe, number, reason if isinstance(reason, str) else "", now)


class OfflineUniverses:
    """The startd's offline marks, by universe name."""

    def __init__(self) -> None:
        self.marks: dict[str, OfflineMark] = {}
        #: When each marked universe was last tested (its mark's time at first).
        self.tested: dict[str, float] = {}

    def mark(self, mark: OfflineMark) -> None:
        """Turn ``mark.universe`` off (again: the latest reason and time win)."""
        self.marks[mark.universe] = mark
        self.tested[mark.universe] = mark.since

    def clear(self) -> None:
        """Every universe back on (a reconfiguration tests them again)."""
        self.marks.clear()
        self.tested.clear()

    def due(self, config: Config, now: float) -> list[str]:
        """The marked universes whose re-test time has come."""
        return [
            universe
            for universe in self.marks
            if now - self.tested[universe] >= recheck_interval(config, universe)
        ]

    def recheck(
        self, config: Config, now: float, test: Callable[[], Sequence[MachineAttribute]]
    ) -> list[str]:
        """Re-test the universes that are due with ``test`` (the plugins' machine
        attributes, as at a reconfiguration) and clear those it says ``Has<U> = true``;
        the universes cleared. The test runs only when one is due (it may ask a daemon)."""
        due = self.due(config, now)
        if not due:
            return []
        found = {attribute.name.lower(): attribute for attribute in test()}
        cleared: list[str] = []
        for universe in due:
            self.tested[universe] = now
            has = found.get(f"has{universe.lower()}")
            if has is not None and not has.expression and has.value is True:
                del self.marks[universe]
                del self.tested[universe]
                cleared.append(universe)
        return cleared

    def attributes(self) -> list[MachineAttribute]:
        """What every slot advertises: ``Has<U> = false``, ``<U>OfflineReason``,
        ``<U>OfflineTime`` per universe and ``OfflineUniverses`` (the names and numbers);
        nothing while none is off."""
        if not self.marks:
            return []
        found: list[MachineAttribute] = []
        listed: list[str] = []
        for mark in self.marks.values():
            found += [
                MachineAttribute(f"Has{mark.universe}", False),
                MachineAttribute(f"{mark.universe}OfflineReason", mark.reason),
                MachineAttribute(f"{mark.universe}OfflineTime", int(mark.since)),
            ]
            listed += [quote_string(mark.universe), str(mark.number)]
        found.append(MachineAttribute("OfflineUniverses", "{" + ", ".join(listed) + "}", True))
        return found
