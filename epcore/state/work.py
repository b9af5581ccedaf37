"""One engine step in progress: a working copy of the state that records every move it makes.

The engine's public methods are pure (state in, new state out); inside one step it is simpler
to change a working copy, so :class:`Work` holds the slot records by name, moves them only
along :func:`epcore.state.states.edge`, keeps the Total<State><Activity>Time accumulators,
queues the daemon's actions and freezes the result into an :class:`Outcome`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from epcore.classad import ClassAd
from epcore.slots.broken import hold_broken
from epcore.slots.dynamic import release_in
from epcore.slots.model import SlotLayout
from epcore.state.records import (
    Action,
    ActionKind,
    Drain,
    EngineState,
    SlotRecord,
    TransitionRecord,
)
from epcore.state.states import Place, edge

#: Builds every slot's ad (by short name) for a state at a time; supplied by the daemon or
#: the simulator, so that the engine itself stays pure.
AdSource = Callable[[EngineState, float], Mapping[str, ClassAd]]


@attrs.frozen
class Outcome:
    """What one event did: the new state, the moves, the daemon's actions and any notes.

    ``claim_id`` is the ClaimId a successful ``claim`` made; ``refused`` says why an event was
    refused (the state is then unchanged).
    """

    state: EngineState
    transitions: tuple[TransitionRecord, ...] = ()
    actions: tuple[Action, ...] = ()
    notes: tuple[str, ...] = ()
    claim_id: str | None = None
    refused: str | None = None


class Work:
    """A mutable copy of an :class:`EngineState` for the length of one step."""

    def __init__(self, state: EngineState, now: float, ads: AdSource) -> None:
        self.now = now
        self.slots: dict[str, SlotRecord] = {r.name: r for r in state.slots}
        self.layout: SlotLayout = state.layout
        self.drain: Drain | None = state.drain
        self.shutting_down = state.shutting_down
        self.last_benchmark = state.last_benchmark
        self.claims_made = state.claims_made
        self.draining_unclaimed = state.unclaimed_core_seconds(now)
        self.draining_badput = state.draining_badput
        self.transitions: list[TransitionRecord] = []
        self.actions: list[Action] = []
        self.notes: list[str] = []
        #: Slots suspended during this step: CONTINUE is not evaluated for them until the next
        #: step (so that SUSPEND and CONTINUE both TRUE cannot loop within one evaluation).
        self.just_suspended: set[str] = set()
        self._source = ads
        self._ads: Mapping[str, ClassAd] | None = None
        # Slots changed since the ads were built: their own ad is rebuilt before they are
        # evaluated again; the others keep theirs until the next settling pass.
        self._changed: set[str] = set()

    def freeze(self) -> EngineState:
        """The working copy as a frozen state."""
        return EngineState(
            tuple(self.slots.values()),
            self.layout,
            self.drain,
            self.shutting_down,
            self.last_benchmark,
            self.claims_made,
            self.draining_unclaimed,
            self.draining_badput,
            self.now,
        )

    def outcome(self, claim_id: str | None = None) -> Outcome:
        """The step's result."""
        return Outcome(
            self.freeze(),
            tuple(self.transitions),
            tuple(self.actions),
            tuple(self.notes),
            claim_id,
        )

    def cpus(self, name: str) -> float:
        """The Cpus of slot ``name``."""
        record = self.slots[name]
        slot = self.layout.find(record.slot_id, record.sub_id)
        return 0.0 if slot is None else float(slot.resources.cpus)

    def ad(self, name: str) -> ClassAd:
        """The current ad of slot ``name`` (rebuilt after every change)."""
        if self._ads is None or name in self._changed:
            self._ads = self._source(self.freeze(), self.now)
            self._changed.clear()
        found = self._ads.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def refresh(self) -> None:
        """Build every slot's ad again before the next evaluation (a new settling pass)."""
        self._ads = None

    def update(self, name: str, **changes: Any) -> SlotRecord:
        """Change fields of slot ``name`` without moving it."""
        record = attrs.evolve(self.slots[name], **changes)
        self.slots[name] = record
        self._changed.add(name)
        return record

    def act(self, kind: ActionKind, name: str, claim_id: str | None = None) -> None:
        """Queue an action for the daemon."""
        self.actions.append(Action(kind, name, claim_id))

    def move(self, name: str, target: Place, number: int, cause: str, **changes: Any) -> None:
        """Move slot ``name`` along transition ``number`` to ``target`` (IllegalTransition if
        the diagram has no such edge), updating its timers and accumulators."""
        record = self.slots[name]
        old = record.place
        found = edge(old, target, number)
        key = old.names[0] + old.names[1]
        totals = dict(record.totals)
        totals[key] = totals.get(key, 0.0) + (self.now - record.entered_activity)
        entered_state = record.entered_state if old.state is target.state else self.now
        self.slots[name] = attrs.evolve(
            record,
            place=target,
            entered_state=entered_state,
            entered_activity=self.now,
            totals=totals,
            **changes,
        )
        self._changed.add(name)
        self.transitions.append(
            TransitionRecord(self.now, name, old, target, found.number, found.letter, cause)
        )

    def remove(self, name: str) -> None:
        """Forget slot ``name`` (a dynamic slot whose claim ended)."""
        del self.slots[name]
        self._ads = None

    def release_dynamic(self, name: str) -> None:
        """Delete dynamic slot ``name`` and give its resources back to its parent (or, when it
        is broken, have its parent hold them until the break is mended)."""
        record = self.slots[name]
        if record.sub_id is not None:
            slot = self.layout.find(record.slot_id, record.sub_id)
            if slot is not None and slot.broken is not None:
                self.layout = hold_broken(self.layout, record.slot_id, record.sub_id)
            else:
                self.layout = release_in(self.layout, record.slot_id, record.sub_id)
        self.remove(name)
