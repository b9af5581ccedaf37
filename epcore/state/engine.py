"""The pure policy engine of one startd: events in, a new state, transitions and actions out.

Each public method takes an :class:`EngineState` and ``now`` and returns an :class:`Outcome`;
nothing is performed and the clock is never read. Slot ads (for MY in policy expressions) come
from the injected :data:`~epcore.state.work.AdSource`, ClaimIds from the injected random source.
After every event the policy of every slot is evaluated until nothing moves
(:mod:`epcore.state.rules`), so an event's consequences (a job gone, so Preempting -> Owner) are
part of its outcome. :meth:`Engine.next_timer` says when the next timer (MATCH_TIMEOUT, claim
lease, CLAIM_WORKLIFE, retirement, vacate time, KILLING_TIMEOUT) fires; :meth:`Engine.poll` at
that time fires it.

The engine's parts live in :mod:`epcore.state.engine_base` (policies, evaluation, timers),
:mod:`epcore.state.claim_events`, :mod:`epcore.state.admin_events` and
:mod:`epcore.state.broken_events`; every public name is
importable from here.
"""

from __future__ import annotations

from epcore.state.admin_events import DRAIN_KINDS, AdminEvents
from epcore.state.broken_events import BrokenEvents
from epcore.state.claim_events import ClaimEvents, job_id_of
from epcore.state.engine_base import MAX_MOVES, EngineError, short_name

__all__ = ["DRAIN_KINDS", "MAX_MOVES", "Engine", "EngineError", "job_id_of", "short_name"]


class Engine(ClaimEvents, AdminEvents, BrokenEvents):
    """The policy of one startd: its configuration, per-slot policies, ads and random source;
    every event a startd feeds it (see :class:`~epcore.state.engine_base.EngineBase` for the
    constructor)."""
