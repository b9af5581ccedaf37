"""Proleptic Gregorian calendar arithmetic on plain integers.

The time functions need broken-down times for any 64-bit second count and for the
out-of-range fields a user may put in a ``splitTime`` ad, which neither ``datetime``
nor ``time.gmtime`` accept; these helpers have no range limit and read no clock.
"""

from __future__ import annotations

import attrs

from epcore.classad.cnum import c_div, c_mod


@attrs.frozen
class BrokenDown:
    """A ``struct tm``: month is 1-12 here, weekday 0 = Sunday, yearday 0-based."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    weekday: int
    yearday: int


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a valid Gregorian date."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    shifted_month = month + 9 if month <= 2 else month - 3
    day_of_year = (153 * shifted_month + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """The (year, month, day) of a count of days since 1970-01-01."""
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + 3 if shifted_month < 10 else shifted_month - 9
    year = year_of_era + era * 400 + (month <= 2)
    return year, month, day


def civil_from_epoch(secs: int) -> BrokenDown:
    """``gmtime(secs)`` without range limits."""
    days, rest = divmod(secs, 86400)
    year, month, day = civil_from_days(days)
    return BrokenDown(
        year=year,
        month=month,
        day=day,
        hour=rest // 3600,
        minute=rest % 3600 // 60,
        second=rest % 60,
        weekday=(days + 4) % 7,
        yearday=days - days_from_civil(year, 1, 1),
    )


def is_leap_year(year: int) -> bool:
    """libclassad's leap-year rule (C remainders, so negative years behave as in C)."""
    return c_mod(year, 4) == 0 and c_mod(year, 400) not in (100, 200, 300)


def _fixed_from_gregorian(year: int, month: int, day: int) -> int:
    if month <= 2:
        adjustment = 0
    elif is_leap_year(year):
        adjustment = -1
    else:
        adjustment = -2
    return (
        365 * (year - 1)
        + c_div(year - 1, 4)
        - c_div(year - 1, 100)
        + c_div(year - 1, 400)
        + c_div(367 * month - 362, 12)
        + adjustment
        + day
    )


def day_numbers(year: int, month: int, day: int) -> tuple[int, int]:
    """libclassad's ``day_numbers``: (weekday, yearday) of possibly out-of-range fields."""
    fixed = _fixed_from_gregorian(year, month, day)
    return c_mod(fixed, 7), fixed - _fixed_from_gregorian(year, 1, 1)


def epoch_from_fields(year: int, month0: int, day: int, hour: int, minute: int, second: int) -> int:
    """``timegm`` of fields that may be out of range (``month0`` counts from 0), normalising."""
    year += month0 // 12
    month0 %= 12
    days = days_from_civil(year, month0 + 1, 1) + day - 1
    return days * 86400 + hour * 3600 + minute * 60 + second
