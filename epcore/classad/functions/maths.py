"""Arithmetic: ``floor``, ``ceil``/``ceiling``, ``round``, ``pow``, ``quantize``, ``random``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from epcore.classad.functions._support import arity_ok, c_div, c_int64, low32, to_real
from epcore.classad.values import ERROR, Value, wrap_int

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall, FunctionImpl

_QUANTIZE_EPSILON = 1e-8


def c_pow(base: float, exponent: float) -> float:
    """C ``pow``: infinities and NaN instead of Python's exceptions."""
    try:
        return math.pow(base, exponent)
    except OverflowError:
        odd = exponent.is_integer() and exponent % 2 == 1
        return -math.inf if base < 0 and odd else math.inf
    except ValueError:
        if base == 0:
            odd = exponent.is_integer() and exponent % 2 == 1
            return -math.inf if odd and math.copysign(1.0, base) < 0 else math.inf
        return math.nan


def _rint(x: float) -> float:
    """C ``rint`` in the default rounding mode: halves go to the even neighbour."""
    if math.isinf(x) or math.isnan(x):
        return x
    return float(round(x))


def _rounding(rounder: Callable[[float], float]) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        if not arity_ok(call, 1):
            return ERROR
        value = call.value(0)
        if type(value) is int:
            return value
        real = to_real(value)
        if type(real) is not float:
            return ERROR
        assert isinstance(real, float)
        return c_int64(rounder(real))

    return impl


def _c_result(rounded: float, x: float) -> float:
    # C's floor and ceil keep the sign of a zero result (ceil(-0.5) is -0.0).
    return math.copysign(rounded, x) if rounded == 0 else rounded


def _floor(x: float) -> float:
    return x if math.isinf(x) or math.isnan(x) else _c_result(float(math.floor(x)), x)


def _ceil(x: float) -> float:
    return x if math.isinf(x) or math.isnan(x) else _c_result(float(math.ceil(x)), x)


def power(call: FunctionCall) -> Value:
    """``pow(x, y)``: an integer for integer x and non-negative integer y, else a real."""
    if not arity_ok(call, 2):
        return ERROR
    base, exponent = call.values()
    if type(base) is int and type(exponent) is int and exponent >= 0:
        assert isinstance(base, int) and isinstance(exponent, int)
        # libclassad computes in doubles and rounds by adding one half before truncating.
        return c_int64(c_pow(float(base), float(exponent)) + 0.5)
    real_base, real_exponent = to_real(base), to_real(exponent)
    if type(real_base) is not float or type(real_exponent) is not float:
        return ERROR
    assert isinstance(real_base, float) and isinstance(real_exponent, float)
    return c_pow(real_base, real_exponent)


def quantize(call: FunctionCall) -> Value:
    """``quantize(x, q)``: x rounded up to a multiple of q, or to the first list item >= x."""
    if not arity_ok(call, 2):
        return ERROR
    value, quantum = call.values()
    real_value = to_real(value)
    if type(real_value) is not float:
        return ERROR
    assert isinstance(real_value, float)
    if type(quantum) is list:
        assert isinstance(quantum, list)
        last: Value = 0.0
        for item in quantum:
            real_item = to_real(item)
            if type(real_item) is not float:
                return ERROR
            assert isinstance(real_item, float)
            if real_item >= real_value:
                return item
            last = item
        quantum = last
    real_quantum = to_real(quantum)
    if type(real_quantum) is not float:
        return ERROR
    assert isinstance(real_quantum, float)
    if type(quantum) is int:
        assert isinstance(quantum, int)
        if quantum == 0:
            return value
        if type(value) is int:
            assert isinstance(value, int)
            return wrap_int(c_div(wrap_int(value + quantum - 1), quantum) * quantum)
        return _ceil(real_value / quantum) * quantum
    if -_QUANTIZE_EPSILON <= real_quantum <= _QUANTIZE_EPSILON:
        return value
    return _ceil(real_value / real_quantum) * real_quantum


def random(call: FunctionCall) -> Value:
    """``random([n])``: an integer in [0, n) for an integer n, a real in [0, n] for a real."""
    if not arity_ok(call, 0, 1):
        return ERROR
    limit = call.value(0) if call.args else 1.0
    if type(limit) is int:
        assert isinstance(limit, int)
        narrowed = low32(limit)
        if narrowed <= 0:
            return ERROR
        return call.rng().randrange(narrowed)
    if type(limit) is float:
        assert isinstance(limit, float)
        if limit <= 0:
            return ERROR
        return limit * call.rng().random()
    return ERROR


def functions() -> dict[str, FunctionImpl]:
    """The functions of this module by lower-case name."""
    return {
        "floor": _rounding(_floor),
        "ceil": _rounding(_ceil),
        "ceiling": _rounding(_ceil),
        "round": _rounding(_rint),
        "pow": power,
        "quantize": quantize,
        "random": random,
    }
