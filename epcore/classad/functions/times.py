"""Time functions: the clock, field extraction, ``splitTime``, ``formatTime``, conversions.

"Now" and the local time zone come only from the evaluation context, so that
simulations and tests control them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from epcore.classad.civil import (
    civil_from_epoch,
    day_numbers,
    epoch_from_fields,
)
from epcore.classad.classad import ClassAd
from epcore.classad.functions._strftime import Tm, strftime
from epcore.classad.functions._support import (
    arity_ok,
    c_div,
    c_int32,
    c_mod,
    low32,
    rel_secs,
    to_integer,
)
from epcore.classad.timetext import standard_offset
from epcore.classad.values import ERROR, UNDEFINED, AbsTime, RelTime, Value

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall, FunctionImpl
_DEFAULT_FORMAT = "%c"


def _now(call: FunctionCall) -> int:
    return math.floor(call.now())


def _standard_offset(call: FunctionCall, secs: int) -> int:
    return standard_offset(lambda t: _offset(call, t), secs)


def _offset(call: FunctionCall, secs: int) -> int:
    try:
        return call.context.local_offset(secs)
    except (OverflowError, OSError, ValueError):
        # Beyond the platform's time range the zone is unknowable; libclassad reads garbage.
        return 0


def _zone_name(call: FunctionCall, offset: int) -> str:
    return call.context.zone_name(offset)


def epoch_time(call: FunctionCall) -> Value:
    """``time()``: seconds since the epoch."""
    return _now(call) if not call.args else ERROR


def current_time(call: FunctionCall) -> Value:
    """``currentTime()``: now as an absolute time in the local zone."""
    if call.args:
        return ERROR
    now = _now(call)
    return AbsTime(now, _offset(call, now))


def time_zone_offset(call: FunctionCall) -> Value:
    """``timeZoneOffset()``: the local zone's offset from UTC now."""
    return RelTime(float(_offset(call, _now(call)))) if not call.args else ERROR


def day_time(call: FunctionCall) -> Value:
    """``dayTime()``: seconds since local midnight."""
    if call.args:
        return ERROR
    now = _now(call)
    local = civil_from_epoch(now + _offset(call, now))
    return RelTime(float(local.hour * 3600 + local.minute * 60 + local.second))


_ABS_FIELDS = {
    "getyear": lambda t: t.year,
    "getmonth": lambda t: t.month,
    "getdayofyear": lambda t: t.yearday,
    "getdayofmonth": lambda t: t.day,
    "getdayofweek": lambda t: t.weekday,
    "gethours": lambda t: t.hour,
    "getminutes": lambda t: t.minute,
    "getseconds": lambda t: t.second,
}
_REL_FIELDS = {
    "getdays": lambda s: c_div(s, 86400),
    "gethours": lambda s: c_div(c_mod(s, 86400), 3600),
    "getminutes": lambda s: c_div(c_mod(s, 3600), 60),
    "getseconds": lambda s: c_mod(s, 60),
}


def _field(name: str) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        if not arity_ok(call, 1):
            return ERROR
        value = call.value(0)
        if type(value) is AbsTime and name in _ABS_FIELDS:
            assert isinstance(value, AbsTime)
            # libclassad breaks the time down in the local zone, not in its own offset.
            local = civil_from_epoch(value.secs + _offset(call, value.secs))
            result: int = _ABS_FIELDS[name](local)
            return result
        if type(value) is RelTime and name in _REL_FIELDS:
            assert isinstance(value, RelTime)
            rel: int = _REL_FIELDS[name](rel_secs(value))
            return rel
        return ERROR

    return impl


def _split_abs(secs: int, offset: int) -> ClassAd:
    fields = civil_from_epoch(secs + offset)
    ad = ClassAd()
    ad["Type"] = "AbsoluteTime"
    ad["Year"] = fields.year
    ad["Month"] = fields.month
    ad["Day"] = fields.day
    ad["Hours"] = fields.hour
    ad["Minutes"] = fields.minute
    ad["Seconds"] = fields.second
    ad["Offset"] = offset
    return ad


