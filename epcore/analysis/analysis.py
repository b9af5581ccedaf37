"""Why an idle job does or does not match the pool's slots, as ``condor_q -better-analyze``
tells it.

Every slot falls in exactly one group, checked in this order: a partitionable slot whose whole
would take the job but whose leftover is too small; a slot the job's Requirements rule out; a
slot whose own Requirements or START refuse the job; a slot that matches but is busy (claimed
by this user, by others, or in a state other than Unclaimed); and a slot that is able to run
the job now. The job's Requirements are also split into their top-level ``&&`` clauses, each
counted on its own, so that the clause that rules out the most slots can be named.

Evaluation is the ClassAd engine's own, in a match context (the job as MY and the slot as
TARGET for the job's side, the reverse for the slot's side); the clause texts and the evidence
for a false clause come from :mod:`epcore.state.explain`. The records, the advice and the text
are in :mod:`epcore.analysis.analysis_report` (re-exported here). Pure: no I/O, time arrives as
``now``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import attrs

from epcore.analysis.analysis_report import (
    NAMED_REFUSALS,
    ClauseCount,
    JobAnalysis,
    SlotRefusal,
    advice,
    render_analysis,
)
from epcore.classad import UNDEFINED, ClassAd, EvalContext, Value, ast
from epcore.classad.classad import Expr
from epcore.state.expression_explain import (
    Explanation,
    conjuncts,
    explain_expression,
    expression_text,
    value_text,
)

__all__ = [
    "NAMED_REFUSALS",
    "ClauseCount",
    "JobAnalysis",
    "SlotRefusal",
    "advice",
    "analyze_job",
    "job_id",
    "render_analysis",
    "slot_name",
]

#: How many attribute references deep a slot's Requirements are opened into clauses
#: (``START`` -> the START expression -> its own references).
_EXPANSION_DEPTH = 3

#: States in which a slot serves a claim (someone's job runs there or is about to).
_OCCUPIED_STATES = frozenset({"Claimed", "Matched", "Preempting"})

#: The resources of a partitionable slot when its ad does not list MachineResources.
_DEFAULT_RESOURCES = ("Cpus", "Memory", "Disk")


@attrs.frozen
class _SlotClause:
    attribute: str
    node: ast.Node


def _is_true(value: Value) -> bool:
    kind = type(value)
    if kind is bool:
        return bool(value)
    return (kind is int or kind is float) and value != 0


def _text(ad: ClassAd, name: str) -> str | None:
    value = ad.evaluate(name)
    return value if isinstance(value, str) else None


def _number(ad: ClassAd, name: str) -> float | None:
    value = ad.evaluate(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def job_id(job: ClassAd) -> str:
    """``ClusterId.ProcId``, with ``?`` for a part the ad lacks."""
    parts = []
    for name in ("ClusterId", "ProcId"):
        value = job.evaluate(name)
        parts.append(str(value) if type(value) is int else "?")
    return ".".join(parts)


def slot_name(slot: ClassAd) -> str:
    """The slot's Name, or ``[???]`` (as condor_status shows a missing one)."""
    return _text(slot, "Name") or "[???]"


def _evidence(explanation: Explanation) -> str | None:
    """The values behind a clause's value: its operands' values, or its reduced form."""
    parts = [
        f"{child.text} is {value_text(child.value)}"
        for child in explanation.children
        if child.origin is not None or child.reduced is not None
    ]
    if not parts and explanation.reduced is not None:
        parts = [explanation.reduced]
    return ", ".join(parts) or None


def _accepts(ad: ClassAd, other: ClassAd, context: EvalContext) -> bool:
    # As in the match itself: an ad without Requirements accepts nothing.
    return "Requirements" in ad and _is_true(
        ad.evaluate("Requirements", target=other, context=context)
    )


def _slot_accepts(slot: ClassAd, job: ClassAd, context: EvalContext) -> bool:
    if not _accepts(slot, job, context):
        return False
    return "Start" not in slot or _is_true(slot.evaluate("Start", target=job, context=context))


