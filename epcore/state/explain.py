"""Why a slot is in its state and whether a job would start there: policy expressions explained.

An :class:`Explanation` is a tree: an expression's text, its value, and the sub-expressions
that decided the value (for ``a && b`` that is false, the first false operand; for a
comparison, its operands; for an attribute reference, the attribute's own expression). Every
value is computed by the ClassAd engine itself: each sub-expression is evaluated as its own
:class:`~epcore.classad.Expr` with the same MY and TARGET ads as the whole, so an explanation
never disagrees with the evaluation it explains.

Pure: no I/O and no clock; time arrives as ``now``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from epcore.classad import ERROR, UNDEFINED, ClassAd, ClassAdSyntaxError, EvalContext, Value, ast
from epcore.classad.classad import Expr, to_node
from epcore.classad.formats import parse_expr
from epcore.classad.match import symmetric_match
from epcore.classad.unparse import format_literal, unparse
from epcore.config import Config

#: How many attribute references deep an explanation follows attributes' own expressions.
MAX_REFERENCE_DEPTH = 4

_CONNECTIVES = frozenset({"&&", "||"})
_BUILT_IN_NAMES = frozenset({"currenttime"})


@attrs.frozen
class Explanation:
    """One expression, its value, and the sub-expressions that decided it.

    ``reduced`` is the expression with its computed operands replaced by their values
    (``KeyboardIdle > 900`` for ``KeyboardIdle > 15 * 60``), when that differs from ``text``.
    For an attribute reference, ``origin`` says where the name was found (``MY``, ``TARGET``,
    ``undefined`` or ``built-in``) and ``ad`` names that ad (``slot``, ``job``).
    """

    text: str
    value: Value
    reduced: str | None = None
    origin: str | None = None
    ad: str | None = None
    children: tuple[Explanation, ...] = ()
    note: str | None = None


@attrs.frozen
class _Scope:
    my: ClassAd | None
    target: ClassAd | None
    context: EvalContext
    my_name: str
    target_name: str
    depth: int = 0
    following: frozenset[tuple[int, str]] = frozenset()

    def value(self, node: ast.Node) -> Value:
        return Expr(node).evaluate(self.my, self.target, context=self.context)

    def swapped(self, key: str) -> _Scope:
        assert self.target is not None
        mine = (self.target_name, self.my_name, self.depth + 1)
        seen = self.following | {(id(self.target), key)}
        return _Scope(self.target, self.my, self.context, *mine, seen)

    def deeper(self, key: str) -> _Scope:
        assert self.my is not None
        return attrs.evolve(
            self, depth=self.depth + 1, following=self.following | {(id(self.my), key)}
        )


def _literal(value: object) -> str:
    """A literal as a person reads it: a finite real as Python writes it (0.3, not 3.0E-01)."""
    if type(value) is float and value == value and abs(value) != float("inf"):
        return repr(value)
    return format_literal(value)


#: ``is``/``isnt`` as policy authors write them.
_SPELLINGS = {"is": "=?=", "isnt": "=!="}


def _spelled(node: ast.Node) -> ast.Node:
    """``node`` with ``=?=`` and ``=!=`` written as such (the tree stores them as words)."""
    if isinstance(node, ast.Literal):
        return node
    changes: dict[str, Any] = {}
    for field in attrs.fields(type(node)):
        part = getattr(node, field.name)
        if isinstance(part, tuple):
            changes[field.name] = tuple(
                (item[0], _spelled(item[1])) if isinstance(item, tuple) else _spelled(item)
                for item in part
            )
        elif part is not None and not isinstance(part, str | bool):
            changes[field.name] = _spelled(part)
    if isinstance(node, ast.Binary):
        changes["op"] = _SPELLINGS.get(node.op, node.op)
    return attrs.evolve(node, **changes)


def _text(node: ast.Node) -> str:
    return unparse(_spelled(node), _literal).strip()


def value_text(value: Value) -> str:
    """A value as a person reads it: TRUE, FALSE, UNDEFINED, ERROR, else ClassAd syntax (with
    reals as Python writes them: 2.5)."""
    if value is True or value is False:
        return "TRUE" if value else "FALSE"
    if value is UNDEFINED:
        return "UNDEFINED"
    if value is ERROR:
        return "ERROR"
    return _text(to_node(value))


def _is_true(value: Value) -> bool:
    return value is True or (type(value) in (int, float) and value != 0)


def _is_false(value: Value) -> bool:
    return value is False or (type(value) in (int, float) and value == 0)


def _interesting(node: ast.Node) -> bool:
    """Whether a sub-expression says more than its text (it has a reference or a call)."""
    # Without recursion: _explain asks this at every level of a tree it already recurses into.
    pending = [node]
    while pending:
        kind = type(current := pending.pop())
        if kind is ast.AttrRef or kind is ast.Call:
            return True
        pending.extend(_subnodes(current))
    return False


def _subnodes(node: ast.Node) -> tuple[ast.Node, ...]:
    if isinstance(node, ast.Literal):
        return ()
    found: list[ast.Node] = []
    for field in attrs.fields(type(node)):
        part = getattr(node, field.name)
        if isinstance(part, tuple):
            found.extend(item[1] if isinstance(item, tuple) else item for item in part)
        elif part is not None and not isinstance(part, str | bool):
            found.append(part)
    return tuple(found)


def _substituted(node: ast.Node, scope: _Scope) -> ast.Node:
    """``node`` itself when it is a name or a literal, else a literal of its value."""
    if isinstance(node, ast.AttrRef | ast.Literal):
        return node
    try:
        return to_node(scope.value(node))
    except (TypeError, ValueError):
        return node


def _reduced(node: ast.Binary | ast.Call, scope: _Scope, text: str) -> str | None:
    if isinstance(node, ast.Binary):
        shown: ast.Node = ast.Binary(
            node.op, _substituted(node.left, scope), _substituted(node.right, scope)
        )
    else:
        shown = ast.Call(node.name, tuple(_substituted(arg, scope) for arg in node.args))
    result = _text(shown)
    return None if result == text else result


def _flatten(node: ast.Node, op: str) -> list[ast.Node]:
    inner = node.inner if isinstance(node, ast.Paren) else node
    if isinstance(inner, ast.Binary) and inner.op == op:
        return _flatten(inner.left, op) + _flatten(inner.right, op)
    return [node]


def conjuncts(node: ast.Node) -> tuple[ast.Node, ...]:
    """The top-level operands of an ``&&`` chain as written (``node`` alone when it is not
    one); parentheses around the chain or a part of it do not hide it."""
    inner = node
    while isinstance(inner, ast.Paren):
        inner = inner.inner
    if isinstance(inner, ast.Binary) and inner.op == "&&":
        return conjuncts(inner.left) + conjuncts(inner.right)
    return (node,)


def expression_text(node: ast.Node) -> str:
    """``node`` as a policy author reads it: ``=?=``/``=!=`` spelled so, reals as Python
    writes them, the outer parentheses dropped."""
    while isinstance(node, ast.Paren):
        node = node.inner
    return _text(node)


def _connective(node: ast.Binary, value: Value, scope: _Scope) -> tuple[Explanation, ...]:
    operands = _flatten(node.left, node.op) + _flatten(node.right, node.op)
    values = [scope.value(operand) for operand in operands]
    decisive, alike = (_is_false, _is_true) if node.op == "&&" else (_is_true, _is_false)
    first = next((i for i, v in enumerate(values) if decisive(v)), None)
    if decisive(value) and first is not None:
        chosen = [first]
    elif alike(value) or decisive(value):
        chosen = list(range(len(operands)))
    else:
        chosen = [i for i, v in enumerate(values) if not alike(v)]
    return tuple(_explain(operands[i], scope) for i in chosen)


def _reference(node: ast.AttrRef, value: Value, scope: _Scope, text: str) -> Explanation:
    origin, holder_is_target = _origin(node, scope)
    ad = None
    if origin == "MY":
        ad = scope.my_name
    elif origin == "TARGET":
        ad = scope.target_name
    children: tuple[Explanation, ...] = ()
    holder = scope.target if holder_is_target else scope.my
    if holder_is_target is not None and holder is not None and scope.depth < MAX_REFERENCE_DEPTH:
        key = node.name.lower()
        bound = holder.lookup(node.name)
        expands = bound is not None and not isinstance(bound.node, ast.Literal)
        if bound is not None and expands and (id(holder), key) not in scope.following:
            inner = scope.swapped(key) if holder_is_target else scope.deeper(key)
            children = (_explain(bound.node, inner),)
    return Explanation(text, value, origin=origin, ad=ad, children=children)


def _origin(node: ast.AttrRef, scope: _Scope) -> tuple[str | None, bool | None]:
    """Where the engine finds ``node``'s name, and whether that is TARGET (None: no ad)."""
    if node.absolute:
        return None, None
    if node.scope is None:
        if scope.my is not None and node.name in scope.my:
            return "MY", False
        if scope.target is not None and node.name in scope.target:
            return "TARGET", True
        if node.name.lower() in _BUILT_IN_NAMES:
            return "built-in", None
        return "undefined", None
    prefix = node.scope
    if isinstance(prefix, ast.AttrRef) and prefix.scope is None and not prefix.absolute:
        side = prefix.name.lower()
        if side in ("my", "target"):
            ad = scope.my if side == "my" else scope.target
            if ad is not None and node.name in ad:
                return side.upper(), side == "target"
            return "undefined", None
    return None, None


