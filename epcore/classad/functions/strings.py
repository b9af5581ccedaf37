"""Strings: ``strcat``, ``join``, ``toUpper``, ``toLower``, ``substr``, ``strcmp``, ``stricmp``.

libclassad works on bytes in the C locale: lengths and offsets count UTF-8 bytes and
only ASCII letters change case. These functions do the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from epcore.classad.functions._support import arity_ok, low32
from epcore.classad.functions._text import string_pair, to_string
from epcore.classad.values import ERROR, UNDEFINED, Value

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall, FunctionImpl

_UPPER = {c: c - 32 for c in range(ord("a"), ord("z") + 1)}
_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def to_bytes(text: str) -> bytes:
    """The UTF-8 bytes libclassad would hold for ``text``."""
    return text.encode("utf-8", "surrogateescape")


def from_bytes(data: bytes) -> str:
    """Text back from bytes that may have been cut inside a UTF-8 sequence."""
    return data.decode("utf-8", "surrogateescape")


def ascii_upper(text: str) -> str:
    """``toupper`` in the C locale."""
    return text.translate(_UPPER)


def ascii_lower(text: str) -> str:
    """``tolower`` in the C locale."""
    return text.translate(_LOWER)


def _concatenate(join: bool) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        items: list[Value] | None = None
        if join and 0 < len(call.args) <= 2:
            last = call.value(len(call.args) - 1)
            if type(last) is list:
                assert isinstance(last, list)
                separator = call.value(0) if len(call.args) == 2 else ""
                items = [separator, *last]
        if items is None:
            items = call.values()
        pieces: list[str] = []
        separator_text = ""
        undefined = defined = written = False
        for index, item in enumerate(items):
            text = to_string(call, item)
            if text is UNDEFINED:
                undefined = True
                if join:
                    continue
                defined = False
                break
            if type(text) is not str:
                return ERROR
            assert isinstance(text, str)
            if join and index == 0:
                separator_text = text
                continue
            if join and written:
                # libclassad separates only once something non-empty has been written.
                pieces.append(separator_text)
            defined = True
            written = written or bool(text)
            pieces.append(text)
        if undefined and not defined:
            return UNDEFINED
        return "".join(pieces)

    return impl


def _change_case(upper: bool) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        if not arity_ok(call, 1):
            return ERROR
        text = to_string(call, call.value(0))
        if type(text) is not str:
            return text
        assert isinstance(text, str)
        return ascii_upper(text) if upper else ascii_lower(text)

    return impl


def substr(call: FunctionCall) -> Value:
    """Perl-like ``substr(s, offset[, length])``; negatives count from the end."""
    if not arity_ok(call, 2, 3):
        return ERROR
    values = call.values()
    if any(v is UNDEFINED for v in values):
        return UNDEFINED
    if type(values[0]) is not str or any(type(v) is not int for v in values[1:]):
        return ERROR
    text = values[0]
    assert isinstance(text, str)
    data = to_bytes(text)
    size = len(data)
    offset = low32(values[1])  # type: ignore[arg-type]
    requested = low32(values[2]) if len(values) == 3 else None  # type: ignore[arg-type]
    length = requested or 0
    if offset < 0:
        offset = max(size + offset, 0)
    elif offset >= size:
        offset = size
    if length <= 0:
        length = max(size - offset + length, 0)
    elif length > size - offset:
        length = size - offset
    if requested == 0:
        length = 0
    return from_bytes(data[offset : offset + length])


def _compare(ignore_case: bool) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        pair = string_pair(call)
        if not isinstance(pair, tuple):
            return pair
        left_text, right_text = pair
        if ignore_case:
            left_text, right_text = ascii_lower(left_text), ascii_lower(right_text)
        a, b = to_bytes(left_text), to_bytes(right_text)
        return (a > b) - (a < b)

    return impl


def functions() -> dict[str, FunctionImpl]:
    """The functions of this module by lower-case name."""
    return {
        "strcat": _concatenate(join=False),
        "join": _concatenate(join=True),
        "toupper": _change_case(upper=True),
        "tolower": _change_case(upper=False),
        "substr": substr,
        "strcmp": _compare(ignore_case=False),
        "stricmp": _compare(ignore_case=True),
    }
