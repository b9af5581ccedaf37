"""Reading the text of ``absTime("...")`` and ``relTime("...")`` literals, as libclassad does.

libclassad turns ``absTime("2004-01-01T09:00:00-06:00")`` and ``relTime("1+02:03:04")``
with a single string-literal argument into time literals when it parses them (a
malformed string is a syntax error). These functions hold that reading so both the
parser and the two built-ins can use it; ``None`` means the text is not a time.

Absolute: ``D* dddd [D* dd [D* dd [D* dd [D* dd [D* dd D*]]]]] [+hh:mm | +hhmm | Z]``
(``D`` a non-digit), read in the local zone unless an offset is given. Relative:
``[-][days(+|d)][hh(:|h)][mm(:|m)]ss[.fff][s]``, read from the right (classad2 25.x
makes a ``relTime("...")`` literal a real number of seconds).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

from epcore.classad.civil import civil_from_epoch, epoch_from_fields
from epcore.classad.cnum import INT32_MAX, c_div, c_int32, c_mod, low32, strtod
from epcore.classad.values import AbsTime

_SPACE: Final = " \t\n\v\f\r"
_DIGITS: Final = "0123456789"
_QUARTER: Final = 91 * 86400

__all__ = [
    "format_abs_time",
    "format_rel_time",
    "parse_abs_time",
    "parse_rel_time",
    "standard_offset",
]


def standard_offset(local_offset: Callable[[int], int], secs: int) -> int:
    """The local zone's offset without daylight saving time around ``secs``.

    libclassad hands ``mktime`` a ``struct tm`` whose ``tm_isdst`` is 0, which reads the
    fields as standard time. Summer time only ever adds to the offset and lasts less than
    nine months, so the least offset over a year of quarterly samples is the standard one.
    """
    return min(local_offset(secs + k * _QUARTER) for k in (-2, -1, 0, 1, 2))


def _atoi(text: str) -> int:
    """C ``atoi`` on a short run that starts with a digit."""
    end = 0
    while end < len(text) and text[end] in _DIGITS:
        end += 1
    return int(text[:end]) if end else 0


def _zone_suffix(text: str) -> tuple[str, int | None]:
    """The text without a trailing zone designator, and the offset it gave (or None)."""
    last = len(text) - 1
    while last >= 0 and text[last] in _SPACE:
        last -= 1
    if last > 0 and text[last] in "zZ":
        return text[:last] + text[last + 1 :], 0
    size = len(text)
    if not (size > 5 and text[size - 5] in "+-"):
        if not (size > 6 and text[size - 6] in "+-" and text[size - 3] == ":"):
            return text, None
        text = text[: size - 3] + text[size - 2 :]
    tail = text[-5:]
    if tail[0] in "+-" and all(c in _DIGITS for c in tail[1:]):
        sign = -1 if tail[0] == "-" else 1
        return text[:-5], sign * (int(tail[1:3]) * 3600 + int(tail[3:5]) * 60)
    return text, None


def parse_abs_time(text: str, local_offset: Callable[[int], int]) -> AbsTime | None:
    """An absolute time from its literal text; ``local_offset`` supplies the local zone."""
    # libclassad measures the fields in bytes: read the UTF-8 bytes one character each.
    text = text.encode("utf-8", "surrogateescape").decode("latin-1")
    text, offset = _zone_suffix(text)
    fields = [0, 1, 0, 0, 0, 0]  # year, month, day, hours, minutes, seconds
    pos = 0
    for index, width in enumerate((4, 2, 2, 2, 2, 2)):
        while pos < len(text) and text[pos] not in _DIGITS:
            pos += 1
        if pos > len(text) - width:
            if index == 0:
                return None
            continue
        fields[index] = _atoi(text[pos : pos + width])
        pos += width
    if any(c in _DIGITS for c in text[pos:]):
        return None
    year, month, day, hours, minutes, seconds = fields
    as_utc = epoch_from_fields(year, month - 1, day, hours, minutes, seconds)
    # libclassad runs the fields through mktime() as local standard time and adds the
    # standard offset back: the net effect is the fields read as UTC.
    standard = standard_offset(local_offset, as_utc)
    local_secs = as_utc - standard
    if local_secs == -1:
        return None  # mktime's failure value
    if offset is None:
        offset = local_offset(local_secs)
    return AbsTime(as_utc - offset, offset)


def _digits_before(text: str, pos: int, allow_point: bool = False) -> tuple[str, int]:
    """The run of digits (and one decimal point) ending at ``pos``, and the index before it."""
    start = pos
    while start >= 0 and text[start] in _DIGITS:
        start -= 1
    if allow_point and start >= 0 and text[start] == ".":
        start -= 1
        while start >= 0 and text[start] in _DIGITS:
            start -= 1
    return text[start + 1 : pos + 1], start


def _rev_int(digits: str) -> int:
    # std::from_chars leaves 0 in place when the number does not fit an int.
    number = int(digits) if digits else 0
    return number if number <= INT32_MAX else 0


def _skip_space(text: str, pos: int) -> int:
    while pos >= 0 and text[pos] in _SPACE:
        pos -= 1
    return pos


def parse_rel_time(text: str) -> float | None:
    """The seconds of a relative time's literal text (``[-][D+]HH:MM:SS[.fff]``, unit suffixes).

    classad2 25.x makes the literal a real number of seconds, not a relative time.
    """
    text = text.encode("utf-8", "surrogateescape").decode("latin-1")
    pos = _skip_space(text, len(text) - 1)
    seconds = 0.0
    if pos >= 0 and (text[pos] in "sS" or text[pos] in _DIGITS):
        if text[pos] in "sS":
            pos -= 1
        pos = _skip_space(text, pos)
        digits, pos = _digits_before(text, pos, allow_point=True)
        if digits.endswith("."):
            return None  # a decimal point needs digits after it
        seconds = strtod(digits)[0] if digits else 0.0
    units = []
    for markers in ("mM:", "hH:", "dD+"):
        pos = _skip_space(text, pos)
        value = 0
        if pos >= 0 and text[pos] in markers:
            pos = _skip_space(text, pos - 1)
            digits, pos = _digits_before(text, pos)
            value = _rev_int(digits)
        units.append(value)
    minutes, hours, days = units
    pos = _skip_space(text, pos)
    negative = pos >= 0 and text[pos] == "-"
    if negative:
        pos -= 1
    pos = _skip_space(text, pos)
    if pos >= 0:
        return None
    # The day, hour and minute parts add up in C ints, which wrap.
    whole = low32(low32(low32(days * 86400) + low32(hours * 3600)) + low32(minutes * 60))
    total = whole + seconds
    return -total if negative else total


def format_abs_time(value: AbsTime) -> str:
    """libclassad's ``absTimeToString``: local wall time in ISO 8601 with the offset.

    The year is strftime's %Y, not padded: year 999 prints as 999, year -1 as -1.
    """
    fields = civil_from_epoch(value.secs + value.offset)
    offset = value.offset
    sign = "+" if offset > 0 else "-"
    offset = abs(offset)
    return (
        f"{fields.year}-{fields.month:02d}-{fields.day:02d}T"
        f"{fields.hour:02d}:{fields.minute:02d}:{fields.second:02d}"
        f"{sign}{c_div(offset, 3600):02d}:{c_mod(c_div(offset, 60), 60):02d}"
    )


def format_rel_time(secs: float) -> str:
    """libclassad's ``relTimeToString``: ``[-][D+]HH:MM:SS`` shortened from the left."""
    prefix = ""
    if secs < 0:
        prefix = "-"
        secs = -secs
    fraction = secs - math.floor(secs)
    whole = c_int32(secs)
    hours_rest = c_mod(whole, 86400)
    minutes_rest = c_mod(hours_rest, 3600)
    seconds = c_mod(minutes_rest, 60) + fraction
    days = c_div(whole, 86400)
    hours = c_div(hours_rest, 3600)
    minutes = c_div(minutes_rest, 60)
    sec_text = f"{int(seconds):02d}" if fraction == 0 else _c_g02(seconds)
    if days:
        return f"{prefix}{days}+{hours:02d}:{minutes:02d}:{sec_text}"
    if hours:
        return f"{prefix}{hours:02d}:{minutes:02d}:{sec_text}"
    if minutes:
        return f"{prefix}{minutes:02d}:{sec_text}"
    return prefix + sec_text


def _c_g02(x: float) -> str:
    """C's ``%02g``."""
    text = f"{x:g}"
    return text if len(text) >= 2 else "0" + text
