"""Functions over list values.

``size``, ``sum``, ``avg``, ``min``, ``max``, ``anyCompare`` and ``allCompare``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from epcore.classad.classad import ClassAd
from epcore.classad.functions._support import arity_ok, operate
from epcore.classad.values import ERROR, UNDEFINED, Value

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall, FunctionImpl

_COMPARISONS = {
    "<": "<",
    "<=": "<=",
    "!=": "!=",
    "==": "==",
    ">": ">",
    ">=": ">=",
    "is": "is",
    "isnt": "isnt",
}


def _is_numeric(value: Value) -> bool:
    # libclassad's Value::IsNumber() counts booleans as numbers here.
    return type(value) in (int, float, bool)


def size(call: FunctionCall) -> Value:
    """Elements of a list, attributes of an ad, or bytes of a string."""
    if not arity_ok(call, 1):
        return ERROR
    value = call.value(0)
    if value is UNDEFINED:
        return UNDEFINED
    if type(value) is list:
        assert isinstance(value, list)
        return len(value)
    if isinstance(value, ClassAd):
        return len(value)
    if type(value) is str:
        assert isinstance(value, str)
        return len(value.encode("utf-8", "surrogateescape"))
    return ERROR


def _numbers(call: FunctionCall) -> list[Value] | Value:
    """The defined numeric elements of the single list argument, or the value to return."""
    if not arity_ok(call, 1):
        return ERROR
    items = call.value(0)
    if items is UNDEFINED:
        return UNDEFINED
    if type(items) is not list:
        return ERROR
    assert isinstance(items, list)
    numbers: list[Value] = []
    for item in items:
        if item is UNDEFINED:
            continue
        if not _is_numeric(item):
            return ERROR
        numbers.append(item)
    return numbers


def _sum_avg(average: bool) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        numbers = _numbers(call)
        if type(numbers) is not list:
            return numbers
        assert isinstance(numbers, list)
        total: Value = numbers[0] if numbers else 0
        for number in numbers[1:]:
            total = operate("+", total, number)
        if average and numbers:
            # libclassad divides by the count as a real, whatever the element types.
            return operate("/", total, float(len(numbers)))
        return total

    return impl


def _min_max(op: str) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        numbers = _numbers(call)
        if type(numbers) is not list:
            return numbers
        assert isinstance(numbers, list)
        if not numbers:
            return UNDEFINED
        bound = numbers[0]
        for number in numbers[1:]:
            chosen = number if operate(op, number, bound) is True else bound
            # Past the first element libclassad keeps a real if either side is real,
            # an integer otherwise (so booleans become 0 or 1).
            assert isinstance(chosen, (int, float))
            real = type(number) is float or type(bound) is float
            bound = float(chosen) if real else int(chosen)
        return bound

    return impl


def _list_compare(need_all: bool) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        if not arity_ok(call, 3):
            return ERROR
        op_text = call.value(0)
        if op_text is UNDEFINED:
            return UNDEFINED
        if type(op_text) is not str or op_text not in _COMPARISONS:
            return ERROR
        assert isinstance(op_text, str)
        items = call.value(1)
        if items is UNDEFINED:
            return UNDEFINED
        if type(items) is not list:
            return ERROR
        assert isinstance(items, list)
        against = call.value(2)
        for item in items:
            outcome = operate(_COMPARISONS[op_text], item, against)
            if outcome is UNDEFINED:
                # libclassad stops at the first undefined comparison with a false answer.
                return False
            if type(outcome) is not bool:
                return ERROR
            if outcome is not need_all:
                return outcome
        return need_all

    return impl


def functions() -> dict[str, FunctionImpl]:
    """The functions of this module by lower-case name."""
    return {
        "size": size,
        "sum": _sum_avg(average=False),
        "avg": _sum_avg(average=True),
        "min": _min_max("<"),
        "max": _min_max(">"),
        "anycompare": _list_compare(need_all=False),
        "allcompare": _list_compare(need_all=True),
    }
