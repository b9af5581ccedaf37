"""The periodic job policy: which of a job's periodic expressions, or the pool's
SYSTEM_PERIODIC_* ones, fires now, and what the schedd does about it. Pure functions of the
job ad, the configuration and ``now``.

As HTCondor's schedd and shadow evaluate them (``UserPolicy::AnalyzePolicy`` in periodic
mode), the first expression that is true wins, in this order:

1. a running or suspended job: ``PeriodicVacate``, then SYSTEM_PERIODIC_VACATE: the job is
   evicted and goes back to idle (VacateReasonCode 1000 for the job's own expression, 1001
   for the system's);
2. a job that is not held: ``PeriodicHold``, then SYSTEM_PERIODIC_HOLD: the job is held with
   HoldReasonCode 3 (the job's) or 26 (the system's), the subcode of ``PeriodicHoldSubCode``
   or SYSTEM_PERIODIC_HOLD_SUBCODE, and the text of ``PeriodicHoldReason`` or
   SYSTEM_PERIODIC_HOLD_REASON, else HTCondor's "The job attribute PeriodicHold expression
   '...' evaluated to TRUE" / "The system macro SYSTEM_PERIODIC_HOLD expression '...'
   evaluated to TRUE";
3. a held job, unless a user held it (HoldReasonCode 1) or it was held SYSTEM_MAX_RELEASES
   times already: ``PeriodicRelease``, then SYSTEM_PERIODIC_RELEASE: the job is idle again;
4. any job: ``PeriodicRemove``, then SYSTEM_PERIODIC_REMOVE: the job is removed with that
   RemoveReason.

An expression fires when it evaluates to true or a non-zero number; UNDEFINED, ERROR and
anything else do not fire (HTCondor's code for firing on UNDEFINED is disabled). Each
SYSTEM_PERIODIC_<ACTION> is a list: first SYSTEM_PERIODIC_<ACTION>_<NAME> for every name in
SYSTEM_PERIODIC_<ACTION>_NAMES (with its own _REASON and _SUBCODE), then the unnamed
expression; an expression that is literally false is left out, one that does not parse is
left out and reported. HTCondor 25 parses SYSTEM_PERIODIC_VACATE but its evaluator has no
case for it; epcore evaluates it as its manual and its vacate-code table (1001) describe.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import attrs

from epcore.classad import ClassAd, EvalContext, Expr, ast, parse_expr
from epcore.config import Config
from epcore.errors import EpError
from epcore.jobs.codes import HoldCode, VacateCode
from epcore.schedd.jobqueue_model import JobStatus


class PeriodicKind(enum.Enum):
    """What a periodic expression asks for, with its job attribute and system knob."""

    VACATE = ("PeriodicVacate", "SYSTEM_PERIODIC_VACATE")
    HOLD = ("PeriodicHold", "SYSTEM_PERIODIC_HOLD")
    RELEASE = ("PeriodicRelease", "SYSTEM_PERIODIC_RELEASE")
    REMOVE = ("PeriodicRemove", "SYSTEM_PERIODIC_REMOVE")

    @property
    def attribute(self) -> str:
        return self.value[0]

    @property
    def knob(self) -> str:
        return self.value[1]


@attrs.frozen
class SystemPolicy:
    """One SYSTEM_PERIODIC_<ACTION>[_<NAME>] expression: the knob that holds it, its text as
    configured, and the knobs of its reason and subcode expressions (parsed when used)."""

    knob: str
    text: str
    expr: Expr
    reason: str | None = None
    subcode: str | None = None


@attrs.frozen
class SystemPolicies:
    """The pool's SYSTEM_PERIODIC_* lists, and what could not be read (knob and why)."""

    vacates: tuple[SystemPolicy, ...] = ()
    holds: tuple[SystemPolicy, ...] = ()
    releases: tuple[SystemPolicy, ...] = ()
    removes: tuple[SystemPolicy, ...] = ()
    max_releases: int | None = None
    problems: tuple[str, ...] = ()

    def of(self, kind: PeriodicKind) -> tuple[SystemPolicy, ...]:
        return {
            PeriodicKind.VACATE: self.vacates,
            PeriodicKind.HOLD: self.holds,
            PeriodicKind.RELEASE: self.releases,
            PeriodicKind.REMOVE: self.removes,
        }[kind]

    @classmethod
    def from_config(cls, config: Config) -> SystemPolicies:
        """The SYSTEM_PERIODIC_* expressions of ``config`` (see the module docstring)."""
        problems: list[str] = []
        lists: dict[PeriodicKind, tuple[SystemPolicy, ...]] = {}
        for kind in PeriodicKind:
            lists[kind] = _policy_list(config, kind.knob, problems)
        max_releases = config.get_int("SYSTEM_MAX_RELEASES", -1)
        return cls(
            vacates=lists[PeriodicKind.VACATE],
            holds=lists[PeriodicKind.HOLD],
            releases=lists[PeriodicKind.RELEASE],
            removes=lists[PeriodicKind.REMOVE],
            max_releases=None if max_releases < 0 else max_releases,
            problems=tuple(problems),
        )


