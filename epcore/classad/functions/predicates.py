"""Type predicates (``isInteger`` ...) and list membership (``member``, ``identicalMember``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from epcore.classad.classad import ClassAd
from epcore.classad.functions._support import arity_ok, operate
from epcore.classad.values import ERROR, UNDEFINED, AbsTime, RelTime, Value

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall, FunctionImpl


def _is_classad(value: Value) -> bool:
    return isinstance(value, ClassAd)


_TESTS: dict[str, Callable[[Value], bool]] = {
    "isundefined": lambda v: v is UNDEFINED,
    "iserror": lambda v: v is ERROR,
    "isstring": lambda v: type(v) is str,
    "isinteger": lambda v: type(v) is int,
    "isreal": lambda v: type(v) is float,
    "islist": lambda v: type(v) is list,
    "isclassad": _is_classad,
    "isboolean": lambda v: type(v) is bool,
    "isabstime": lambda v: type(v) is AbsTime,
    "isreltime": lambda v: type(v) is RelTime,
}


def _type_test(test: Callable[[Value], bool]) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        if not arity_ok(call, 1):
            return ERROR
        return test(call.value(0))

    return impl


def _membership(identical: bool) -> FunctionImpl:
    op = "is" if identical else "=="

    def impl(call: FunctionCall) -> Value:
        if not arity_ok(call, 2):
            return ERROR
        item, items = call.values()
        if items is UNDEFINED or (not identical and item is UNDEFINED):
            return UNDEFINED
        if type(items) is not list or type(item) is list or _is_classad(item):
            return ERROR
        if not identical and item is ERROR:
            return ERROR
        assert isinstance(items, list)
        # The element is the left operand, as in libclassad; only a true result counts.
        return any(operate(op, element, item) is True for element in items)

    return impl


def functions() -> dict[str, FunctionImpl]:
    """The functions of this module by lower-case name."""
    table = {name: _type_test(test) for name, test in _TESTS.items()}
    table["member"] = _membership(identical=False)
    table["identicalmember"] = _membership(identical=True)
    return table
