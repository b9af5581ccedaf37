"""The startd's broken slots and clean-up reminders (HTCondor's ``Claim::starterExited`` and
``CleanupReminderTimerCallback``).

A starter whose job left something it could not clean up reports it (protocol.BROKEN, a
:class:`~epcore.types.SlotBreak`) and exits with a status of the broken range (15: a logical
volume); the slot is marked broken (:mod:`epcore.slots.broken`). What is left, named by the
report, becomes a reminder: every STARTD_CLEANUP_REMINDER_TIMER_INTERVAL seconds (62) the
startd's scratch filesystem retries its removal, on HTCondor's back-off (the 1st, 2nd, 4th,
8th... tick for an hour, then hourly, after a day daily; every tick with
AGGRESSIVE_CLEANUP_REMINDER); once removed, the break is mended. The volumes the scratch
filesystem's start could not remove become reminders too, with no break. At the startd's
normal end the scratch filesystem is stopped (a loop-backed volume group it made goes).
"""

from __future__ import annotations

import math
import selectors
from typing import TYPE_CHECKING

import attrs

from epcore.errors import EpError
from epcore.slots.broken import broken_by_exit
from epcore.types import SlotBreak

if TYPE_CHECKING:
    from epcore.classad import ClassAd
    from epcore.startd.startd import Startd
    from epcore.startd.starters import StarterHandle


@attrs.define
class Reminder:
    """Something left to remove: ``item`` of scratch filesystem ``backend``; ``refid`` the
    break it mends (0: none); ``tries`` the timer's ticks so far."""

    backend: str
    item: str
    refid: int = 0
    tries: int = 0


def retry_on(tick: int) -> bool:
    """Whether a reminder is retried at its ``tick``-th tick: powers of two for the first
    hour of (minute) ticks, then every 60th, after a day every 1440th (HTCondor's)."""
    if tick > 60 * 24:
        return tick % (60 * 24) == 0
    if tick > 60:
        return tick % 60 == 0
    return tick & (tick - 1) == 0


class Cleanup:
    """Breaks and reminders of one startd (module docstring); a companion of its loop."""

    def __init__(self, startd: Startd) -> None:
        self.startd = startd
        self.reminders: list[Reminder] = []
        self.last_refid = 0
        self.next_tick = math.inf

    def interval(self) -> float:
        """Seconds between two ticks of the reminders' timer (0 or less: no retries)."""
        return self.startd.config.get_float("STARTD_CLEANUP_REMINDER_TIMER_INTERVAL", 62.0)

    # -- reports --------------------------------------------------------------------------

    def reported(self, handle: StarterHandle, message: ClassAd, now: float) -> None:
        """The starter of ``handle`` reports what its job left (protocol.BROKEN)."""
        code, reason = message.evaluate("SlotBrokenCode"), message.evaluate("SlotBrokenReason")
        backend, item = message.evaluate("EpCleanupBackend"), message.evaluate("EpCleanupItem")
        if not isinstance(code, int) or not isinstance(reason, str):
            self.startd.log.error("%s: a broken report without code or reason", handle.slot)
            return
        handle.broke = True
        self.broke(
            handle.slot,
            SlotBreak(
                code,
                reason,
                backend if isinstance(backend, str) else "",
                item if isinstance(item, str) else "",
            ),
            now,
        )

    def exited(self, handle: StarterHandle, now: float) -> None:
        """The starter of ``handle`` is gone: an exit status of the broken range with no
        report (the report was lost) still breaks the slot, with nothing to retry."""
        if handle.exit_code is None or handle.broke:
            return
        found = broken_by_exit(handle.exit_code)
        if found is not None:
            self.broke(handle.slot, SlotBreak(int(found[0]), found[1]), now)

    def broke(self, slot: str, report: SlotBreak, now: float) -> None:
        """Mark ``slot`` broken and remind the startd of what is left."""
        startd = self.startd
        self.last_refid += 1
        refid = self.last_refid
        startd.log.error(
            "%s: SlotBrokenCode=%d Reason=%s (%s)",
            slot,
            report.code,
            report.reason,
            report.item or "nothing to retry",
        )
        if startd.state.slot(slot) is not None:
            startd.take(
                startd.engine.break_slot(
                    startd.state, slot, report.code, report.reason, refid, now
                ),
                now,
            )
            startd.publish_wanted = True
        if report.item:
            self.remind(Reminder(report.backend, report.item, refid))

    def remind(self, reminder: Reminder) -> None:
        """Retry removing ``reminder``'s item on the timer."""
        self.reminders.append(reminder)
        if self.next_tick == math.inf and self.interval() > 0:
            self.startd.log.info("starting the timer for clean-up reminders")
            self.next_tick = self.startd.clock() + self.interval()

    # -- the timer ------------------------------------------------------------------------

    def retry(self, now: float) -> None:
        """One tick: retry the reminders due, mend the breaks of those removed."""
        aggressive = self.startd.config.get_bool("AGGRESSIVE_CLEANUP_REMINDER", False)
        for reminder in list(self.reminders):
            reminder.tries += 1
            if not aggressive and not retry_on(reminder.tries):
                continue
            if self._removed(reminder):
                self.reminders.remove(reminder)
                if reminder.refid:
                    self.startd.take(
                        self.startd.engine.mend(self.startd.state, reminder.refid, now), now
                    )
                    self.startd.publish_wanted = True
        self.next_tick = now + self.interval() if self.reminders else math.inf

    def _removed(self, reminder: Reminder) -> bool:
        scratch = self.startd.scratch
        log = self.startd.log
        if scratch is None or scratch.name != reminder.backend:
            log.error("no scratch filesystem %s to remove %s", reminder.backend, reminder.item)
            return False
        try:
            scratch.remove_left(reminder.item)
        except EpError as error:
            log.error("retry to clean up %s failed (will retry): %s", reminder.item, error)
            return False
        log.info("retry to clean up %s %s successful", reminder.backend, reminder.item)
        return True

    # -- the loop's companion -------------------------------------------------------------

    def open(self, selector: selectors.BaseSelector) -> None:
        scratch = self.startd.scratch
        if scratch is not None and scratch.available():
            for item in scratch.leftovers():
                self.remind(Reminder(scratch.name, item))

    def ready(self, fileobj: object) -> None:
        """No pipes of its own."""

    def timeout(self) -> float:
        return max(self.next_tick - self.startd.clock(), 0.0)

    def tick(self) -> None:
        now = self.startd.clock()
        if now >= self.next_tick:
            self.retry(now)

    def close(self) -> None:
        """At the startd's normal end (its starters gone), stop the scratch filesystem."""
        scratch = self.startd.scratch
        if scratch is not None and scratch.available() and self.startd.state.shutting_down:
            scratch.stop()