def _policy_list(config: Config, base: str, problems: list[str]) -> tuple[SystemPolicy, ...]:
    knobs = [
        f"{base}_{name}"
        for name in dict.fromkeys(config.get_list(f"{base}_NAMES"))
        if name.upper() != "NAMES"
    ]
    knobs.append(base)
    found: list[SystemPolicy] = []
    for knob in knobs:
        text = (config.get(knob) or "").strip()
        if not text:
            continue
        try:
            expr = parse_expr(text)
        except EpError as error:
            problems.append(f"{_where(config, knob)}: ignored, it does not parse: {error}")
            continue
        if _literally_false(expr):
            continue
        reason = f"{knob}_REASON" if config.get(f"{knob}_REASON") else None
        subcode = f"{knob}_SUBCODE" if config.get(f"{knob}_SUBCODE") else None
        found.append(SystemPolicy(knob, text, expr, reason, subcode))
    return tuple(found)


def _where(config: Config, knob: str) -> str:
    origin = config.origin(knob)
    if origin is None or origin.line is None:
        return knob
    return f"{knob} ({origin.source}, line {origin.line})"


def _literally_false(expr: Expr) -> bool:
    if type(expr.node) is not ast.Literal:
        return False
    value = expr.evaluate()
    return value is False or (type(value) in (int, float) and value == 0)


@attrs.frozen
class PeriodicAction:
    """What the periodic policy does to a job: ``kind``, with the reason text and codes the
    job gets (HoldReasonCode for a hold, VacateReasonCode for a vacate; 0 otherwise)."""

    kind: PeriodicKind
    reason: str
    code: int = 0
    subcode: int = 0


def _fires(value: object) -> bool:
    if isinstance(value, bool):
        return value
    return isinstance(value, int | float) and value != 0


def _number(value: object) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value and abs(value) < 2**63:
        return int(value)
    return None


def periodic_action(
    job: ClassAd, status: JobStatus, policies: SystemPolicies, config: Config, *, now: float
) -> PeriodicAction | None:
    """The periodic policy's action on ``job`` (in ``status``) at ``now``, or None.

    ``config`` gives the SYSTEM_PERIODIC_*_REASON / _SUBCODE expressions of a system policy
    that fires; they are read only then.
    """
    if status in (JobStatus.REMOVED, JobStatus.COMPLETED):
        return None
    context = config.eval_context.at(now)
    kinds: list[PeriodicKind] = []
    if status in (JobStatus.RUNNING, JobStatus.SUSPENDED):
        kinds.append(PeriodicKind.VACATE)
    if status is not JobStatus.HELD:
        kinds.append(PeriodicKind.HOLD)
    elif _releasable(job, policies):
        kinds.append(PeriodicKind.RELEASE)
    kinds.append(PeriodicKind.REMOVE)
    for kind in kinds:
        action = _job_expression(job, kind, context) or _system_expression(
            job, kind, policies.of(kind), config, context
        )
        if action is not None:
            return action
    return None


