"""Functions over delimited string lists ("a, b, c"), from libclassad and HTCondor's compat layer.

The optional last-but-options argument names the delimiter characters. HTCondor's
tokenizer also trims whitespace around items and never yields an empty item.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from epcore.classad.functions._pcre import MatchTimeout, PatternError, compile_pattern
from epcore.classad.functions._support import arity_ok, c_int64, strtod
from epcore.classad.functions.strings import ascii_lower, to_bytes
from epcore.classad.values import ERROR, UNDEFINED, Value

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall, FunctionImpl

_DEFAULT_DELIMITERS: Final = ", "
_MEMBER_DELIMITERS: Final = ", \t\r\n"
_C_SPACE: Final = " \t\n\v\f\r"
# FLT_MAX and FLT_MIN: the seeds HTCondor's stringListMin/Max start from.
_FLT_MAX: Final = 3.4028234663852886e38
_FLT_MIN: Final = 1.1754943508222875e-38
_INTEGER_CHARS: Final = frozenset("+-0123456789")


def tokens(text: str, delimiters: str) -> list[str]:
    """HTCondor's ``StringTokenIterator``: items between delimiters, whitespace-trimmed."""
    items: list[str] = []
    text = text.split("\0", 1)[0]
    i = 0
    while i < len(text):
        while i < len(text) and (text[i] in delimiters or text[i] in _C_SPACE):
            i += 1
        start = i
        while i < len(text) and text[i] not in delimiters:
            i += 1
        item = text[start:i].rstrip(_C_SPACE)
        if item:
            items.append(item)
    return items


def _split_plain(text: str, delimiters: str) -> list[str]:
    """libclassad's own splitter for ``stringListsIntersect``: no trimming."""
    delimiters = delimiters or " ,"
    items: list[str] = []
    current: list[str] = []
    for char in text.split("\0", 1)[0]:
        if char in delimiters:
            if current:
                items.append("".join(current))
            current = []
        else:
            current.append(char)
    if current:
        items.append("".join(current))
    return items


def _string_args(values: list[Value]) -> list[str] | None:
    if all(type(v) is str for v in values):
        return [str(v) for v in values]
    return None


def string_list_size(call: FunctionCall) -> Value:
    """``stringListSize(list[, delimiters])``."""
    if not arity_ok(call, 1, 2):
        return ERROR
    args = _string_args(call.values())
    if args is None:
        return ERROR
    return len(tokens(args[0], args[1] if len(args) == 2 else _DEFAULT_DELIMITERS))


def _sscanf_double(item: str) -> float | None:
    number, ok = strtod(item)
    return number if ok else None


def _summarize(
    fold: Callable[[float, float], float], seed: float, empty: Value, average: bool = False
) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        if not arity_ok(call, 1, 2):
            return ERROR
        args = _string_args(call.values())
        if args is None:
            return ERROR
        accumulator = seed
        is_real = False
        items = tokens(args[0], args[1] if len(args) == 2 else _DEFAULT_DELIMITERS)
        for item in items:
            number = _sscanf_double(item)
            if number is None:
                return ERROR
            if not set(item) <= _INTEGER_CHARS:
                is_real = True
            accumulator = fold(number, accumulator)
        if not items:
            return empty
        if average:
            accumulator /= len(items)
        return accumulator if is_real else c_int64(accumulator)

    return impl


def _c_min(item: float, accumulator: float) -> float:
    return item if item < accumulator else accumulator


def _c_max(item: float, accumulator: float) -> float:
    return item if item > accumulator else accumulator


def _member(case_sensitive: bool, subset: bool) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        if not arity_ok(call, 2, 3):
            return ERROR
        values = call.values()
        if any(v is not UNDEFINED and type(v) is not str for v in values):
            return ERROR
        if values[0] is UNDEFINED and values[1] is UNDEFINED:
            return UNDEFINED
        item, listed = (v if type(v) is str else "" for v in values[:2])
        assert isinstance(item, str) and isinstance(listed, str)
        delimiters = values[2] if len(values) == 3 and type(values[2]) is str else None
        assert delimiters is None or isinstance(delimiters, str)
        delimiters = _MEMBER_DELIMITERS if delimiters is None else delimiters
        fold: Callable[[str], str] = (lambda s: s) if case_sensitive else ascii_lower
        members = {fold(entry) for entry in tokens(listed, delimiters)}
        if not subset:
            return fold(item) in members
        if not item:
            return True
        wanted = tokens(item, delimiters)
        return bool(wanted) and all(fold(entry) in members for entry in wanted)

    return impl


def string_list_regexp_member(call: FunctionCall) -> Value:
    """``stringList_regexpMember(pattern, list[, delimiters[, options]])``."""
    if not arity_ok(call, 2, 4):
        return ERROR
    args = _string_args(call.values())
    if args is None:
        return ERROR
    delimiters = args[2] if len(args) >= 3 else _DEFAULT_DELIMITERS
    # HTCondor's Regex wrapper reads its option letters in either case.
    options = ascii_lower(args[3]) if len(args) == 4 else ""
    try:
        pattern = compile_pattern(args[0], options)
    except PatternError:
        return ERROR
    items = tokens(args[1], delimiters)
    if not items:
        return UNDEFINED
    try:
        return any(pattern.search(to_bytes(item)) is not None for item in items)
    except MatchTimeout:
        return ERROR


def string_lists_intersect(call: FunctionCall) -> Value:
    """``stringListsIntersect(a, b[, delimiters])``: do the lists share an item."""
    if not arity_ok(call, 2, 3):
        return ERROR
    values = call.values()
    if any(v is ERROR for v in values):
        return ERROR
    if any(v is UNDEFINED for v in values):
        return UNDEFINED
    args = _string_args(values)
    if args is None:
        return ERROR
    delimiters = args[2] if len(args) == 3 else ""
    others = set(_split_plain(args[1], delimiters))
    return any(item in others for item in _split_plain(args[0], delimiters))


def functions() -> dict[str, FunctionImpl]:
    """The functions of this module by lower-case name."""
    return {
        "stringlistsize": string_list_size,
        "stringlistsum": _summarize(lambda a, b: a + b, 0.0, 0.0),
        "stringlistavg": _summarize(lambda a, b: a + b, 0.0, 0.0, average=True),
        "stringlistmin": _summarize(_c_min, _FLT_MAX, UNDEFINED),
        "stringlistmax": _summarize(_c_max, _FLT_MIN, UNDEFINED),
        "stringlistmember": _member(case_sensitive=True, subset=False),
        "stringlistimember": _member(case_sensitive=False, subset=False),
        "stringlistsubsetmatch": _member(case_sensitive=True, subset=True),
        "stringlistisubsetmatch": _member(case_sensitive=False, subset=True),
        "stringlist_regexpmember": string_list_regexp_member,
        "stringlistsintersect": string_lists_intersect,
    }
