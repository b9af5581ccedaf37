"""Helpers shared by the built-in functions: arity, conversions, time text, tree walking.

The conversions are libclassad's ``convertValueToIntegerValue``/``RealValue`` and its
``absTimeToString``/``relTimeToString``; the C casts they rely on live in :mod:`._cnum`
and are re-exported here. Value unparsing is in :mod:`._text`.
"""

from __future__ import annotations

import math
import re
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
from epcore.classad.functions._calendar import civil_from_epoch
from epcore.classad.functions._cnum import (
    INT32_MAX,
    INT32_MIN,
    c_div,
    c_int32,
    c_int64,
    c_mod,
    low32,
)
from epcore.classad.operators import BINARY
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


_STRTOD = re.compile(
    r"""[ \t\n\v\f\r]*
    (?P<num>[+-]?
      (?: (?P<inf>inf(?:inity)?)
        | (?P<nan>nan(?:\([0-9A-Za-z_]*\))?)
        | (?P<hex>0x(?:[0-9a-f]+(?:\.[0-9a-f]*)?|\.[0-9a-f]+)(?:p[+-]?[0-9]+)?)
        | (?P<dec>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?)
      )
    )""",
    re.IGNORECASE | re.VERBOSE,
)


def strtod(text: str) -> tuple[float, bool]:
    """C ``strtod`` on the longest numeric prefix; the flag says whether anything was read."""
    match = _STRTOD.match(text)
    if match is None:
        return 0.0, False
    number = match.group("num")
    negative = number.startswith("-")
    if match.group("inf"):
        return (-math.inf if negative else math.inf), True
    if match.group("nan"):
        return (-math.nan if negative else math.nan), True
    hex_part = match.group("hex")
    if hex_part:
        mantissa = hex_part if "p" in hex_part.lower() else hex_part + "p0"
        try:
            value = float.fromhex(mantissa)
        except OverflowError:
            value = math.inf
        return (-value if negative else value), True
    try:
        return float(number), True
    except OverflowError:  # pragma: no cover - float() returns inf rather than raising
        return (-math.inf if negative else math.inf), True


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


def format_abs_time(value: AbsTime) -> str:
    """libclassad's ``absTimeToString``: local wall time in ISO 8601 with the offset."""
    fields = civil_from_epoch(value.secs + value.offset)
    offset = value.offset
    sign = "+" if offset > 0 else "-"
    offset = abs(offset)
    return (
        f"{fields.year:04d}-{fields.month:02d}-{fields.day:02d}T"
        f"{fields.hour:02d}:{fields.minute:02d}:{fields.second:02d}"
        f"{sign}{c_div(offset, 3600):02d}:{c_mod(c_div(offset, 60), 60):02d}"
    )


def format_rel_time(secs: float) -> str:
    """libclassad's ``relTimeToString``: ``[-][D+]HH:MM:SS`` shortened from the left."""
    prefix = ""
    if secs < 0:
        prefix = "-"
        secs = -secs
    fraction = secs - math.floor(secs)
    whole = c_int32(secs)
    hours_rest = c_mod(whole, 86400)
    minutes_rest = c_mod(hours_rest, 3600)
    seconds = c_mod(minutes_rest, 60) + fraction
    days = c_div(whole, 86400)
    hours = c_div(hours_rest, 3600)
    minutes = c_div(minutes_rest, 60)
    sec_text = f"{int(seconds):02d}" if fraction == 0 else _c_g02(seconds)
    if days:
        return f"{prefix}{days}+{hours:02d}:{minutes:02d}:{sec_text}"
    if hours:
        return f"{prefix}{hours:02d}:{minutes:02d}:{sec_text}"
    if minutes:
        return f"{prefix}{minutes:02d}:{sec_text}"
    return prefix + sec_text


def _c_g02(x: float) -> str:
    """C's ``%02g``."""
    text = f"{x:g}"
    return text if len(text) >= 2 else "0" + text


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
