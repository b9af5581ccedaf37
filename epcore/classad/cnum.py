"""C numeric casts and integer arithmetic, as libclassad's C++ performs them.

Several observable results of the built-ins come from C: a double that does not fit a
``long long`` becomes INT64_MIN on x86-64, an ``int`` parameter keeps only the low 32
bits, integer division truncates toward zero, and `strtod` reads the longest numeric prefix.
"""

from __future__ import annotations

import math
import re
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
