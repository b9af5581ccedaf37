"""The engine's own part: its configuration and per-slot policies, the slot ads, evaluating
every slot until nothing moves (:meth:`EngineBase.poll`), its timers, and the helpers its
events share. The events themselves are :mod:`epcore.state.claim_events` (the schedd's) and
:mod:`epcore.state.admin_events` (the administrator's); :class:`epcore.state.engine.Engine`
is all of them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping

import attrs

from epcore.classad import ClassAd, Expr
from epcore.config import Config
from epcore.errors import EpError
from epcore.slots.model import Slot, SlotLayout
from epcore.state import rules, timers
from epcore.state.policy import SlotPolicy, load_policy, published_expressions
from epcore.state.records import EngineState, SlotRecord, initial_record
from epcore.state.states import BENCHMARKING, UNCLAIMED
from epcore.state.work import AdSource, Outcome, Work
from epcore.types import MachineInventory

#: How many moves one slot may make in one evaluation before the engine stops (a loop guard).
MAX_MOVES = 20


class EngineError(EpError):
    """An event the engine cannot take (an unknown slot or claim, a bad drain request)."""


def short_name(slot_id: int, sub_id: int | None) -> str:
    """``slot1`` or ``slot1_2``."""
    return f"slot{slot_id}" if sub_id is None else f"slot{slot_id}_{sub_id}"


class EngineBase:
    """The policy of one startd: its configuration, per-slot policies, ads and random source."""

    def __init__(
        self,
        config: Config,
        ads: AdSource,
        rng: random.Random,
        *,
        inventory: MachineInventory | None = None,
        address: str = "<127.0.0.1:0>",
        benchmarks_reported: bool = False,
        backfill: bool = True,
    ) -> None:
        self.config = config
        #: False when no backfill system can run (seed 000: without a backfill manager
        #: START_BACKFILL is never evaluated), whatever ENABLE_BACKFILL says.
        self.backfill = backfill
        #: True when a daemon runs the benchmarks and reports their end
        #: (:meth:`benchmarks_finished`); False: they count as done at the next evaluation.
        self.benchmarks_reported = benchmarks_reported
        self._source = ads
        self.rng = rng
        self.inventory = inventory
        self.address = address
        self._policies: dict[tuple[int, int], SlotPolicy] = {}

    # -- setup ------------------------------------------------------------------------------

    def policy(self, slot_id: int, type_id: int = 0) -> SlotPolicy:
        """The (cached) policy of slot ``slot_id`` of type ``type_id``."""
        key = (slot_id, type_id)
        if key not in self._policies:
            policy = load_policy(self.config, slot_id, type_id or None)
            if not self.backfill:
                policy = attrs.evolve(policy, enable_backfill=False)
            self._policies[key] = policy
        return self._policies[key]

    def _policy_of(self, w: Work, name: str) -> SlotPolicy:
        record = w.slots[name]
        slot = w.layout.find(record.slot_id, record.sub_id)
        return self.policy(record.slot_id, slot.type_id if slot is not None else 0)

    def ads(self, state: EngineState, now: float) -> Mapping[str, ClassAd]:
        """The slot ads of ``state`` at ``now``, from the ad source."""
        return self._source(state, now)

    def published_attributes(self, slot: Slot) -> tuple[tuple[str, Expr], ...]:
        """The policy expressions a slot's ad carries (for the ads builder's
        ``policy_attributes``), so that PREEMPT may refer to SUSPEND and WANT_SUSPEND."""
        return published_expressions(self.policy(slot.slot_id, slot.type_id))

    def start(self, layout: SlotLayout, now: float) -> EngineState:
        """Every slot of ``layout`` in Owner/Idle, entered at ``now``."""
        records = tuple(
            initial_record(short_name(s.slot_id, s.sub_id), s.slot_id, s.sub_id, s.kind, now)
            for s in layout.slots
        )
        return EngineState(records, layout)

    def problems(self, state: EngineState) -> list[str]:
        """Every broken policy expression of the state's slots, once each."""
        seen: dict[str, None] = {}
        for slot in state.layout.slots:
            for problem in self.policy(slot.slot_id, slot.type_id).problems:
                seen.setdefault(str(problem), None)
        return list(seen)

    # -- evaluation -------------------------------------------------------------------------

    def _settle(self, w: Work) -> None:
        """Evaluate every slot until a whole pass moves none (a move of one slot can change
        another's policy: the last job of a draining machine leaving, say).

        Each pass builds the ads once and lets every slot take at most one step; a slot that
        moved sees its own new ad when it is evaluated again in the next pass. Building the
        ads per pass rather than per move keeps a pass linear in the number of slots.
        """
        for _ in range(MAX_MOVES):
            rules.end_drain_admissions(w)
            w.refresh()
            moved = False
            for name in list(w.slots):
                if name in w.slots and rules.step_slot(
                    w,
                    name,
                    self._policy_of(w, name),
                    benchmarks_reported=self.benchmarks_reported,
                ):
                    moved = True
            if not moved:
                return

    def _finish(self, w: Work, claim_id: str | None = None) -> Outcome:
        self._settle(w)
        return w.outcome(claim_id)

    def poll(self, state: EngineState, now: float) -> Outcome:
        """Evaluate every slot's policy at ``now`` (this is also how timers fire)."""
        return self._finish(Work(state, now, self.ads))

    def next_timer(self, state: EngineState, now: float) -> float | None:
        """When the next timer of any slot fires (None when no timer runs)."""
        soonest = math.inf
        for record in state.slots:
            slot = state.layout.find(record.slot_id, record.sub_id)
            policy = self.policy(record.slot_id, slot.type_id if slot is not None else 0)
            name = record.name

            def ad_of(name: str = name) -> ClassAd:
                return self.ads(state, now)[name]

            soonest = min(soonest, timers.next_deadline(record, policy, ad_of, now))
        if state.drain is not None and state.drain.start is not None and state.drain.deadline > now:
            soonest = min(soonest, state.drain.deadline)
        return None if soonest == math.inf else soonest

    def benchmarks_finished(self, state: EngineState, now: float) -> Outcome:
        """The benchmarks have run: LastBenchmark is ``now`` and every slot still in
        Unclaimed/Benchmarking returns to Idle (transition 4)."""
        w = Work(state, now, self.ads)
        w.last_benchmark = max(int(now), 1)
        for name, record in list(w.slots.items()):
            if record.place == BENCHMARKING:
                w.move(name, UNCLAIMED, 4, "the benchmarks finished")
        return self._finish(w)

    def set_attributes(self, state: EngineState, now: float) -> Outcome:
        """Machine attributes changed (the ad source already sees them): re-evaluate."""
        return self.poll(state, now)

    # -- helpers ----------------------------------------------------------------------------

    @staticmethod
    def _refuse(state: EngineState, why: str) -> Outcome:
        return Outcome(state, notes=(why,), refused=why)

    def _record(self, w: Work, slot: str) -> SlotRecord:
        record = w.slots.get(slot.split("@", 1)[0])
        if record is None:
            raise EngineError(f"there is no slot {slot}")
        return record