def _split_rel(secs: float) -> ClassAd:
    negative = secs < 0
    secs = -secs if negative else secs
    whole = c_int32(secs)
    hours_rest = c_mod(whole, 86400)
    minutes_rest = c_mod(hours_rest, 3600)
    # C's secs - floor(secs): NaN for an infinite or NaN time (whose whole part is INT32_MIN).
    fraction = secs - math.floor(secs) if math.isfinite(secs) else math.nan
    seconds = c_mod(minutes_rest, 60) + fraction
    days, hours, minutes = c_div(whole, 86400), c_div(hours_rest, 3600), c_div(minutes_rest, 60)
    if negative:
        # Only the leading non-zero unit carries the sign.
        if days > 0:
            days = -days
        elif hours > 0:
            hours = -hours
        elif minutes > 0:
            minutes = -minutes
        else:
            seconds = -seconds
    ad = ClassAd()
    ad["Type"] = "RelativeTime"
    ad["Days"] = days
    ad["Hours"] = hours
    ad["Minutes"] = minutes
    ad["Seconds"] = float(seconds)
    return ad


def _split(call: FunctionCall, value: Value) -> ClassAd | None:
    """libclassad's ``doSplitTime`` for everything but ClassAds."""
    if type(value) is int:
        assert isinstance(value, int)
        return _split_abs(value, _offset(call, value))
    if type(value) is float:
        assert isinstance(value, float)
        secs = c_int32(value)
        return _split_abs(secs, _offset(call, secs))
    if type(value) is AbsTime:
        assert isinstance(value, AbsTime)
        return _split_abs(value.secs, value.offset)
    if type(value) is RelTime:
        assert isinstance(value, RelTime)
        return _split_rel(value.secs)
    return None


def split_time(call: FunctionCall) -> Value:
    """``splitTime(t)``: an ad with the fields of an absolute or relative time."""
    if not arity_ok(call, 1):
        return ERROR
    value = call.value(0)
    if value is UNDEFINED:
        return UNDEFINED
    split = _split(call, value)
    return ERROR if split is None else split


def _int_field(ad: ClassAd, name: str, default: int = 0) -> int:
    """``EvaluateAttrInt``: only a true integer counts, narrowed to a C int."""
    value = ad.evaluate(name)
    return low32(value) if isinstance(value, int) and type(value) is int else default


def format_time(call: FunctionCall) -> Value:
    """``formatTime([t [, format]])``: strftime of a time, default format ``%c``."""
    if not call.args:
        now = _now(call)
        offset = _offset(call, now)
        local = civil_from_epoch(now + offset)
        tm = Tm(
            year=local.year,
            month0=local.month - 1,
            day=local.day,
            hour=local.hour,
            minute=local.minute,
            second=local.second,
            weekday=local.weekday,
            yearday=local.yearday,
            gmtoff=offset,
            zone=_zone_name(call, offset),
            mktime=lambda: now,
        )
        return _formatted(_DEFAULT_FORMAT, tm)
    if len(call.args) > 2:
        return ERROR
    value = call.value(0)
    if type(value) is RelTime:
        return ERROR
    split = value if isinstance(value, ClassAd) else _split(call, value)
    if split is None:
        return ERROR
    # A missing or non-integer field is a zero struct tm member: 1900 for the year, January.
    year = _int_field(split, "Year", 1900)
    month = _int_field(split, "Month", 1)
    day, hour = _int_field(split, "Day"), _int_field(split, "Hours")
    minute, second = _int_field(split, "Minutes"), _int_field(split, "Seconds")
    weekday, yearday = day_numbers(year, month, day)
    fields_secs = epoch_from_fields(year, month - 1, day, hour, minute, second)
    zone_offset = _standard_offset(call, fields_secs)
    tm = Tm(
        year=year,
        month0=month - 1,
        day=day,
        hour=hour,
        minute=minute,
        second=second,
        weekday=weekday,
        yearday=yearday,
        zone=_zone_name(call, zone_offset),
        mktime=lambda: fields_secs - _standard_offset(call, fields_secs),
    )
    if len(call.args) == 1:
        return _formatted(_DEFAULT_FORMAT, tm)
    fmt = call.value(1)
    if type(fmt) is not str:
        return ERROR
    assert isinstance(fmt, str)
    return _formatted(fmt, tm)


