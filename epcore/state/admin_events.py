"""The administrator's events of the policy engine: condor_vacate, condor_drain (and its
cancelling) and condor_off."""

from __future__ import annotations

import math

import attrs

from epcore.classad import parse_expr
from epcore.errors import ClassAdSyntaxError
from epcore.state import timers
from epcore.state.engine_base import EngineBase, EngineError
from epcore.state.policy import evaluate
from epcore.state.preemption import RETIRE_FOR_EVICTION, preempt
from epcore.state.records import ActionKind, Drain, EngineState, VacateReason
from epcore.state.states import (
    BACKFILL_BUSY,
    BACKFILL_IDLE,
    BACKFILL_KILLING,
    BUSY,
    CLAIMED_IDLE,
    MATCHED,
    OWNER,
    RETIRING,
    SUSPENDED,
    State,
)
from epcore.state.work import Outcome, Work

DRAIN_KINDS = ("graceful", "quick", "fast")


class AdminEvents(EngineBase):
    """What an administrator does to the slots, as :class:`EngineBase` events."""

    def vacate(
        self,
        state: EngineState,
        slot: str,
        fast: bool,
        now: float,
        reason: VacateReason | None = None,
    ) -> Outcome:
        """condor_vacate: evict the slot's job (graceful, or ``fast``: hard kill at once);
        ``reason`` (hibernation's code 1016) goes to the job with the kill."""
        w = Work(state, now, self.ads)
        record = self._record(w, slot)
        if reason is not None and record.claim is not None:
            w.update(record.name, vacate_reason=reason)
        self._evict(w, record.name, fast, reason.reason if reason else "condor_vacate")
        return self._finish(w)

    def _evict(self, w: Work, name: str, fast: bool, cause: str, retire: bool = False) -> None:
        record = w.slots[name]
        policy = self._policy_of(w, name)
        deadline = None if retire else w.now
        if record.place == CLAIMED_IDLE:
            w.update(name, fast=fast, preempting=None)
            preempt(w, name, 10, cause, policy)
        elif record.place in (BUSY, SUSPENDED, RETIRING):
            w.update(
                name,
                fast=fast,
                preempting=None,
                preempt_deadline=deadline,
                retire_reason=RETIRE_FOR_EVICTION,
            )
            if record.place == BUSY:
                w.move(name, RETIRING, 13, cause, retire_from=w.now)
            elif record.place == SUSPENDED and not retire:
                preempt(w, name, 17, cause, policy)
            elif record.place == SUSPENDED:
                w.update(name, retire_from=w.now)
        elif record.place == BACKFILL_BUSY:
            # Seed 000: after condor_vacate or a shutdown the slot returns to Owner (30) once
            # the backfill client exits.
            w.move(name, BACKFILL_KILLING, 28, cause, backfill_reason="evict")
            w.act(ActionKind.EVICT_BACKFILL, name)
        elif record.place == BACKFILL_KILLING:
            w.update(name, backfill_reason="evict", preempting=None)
        elif record.place == BACKFILL_IDLE:
            w.move(name, OWNER, 30, cause)
        elif record.place == MATCHED:
            w.move(name, OWNER, 8, cause)

    def drain(
        self,
        state: EngineState,
        how: str,
        now: float,
        *,
        check: str | None = None,
        start: str | None = None,
        finalize: bool = False,
        reason: str | None = None,
    ) -> Outcome:
        """condor_drain: graceful (retirement honoured), quick (vacate) or fast (kill).

        ``check`` must be TRUE for every slot or the drain is refused; a graceful drain
        evicts every running job when the longest retirement ends; ``start`` admits jobs
        (evaluated with TARGET = the job) on idle slots until then, or until the last job
        that was running when the drain began has left, when they are evicted too;
        ``finalize`` sends the slots back to Owner when draining is done (34) instead of
        leaving them Drained/Idle; ``reason`` is the DrainReason advertised meanwhile.
        """
        if how not in DRAIN_KINDS:
            raise EngineError(f"drain how = {how!r}: expected one of {', '.join(DRAIN_KINDS)}")
        w = Work(state, now, self.ads)
        if w.drain is not None:
            return self._refuse(state, "the startd is already draining")
        if check is not None:
            try:
                expr = parse_expr(check)
            except ClassAdSyntaxError as error:
                raise EngineError(f"drain check {check!r} does not parse: {error}") from error
            for name in w.slots:
                functions = self._policy_of(w, name).functions
                if evaluate(expr, w.ad(name), None, now, functions) is not True:
                    return self._refuse(state, f"drain refused: check is not TRUE for {name}")
        if start is not None:
            try:
                parse_expr(start)
            except ClassAdSyntaxError as error:
                raise EngineError(f"drain start {start!r} does not parse: {error}") from error
        w.drain = Drain(how, start, finalize, now, now, reason)
        for name in list(w.slots):
            if w.slots[name].place.state in (State.CLAIMED, State.BACKFILL, State.MATCHED):
                self._evict(w, name, how == "fast", f"draining ({how})", retire=how == "graceful")
        ends = [
            timers.retirement_end(r, self._policy_of(w, r.name), w.ad(r.name), now)
            for r in w.slots.values()
            if r.place.state is State.CLAIMED and r.job_start is not None
        ]
        deadline = max([now, *ends])
        w.drain = attrs.evolve(w.drain, deadline=deadline)
        if how == "graceful":
            # Seeds 002/004: "the eviction of jobs with shorter retirement time is delayed
            # until the job with the longest retirement time needs to be evicted".
            for record in list(w.slots.values()):
                if record.place.state is State.CLAIMED and record.job_start is not None:
                    w.update(record.name, preempt_deadline=deadline)
        return self._finish(w)

    def cancel_drain(self, state: EngineState, now: float) -> Outcome:
        """Stop draining: Drained slots return to Owner (35)."""
        w = Work(state, now, self.ads)
        if w.drain is None:
            return self._refuse(state, "the startd is not draining")
        w.drain = None
        for name, record in list(w.slots.items()):
            if record.place.state is State.DRAINED:
                w.move(name, OWNER, 35, "draining was cancelled")
        return self._finish(w)

    def shutdown(self, state: EngineState, fast: bool, now: float) -> Outcome:
        """condor_off: peaceful (running and suspended jobs run to the end, idle claims are
        released) or fast (every job is killed at once)."""
        w = Work(state, now, self.ads)
        w.shutting_down = True
        for name in list(w.slots):
            record = w.slots[name]
            if fast or record.place.state is not State.CLAIMED or record.place == CLAIMED_IDLE:
                self._evict(w, name, fast, "shutdown")
            elif record.place == BUSY:
                w.update(name, preempt_deadline=math.inf)
                w.move(
                    name,
                    RETIRING,
                    13,
                    "peaceful shutdown",
                    retire_from=now,
                    retire_reason=RETIRE_FOR_EVICTION,
                )
            else:
                retire_from = record.retire_from if record.retire_from is not None else now
                w.update(
                    name,
                    preempt_deadline=math.inf,
                    retire_from=retire_from,
                    retire_reason=RETIRE_FOR_EVICTION,
                )
        return self._finish(w)
