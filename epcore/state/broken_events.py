"""The policy engine's broken-slot events: a starter reports that its job left something it
could not clean up (the slot is marked broken, :mod:`epcore.slots.broken`), and later the
startd's clean-up succeeds (the break is mended).

A break is no move of the state diagram: the slot stays where it is (a job still running on
its claim runs on), but it matches nothing and takes no new claim nor job; a broken dynamic
slot whose claim ends is deleted (25, as any) with its resources held by its parent.
"""

from __future__ import annotations

from epcore.slots.broken import break_slot, mend
from epcore.slots.model import Broken
from epcore.state.engine_base import EngineBase
from epcore.state.records import EngineState
from epcore.state.work import Outcome, Work


class BrokenEvents(EngineBase):
    """Breaking and mending slots, as :class:`EngineBase` events."""

    def break_slot(
        self, state: EngineState, slot: str, code: int, reason: str, refid: int, now: float
    ) -> Outcome:
        """Mark ``slot`` broken with ``code`` and ``reason`` (the break ``refid``)."""
        w = Work(state, now, self.ads)
        record = self._record(w, slot)
        w.layout = break_slot(w.layout, record.slot_id, record.sub_id, Broken(code, reason, refid))
        w.notes.append(f"{record.name} is broken ({code}): {reason}")
        w.refresh()
        return self._finish(w)

    def mend(self, state: EngineState, refid: int, now: float) -> Outcome:
        """Break ``refid`` is cleaned up: its slot is whole again, or the resources its
        partitionable slot held for it are offered again."""
        w = Work(state, now, self.ads)
        w.layout = mend(w.layout, refid)
        w.refresh()
        return self._finish(w)
