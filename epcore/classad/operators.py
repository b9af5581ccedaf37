"""Operator semantics on run-time values, as libclassad defines them.

Every function takes already-evaluated operands and returns a value; none raises.
Strictness (ERROR beats UNDEFINED beats anything else) is applied here, short-circuit
operators are handled by the compiler, which evaluates the right operand only when
the left one does not decide the result.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

from epcore.classad.cnum import c_int32
from epcore.classad.values import (
    ERROR,
    INT64_MAX,
    INT64_MIN,
    UNDEFINED,
    AbsTime,
    RelTime,
    Value,
    wrap_int,
)

_MASK64: Final = (1 << 64) - 1


def _number(value: Value) -> int | float | None:
    """The numeric reading of a value for arithmetic and comparison (booleans are 0/1)."""
    kind = type(value)
    if kind is int or kind is float:
        return value  # type: ignore[return-value]
    if kind is bool:
        return 1 if value else 0
    return None


def _real_result(result: float) -> Value:
    # libclassad reports an overflow to +infinity as an error (x86 raises the overflow
    # flag it checks); -infinity and NaN pass through as values.
    if result == math.inf:
        return ERROR
    return result


# -- arithmetic ---------------------------------------------------------------------------


def _time_arithmetic(op: str, left: Value, right: Value) -> Value:
    # libclassad moves an absolute time by (int) of the relative seconds: a C int, so a
    # relative time beyond 32 bits (or NaN) moves it by INT32_MIN, as x86 converts it.
    if op == "+":
        if isinstance(left, AbsTime) and isinstance(right, RelTime):
            return AbsTime(left.secs + c_int32(right.secs), left.offset)
        if isinstance(left, RelTime) and isinstance(right, AbsTime):
            return AbsTime(right.secs + c_int32(left.secs), right.offset)
        if isinstance(left, RelTime) and isinstance(right, RelTime):
            return RelTime(left.secs + right.secs)
        return ERROR
    if op == "-":
        if isinstance(left, AbsTime) and isinstance(right, AbsTime):
            return RelTime(float(left.secs - right.secs))
        if isinstance(left, AbsTime) and isinstance(right, RelTime):
            return AbsTime(left.secs - c_int32(right.secs), left.offset)
        if isinstance(left, RelTime) and isinstance(right, RelTime):
            return RelTime(left.secs - right.secs)
        return ERROR
    scale = _number(right) if isinstance(left, RelTime) else None
    if op == "*":
        if isinstance(left, RelTime) and scale is not None and type(right) is not bool:
            return RelTime(left.secs * scale)
        factor = _number(left)
        if isinstance(right, RelTime) and factor is not None and type(left) is not bool:
            return RelTime(right.secs * factor)
        return ERROR
    if op == "/" and isinstance(left, RelTime) and scale is not None and type(right) is not bool:
        return RelTime(_ieee_divide(left.secs, float(scale)))
    return ERROR


def _ieee_divide(a: float, b: float) -> float:
    # A relative time divided by zero is C's double division (libclassad checks no divisor
    # there): infinity with the sign of a / b, or NaN for 0 / 0.
    if b != 0.0:
        return a / b
    if a == 0.0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def arithmetic(op: str, left: Value, right: Value) -> Value:
    """``+ - * / %`` with libclassad's promotion, wrapping and division rules."""
    if left is ERROR or right is ERROR:
        return ERROR
    if left is UNDEFINED or right is UNDEFINED:
        return UNDEFINED
    a = _number(left)
    b = _number(right)
    if a is None or b is None:
        if type(left) in (AbsTime, RelTime) or type(right) in (AbsTime, RelTime):
            return _time_arithmetic(op, left, right)
        return ERROR
    if type(a) is int and type(b) is int:
        if op == "+":
            return wrap_int(a + b)
        if op == "-":
            return wrap_int(a - b)
        if op == "*":
            return wrap_int(a * b)
        if b == 0:
            return ERROR
        if a == INT64_MIN and b == -1:
            # The one quotient that overflows; libclassad special-cases it.
            return INT64_MAX if op == "/" else 0
        quotient = abs(a) // abs(b)
        if (a < 0) != (b < 0):
            quotient = -quotient
        if op == "/":
            return quotient
        return a - b * quotient
    if op == "%":
        return ERROR
    x = float(a)
    y = float(b)
    if op == "+":
        return _real_result(x + y)
    if op == "-":
        return _real_result(x - y)
    if op == "*":
        return _real_result(x * y)
    if y == 0.0:
        if x == 0.0 or math.isnan(x):
            return math.nan
        return ERROR if (x > 0) == (math.copysign(1.0, y) > 0) else -math.inf
    return _real_result(x / y)


