"""Helpers shared by the built-in functions: arity, conversions, time text, tree walking.

The conversions are libclassad's ``convertValueToIntegerValue``/``RealValue`` and its
``absTimeToString``/``relTimeToString`` (kept with the time-literal reading in
:mod:`epcore.classad.timetext`); the C casts live in :mod:`epcore.classad.cnum` and are
re-exported here. Value unparsing is in :mod:`._text`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import attrs

from epcore.classad.ast import (
    AdExpr,
    AttrRef,
    Binary,
    Call,
    Elvis,
    ListExpr,
    Literal,
    Node,
    Paren,
    Subscript,
    Ternary,
    Unary,
)
from epcore.classad.cnum import (
    INT32_MAX,
    INT32_MIN,
    c_div,
    c_int32,
    c_int64,
    c_mod,
    low32,
    strtod,
)
from epcore.classad.operators import BINARY
from epcore.classad.timetext import format_abs_time, format_rel_time
from epcore.classad.values import ERROR, UNDEFINED, AbsTime, RelTime, Value

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall

_NODE_TYPES: Final = (
    AdExpr,
    AttrRef,
    Binary,
    Call,
    Elvis,
    ListExpr,
    Literal,
    Paren,
    Subscript,
    Ternary,
    Unary,
)


def arity_ok(call: FunctionCall, low: int, high: int | None = None) -> bool:
    """Whether the call has between ``low`` and ``high`` (default ``low``) arguments."""
    count = len(call.args)
    return low <= count <= (low if high is None else high)


def rel_secs(value: RelTime) -> int:
    """A relative time as libclassad's ``IsRelativeTimeValue(time_t&)`` hands it out."""
    return c_int32(value.secs)


def to_integer(value: Value) -> Value:
    """libclassad's ``convertValueToIntegerValue``: an int, or UNDEFINED/ERROR."""
    kind = type(value)
    if kind is int:
        return value
    if kind is bool:
        return 1 if value else 0
    if kind is float:
        assert isinstance(value, float)
        return c_int64(value)
    if kind is str:
        assert isinstance(value, str)
        number, ok = strtod(value)
        if not ok:
            return ERROR
        return c_int64(number)
    if kind is AbsTime:
        assert isinstance(value, AbsTime)
        return value.secs
    if kind is RelTime:
        assert isinstance(value, RelTime)
        return rel_secs(value)
    if value is UNDEFINED:
        return UNDEFINED
    return ERROR


def to_real(value: Value) -> Value:
    """libclassad's ``convertValueToRealValue``: a float, or UNDEFINED/ERROR."""
    kind = type(value)
    if kind is float:
        return value
    if kind is int or kind is bool:
        assert isinstance(value, int)
        return float(value)
    if kind is str:
        assert isinstance(value, str)
        number, ok = strtod(value)
        return number if ok else ERROR
    if kind is AbsTime:
        assert isinstance(value, AbsTime)
        return float(value.secs)
    if kind is RelTime:
        assert isinstance(value, RelTime)
        return float(rel_secs(value))
    if value is UNDEFINED:
        return UNDEFINED
    return ERROR


def operate(op: str, left: Value, right: Value) -> Value:
    """Apply a strict binary operator with exactly the evaluator's semantics."""
    return BINARY[op](left, right)


def strict_strings(values: list[Value]) -> Value | None:
    """ERROR if any value is ERROR, else UNDEFINED if any is UNDEFINED, else None."""
    if any(v is ERROR for v in values):
        return ERROR
    if any(v is UNDEFINED for v in values):
        return UNDEFINED
    return None


def children(node: Node) -> list[Node]:
    """The direct child expressions of ``node`` (an ad literal's attribute values included)."""
    found: list[Node] = []
    for field in attrs.fields(type(node)):
        value = getattr(node, field.name)
        if type(value) is tuple:
            found.extend(child for name, child in value) if field.name == "attrs" else found.extend(
                value
            )
        elif type(value) in _NODE_TYPES:
            found.append(value)
    return found


def map_children(node: Node, change: Callable[[Node], Node]) -> Node:
    """``node`` with ``change`` applied to each direct child expression."""
    if type(node) is Literal:
        return node
    updates: dict[str, object] = {}
    for field in attrs.fields(type(node)):
        value = getattr(node, field.name)
        if type(value) is tuple:
            if field.name == "attrs":
                updates[field.name] = tuple((name, change(child)) for name, child in value)
            else:
                updates[field.name] = tuple(change(child) for child in value)
        elif type(value) in _NODE_TYPES:
            updates[field.name] = change(value)
    return attrs.evolve(node, **updates)  # type: ignore[arg-type]


__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "arity_ok",
    "c_div",
    "c_int32",
    "c_int64",
    "c_mod",
    "children",
    "format_abs_time",
    "format_rel_time",
    "low32",
    "map_children",
    "operate",
    "rel_secs",
    "strict_strings",
    "strtod",
    "to_integer",
    "to_real",
]
