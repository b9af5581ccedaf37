"""Slot states, their activities, and every move between them as a table.

The table is the seeds' own state diagram: each edge carries the letter (A-P) of the state
transition and the number (1-37) of the state/activity transition the seeds give it (seed 000,
"State and Activity Transitions"). Where the seed's flowchart and its text disagree (22-25,
33-35), the text wins. A move that is not in the table raises :class:`IllegalTransition`; the
policy engine only ever moves a slot along an edge, naming its number.
"""

from __future__ import annotations

import enum

import attrs

from epcore.errors import EpError


class State(enum.Enum):
    """A slot's State attribute."""

    OWNER = "Owner"
    UNCLAIMED = "Unclaimed"
    MATCHED = "Matched"
    CLAIMED = "Claimed"
    PREEMPTING = "Preempting"
    BACKFILL = "Backfill"
    DRAINED = "Drained"


class Activity(enum.Enum):
    """A slot's Activity attribute."""

    IDLE = "Idle"
    BENCHMARKING = "Benchmarking"
    BUSY = "Busy"
    SUSPENDED = "Suspended"
    RETIRING = "Retiring"
    VACATING = "Vacating"
    KILLING = "Killing"


S, A = State, Activity

#: The activities each state allows (seed 000, "Activities" of each state).
ACTIVITIES: dict[State, frozenset[Activity]] = {
    S.OWNER: frozenset({A.IDLE}),
    S.UNCLAIMED: frozenset({A.IDLE, A.BENCHMARKING}),
    S.MATCHED: frozenset({A.IDLE}),
    S.CLAIMED: frozenset({A.IDLE, A.BUSY, A.SUSPENDED, A.RETIRING}),
    S.PREEMPTING: frozenset({A.VACATING, A.KILLING}),
    S.BACKFILL: frozenset({A.IDLE, A.BUSY, A.KILLING}),
    S.DRAINED: frozenset({A.RETIRING, A.IDLE}),
}


class IllegalTransition(EpError):
    """A move between two State/Activity pairs that the state diagram does not have."""


@attrs.frozen
class Place:
    """A State/Activity pair, printed as ``Claimed/Busy``."""

    state: State
    activity: Activity
    #: The State and Activity attribute values (``"Claimed"``, ``"Busy"``), read at every
    #: publication of every slot; worked out once here because Enum.value is slow.
    names: tuple[str, str] = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(lambda place: (place.state.value, place.activity.value), True),
    )

    def __attrs_post_init__(self) -> None:
        if self.activity not in ACTIVITIES[self.state]:
            raise IllegalTransition(f"{self.state.value} has no activity {self.activity.value}")

    def __str__(self) -> str:
        return f"{self.names[0]}/{self.names[1]}"

    @classmethod
    def parse(cls, text: str) -> Place:
        """``"Claimed/Busy"`` (case-insensitive) to a Place; IllegalTransition when invalid."""
        state_text, _, activity_text = text.partition("/")
        states = {s.value.lower(): s for s in State}
        activities = {a.value.lower(): a for a in Activity}
        state = states.get(state_text.strip().lower())
        activity = activities.get(activity_text.strip().lower())
        if state is None or activity is None:
            raise IllegalTransition(f"{text!r} is not a State/Activity pair")
        return cls(state, activity)


# The places the policy rules and the events name, so that a rule reads as the seed's text
# ("Claimed/Busy -> Claimed/Retiring") rather than as pairs of enum members.
OWNER = Place(S.OWNER, A.IDLE)
UNCLAIMED = Place(S.UNCLAIMED, A.IDLE)
BENCHMARKING = Place(S.UNCLAIMED, A.BENCHMARKING)
MATCHED = Place(S.MATCHED, A.IDLE)
CLAIMED_IDLE = Place(S.CLAIMED, A.IDLE)
BUSY = Place(S.CLAIMED, A.BUSY)
SUSPENDED = Place(S.CLAIMED, A.SUSPENDED)
RETIRING = Place(S.CLAIMED, A.RETIRING)
VACATING = Place(S.PREEMPTING, A.VACATING)
KILLING = Place(S.PREEMPTING, A.KILLING)
BACKFILL_IDLE = Place(S.BACKFILL, A.IDLE)
BACKFILL_BUSY = Place(S.BACKFILL, A.BUSY)
BACKFILL_KILLING = Place(S.BACKFILL, A.KILLING)
DRAINED_RETIRING = Place(S.DRAINED, A.RETIRING)
DRAINED_IDLE = Place(S.DRAINED, A.IDLE)


@attrs.frozen
class Edge:
    """One transition: its number in the seeds, the state-level letter, where it goes, and why."""

    number: int
    letter: str | None  # None for moves that stay in one state (activity changes)
    source: Place
    target: Place
    trigger: str


def _p(state: State, activity: Activity) -> Place:
    return Place(state, activity)


