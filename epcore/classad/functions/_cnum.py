"""C numeric casts and integer arithmetic, as libclassad's C++ performs them.

Several observable results of the built-ins come from C: a double that does not fit a
``long long`` becomes INT64_MIN on x86-64, an ``int`` parameter keeps only the low 32
bits, and integer division truncates toward zero.
"""

from __future__ import annotations

import math
from typing import Final

from epcore.classad.values import INT64_MIN

INT32_MIN: Final = -(1 << 31)
INT32_MAX: Final = (1 << 31) - 1


def c_int64(x: float) -> int:
    """``(long long) x`` as x86-64 computes it: truncation, INT64_MIN when out of range."""
    if math.isnan(x) or not (-9.223372036854775808e18 <= x < 9.223372036854775808e18):
        return INT64_MIN
    return int(x)


def c_int32(x: float) -> int:
    """``(int) x`` for a double as x86-64 computes it: truncation, INT32_MIN when out of range."""
    if math.isnan(x) or not (-2147483649.0 < x < 2147483648.0):
        return INT32_MIN
    return int(x)


def low32(i: int) -> int:
    """An integer narrowed to a C ``int`` (the low 32 bits, signed)."""
    i &= 0xFFFFFFFF
    return i - (1 << 32) if i > INT32_MAX else i


def c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def c_mod(a: int, b: int) -> int:
    """C ``%``: the remainder takes the sign of the dividend."""
    return a - b * c_div(a, b)
