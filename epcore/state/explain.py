"""Why a slot is in its state and whether a job would start there: policy expressions explained.

For each policy knob that matters in the slot's State/Activity (START, PREEMPT, ...), and for
both Requirements and ranks of a slot and a job: the expression's :class:`Explanation` tree
(made by :mod:`epcore.state.expression_explain`), where the knob was defined, and what it was
evaluated against.

Pure: no I/O and no clock; time arrives as ``now``.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from epcore.classad import ERROR, UNDEFINED, ClassAd, ClassAdSyntaxError, EvalContext, Value
from epcore.classad.formats import parse_expr
from epcore.classad.match import symmetric_match
from epcore.config import Config
from epcore.state.expression_explain import (
    MAX_REFERENCE_DEPTH,
    Explanation,
    conjuncts,
    explain_expression,
    expression_text,
    value_text,
)

# The expression trees were made here before they had a module of their own; their users
# still import them from here.
__all__ = [
    "MAX_REFERENCE_DEPTH",
    "Explanation",
    "JobExplanation",
    "PolicyExplanation",
    "SlotExplanation",
    "conjuncts",
    "explain_expression",
    "explain_job",
    "explain_slot",
    "expression_text",
    "policy_names",
    "value_text",
]


@attrs.frozen
class PolicyExplanation:
    """One policy expression of a slot or a job: name, where it was defined, and why its value.

    ``source`` is the knob as written in the configuration (``KeyboardIdle > $(StartIdleTime)``)
    and ``origin`` where (``/etc/condor/condor_config, line 12``); both None for ad attributes
    that no knob defines. ``against`` says what the expression was evaluated against.
    """

    name: str
    explanation: Explanation
    against: str
    source: str | None = None
    origin: str | None = None

    @property
    def value(self) -> Value:
        """The expression's value."""
        return self.explanation.value


@attrs.frozen
class JobExplanation:
    """Whether a job would start on a slot: both Requirements, START and both ranks."""

    slot_requirements: PolicyExplanation
    job_requirements: PolicyExplanation
    start: PolicyExplanation
    slot_rank: PolicyExplanation
    job_rank: PolicyExplanation
    matches: bool
    would_start: bool
    verdict: str


@attrs.frozen
class SlotExplanation:
    """A slot's state and activity, the policy expressions that matter there, and a job's fate."""

    slot: str
    state: str
    activity: str
    policies: tuple[PolicyExplanation, ...]
    job: JobExplanation | None = None


#: The policy knobs that decide what happens next, by state (and by activity in Claimed).
_POLICIES: dict[str, tuple[str, ...]] = {
    "Owner": ("IS_OWNER", "START"),
    "Unclaimed": ("IS_OWNER", "START", "RUNBENCHMARKS"),
    "Matched": ("START",),
    "Claimed": ("START", "PREEMPT", "WANT_SUSPEND", "SUSPEND", "RANK"),
    "Claimed/Suspended": ("CONTINUE", "PREEMPT"),
    "Preempting": ("WANT_VACATE", "KILL"),
    "Backfill": ("START", "EVICT_BACKFILL"),
    "Drained": ("START",),
}

#: States whose policy expressions are evaluated against the job the slot runs.
_CLAIMED_STATES = frozenset({"Claimed", "Preempting"})

#: Knobs the slot ad carries as attributes (already chosen per slot by the ad builder).
_AD_ATTRIBUTES = {"START": "Start", "RANK": "Rank"}


def policy_names(state: str, activity: str, *, backfill: bool = False) -> tuple[str, ...]:
    """The policy knobs that matter for a slot in ``state``/``activity``."""
    names = _POLICIES.get(f"{state}/{activity}") or _POLICIES.get(state, ("START",))
    if backfill and state == "Unclaimed":
        names = (*names, "START_BACKFILL")
    return names


def _knob_definition(config: Config, name: str, slot_id: object) -> tuple[str | None, str | None]:
    candidates = [f"SLOT{slot_id}_{name}"] if isinstance(slot_id, int) else []
    for candidate in (*candidates, name):
        found = config.definition(candidate)
        if found is not None:
            return found.raw, found.origin.describe()
    return None, None


def _knob_text(config: Config, name: str, slot_id: object) -> str | None:
    if isinstance(slot_id, int):
        value = config.slot_get(name, slot_id)
        if value is not None:
            return value
    return config.daemon_value(name)


