"""Values and expressions as libclassad's unparser writes them.

epcore's own unparser writes reals so that they read back exactly (17 digits when
needed, ``1E309`` for infinity) and minus on a number as ``- 5``. Text that functions
return (``string()``, ``strcat()``, ``unparse()``) must be libclassad's instead: ``%.15E``,
``real("INF")``, `` -5`` and its time literals. Those nodes are swapped for placeholders,
the rest is unparsed as usual, and libclassad's text takes the placeholders' place.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from epcore.classad.ast import AdExpr, Literal, Node, Unary
from epcore.classad.classad import to_node
from epcore.classad.functions._support import (
    arity_ok,
    format_abs_time,
    format_rel_time,
    map_children,
    rel_secs,
)
from epcore.classad.values import ERROR, UNDEFINED, AbsTime, RelTime, Value

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall


def format_real(value: float) -> str:
    """A real as libclassad prints it: ``%.15E``, ``real("INF")``, ``real("NaN")``, ``-0.0``."""
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    if math.isnan(value):
        return 'real("NaN")'
    if math.isinf(value):
        return 'real("INF")' if value > 0 else 'real("-INF")'
    return f"{value:.15E}"


def literal_text(node: Node) -> str | None:
    """libclassad's text for the nodes epcore's unparser writes differently, else None."""
    if type(node) is Literal:
        value = node.value
        kind = type(value)
        if kind is float:
            assert isinstance(value, float)
            return format_real(value)
        if kind is AbsTime:
            assert isinstance(value, AbsTime)
            return f'absTime("{format_abs_time(value)}")'
        if kind is RelTime:
            assert isinstance(value, RelTime)
            return f'relTime("{format_rel_time(value.secs)}")'
        return None
    if type(node) is Unary and node.op == "-" and type(node.operand) is Literal:
        number = node.operand.value
        if type(number) is int:
            return f" -{number}"
        if type(number) is float:
            assert isinstance(number, float)
            return f" -{format_real(number)}"
    return None


def _ad_order(name: str) -> tuple[int, bytes]:
    data = name.encode("utf-8", "surrogateescape")
    return len(data), data.lower()


def in_ad_order(node: Node) -> Node:
    """``node`` with every nested ad's attributes in libclassad's storage order.

    libclassad keeps an ad's attributes ordered by name length, then by name compared
    without case, and prints them in that order; a repeated name keeps its first
    spelling and its last expression.
    """
    if type(node) is AdExpr:
        merged: dict[str, tuple[str, Node]] = {}
        for name, value in node.attrs:
            key = name.lower()
            spelling = merged[key][0] if key in merged else name
            merged[key] = (spelling, in_ad_order(value))
        ordered = sorted(merged.values(), key=lambda entry: _ad_order(entry[0]))
        return AdExpr(tuple(ordered))
    return map_children(node, in_ad_order)


def unparse_substituting(
    call: FunctionCall, node: Node, replace: Callable[[Node], str | None]
) -> str:
    """The text of ``node`` with ``replace``'s text for every node it returns text for."""
    texts: list[str] = []

    def hide(child: Node) -> Node:
        text = replace(child)
        if text is not None:
            texts.append(text)
            return Literal(f"\0{len(texts) - 1}")
        return map_children(child, hide)

    out = call.unparse(hide(node))
    for index, text in enumerate(texts):
        marker = call.unparse(Literal(f"\0{index}"))
        if out.count(marker) != 1:
            return call.unparse(node)
        out = out.replace(marker, text)
    return out


def unparse_value(call: FunctionCall, value: Value) -> str:
    """The text of a value, as libclassad's unparser writes it."""
    if type(value) is list:
        assert isinstance(value, list)
        source = call.source_of(value)
        if source is not None:
            return unparse_substituting(call, in_ad_order(source), literal_text)
        return "{ " + ",".join(unparse_value(call, item) for item in value) + " }"
    return unparse_substituting(call, in_ad_order(to_node(value)), literal_text)


def to_string(call: FunctionCall, value: Value) -> Value:
    """libclassad's ``convertValueToStringValue``: a str, or UNDEFINED/ERROR."""
    kind = type(value)
    if kind is str:
        return value
    if value is UNDEFINED or value is ERROR:
        return value
    if kind is AbsTime:
        assert isinstance(value, AbsTime)
        return format_abs_time(value)
    if kind is RelTime:
        assert isinstance(value, RelTime)
        return format_rel_time(float(rel_secs(value)))
    return unparse_value(call, value)


def string_pair(call: FunctionCall) -> tuple[str, str] | Value:
    """The two arguments of a two-string comparison as text, or the value to return at once.

    libclassad's strcmp and versioncmp families share this: two arguments, UNDEFINED if
    either is, each converted to a string, ERROR when one cannot be.
    """
    if not arity_ok(call, 2):
        return ERROR
    left, right = call.values()
    if left is UNDEFINED or right is UNDEFINED:
        return UNDEFINED
    left_text, right_text = to_string(call, left), to_string(call, right)
    if type(left_text) is not str or type(right_text) is not str:
        return ERROR
    assert isinstance(left_text, str) and isinstance(right_text, str)
    return left_text, right_text
