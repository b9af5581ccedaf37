"""Universes the machine failed: a starter's report turns a universe off on every slot.

HTCondor's starter tells its startd ``HasVM = false`` with ``VMOfflineReason`` when the
hypervisor failed a VM job (not the job's fault); the startd then advertises on all slots
``<Universe>OfflineReason``, ``<Universe>OfflineTime`` and ``OfflineUniverses`` (the name and
the JobUniverse of each), so that no further job of that universe matches. The mark lasts
until the startd restarts or is reconfigured (the plugins test the universe again then), or
until a re-test every ``<U>_RECHECK_INTERVAL`` seconds (HTCondor's VM_RECHECK_INTERVAL, 600 by
default) finds ``Has<U>`` true again. The re-test runs in a worker thread: it asks the
plugins, which may ask a daemon that hangs, and the startd's loop must not wait for that.

The starter's report is its FINISHED message's ``protocol.OFFLINE_*`` attributes.
"""

from __future__ import annotations

import threading
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


@attrs.define
class _Recheck:
    """One re-test running in its worker thread: the universes it tests, when it began,
    and the plugins' answer (or the error the test raised) once it is done."""

    universes: list[str]
    began: float
    worker: threading.Thread | None = None
    answer: Sequence[MachineAttribute] | None = None
    failure: str | None = None
    done: threading.Event = attrs.field(factory=threading.Event)


class OfflineUniverses:
    """The startd's offline marks, by universe name."""

    def __init__(self) -> None:
        self.marks: dict[str, OfflineMark] = {}
        #: When each marked universe was last tested (its mark's time at first).
        self.tested: dict[str, float] = {}
        #: The re-test under way, if any (one at a time).
        self.running: _Recheck | None = None

    def mark(self, mark: OfflineMark) -> None:
        """Turn ``mark.universe`` off (again: the latest reason and time win)."""
        self.marks[mark.universe] = mark
        self.tested[mark.universe] = mark.since

    def clear(self) -> None:
        """Every universe back on (a reconfiguration tests them again); a re-test under way
        is forgotten (its answer would be older than the reconfiguration's)."""
        self.marks.clear()
        self.tested.clear()
        self.running = None

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
        """Take the answer of a finished re-test (clearing the universes it says
        ``Has<U> = true``) and start one, in a worker thread, for the universes that are due
        (``test``: the plugins' machine attributes, as at a reconfiguration); the universes
        cleared. The test runs off the caller's thread because it may ask a daemon that
        hangs (libvirtd for the VM universe): the startd's loop never waits for it, and no
        second test starts while one is still waiting."""
        cleared = self.collect()
        if self.running is None:
            due = self.due(config, now)
            if due:
                for universe in due:
                    self.tested[universe] = now
                self.running = _start(_Recheck(due, now), test)
        return cleared

    def collect(self) -> list[str]:
        """The universes a finished re-test clears (none while it runs). A universe marked
        again after the test began keeps its newer mark."""
        running = self.running
        if running is None or not running.done.is_set():
            return []
        self.running = None
        found = {attribute.name.lower(): attribute for attribute in running.answer or ()}
        cleared: list[str] = []
        for universe in running.universes:
            mark = self.marks.get(universe)
            if mark is None or mark.since > running.began:
                continue
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


def _start(recheck: _Recheck, test: Callable[[], Sequence[MachineAttribute]]) -> _Recheck:
    def run() -> None:
        try:
            recheck.answer = test()
        except Exception as error:  # a plugin's failure is a failed test, not the startd's
            recheck.failure = f"{type(error).__name__}: {error}"
        finally:
            recheck.done.set()

    # A daemon thread: a test that never returns must not keep the startd from exiting.
    recheck.worker = threading.Thread(target=run, name="ep-offline-recheck", daemon=True)
    recheck.worker.start()
    return recheck
