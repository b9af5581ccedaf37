"""A pure ``strftime`` with glibc's behaviour in the C locale.

``formatTime`` hands libclassad's ``strftime`` a ``struct tm`` whose fields may be out
of range (they come from a user-supplied ad), so Python's ``time.strftime`` (which
validates its tuple and depends on the platform's C library) cannot stand in for it.
This module follows glibc: flags ``_ - 0 ^ #``, a field width, the ``E``/``O``
modifiers, ``?`` for out-of-range names, and bad conversions copied literally.

libclassad formats into a 1024-byte buffer (``strftime(buffer, 1023, ...)``), so its longest
result is :data:`MAX_BYTES`; past that the buffer's content is undefined. Here a longer result
is None, found before it is built: a field width is only a few characters of the format, and
``"%9999999999Y"`` must not make the engine allocate ten gigabytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import attrs

from epcore.classad.cnum import c_div, c_mod

_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_SUBFORMATS = {
    "c": "%a %b %e %H:%M:%S %Y",
    "D": "%m/%d/%y",
    "F": "%Y-%m-%d",
    "r": "%I:%M:%S %p",
    "R": "%H:%M",
    "T": "%H:%M:%S",
    "x": "%m/%d/%y",
    "X": "%H:%M:%S",
}
_FLAGS = "_-0^#"
#: The longest text libclassad's formatTime can give, in UTF-8 bytes (see the module docstring).
MAX_BYTES: Final = 1022
_BIG_ENOUGH_MULTIPLE_OF_7 = (366 // 7 + 2) * 7


@attrs.frozen
class Tm:
    """A C ``struct tm``: ``year`` is the full year, ``month0`` counts from 0."""

    year: int
    month0: int
    day: int
    hour: int
    minute: int
    second: int
    weekday: int
    yearday: int
    gmtoff: int = 0
    zone: str = "UTC"
    mktime: Callable[[], int] | None = None


@attrs.define
class _Spec:
    pad: str = ""
    upper: bool = False
    swap_case: bool = False
    width: int = -1
    modifier: str = ""


def strftime(fmt: str, tm: Tm) -> str | None:
    """Format ``tm`` as glibc's ``strftime`` does in the C locale, or None when the text would
    be longer than MAX_BYTES."""
    out: list[str] = []
    size = 0
    i = 0
    while i < len(fmt):
        char = fmt[i]
        if char != "%":
            out.append(char)
            size += len(char.encode("utf-8", "surrogatepass"))
            if size > MAX_BYTES:
                return None
            i += 1
            continue
        start = i
        i += 1
        spec = _Spec()
        while i < len(fmt) and fmt[i] in _FLAGS:
            flag = fmt[i]
            if flag == "^":
                spec.upper = True
            elif flag == "#":
                spec.swap_case = True
            else:
                spec.pad = flag
            i += 1
        digits_start = i
        while i < len(fmt) and fmt[i].isdigit():
            i += 1
        if i > digits_start:
            if i - digits_start > len(str(MAX_BYTES)):
                return None  # a width this long pads past the limit (and int() would balk)
            spec.width = int(fmt[digits_start:i])
            if spec.width > MAX_BYTES:
                return None
        if i < len(fmt) and fmt[i] in "EO":
            spec.modifier = fmt[i]
            i += 1
        conversion = fmt[i] if i < len(fmt) else ""
        text = _convert(conversion, spec, tm)
        if text is None:
            # glibc copies an unknown conversion, flags and all, as plain text.
            end = i + 1 if conversion else i
            text = _pad_text(fmt[start:end], spec)
        out.append(text)
        size += len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_BYTES:
            return None
        i += 1
    return "".join(out)


def _pad_text(text: str, spec: _Spec, lower: bool = False) -> str:
    if lower:
        text = text.lower()
    elif spec.upper:
        text = text.upper()
    if spec.width <= len(text):
        return text
    fill = "0" if spec.pad == "0" else " "
    return fill * (spec.width - len(text)) + text


def _number(value: int, digits: int, spec: _Spec, space_pad: bool = False) -> str:
    text = ("-" if value < 0 else "") + str(abs(value))
    if spec.pad == "-":
        # glibc drops the default padding but still honours an explicit width, with spaces.
        return text.rjust(spec.width)
    pad = spec.pad or ("_" if space_pad else "0")
    width = spec.width if spec.width >= 0 else digits
    if len(text) >= width:
        return text
    if pad == "_":
        return text.rjust(width)
    sign = text[:1] if value < 0 else ""
    return sign + text[len(sign) :].rjust(width - len(sign), "0")


def _name(names: tuple[str, ...], index: int, length: int | None, spec: _Spec) -> str:
    text = names[index][:length] if 0 <= index < len(names) else "?"
    return _pad_text(text.upper() if spec.swap_case else text, spec)


def _iso_week_days(yday: int, wday: int) -> int:
    return yday - c_mod(yday - wday + 4 + _BIG_ENOUGH_MULTIPLE_OF_7, 7) + 4 - 1


def _iso_week(tm: Tm) -> tuple[int, int]:
    """(ISO year, days into its first week) as glibc computes them."""
    year = tm.year
    days = _iso_week_days(tm.yearday, tm.weekday)
    if days < 0:
        year -= 1
        return year, _iso_week_days(tm.yearday + 365 + _isleap(year), tm.weekday)
    following = _iso_week_days(tm.yearday - (365 + _isleap(year)), tm.weekday)
    if following >= 0:
        return year + 1, following
    return year, days


def _isleap(year: int) -> int:
    return int(c_mod(year, 4) == 0 and (c_mod(year, 100) != 0 or c_mod(year, 400) == 0))


def _convert(conversion: str, spec: _Spec, tm: Tm) -> str | None:
    if not conversion:
        return None
    tm_year = tm.year - 1900
    hour12 = tm.hour - 12 if tm.hour > 12 else (12 if tm.hour == 0 else tm.hour)
    numeric: dict[str, tuple[int, int]] = {
        "d": (2, tm.day),
        "H": (2, tm.hour),
        "I": (2, hour12),
        "j": (3, tm.yearday + 1),
        "m": (2, tm.month0 + 1),
        "M": (2, tm.minute),
        "S": (2, tm.second),
        "u": (1, c_mod(tm.weekday - 1 + 7, 7) + 1),
        "U": (2, c_div(tm.yearday - tm.weekday + 7, 7)),
        "w": (1, tm.weekday),
        "W": (2, c_div(tm.yearday - c_mod(tm.weekday - 1 + 7, 7) + 7, 7)),
        "Y": (1, tm.year),
    }
    if spec.modifier == "E" and conversion not in "cCxXyY":
        return None
    if spec.modifier == "O" and conversion not in "deHIklmMSuUVwWy":
        return None
    if conversion in numeric:
        digits, value = numeric[conversion]
        return _number(value, digits, spec)
    if conversion in "ekl":
        return _number(
            tm.day if conversion == "e" else (tm.hour if conversion == "k" else hour12),
            2,
            spec,
            space_pad=True,
        )
    if conversion == "a":
        return _name(_DAYS, tm.weekday, 3, spec)
    if conversion == "A":
        return _name(_DAYS, tm.weekday, None, spec)
    if conversion in "bh":
        return _name(_MONTHS, tm.month0, 3, spec)
    if conversion == "B":
        return _name(_MONTHS, tm.month0, None, spec)
    if conversion in _SUBFORMATS:
        expanded = strftime(_SUBFORMATS[conversion], tm)
        assert expanded is not None, "a fixed subformat's text is short"
        return _pad_text(expanded, spec)
    if conversion == "C":
        return _number(c_div(tm.year, 100) - (c_mod(tm.year, 100) < 0), 1, spec)
    if conversion == "y":
        return _number(c_mod(c_mod(tm_year, 100) + 100, 100), 2, spec)
    if conversion in "gGV":
        year, days = _iso_week(tm)
        if conversion == "V":
            return _number(c_div(days, 7) + 1, 2, spec)
        if conversion == "G":
            return _number(year, 1, spec)
        return _number(c_mod(c_mod(year, 100) + 100, 100), 2, spec)
    if conversion in "pP":
        text = "PM" if tm.hour > 11 else "AM"
        return _pad_text(text, spec, lower=conversion == "P" or spec.swap_case)
    if conversion == "n":
        return _pad_text("\n", spec)
    if conversion == "t":
        return _pad_text("\t", spec)
    if conversion == "%":
        return _pad_text("%", spec)
    if conversion == "s":
        return _number(tm.mktime() if tm.mktime is not None else 0, 1, spec)
    if conversion == "z":
        offset = abs(tm.gmtoff)
        sign = "-" if tm.gmtoff < 0 else "+"
        return _pad_text(f"{sign}{offset // 3600:02d}{offset // 60 % 60:02d}", spec)
    if conversion == "Z":
        return _pad_text(tm.zone, spec, lower=spec.swap_case)
    return None
