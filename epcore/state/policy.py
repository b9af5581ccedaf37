"""A slot's policy expressions, read from the configuration once and evaluated as the startd does.

:func:`load_policy` reads every policy knob for one slot (``SLOT<N>_<KNOB>``, then
``SLOT_TYPE_<T>_<KNOB>``, then ``<KNOB>``, as :meth:`Config.slot_get` does) and parses it as a
ClassAd expression. The ``_VANILLA`` variants of SUSPEND, CONTINUE, PREEMPT, KILL, WANT_SUSPEND
and WANT_VACATE are used for vanilla jobs (``JobUniverse == 5``) and fall back to the plain knob.

Broken expressions (text that does not parse, a value whose macros expand to nothing, a macro
that cannot be expanded) are reported once, as a :class:`PolicyProblem` naming the knob, file
and line, and replaced by a safe constant (:data:`SAFE_VALUES`): every boolean policy knob that
could start, suspend, preempt or kill something counts as FALSE, so a policy the startd cannot
evaluate never starts a job and never takes one away on a guess; IS_OWNER counts as FALSE so
the slot is not stuck in Owner (START, also FALSE when broken, still keeps jobs off); CONTINUE
counts as TRUE so that a job is never left suspended forever; WANT_VACATE counts as TRUE (a
graceful vacate is gentler than a hard kill); RANK counts as 0 and the time knobs as their
defaults.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import attrs

from epcore.classad import (
    ERROR,
    UNDEFINED,
    ClassAd,
    ClassAdSyntaxError,
    EvalContext,
    Expr,
    FunctionTable,
    parse_expr,
)
from epcore.config import Config
from epcore.config.table import Origin
from epcore.errors import ConfigError

#: Knobs that have a ``_VANILLA`` variant for vanilla-universe jobs.
VANILLA_KNOBS = ("SUSPEND", "CONTINUE", "PREEMPT", "KILL", "WANT_SUSPEND", "WANT_VACATE")

#: Every expression knob read per slot, and the text it takes when broken (see module doc).
SAFE_VALUES: Mapping[str, str] = {
    "START": "False",
    "IS_OWNER": "False",
    "RANK": "0",
    "SUSPEND": "False",
    "CONTINUE": "True",
    "PREEMPT": "False",
    "KILL": "False",
    "WANT_SUSPEND": "False",
    "WANT_VACATE": "True",
    "MAXJOBRETIREMENTTIME": "0",
    "MachineMaxVacateTime": "600",
    "RUNBENCHMARKS": "False",
    "START_BACKFILL": "False",
    "EVICT_BACKFILL": "False",
}

#: Integer knobs read once for the whole startd, with their fallbacks.
INT_KNOBS: Mapping[str, int] = {
    "MATCH_TIMEOUT": 120,
    "KILLING_TIMEOUT": 30,
    "CLAIM_WORKLIFE": 1200,
    "ALIVE_INTERVAL": 300,
    "MAX_CLAIM_ALIVES_MISSED": 6,
    "POLLING_INTERVAL": 5,
    "UPDATE_INTERVAL": 300,
}

#: Policy expressions a slot's ad carries (the startd's own ad has them, so that PREEMPT may
#: refer to SUSPEND or WANT_SUSPEND), as attributes of these names.
PUBLISHED_KNOBS = ("SUSPEND", "CONTINUE", "PREEMPT", "KILL", "WANT_SUSPEND", "WANT_VACATE")

_VANILLA_UNIVERSE = 5


@attrs.frozen
class PolicyProblem:
    """A policy knob that could not be used: which, where it was set, why, and what replaced it."""

    knob: str
    text: str
    source: str | None
    line: int | None
    reason: str
    replacement: str

    def __str__(self) -> str:
        where = self.source or "<unknown>"
        if self.line is not None:
            where = f"{where}, line {self.line}"
        return (
            f"{where}: {self.knob} = {self.text} cannot be used ({self.reason}); "
            f"the slot uses {self.knob} = {self.replacement} instead"
        )


@attrs.frozen
class Knob:
    """One parsed policy expression and the configuration name it came from, with the
    function table it is evaluated with (the configuration's: built-ins and plugins')."""

    name: str
    source_name: str
    text: str
    expr: Expr
    broken: bool = False
    functions: FunctionTable | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class SlotPolicy:
    """The policy of one slot number: its expressions, the startd-wide numbers, its problems."""

    slot_id: int
    knobs: Mapping[str, Knob]
    numbers: Mapping[str, int]
    enable_backfill: bool
    problems: tuple[PolicyProblem, ...] = ()
    #: What expressions of the slot beyond its knobs (a drain's start, a job's Requirements)
    #: are evaluated with: the configuration's function table.
    functions: FunctionTable | None = attrs.field(default=None, eq=False, repr=False)

    def knob(self, name: str, job: ClassAd | None = None) -> Knob:
        """The knob ``name`` for ``job``: the ``_VANILLA`` variant for a vanilla job, if set."""
        if job is not None and name in VANILLA_KNOBS:
            # Look for the variant before asking the job: most policies have none.
            vanilla = self.knobs.get(f"{name}_VANILLA")
            if vanilla is not None and is_vanilla(job):
                return vanilla
        return self.knobs[name]

    def number(self, name: str) -> int:
        """A startd-wide integer knob (MATCH_TIMEOUT, KILLING_TIMEOUT, CLAIM_WORKLIFE...)."""
        return self.numbers[name]


def published_expressions(policy: SlotPolicy) -> tuple[tuple[str, Expr], ...]:
    """The :data:`PUBLISHED_KNOBS` of ``policy`` as (attribute, expression) pairs."""
    return tuple((name, policy.knob(name).expr) for name in PUBLISHED_KNOBS)


def is_vanilla(job: ClassAd) -> bool:
    """Whether ``job`` is a vanilla-universe job (JobUniverse 5)."""
    return job.evaluate("JobUniverse") == _VANILLA_UNIVERSE


def _broken(
    name: str, at: str, origin: Origin, reason: str, text: str
) -> tuple[Knob, PolicyProblem]:
    safe = SAFE_VALUES.get(name.removesuffix("_VANILLA"), "False")
    knob = Knob(name, at, text, parse_expr(safe), broken=True)
    return knob, PolicyProblem(at, text, origin.source, origin.line, reason, safe)


def _read(
    config: Config, name: str, slot_id: int, slot_type: int | None
) -> tuple[Knob | None, PolicyProblem | None]:
    candidates = [f"SLOT{slot_id}_{name}"]
    if slot_type:
        candidates.append(f"SLOT_TYPE_{slot_type}_{name}")
    candidates.append(name)
    for candidate in candidates:
        found = config.definition(candidate)
        if found is None or not found.raw.strip():
            continue
        origin: Origin = found.origin

        try:
            text = config.get(candidate)
        except ConfigError as error:
            return _broken(
                name, candidate, origin, f"it cannot be expanded: {error.reason}", found.raw.strip()
            )
        if text is None:
            return _broken(name, candidate, origin, "it expands to nothing", found.raw.strip())
        try:
            return Knob(name, candidate, text, parse_expr(text)), None
        except ClassAdSyntaxError as error:
            return _broken(
                name, candidate, origin, f"it is not a ClassAd expression: {error.reason}", text
            )
    fallback = config.daemon_value(name)
    if fallback is None:
        return None, None
    return Knob(name, name, fallback, parse_expr(fallback)), None


def load_policy(config: Config, slot_id: int, slot_type: int | None = None) -> SlotPolicy:
    """Read and parse the policy of slot ``slot_id`` (of type ``slot_type``) from ``config``."""
    knobs: dict[str, Knob] = {}
    problems: list[PolicyProblem] = []
    names = [*SAFE_VALUES, *(f"{n}_VANILLA" for n in VANILLA_KNOBS)]
    for name in names:
        knob, problem = _read(config, name, slot_id, slot_type)
        if problem is not None:
            problems.append(problem)
        if knob is not None:
            knobs[name] = knob
        elif not name.endswith("_VANILLA"):
            knobs[name] = Knob(name, name, SAFE_VALUES[name], parse_expr(SAFE_VALUES[name]))
    numbers = {name: config.get_int(name, default) for name, default in INT_KNOBS.items()}
    functions = config.eval_context.functions
    return SlotPolicy(
        slot_id,
        {name: attrs.evolve(knob, functions=functions) for name, knob in knobs.items()},
        numbers,
        config.get_bool("ENABLE_BACKFILL", False),
        tuple(problems),
        functions,
    )


def evaluate(
    expr: Expr,
    slot_ad: ClassAd | None,
    job_ad: ClassAd | None,
    now: float,
    functions: FunctionTable | None = None,
) -> object:
    """``expr`` with MY = the slot ad and TARGET = the job ad (None: absent, "locally"),
    calling ``functions`` (None: the built-in ones)."""
    return expr.evaluate(slot_ad, job_ad, context=context_at(now), functions=functions)


def knob_value(knob: Knob, slot_ad: ClassAd | None, job_ad: ClassAd | None, now: float) -> object:
    """``knob``'s expression evaluated as :func:`evaluate` does, with the knob's functions."""
    return evaluate(knob.expr, slot_ad, job_ad, now, knob.functions)


@functools.lru_cache(maxsize=8)
def context_at(now: float) -> EvalContext:
    """The evaluation context of a policy pass at ``now`` (one per pass, not per expression)."""
    return EvalContext(now=now)


def truth(value: object) -> bool | None:
    """A policy value as the startd reads it: True/False, numbers non-zero; None otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    return None


def number(value: object, default: float = 0.0) -> float:
    """A numeric policy value (RANK, retirement, vacate time); ``default`` when not a number."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    return default


def is_true(knob: Knob, slot_ad: ClassAd | None, job_ad: ClassAd | None, now: float) -> bool:
    """Whether ``knob`` evaluates to TRUE (UNDEFINED and ERROR are not TRUE)."""
    return truth(knob_value(knob, slot_ad, job_ad, now)) is True


def is_false(knob: Knob, slot_ad: ClassAd | None, job_ad: ClassAd | None, now: float) -> bool:
    """Whether ``knob`` evaluates to FALSE (UNDEFINED and ERROR are not FALSE)."""
    value = knob_value(knob, slot_ad, job_ad, now)
    return value is not UNDEFINED and value is not ERROR and truth(value) is False