def add(left: Value, right: Value) -> Value:
    """``left + right``."""
    return arithmetic("+", left, right)


def subtract(left: Value, right: Value) -> Value:
    """``left - right``."""
    return arithmetic("-", left, right)


def multiply(left: Value, right: Value) -> Value:
    """``left * right``."""
    return arithmetic("*", left, right)


def divide(left: Value, right: Value) -> Value:
    """``left / right``."""
    return arithmetic("/", left, right)


def modulo(left: Value, right: Value) -> Value:
    """``left % right``."""
    return arithmetic("%", left, right)


# -- comparison ---------------------------------------------------------------------------


def _compare(op: str, a: Any, b: Any) -> bool:
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    if op == ">=":
        return bool(a >= b)
    if op == "==":
        return bool(a == b)
    return bool(a != b)


def _fold_case(text: str) -> str:
    # strcasecmp folds ASCII letters only.
    return text.translate(_ASCII_LOWER)


def _ordered(text: str) -> bytes:
    return _fold_case(text).encode("utf-8", "surrogateescape")


_ASCII_LOWER: Final = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


def compare(op: str, left: Value, right: Value) -> Value:
    """``< <= > >= == !=``: strings compare case-insensitively, numbers across int/real."""
    if left is ERROR or right is ERROR:
        return ERROR
    if left is UNDEFINED or right is UNDEFINED:
        return UNDEFINED
    if type(left) is str and type(right) is str:
        if op == "==" or op == "!=":
            return _compare(op, _fold_case(left), _fold_case(right))
        # Ordered as strcasecmp orders bytes: a byte that is no UTF-8 (kept as a surrogate
        # escape, as from substr() cutting a character) sorts by its own value.
        return _compare(op, _ordered(left), _ordered(right))
    a = _number(left)
    b = _number(right)
    if a is not None and b is not None:
        if type(a) is not type(b):
            # C converts the integer to double before comparing.
            return _compare(op, float(a), float(b))
        return _compare(op, a, b)
    if isinstance(left, AbsTime) and isinstance(right, AbsTime):
        return _compare(op, left.secs, right.secs)
    if isinstance(left, RelTime) and isinstance(right, RelTime):
        return _compare(op, left.secs, right.secs)
    return ERROR


def identical(left: Value, right: Value) -> Value:
    """``=?=`` / ``is``: same type and same value; never UNDEFINED."""
    if left is right and (left is UNDEFINED or left is ERROR):
        return True
    lk, rk = type(left), type(right)
    if lk in _PLAIN_TYPES and rk in _PLAIN_TYPES:
        # The policy expressions' common case (``START =?= False``): no lists or ads.
        return lk is rk and left == right
    if lk is list or rk is list or _is_classad(left) or _is_classad(right):
        if lk is rk or (_is_classad(left) and _is_classad(right)):
            return ERROR
        return False
    if lk is not rk:
        return False
    if lk is str:
        return left == right
    if lk is float:
        return left == right
    if isinstance(left, AbsTime) and isinstance(right, AbsTime):
        return left.secs == right.secs
    if isinstance(left, RelTime) and isinstance(right, RelTime):
        return left.secs == right.secs
    return left == right


#: Value types that =?= compares by type and value alone (True is not 1, 1 is not 1.0).
_PLAIN_TYPES: Final = frozenset({bool, int, float, str, type(UNDEFINED), type(ERROR)})


