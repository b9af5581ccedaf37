"""Type conversions: ``int``, ``real``, ``string``, ``bool``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from epcore.classad.functions._support import arity_ok, rel_secs, to_integer, to_real
from epcore.classad.functions._text import to_string
from epcore.classad.functions.strings import ascii_lower
from epcore.classad.values import ERROR, UNDEFINED, RelTime, Value

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall, FunctionImpl


def _unary(convert: Callable[[Value], Value]) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        if not arity_ok(call, 1):
            return ERROR
        return convert(call.value(0))

    return impl


def string(call: FunctionCall) -> Value:
    """Strings stay, times print as ISO 8601 / ``[D+]HH:MM:SS``, the rest unparse."""
    if not arity_ok(call, 1):
        return ERROR
    return to_string(call, call.value(0))


def to_bool(value: Value) -> Value:
    """libclassad's ``bool()``: numbers by non-zero, the strings "true"/"false" by name."""
    kind = type(value)
    if kind is bool:
        return value
    if kind is int or kind is float:
        return value != 0
    if kind is str:
        assert isinstance(value, str)
        lowered = ascii_lower(value)
        if lowered == "true":
            return True
        if lowered == "false":
            return False
        return UNDEFINED
    if kind is RelTime:
        assert isinstance(value, RelTime)
        return rel_secs(value) != 0
    if value is UNDEFINED:
        return UNDEFINED
    return ERROR


def functions() -> dict[str, FunctionImpl]:
    """The functions of this module by lower-case name."""
    return {
        "int": _unary(to_integer),
        "real": _unary(to_real),
        "string": string,
        "bool": _unary(to_bool),
    }