def _policy(
    config: Config,
    name: str,
    slot: ClassAd,
    job: ClassAd | None,
    now: float,
) -> PolicyExplanation | None:
    slot_id = slot.evaluate("SlotID")
    source, origin = _knob_definition(config, name, slot_id)
    attribute = _AD_ATTRIBUTES.get(name)
    expr = slot.lookup(attribute) if attribute is not None else None
    against = "the slot alone" if job is None else "the slot and the job"
    if expr is None:
        text = _knob_text(config, name, slot_id)
        if text is None:
            return None
        try:
            expr = parse_expr(text)
        except ClassAdSyntaxError as error:
            broken = Explanation(text, ERROR, note=f"does not parse: {error}")
            return PolicyExplanation(name, broken, against, source, origin)
    explanation = explain_expression(
        expr, slot, job, now=now, my_name="slot", target_name="job", base=config.eval_context
    )
    return PolicyExplanation(name, explanation, against, source, origin)


#: How explanations name the two ads, MY first.
_SLOT_JOB = ("slot", "job")
_JOB_SLOT = ("job", "slot")


def _attribute(
    ad: ClassAd,
    other: ClassAd,
    name: str,
    names: tuple[str, str],
    now: float,
    base: EvalContext,
) -> PolicyExplanation:
    ad_name, other_name = names
    expr = ad.lookup(name)
    against = f"the {ad_name} ad as MY, the {other_name} ad as TARGET"
    if expr is None:
        missing = Explanation(name, UNDEFINED, note=f"the {ad_name} ad has no {name}")
        return PolicyExplanation(f"{ad_name} {name}", missing, against)
    explanation = explain_expression(
        expr, ad, other, now=now, my_name=ad_name, target_name=other_name, base=base
    )
    return PolicyExplanation(f"{ad_name} {name}", explanation, against)


def explain_job(config: Config, slot_ad: ClassAd, job_ad: ClassAd, *, now: float) -> JobExplanation:
    """Whether ``job_ad`` would start on the slot of ``slot_ad``, and why."""
    base = config.eval_context
    slot_requirements = _attribute(slot_ad, job_ad, "Requirements", _SLOT_JOB, now, base)
    job_requirements = _attribute(job_ad, slot_ad, "Requirements", _JOB_SLOT, now, base)
    start = _policy(config, "START", slot_ad, job_ad, now)
    if start is None:  # pragma: no cover - START always has a default
        start = PolicyExplanation("START", Explanation("START", UNDEFINED), "the slot and the job")
    slot_rank = _attribute(slot_ad, job_ad, "Rank", _SLOT_JOB, now, base)
    job_rank = _attribute(job_ad, slot_ad, "Rank", _JOB_SLOT, now, base)
    matches = symmetric_match(slot_ad, job_ad, context=base.at(now))
    would_start = matches and start.value is True
    return JobExplanation(
        slot_requirements,
        job_requirements,
        start,
        slot_rank,
        job_rank,
        matches,
        would_start,
        _verdict(would_start, (slot_requirements, job_requirements, start)),
    )


def _verdict(would_start: bool, checks: Sequence[PolicyExplanation]) -> str:
    if would_start:
        return "the job would start: both Requirements and START are TRUE"
    failing = [
        f"{check.name} is {value_text(check.value)}" for check in checks if check.value is not True
    ]
    return "the job would not start because " + "; ".join(failing)


def explain_slot(
    config: Config, slot_ad: ClassAd, job_ad: ClassAd | None = None, *, now: float
) -> SlotExplanation:
    """Explain the state of the slot of ``slot_ad`` and, given ``job_ad``, that job's fate."""
    name = slot_ad.evaluate("Name")
    state = slot_ad.evaluate("State")
    activity = slot_ad.evaluate("Activity")
    state_text = state if isinstance(state, str) else value_text(state)
    activity_text = activity if isinstance(activity, str) else value_text(activity)
    backfill = config.get_bool("ENABLE_BACKFILL", False)
    policies = []
    # Only a claimed slot's policies see a job (the one it runs); the others are local.
    running = job_ad if state_text in _CLAIMED_STATES else None
    for knob in policy_names(state_text, activity_text, backfill=backfill):
        found = _policy(config, knob, slot_ad, running, now)
        if found is not None:
            policies.append(found)
    job = None if job_ad is None else explain_job(config, slot_ad, job_ad, now=now)
    return SlotExplanation(
        name if isinstance(name, str) else value_text(name),
        state_text,
        activity_text,
        tuple(policies),
        job,
    )