def _slot_clauses(slot: ClassAd) -> tuple[_SlotClause, ...]:
    """The slot's Requirements and START opened into clauses: a clause that only names
    another expression of the slot (``START``) is replaced by that expression's clauses."""
    found: list[_SlotClause] = []
    opened: set[str] = set()

    def open_attribute(name: str, depth: int) -> None:
        opened.add(name.lower())
        expr = slot.lookup(name)
        assert expr is not None
        spelled = slot.name_of(name) or name
        for clause in conjuncts(expr.node):
            inner = clause
            while isinstance(inner, ast.Paren):
                inner = inner.inner
            target = _own_reference(slot, inner)
            if target is not None and depth < _EXPANSION_DEPTH and target.lower() not in opened:
                open_attribute(target, depth + 1)
            else:
                found.append(_SlotClause(spelled, clause))

    for name in ("Requirements", "Start"):
        if name in slot and name.lower() not in opened:
            open_attribute(name, 0)
    return tuple(found)


def _own_reference(slot: ClassAd, node: ast.Node) -> str | None:
    """The slot attribute ``node`` names (``START``, ``MY.START``) when it is an expression
    worth opening, else None."""
    if not isinstance(node, ast.AttrRef) or node.absolute:
        return None
    scope = node.scope
    own = scope is None or (
        isinstance(scope, ast.AttrRef)
        and scope.scope is None
        and not scope.absolute
        and scope.name.lower() == "my"
    )
    bound = slot.lookup(node.name) if own else None
    if bound is None or isinstance(bound.node, ast.Literal):
        return None
    return node.name


def _first_false(slot: ClassAd, job: ClassAd, context: EvalContext) -> tuple[_SlotClause, Value]:
    """The first clause of the slot's side that is not TRUE for the job, and its value."""
    for clause in _slot_clauses(slot):
        value = Expr(clause.node).evaluate(slot, job, context=context)
        if not _is_true(value):
            return clause, value
    # Every clause is TRUE yet the side is not: only an ad without Requirements does that.
    return _SlotClause("Requirements", ast.AttrRef("Requirements")), UNDEFINED


def _refusal(
    slot: ClassAd, job: ClassAd, clause: _SlotClause, value: Value, now: float, base: EvalContext
) -> SlotRefusal:
    """A named refusal, with the values behind its clause."""
    explanation = explain_expression(
        Expr(clause.node), slot, job, now=now, my_name="slot", target_name="job", base=base
    )
    return SlotRefusal(
        slot_name(slot),
        clause.attribute,
        expression_text(clause.node),
        value_text(value),
        _evidence(explanation),
    )


def _whole(slot: ClassAd) -> ClassAd | None:
    """A partitionable slot as it would be with nothing carved out (None if not one)."""
    if slot.evaluate("PartitionableSlot") is not True:
        return None
    listed = _text(slot, "MachineResources")
    names = listed.replace(",", " ").split() if listed else list(_DEFAULT_RESOURCES)
    whole = slot.copy()
    for name in names:
        total = slot.evaluate(f"TotalSlot{name}")
        if isinstance(total, int | float) and not isinstance(total, bool):
            whole[name] = total
    return whole


def _mine(slot: ClassAd, job: ClassAd) -> bool:
    user = _text(job, "User")
    owner = _text(job, "Owner")
    for name in ("RemoteUser", "RemoteOwner"):
        remote = _text(slot, name)
        if remote is None:
            continue
        if remote == user or (owner is not None and remote.split("@", 1)[0] == owner):
            return True
    return False


def _job_clauses(
    job: ClassAd, slots: Sequence[ClassAd], now: float, base: EvalContext
) -> tuple[tuple[ClauseCount, ...], list[bool]]:
    """Each top-level clause of the job's Requirements counted on its own, and for each slot
    whether the whole Requirements is TRUE."""
    context = base.at(now)
    expr = job.lookup("Requirements")
    if expr is None:
        return (), [False] * len(slots)
    counts = []
    for clause in conjuncts(expr.node):
        clause_expr = Expr(clause)
        matched = 0
        evidence = None
        for slot in slots:
            if _is_true(clause_expr.evaluate(job, slot, context=context)):
                matched += 1
            elif evidence is None:
                explanation = explain_expression(
                    clause_expr, job, slot, now=now, my_name="job", target_name="slot", base=base
                )
                why = _evidence(explanation) or f"{expression_text(clause)} is " + value_text(
                    explanation.value
                )
                evidence = f"{slot_name(slot)}: {why}"
        counts.append(ClauseCount(expression_text(clause), matched, len(slots) - matched, evidence))
    whole = [_accepts(job, slot, context) for slot in slots]
    return tuple(counts), whole