def _formatted(fmt: str, tm: Tm) -> Value:
    """strftime's text, or ERROR where libclassad's buffer would hold undefined bytes."""
    text = strftime(fmt, tm)
    return ERROR if text is None else text


def _convert_time(relative: bool) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        if not call.args and not relative:
            return current_time(call)
        if not arity_ok(call, 1, 2):
            return ERROR
        value = call.value(0)
        offset: int | None = None
        if len(call.args) == 2:
            given = call.value(1)
            if relative:
                return ERROR
            if type(given) is int:
                offset = low32(given)
            elif type(given) is float:
                offset = c_int32(given)
            elif type(given) is RelTime:
                offset = rel_secs(given)
            else:
                return ERROR
        kind = type(value)
        if value is UNDEFINED:
            return UNDEFINED
        if kind is int:
            assert isinstance(value, int)
            secs = low32(value)
            if relative:
                return RelTime(float(secs))
            if offset == -1:
                # libclassad reads an offset of -1 as a failed time zone lookup.
                return ERROR
            return AbsTime(secs, _offset(call, secs) if offset is None else offset)
        if kind is float:
            assert isinstance(value, float)
            if relative:
                return RelTime(value)
            secs = c_int32(value)
            return AbsTime(secs, _offset(call, secs) if offset is None else offset)
        if kind is str:
            # libclassad falls through to its absolute-time case with an empty time.
            return RelTime(0.0) if relative else value
        if kind is AbsTime:
            assert isinstance(value, AbsTime)
            return RelTime(float(value.secs)) if relative else value
        if kind is RelTime:
            assert isinstance(value, RelTime)
            if relative:
                return value
            secs = rel_secs(value)
            return AbsTime(secs, _offset(call, secs) if offset is None else offset)
        return ERROR

    return impl


def interval(call: FunctionCall) -> Value:
    """``interval(secs)``: ``[D+][H:]MM:SS``-style text for a number of seconds."""
    if not arity_ok(call, 1):
        return ERROR
    number = to_integer(call.value(0))
    if type(number) is not int:
        return ERROR
    assert isinstance(number, int)
    total = low32(number)
    days = c_div(total, 86400)
    total = c_mod(total, 86400)
    hours, total = c_div(total, 3600), c_mod(total, 3600)
    minutes, seconds = c_div(total, 60), c_mod(total, 60)
    if days:
        return f"{days}+{abs(hours):02d}:{abs(minutes):02d}:{abs(seconds):02d}"
    if hours:
        return f"{hours}:{abs(minutes):02d}:{abs(seconds):02d}"
    if minutes:
        return f"{minutes}:{abs(seconds):02d}"
    return str(seconds)


def functions() -> dict[str, FunctionImpl]:
    """The functions of this module by lower-case name."""
    table: dict[str, FunctionImpl] = {
        "time": epoch_time,
        "currenttime": current_time,
        "timezoneoffset": time_zone_offset,
        "daytime": day_time,
        "splittime": split_time,
        "formattime": format_time,
        "abstime": _convert_time(relative=False),
        "reltime": _convert_time(relative=True),
        "interval": interval,
    }
    for name in (*_ABS_FIELDS, *_REL_FIELDS):
        table[name] = _field(name)
    return table