def _explain(node: ast.Node, scope: _Scope) -> Explanation:
    if isinstance(node, ast.Paren):
        return _explain(node.inner, scope)  # the parentheses' value is their content's
    text = _text(node)
    value = scope.value(node)
    children: tuple[Explanation, ...] = ()
    reduced = None
    if isinstance(node, ast.AttrRef):
        return _reference(node, value, scope, text)
    if isinstance(node, ast.Binary) and node.op in _CONNECTIVES:
        children = _connective(node, value, scope)
    elif isinstance(node, ast.Binary | ast.Call):
        reduced = _reduced(node, scope, text)
        operands = (node.left, node.right) if isinstance(node, ast.Binary) else node.args
        children = tuple(_explain(o, scope) for o in operands if _interesting(o))
    elif isinstance(node, ast.Ternary):
        chosen = [node.cond]
        condition = scope.value(node.cond)
        if condition is True or condition is False:
            chosen.append(node.then if condition else node.otherwise)
        children = tuple(_explain(o, scope) for o in chosen if _interesting(o))
    elif isinstance(node, ast.Elvis):
        chosen = [node.left]
        if scope.value(node.left) is UNDEFINED:
            chosen.append(node.right)
        children = tuple(_explain(o, scope) for o in chosen if _interesting(o))
    elif isinstance(node, ast.Unary | ast.Subscript):
        children = tuple(_explain(o, scope) for o in _subnodes(node) if _interesting(o))
    return Explanation(text, value, reduced=reduced, children=children)


def explain_expression(
    expr: Expr | str,
    my: ClassAd | None = None,
    target: ClassAd | None = None,
    *,
    now: float,
    my_name: str = "MY",
    target_name: str = "TARGET",
    base: EvalContext | None = None,
) -> Explanation:
    """Explain ``expr`` evaluated with ``my`` as MY and ``target`` as TARGET at ``now``.

    Raises ClassAdSyntaxError when ``expr`` is text that does not parse.
    """
    parsed = parse_expr(expr) if isinstance(expr, str) else expr
    scope = _Scope(my, target, (base or EvalContext()).at(now), my_name, target_name)
    return _explain(parsed.node, scope)


# -- policy expressions of a slot ---------------------------------------------------------


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