def _edges() -> tuple[Edge, ...]:
    edges: list[Edge] = []

    def add(number: int, letter: str | None, sources: list[Place], target: Place, why: str) -> None:
        edges.extend(Edge(number, letter, source, target, why) for source in sources)

    owner = _p(S.OWNER, A.IDLE)
    unclaimed = _p(S.UNCLAIMED, A.IDLE)
    benchmarking = _p(S.UNCLAIMED, A.BENCHMARKING)
    matched = _p(S.MATCHED, A.IDLE)
    claimed_idle = _p(S.CLAIMED, A.IDLE)
    busy = _p(S.CLAIMED, A.BUSY)
    suspended = _p(S.CLAIMED, A.SUSPENDED)
    retiring = _p(S.CLAIMED, A.RETIRING)
    vacating = _p(S.PREEMPTING, A.VACATING)
    killing = _p(S.PREEMPTING, A.KILLING)
    backfill_idle = _p(S.BACKFILL, A.IDLE)
    backfill_busy = _p(S.BACKFILL, A.BUSY)
    backfill_killing = _p(S.BACKFILL, A.KILLING)
    drained_retiring = _p(S.DRAINED, A.RETIRING)
    drained_idle = _p(S.DRAINED, A.IDLE)
    unclaimed_any = [unclaimed, benchmarking]

    add(1, "A", [owner], unclaimed, "IS_OWNER is no longer TRUE")
    add(2, "B", unclaimed_any, owner, "IS_OWNER is TRUE")
    add(3, None, [unclaimed], benchmarking, "RUNBENCHMARKS is TRUE")
    add(4, None, [benchmarking], unclaimed, "the benchmarks finished")
    add(5, "D", unclaimed_any, claimed_idle, "a schedd claimed before the match notification")
    add(6, "C", unclaimed_any, matched, "the negotiator matched the slot")
    add(7, "E", [unclaimed], backfill_idle, "ENABLE_BACKFILL and START_BACKFILL are TRUE")
    add(8, "F", [matched], owner, "MATCH_TIMEOUT expired, or START is locally FALSE")
    add(9, "G", [matched], claimed_idle, "the schedd claimed the slot")
    # H: Claimed -> Preempting. 10 from Idle; 17 from Suspended; 18 from Retiring.
    add(10, "H", [claimed_idle], vacating, "condor_vacate, START locally FALSE, or release")
    add(10, "H", [claimed_idle], killing, "as 10, with WANT_VACATE FALSE")
    add(11, None, [claimed_idle], busy, "the schedd activated the claim")
    add(12, None, [busy], claimed_idle, "the starter exited (the job finished)")
    add(
        13,
        None,
        [busy],
        retiring,
        "PREEMPT (WANT_SUSPEND not TRUE), a preempting claim, or shutdown",
    )
    add(14, None, [busy], suspended, "WANT_SUSPEND and SUSPEND are TRUE")
    add(15, None, [suspended], busy, "CONTINUE is TRUE and the claim was not preempted")
    add(16, None, [suspended], retiring, "CONTINUE on a preempted claim, or PREEMPT")
    add(17, "H", [suspended], vacating, "retirement ran out while suspended")
    add(17, "H", [suspended], killing, "as 17, with WANT_VACATE FALSE")
    add(18, "H", [retiring], vacating, "the job finished or retirement time ran out")
    add(18, "H", [retiring], killing, "as 18, with WANT_VACATE FALSE")
    add(19, None, [retiring], busy, "the preempting claim went away (unretirement)")
    add(20, None, [retiring], suspended, "suspended while retiring")
    add(21, None, [vacating], killing, "KILL is TRUE, or the vacate time ran out")
    add(22, "J", [vacating], owner, "the job left after vacating; the owner came back")
    add(23, "I", [vacating], claimed_idle, "the job left after vacating; a better match claims")
    add(24, "I", [killing], claimed_idle, "the job was killed; a better match claims")
    add(25, "J", [killing], owner, "the job was killed; the owner (PREEMPT, vacate) caused it")
    add(26, None, [backfill_idle], backfill_busy, "the backfill client runs")
    add(27, None, [backfill_busy], backfill_idle, "the backfill client exited by itself")
    add(28, None, [backfill_busy], backfill_killing, "a match, the owner, vacate or shutdown")
    add(29, None, [backfill_killing], backfill_idle, "the backfill client is gone")
    add(30, "K", [backfill_idle, backfill_busy, backfill_killing], owner, "EVICT_BACKFILL")
    add(31, "M", [backfill_idle, backfill_killing], claimed_idle, "claimed during backfill")
    add(32, "L", [backfill_idle, backfill_killing], matched, "matched during backfill")
    add(33, None, [drained_retiring], drained_idle, "every slot is drained")
    add(34, "O", [drained_retiring, drained_idle], owner, "draining was finalized")
    add(35, "O", [drained_retiring, drained_idle], owner, "draining was cancelled")
    add(36, "N", [owner], drained_retiring, "draining started in Owner")
    add(37, "P", unclaimed_any, drained_retiring, "draining started in Unclaimed")
    return tuple(edges)


#: Every edge of the state diagram.
TRANSITIONS: tuple[Edge, ...] = _edges()

_BY_MOVE: dict[tuple[Place, Place], tuple[Edge, ...]] = {}
for _edge in TRANSITIONS:
    _BY_MOVE[(_edge.source, _edge.target)] = (
        *_BY_MOVE.get((_edge.source, _edge.target), ()),
        _edge,
    )


def edge(source: Place, target: Place, number: int | None = None) -> Edge:
    """The edge from ``source`` to ``target`` (numbered ``number`` when given).

    IllegalTransition when the diagram has no such move, or the move is not transition
    ``number``.
    """
    candidates = _BY_MOVE.get((source, target), ())
    if number is not None:
        candidates = tuple(c for c in candidates if c.number == number)
    if not candidates:
        which = f" as transition {number}" if number is not None else ""
        raise IllegalTransition(f"no transition from {source} to {target}{which}")
    return candidates[0]


def letters() -> frozenset[str]:
    """The state-transition letters the table uses (A-P)."""
    return frozenset(e.letter for e in TRANSITIONS if e.letter is not None)


def numbers() -> frozenset[int]:
    """The transition numbers the table uses (1-37)."""
    return frozenset(e.number for e in TRANSITIONS)
