"""Universes the machine failed: a starter's report turns a universe off on every slot.

HTCondor's starter tells its startd ``HasVM = false`` with ``VMOfflineReason`` when the
hypervisor failed a VM job (not the job's fault); the startd then advertises on all slots
``<Universe>OfflineReason``, ``<Universe>OfflineTime`` and ``OfflineUniverses`` (the name and
the JobUniverse of each), so that no further job of that universe matches. The mark lasts
until the startd restarts or is reconfigured (the plugins test the universe again then:
HTCondor's VM_RECHECK_INTERVAL re-test).

The starter's report is its FINISHED message's ``protocol.OFFLINE_*`` attributes.
"""

from __future__ import annotations

import attrs

from epcore.classad import ClassAd
from epcore.classad.unparse import quote_string
from epcore.starter import protocol
from epcore.types import MachineAttribute


@attrs.frozen
class OfflineMark:
    """One universe off: its attribute name (``VM``), JobUniverse, why and since when."""

    universe: str
    number: int
    reason: str
    since: float


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

    def mark(self, mark: OfflineMark) -> None:
        """Turn ``mark.universe`` off (again: the latest reason and time win)."""
        self.marks[mark.universe] = mark

    def clear(self) -> None:
        """Every universe back on (a reconfiguration tests them again)."""
        self.marks.clear()

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
