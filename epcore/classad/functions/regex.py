"""Regular expressions: ``regexp``, ``regexpMember``, ``regexps``, ``replace``, ``replaceAll``.

Option letters (libclassad reads only lower case): ``i`` caseless, ``m`` multiline,
``s`` dot matches newline, ``x`` extended; for substitution also ``f`` (return the
whole target with the match replaced) and ``g`` (every non-overlapping match).

A match that runs longer than :data:`~epcore.classad.functions._pcre.MATCH_TIMEOUT` makes
the function's value ERROR, as a match that hits PCRE2's match limit does in libclassad.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from epcore.classad.functions._pcre import (
    BoundedPattern,
    MatchTimeout,
    PatternError,
    compile_pattern,
)
from epcore.classad.functions._support import arity_ok, strict_strings
from epcore.classad.functions.strings import from_bytes, to_bytes
from epcore.classad.values import ERROR, UNDEFINED, Value

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall, FunctionImpl
    from epcore.classad.functions._pcre import Match


class _Failed(Exception):
    """The substitution cannot complete: the result is ERROR."""


@attrs.frozen
class _Outcome:
    """A result decided before any matching."""

    value: Value


def _highest_group(match: Match) -> int:
    """PCRE2's match count: one more than the highest-numbered group that took part."""
    for index in range(match.re.groups, 0, -1):
        if match.start(index) >= 0:
            return index + 1
    return 1


def _expand(template: bytes, match: Match) -> bytes:
    """libclassad's replacement: ``\\0``-``\\9`` name groups, any other backslash is kept."""
    count = _highest_group(match)
    out = bytearray()
    i = 0
    while i < len(template):
        byte = template[i]
        if byte == ord("\\") and i + 1 < len(template) and chr(template[i + 1]).isdigit():
            group = template[i + 1] - ord("0")
            if group >= count:
                raise _Failed
            out += match.group(group) or b""
            i += 2
            continue
        out.append(byte)
        i += 1
    return bytes(out)


def _substitute(
    pattern: BoundedPattern, target: bytes, template: bytes, whole: bool, every: bool
) -> bytes:
    """libclassad's replacement loop, including its quirks around empty matches."""
    out = bytearray()
    index = 0
    after_empty = False
    while True:
        if index > len(target):
            # PCRE2 rejects a start offset past the end of the subject.
            raise _Failed
        if after_empty:
            found = pattern.nonempty_at(target, index)
            if found is None:
                # libclassad copies one byte (the terminating NUL at the very end) and moves on.
                out += target[index : index + 1] or b"\x00"
                index += 1
                after_empty = False
                continue
        else:
            found = pattern.search(target, index)
            if found is None:
                break
        if whole:
            out += target[index : found.start()]
        out += _expand(template, found)
        index = found.end()
        after_empty = found.start() == found.end()
        if not every:
            break
    if whole:
        out += target[index:]
    return bytes(out)


def _options(values: list[Value], required: int) -> str | _Outcome:
    """The option string, or the value to return when an argument is unusable.

    libclassad checks every argument for ERROR, then for UNDEFINED, before types.
    """
    problem = strict_strings(values)
    if problem is not None:
        return _Outcome(problem)
    if len(values) > required:
        options = values[required]
        return options if type(options) is str else _Outcome(ERROR)
    return ""


def _arguments(call: FunctionCall, fixed: int) -> tuple[list[Value], str] | _Outcome:
    """The evaluated arguments and the option string of a call taking ``fixed`` arguments
    and an optional options argument, or the value to return at once."""
    if not arity_ok(call, fixed, fixed + 1):
        return _Outcome(ERROR)
    values = call.values()
    options = _options(values, fixed)
    if isinstance(options, _Outcome):
        return options
    return values, options


def match_pattern(call: FunctionCall) -> Value:
    """``regexp(pattern, target[, options])``."""
    prepared = _arguments(call, 2)
    if isinstance(prepared, _Outcome):
        return prepared.value
    values, options = prepared
    pattern, target = values[0], values[1]
    if type(pattern) is not str or type(target) is not str:
        return ERROR
    assert isinstance(pattern, str) and isinstance(target, str)
    try:
        return compile_pattern(pattern, options).search(to_bytes(target)) is not None
    except (PatternError, MatchTimeout):
        return ERROR


def match_pattern_member(call: FunctionCall) -> Value:
    """``regexpMember(pattern, list[, options])``: does any string in the list match."""
    prepared = _arguments(call, 2)
    if isinstance(prepared, _Outcome):
        return prepared.value
    values, options = prepared
    pattern, targets = values[0], values[1]
    if type(pattern) is not str or type(targets) is not list:
        return ERROR
    assert isinstance(pattern, str) and isinstance(targets, list)
    try:
        compiled: BoundedPattern | None = compile_pattern(pattern, options)
    except PatternError:
        # libclassad tries the bad pattern on each element and counts no match.
        compiled = None
    maybe = False
    for target in targets:
        if type(target) is not str:
            if target is not UNDEFINED:
                return ERROR
            maybe = True
            continue
        assert isinstance(target, str)
        try:
            if compiled is not None and compiled.search(to_bytes(target)) is not None:
                return True
        except MatchTimeout:
            return ERROR
    return UNDEFINED if maybe else False


def _substituter(implied: str) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        prepared = _arguments(call, 3)
        if isinstance(prepared, _Outcome):
            return prepared.value
        values, options = prepared
        options += implied
        pattern, target, template = values[0], values[1], values[2]
        if not all(type(v) is str for v in (pattern, target, template)):
            return ERROR
        assert isinstance(pattern, str) and isinstance(target, str)
        assert isinstance(template, str)
        try:
            compiled = compile_pattern(pattern, options)
            result = _substitute(
                compiled, to_bytes(target), to_bytes(template), "f" in options, "g" in options
            )
        except (PatternError, _Failed, MatchTimeout):
            return ERROR
        return from_bytes(result)

    return impl


def functions() -> dict[str, FunctionImpl]:
    """The functions of this module by lower-case name."""
    return {
        "regexp": match_pattern,
        "regexpmember": match_pattern_member,
        "regexps": _substituter(""),
        "replace": _substituter("f"),
        "replaceall": _substituter("fg"),
    }
