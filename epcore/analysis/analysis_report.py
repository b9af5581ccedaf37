"""The report of a job's analysis (:mod:`epcore.analysis.analysis`): the records it is made of,
the advice it gives when no slot can run the job, and its text as ``condor_q -better-analyze``
prints it.

Pure: the records are values, the text is built from them alone.
"""

from __future__ import annotations

import attrs

#: How many refusing slots a report names; the counts cover all of them.
NAMED_REFUSALS = 5


@attrs.frozen
class ClauseCount:
    """One top-level clause of a Requirements expression and the slots it decides.

    ``evidence`` shows, for the first slot the clause rules out, the values that made it
    false (``slot1@ep: TARGET.Memory is 2048, RequestMemory is 4096``).
    """

    text: str
    matched: int
    ruled_out: int
    evidence: str | None = None


@attrs.frozen
class SlotRefusal:
    """A slot whose own expression refuses the job: the first clause that is not TRUE.

    ``attribute`` is the slot attribute the clause was written in (``Requirements``,
    ``START``, ``WithinResourceLimits``...).
    """

    slot: str
    attribute: str
    clause: str
    value: str
    evidence: str | None = None


@attrs.frozen
class JobAnalysis:
    """How the pool's slots divide for one job, and what to change when none can run it.

    The groups ``rejected_by_job`` .. ``available`` add up to ``slots``.
    ``serving_better_priority`` and ``serving_worse_priority`` split ``serving_others`` when a
    submitter priority was given (both 0 otherwise).
    """

    job_id: str
    slots: int
    requirements: str | None
    clauses: tuple[ClauseCount, ...]
    match_job_requirements: int
    rejected_by_job: int
    rejected_by_slots: int
    refusals: tuple[SlotRefusal, ...]
    slot_clauses: tuple[ClauseCount, ...]
    running_yours: int
    serving_others: int
    serving_better_priority: int
    serving_worse_priority: int
    leftover_too_small: int
    not_available: int
    available: int
    advice: str | None
    #: Why the negotiator's last cycle left the job unmatched (its group's quota, a
    #: concurrency limit...), when the negotiator is in reach and knows.
    negotiator: str | None = None


def advice(analysis: JobAnalysis) -> str:
    """A plain sentence saying what keeps the job from running and what to change."""
    total = analysis.slots
    if total == 0:
        return "The pool has no slots: the job waits until an execution point advertises one."
    if analysis.requirements is None:
        return "The job has no Requirements expression, so it matches no slot; give it one."
    if analysis.rejected_by_job == total:
        worst = max(analysis.clauses, key=lambda clause: clause.ruled_out, default=None)
        if worst is None or worst.ruled_out == 0:
            return (
                "Each condition of the job's Requirements holds on every slot, but their "
                "combination holds on none; rewrite the Requirements."
            )
        together = (
            "" if worst.ruled_out == total else " at once, though each condition holds on some"
        )
        return (
            f"No slot satisfies the job's Requirements{together}: the condition {worst.text} "
            f"rules out the most slots ({worst.ruled_out} of {total}); change it, or the job "
            "attributes it uses, so that more slots satisfy it."
        )
    if analysis.rejected_by_slots and not (
        analysis.running_yours
        or analysis.serving_others
        or analysis.leftover_too_small
        or analysis.not_available
    ):
        worst_slot = analysis.slot_clauses[0]
        return (
            f"The slots that the job's Requirements accept refuse the job themselves: their "
            f"condition {worst_slot.text} is not TRUE for this job on {worst_slot.ruled_out} "
            f"of them; change the job so that it satisfies that condition."
        )
    busy = analysis.running_yours + analysis.serving_others
    return (
        f"Every slot that matches is busy ({busy} claimed, {analysis.leftover_too_small} "
        f"partitionable with too little left, {analysis.not_available} not Unclaimed): "
        "the job runs when one of them is free."
    )


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _clause_table(analysis: JobAnalysis) -> list[str]:
    lines = [
        "",
        f"The Requirements expression for job {analysis.job_id} reduces to these conditions:",
        "",
        "         Slots      Slots",
        "Step    Matched  Ruled out  Condition",
        "-----  --------  ---------  ---------",
    ]
    for step, clause in enumerate(analysis.clauses):
        lines.append(f"{f'[{step}]':<5}  {clause.matched:>8}  {clause.ruled_out:>9}  {clause.text}")
        if clause.evidence is not None and clause.ruled_out:
            lines.append(f"{'':28}({clause.evidence})")
    return lines


def _summary(analysis: JobAnalysis) -> list[str]:
    lines = [
        "",
        f"{analysis.job_id}:  Run analysis summary.  Of "
        + _plural(analysis.slots, "slot", "slots")
        + ",",
        f"{analysis.rejected_by_job:>7} are rejected by your job's requirements",
        f"{analysis.rejected_by_slots:>7} reject your job because of their own requirements",
        f"{analysis.running_yours:>7} match and are already running your jobs",
    ]
    if analysis.serving_better_priority or analysis.serving_worse_priority:
        others = analysis.serving_others - analysis.serving_better_priority
        lines += [
            f"{analysis.serving_better_priority:>7} match but are serving users with a better"
            " priority in the pool",
            f"{others:>7} match but are serving other users (with a worse priority)",
        ]
    else:
        lines.append(f"{analysis.serving_others:>7} match but are serving other users")
    lines += [
        f"{analysis.leftover_too_small:>7} match but are partitionable slots with too little left",
        f"{analysis.not_available:>7} match but are not available (not Unclaimed)",
        f"{analysis.available:>7} are able to run your job",
    ]
    return lines


def _refusal_lines(analysis: JobAnalysis) -> list[str]:
    if not analysis.refusals:
        return []
    lines = ["", "Slots whose own requirements reject the job:"]
    for refusal in analysis.refusals:
        line = f"    {refusal.slot}: {refusal.attribute} clause {refusal.clause} is {refusal.value}"
        if refusal.evidence is not None:
            line += f" ({refusal.evidence})"
        lines.append(line)
    hidden = analysis.rejected_by_slots - len(analysis.refusals)
    if hidden > 0:
        lines.append(f"    ... and {_plural(hidden, 'other slot', 'other slots')}")
    return lines


def render_analysis(analysis: JobAnalysis) -> str:
    """The analysis as condor_q -better-analyze prints it: the Requirements, the conditions
    with the slots each matches and rules out, the summary, the refusing slots, the advice."""
    lines = [f"The Requirements expression for job {analysis.job_id} is", ""]
    lines.append(
        f"    {analysis.requirements if analysis.requirements is not None else 'undefined'}"
    )
    if analysis.clauses:
        lines += _clause_table(analysis)
    lines += _summary(analysis)
    lines += _refusal_lines(analysis)
    if analysis.negotiator is not None:
        lines += ["", f"The last negotiation cycle did not match the job: {analysis.negotiator}"]
    if analysis.advice is not None:
        lines += ["", f"Suggestion: {analysis.advice}"]
    return "\n".join(lines) + "\n"
