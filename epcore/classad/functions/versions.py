"""Version comparison: ``versioncmp``, ``versionLT`` ... ``versionEQ``, ``version_in_range``.

Versions compare "naturally" (like ``strverscmp``): runs of digits compare as
numbers, so ``"8.10" > "8.9"``; a run with more leading zeros sorts first, as in
a fractional part (``"1.01" < "1.1"``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from epcore.classad.functions._support import arity_ok
from epcore.classad.functions._text import string_pair, to_string
from epcore.classad.values import ERROR, UNDEFINED, Value

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall, FunctionImpl

_ZERO = ord("0")


def _signed_chars(text: str) -> list[int]:
    # libclassad compares C chars, which are signed on the platforms HTCondor ships for.
    data = text.encode("utf-8", "surrogateescape")
    return [b - 256 if b > 127 else b for b in data] + [0]


def _digit(c: int) -> bool:
    return _ZERO <= c <= _ZERO + 9


def natural_cmp(left: str, right: str) -> int:
    """libclassad's ``natural_cmp``: negative, zero or positive, with its exact magnitudes."""
    s1, s2 = _signed_chars(left), _signed_chars(right)
    i = 0
    while s1[i] and s1[i] == s2[i]:
        i += 1
    if s1[i] == s2[i]:
        return 0
    start = i
    while start > 0 and _digit(s1[start - 1]):
        start -= 1
    if start == i and (not _digit(s1[i]) or not _digit(s2[i])):
        return s1[i] - s2[i]
    zeros1 = zeros2 = start
    while s1[zeros1] == _ZERO:
        zeros1 += 1
    while s2[zeros2] == _ZERO:
        zeros2 += 1
    # A lone final zero is the number zero, not a leading zero.
    if zeros1 > start and not _digit(s1[zeros1]):
        zeros1 -= 1
    if zeros2 > start and not _digit(s2[zeros2]):
        zeros2 -= 1
    if zeros1 != zeros2:
        return zeros2 - zeros1
    if zeros1 > start:
        return s1[i] - s2[i]
    end1, end2 = zeros1, zeros2
    while _digit(s1[end1]):
        end1 += 1
    while _digit(s2[end2]):
        end2 += 1
    if end1 != end2:
        return end1 - end2
    return s1[i] - s2[i]


def _compare_version(decide: Callable[[int], Value]) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        pair = string_pair(call)
        if not isinstance(pair, tuple):
            return pair
        return decide(natural_cmp(*pair))

    return impl


def version_in_range(call: FunctionCall) -> Value:
    """``version_in_range(v, min, max)``: min <= v <= max in version order."""
    if not arity_ok(call, 3):
        return ERROR
    version, low, high = call.values()
    if low is UNDEFINED or high is UNDEFINED:
        return UNDEFINED
    texts = [to_string(call, v) for v in (version, low, high)]
    if not all(type(t) is str for t in texts):
        return ERROR
    version_text, low_text, high_text = (str(t) for t in texts)
    return natural_cmp(low_text, version_text) <= 0 and natural_cmp(version_text, high_text) <= 0


def functions() -> dict[str, FunctionImpl]:
    """The functions of this module by lower-case name."""
    return {
        "versioncmp": _compare_version(lambda r: r),
        "versionlt": _compare_version(lambda r: r < 0),
        "versionle": _compare_version(lambda r: r <= 0),
        "versiongt": _compare_version(lambda r: r > 0),
        "versionge": _compare_version(lambda r: r >= 0),
        "versioneq": _compare_version(lambda r: r == 0),
        "version_in_range": version_in_range,
    }