@attrs.define
class _Tally:
    """The counts as they are gathered (turned into a JobAnalysis at the end)."""

    rejected_by_job: int = 0
    rejected_by_slots: int = 0
    refusals: list[SlotRefusal] = attrs.Factory(list)
    refusing_clauses: Counter[ast.Node] = attrs.Factory(Counter)
    running_yours: int = 0
    serving_others: int = 0
    better: int = 0
    worse: int = 0
    leftover_too_small: int = 0
    not_available: int = 0
    available: int = 0


def analyze_job(
    job: ClassAd,
    slots: Sequence[ClassAd],
    *,
    now: float,
    submitter_prio: float | None = None,
    base: EvalContext | None = None,
) -> JobAnalysis:
    """How ``slots`` divide for ``job`` at ``now``; ``submitter_prio`` (the job's submitter's
    effective priority) splits the slots serving others by whether their user's priority
    (RemoteUserPrio) is better (lower or equal) than it. Expressions are evaluated with
    ``base``'s functions (the configuration's: the plugins' ClassAd functions too)."""
    base = base or EvalContext()
    context = base.at(now)
    clauses, job_accepts = _job_clauses(job, slots, now, base)
    tally = _Tally()
    for slot, job_ok in zip(slots, job_accepts, strict=True):
        slot_ok = _slot_accepts(slot, job, context)
        whole = None if job_ok and slot_ok else _whole(slot)
        fits_whole = whole is not None and _accepts(job, whole, context)
        if fits_whole and whole is not None and _slot_accepts(whole, job, context):
            tally.leftover_too_small += 1
            continue
        if not job_ok:
            tally.rejected_by_job += 1
        elif not slot_ok:
            tally.rejected_by_slots += 1
            clause, value = _first_false(slot, job, context)
            tally.refusing_clauses[clause.node] += 1
            if len(tally.refusals) < NAMED_REFUSALS:
                tally.refusals.append(_refusal(slot, job, clause, value, now, base))
        else:
            _count_state(tally, slot, job, submitter_prio)
    return _finish(job, slots, clauses, sum(job_accepts), tally)


def _count_state(tally: _Tally, slot: ClassAd, job: ClassAd, submitter_prio: float | None) -> None:
    state = _text(slot, "State")
    if state == "Unclaimed":
        tally.available += 1
    elif state in _OCCUPIED_STATES and _mine(slot, job):
        tally.running_yours += 1
    elif state in _OCCUPIED_STATES:
        tally.serving_others += 1
        remote = _number(slot, "RemoteUserPrio")
        if submitter_prio is not None and remote is not None:
            if remote <= submitter_prio:
                tally.better += 1
            else:
                tally.worse += 1
    else:
        tally.not_available += 1


def _finish(
    job: ClassAd,
    slots: Sequence[ClassAd],
    clauses: tuple[ClauseCount, ...],
    matching: int,
    tally: _Tally,
) -> JobAnalysis:
    requirements = job.lookup("Requirements")
    by_text: Counter[str] = Counter()
    for node, count in tally.refusing_clauses.items():
        by_text[expression_text(node)] += count
    slot_clauses = tuple(
        ClauseCount(text, tally.rejected_by_slots - count, count)
        for text, count in by_text.most_common()
    )
    analysis = JobAnalysis(
        job_id=job_id(job),
        slots=len(slots),
        requirements=None if requirements is None else expression_text(requirements.node),
        clauses=clauses,
        match_job_requirements=matching,
        rejected_by_job=tally.rejected_by_job,
        rejected_by_slots=tally.rejected_by_slots,
        refusals=tuple(tally.refusals),
        slot_clauses=slot_clauses,
        running_yours=tally.running_yours,
        serving_others=tally.serving_others,
        serving_better_priority=tally.better,
        serving_worse_priority=tally.worse,
        leftover_too_small=tally.leftover_too_small,
        not_available=tally.not_available,
        available=tally.available,
        advice=None,
    )
    if analysis.available:
        return analysis
    return attrs.evolve(analysis, advice=advice(analysis))