def _releasable(job: ClassAd, policies: SystemPolicies) -> bool:
    if job.evaluate("HoldReasonCode") == HoldCode.USER_REQUEST:
        return False
    holds = job.evaluate("NumHolds")
    limit = policies.max_releases
    return limit is None or not isinstance(holds, int) or holds < limit


def _job_expression(
    job: ClassAd, kind: PeriodicKind, context: EvalContext
) -> PeriodicAction | None:
    expr = job.lookup(kind.attribute)
    if expr is None or not _fires(job.evaluate(kind.attribute, context=context)):
        return None
    reason = job.evaluate(f"{kind.attribute}Reason", context=context)
    subcode = _number(job.evaluate(f"{kind.attribute}SubCode", context=context))
    if not isinstance(reason, str) or not reason:
        reason = f"The job attribute {kind.attribute} expression '{expr}' evaluated to TRUE"
    code = {
        PeriodicKind.HOLD: HoldCode.JOB_POLICY,
        PeriodicKind.VACATE: VacateCode.JOB_POLICY,
    }.get(kind, 0)
    return PeriodicAction(kind, reason, int(code), subcode or 0)


def _system_expression(
    job: ClassAd,
    kind: PeriodicKind,
    policies: Sequence[SystemPolicy],
    config: Config,
    context: EvalContext,
) -> PeriodicAction | None:
    for policy in policies:
        if not _fires(policy.expr.evaluate(job, context=context)):
            continue
        reason: object = None
        subcode: int | None = None
        if policy.reason is not None:
            reason = _knob_value(config, policy.reason, job, context)
        if policy.subcode is not None:
            subcode = _number(_knob_value(config, policy.subcode, job, context))
        if not isinstance(reason, str) or not reason:
            reason = f"The system macro {kind.knob} expression '{policy.text}' evaluated to TRUE"
        code = {
            PeriodicKind.HOLD: HoldCode.SYSTEM_POLICY,
            PeriodicKind.VACATE: VacateCode.SYSTEM_POLICY,
        }.get(kind, 0)
        return PeriodicAction(kind, reason, int(code), subcode or 0)
    return None


def _knob_value(config: Config, knob: str, job: ClassAd, context: EvalContext) -> object:
    text = config.get(knob)
    if not text:
        return None
    try:
        return parse_expr(text).evaluate(job, context=context)
    except EpError:
        return None


@attrs.frozen
class PeriodicTiming:
    """When the next pass over the queue starts: PERIODIC_EXPR_INTERVAL after the last one
    began, stretched so that evaluating takes at most PERIODIC_EXPR_TIMESLICE of the time,
    never beyond MAX_PERIODIC_EXPR_INTERVAL. An interval of 0 or less turns the policy off."""

    interval: float = 60.0
    max_interval: float = 1200.0
    timeslice: float = 0.01

    @classmethod
    def from_config(cls, config: Config) -> PeriodicTiming:
        interval = float(config.get_int("PERIODIC_EXPR_INTERVAL", 60))
        return cls(
            interval=interval,
            max_interval=max(float(config.get_int("MAX_PERIODIC_EXPR_INTERVAL", 1200)), interval),
            timeslice=config.get_float("PERIODIC_EXPR_TIMESLICE", 0.01, minimum=0.0, maximum=1.0),
        )

    @property
    def enabled(self) -> bool:
        return self.interval > 0

    def next_start(self, started: float, spent: float) -> float:
        """When the pass after one that began at ``started`` and took ``spent`` s starts."""
        wait = self.interval
        if self.timeslice > 0:
            wait = max(wait, spent / self.timeslice)
        return started + min(wait, self.max_interval)
