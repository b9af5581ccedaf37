"""The small helpers of a query over ads: conditions, typed attributes, constraints and
projections, as the collector and the schedd answer queries alike."""

from __future__ import annotations

import logging
import math

from epcore.classad import ClassAd, EvalContext, Expr, parse_expr
from epcore.classad.ast import AttrRef, Literal, Node
from epcore.classad.functions._support import children
from epcore.errors import ClassAdSyntaxError, PoolError

# The pool's queries are answered in the schedd's process; its log is the SchedLog.
_log = logging.getLogger("epcore.schedd")


def is_true(value: object) -> bool:
    """A ClassAd result read as a condition: true, or a non-zero number (UNDEFINED is false)."""
    if type(value) is bool:
        return value
    if type(value) is int or type(value) is float:
        return value != 0
    return False


def attribute_is_true(ad: ClassAd, name: str) -> bool:
    """Whether the ad's own ``name`` evaluates to a true condition."""
    return name in ad and is_true(ad.evaluate(name))


def string_attribute(ad: ClassAd, name: str) -> str | None:
    """The ad's ``name`` when it evaluates to a string, else None."""
    if name not in ad:
        return None
    value = ad.evaluate(name)
    return value if isinstance(value, str) else None


def number_attribute(ad: ClassAd, name: str) -> float | None:
    """The ad's ``name`` when it evaluates to a finite number (not a boolean), else None."""
    if name not in ad:
        return None
    value = ad.evaluate(name)
    if (type(value) is int or type(value) is float) and math.isfinite(value):
        return float(value)
    return None


def parse_constraint(text: str) -> Expr:
    """A query constraint; PoolError saying that it does not parse."""
    try:
        return parse_expr(text, source="constraint")
    except ClassAdSyntaxError as error:
        raise PoolError(f"query constraint {text!r} does not parse: {error}") from error


def names_attribute(node: Node, name: str) -> bool:
    """Whether the expression refers to attribute ``name`` anywhere (any scope)."""
    wanted = name.lower()
    pending = [node]
    while pending:
        current = pending.pop()
        if type(current) is AttrRef and current.name.lower() == wanted:
            return True
        pending.extend(children(current))
    return False


def passes_everything(constraint: Expr) -> bool:
    """Whether the constraint is the literal ``true`` (htcondor2 sends it when no constraint
    was asked for): evaluating it for each of thousands of ads is then work for nothing."""
    node = constraint.node
    return type(node) is Literal and node.value is True


def matches(constraint: Expr | None, ad: ClassAd, now: float | None) -> bool:
    """Whether the ad passes the constraint (no constraint passes everything); ``now`` None
    lets ``time()`` read the system clock."""
    if constraint is None:
        return True
    try:
        return is_true(constraint.evaluate(ad, context=EvalContext(now=now)))
    except Exception:
        # One ad that trips a fault must not fail the query (or the loop) for every ad.
        name = ad.evaluate("Name") if "Name" in ad else None
        if name is None and "ClusterId" in ad:
            name = f"job {ad.evaluate('ClusterId')}.{ad.evaluate('ProcId')}"
        _log.exception("constraint %s failed on the ad of %s; left out", constraint, name)
        return False


def project(ad: ClassAd, projection: tuple[str, ...] | None) -> ClassAd:
    """A copy of the ad holding only the projected attributes it has (all without one)."""
    if projection is None:
        return ad.copy()
    kept = ClassAd()
    for name in projection:
        expr = ad.lookup(name)
        if expr is not None:
            kept[ad.name_of(name) or name] = expr
    return kept