def not_identical(left: Value, right: Value) -> Value:
    """``=!=`` / ``isnt``."""
    result = identical(left, right)
    if result is ERROR:
        return ERROR
    return not result


def _is_classad(value: object) -> bool:
    from epcore.classad.classad import ClassAd

    return isinstance(value, ClassAd)


# -- bitwise ------------------------------------------------------------------------------


def bitwise(op: str, left: Value, right: Value) -> Value:
    """``& | ^ << >> >>>`` on integers (booleans are not integers here)."""
    if left is ERROR or right is ERROR:
        return ERROR
    if left is UNDEFINED or right is UNDEFINED:
        return UNDEFINED
    if type(left) is not int or type(right) is not int:
        return ERROR
    a = int(left)
    b = int(right)
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    # libclassad shifts with C++'s << and >>, whose count x86 masks to six bits; a negative
    # value it shifts differently (operators.cpp), and those rules are kept here exactly.
    if op == "<<":
        return wrap_int(a << (b & 63))
    if a >= 0:
        return a >> (b & 63)
    if op == ">>":
        # One place at a time, min(64, count) times: a count of zero or less changes nothing.
        return a >> min(b, 64) if b > 0 else a
    # One place without the sign, then count - 1 more places (masked), so a count of 0 or 64
    # shifts 64 places in all and gives 0.
    return ((a & _MASK64) >> 1) >> ((b - 1) & 63)


# -- unary --------------------------------------------------------------------------------


def unary(op: str, operand: Value) -> Value:
    """``- + ! ~``."""
    if operand is ERROR or operand is UNDEFINED:
        return operand
    kind = type(operand)
    if op == "!":
        if kind is bool:
            return not operand
        if kind is int or kind is float:
            return operand == 0
        return ERROR
    if op == "~":
        return ~operand if type(operand) is int else ERROR
    if type(operand) is int:
        return wrap_int(-operand) if op == "-" else operand
    if type(operand) is float:
        return -operand if op == "-" else operand
    if isinstance(operand, RelTime):
        return RelTime(-operand.secs) if op == "-" else operand
    return ERROR


# -- truth --------------------------------------------------------------------------------


def truth(value: Value) -> Value:
    """The boolean reading of a value in ``&&``, ``||``, ``?:`` and ``!``.

    Returns True, False, UNDEFINED or ERROR.
    """
    kind = type(value)
    if kind is bool:
        return value
    if kind is int or kind is float:
        return value != 0
    if value is UNDEFINED:
        return UNDEFINED
    return ERROR


def and_right(left: Value, right: Value) -> Value:
    """``&&`` once the left side is known to be True or UNDEFINED."""
    r = truth(right)
    if r is ERROR:
        return ERROR
    if left is True:
        return r
    return False if r is False else UNDEFINED


def or_right(left: Value, right: Value) -> Value:
    """``||`` once the left side is known to be False or UNDEFINED."""
    r = truth(right)
    if r is ERROR:
        return ERROR
    if left is False:
        return r
    return True if r is True else UNDEFINED


BINARY: Final[dict[str, Callable[[Value, Value], Value]]] = {
    "+": add,
    "-": subtract,
    "*": multiply,
    "/": divide,
    "%": modulo,
    "<": lambda a, b: compare("<", a, b),
    "<=": lambda a, b: compare("<=", a, b),
    ">": lambda a, b: compare(">", a, b),
    ">=": lambda a, b: compare(">=", a, b),
    "==": lambda a, b: compare("==", a, b),
    "!=": lambda a, b: compare("!=", a, b),
    "is": identical,
    "isnt": not_identical,
    "&": lambda a, b: bitwise("&", a, b),
    "|": lambda a, b: bitwise("|", a, b),
    "^": lambda a, b: bitwise("^", a, b),
    "<<": lambda a, b: bitwise("<<", a, b),
    ">>": lambda a, b: bitwise(">>", a, b),
    ">>>": lambda a, b: bitwise(">>>", a, b),
}
"""Strict binary operators by their AST spelling (``&&`` and ``||`` are not strict)."""
