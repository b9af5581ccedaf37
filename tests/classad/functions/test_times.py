"""Time functions agree with classad2 in a zone with daylight saving time (EST5EDT).

The world fixture sets the process zone for both engines; the clock itself is kept out of
these cases (see test_context.py for the clock readers).
"""

from __future__ import annotations

import pytest
from fn_oracle import assert_agree
from oracle import World, canon_oracle, local_offset

from epcore.classad import ERROR, ClassAdSyntaxError, parse_expr
from epcore.classad.parser import parse_uncached
from epcore.classad.timetext import parse_abs_time, parse_rel_time

pytestmark = pytest.mark.oracle

CONVERSIONS = [
    'absTime(strcat("2004-01-01"))', 'relTime(strcat("1:00"))', 'absTime("2004-01-01")',
    'absTime("2004-01-01", 3600)', "absTime(0)", "absTime(0, 3600)", "absTime(10.7)",
    "absTime(relTime(100))", "absTime(absTime(5))", "absTime(absTime(5, 7), 9)", "absTime(true)",
    "absTime(undefined)", "absTime(5, undefined)", 'absTime(5, "x")', "absTime(5, 1.5)",
    "absTime(5, relTime(60))", 'absTime(undefined, "x")', "absTime(1, 2, 3)", "absTime(error)",
    "absTime({})", "absTime(9223372036854775807)", "absTime(4294967296)", "absTime(5, -1)",
    "absTime(1e10)", "absTime(-1e10)", "absTime(1690000000)",
    "relTime(5, 1)", "relTime(5.5)", "relTime(absTime(77))", "relTime(undefined)",
    "relTime(true)", "relTime()", "relTime(4294967297)", "relTime(-5)", "relTime(1e30)",
    "relTime(relTime(3))", 'relTime("x", 1)',
]  # fmt: skip

LITERAL_TEXT = [
    '"2004-01-01"', '"2004-01-01T10:00:00+02:00"', '"2004-01-01T10:00:00-0530"',
    '"2004-01-01T10:00:00Z"', '"2004-01-01T10:00:00z"', '"2004-01-01T10:00:00 Z "', '"2004"',
    '"20040102"', '"2004-13-45T99:99:99"', '"x2004y01z02"', '"1970-01-01T:00:00:01Z"',
    '"2004-07-01"', '"2004-07-01T12:00:00"', '" 2004-01-01 "', '"2024-11-03T01:30:00"',
    '"2024-03-10T02:30:00"',
    # Years before 1000 print unpadded (strftime's %Y): "999-...", "-1-12-31...".
    '"0999-05-01T00:00:00Z"', '"0010-05-01T00:00:00Z"', '"0000"', '"0000-01-01T00:00:00Z"',
]  # fmt: skip

RELTIME_TEXT = [
    '"1:00"', '"2+25:14:16.123"', '"-1:00"', '"1d2h3m4s"', '"1D 2H 3M 4S"', '"5"', '"5.5s"',
    '".5"', '""', '"  "', '"-"', '"+5"', '"99999+00:00:00"', '"3000000000:00"', '"10 : 20"',
    '"1+"', '"d"', '"1:.5"', '"s"', '"1:"', '":5"', '"- 5"', '"12345678901"', '"00:00:01.25"',
]  # fmt: skip

FIELDS = [
    "getYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDayOfWeek", "getDays",
    "getHours", "getMinutes", "getSeconds",
]  # fmt: skip
FIELD_ARGS = [
    "absTime(0)", "absTime(0, 36000)", "absTime(1690000000)", "absTime(1700000000, -3600)",
    "absTime(-1e10)", "relTime(90061)", "relTime(-3700)", "relTime(5.9)", "relTime(1e30)",
    "relTime(-90000)", "5", "undefined", '"x"',
]  # fmt: skip

SPLIT_AND_FORMAT = [
    "splitTime(absTime(0, 3600))", "splitTime(relTime(-90061.5))", "splitTime(relTime(-61))",
    "splitTime(relTime(-0.5))", "splitTime(relTime(90061.25))", "splitTime(5)", "splitTime(5.9)",
    'splitTime("x")', "splitTime(undefined)", "splitTime([a = 1])", "splitTime(error)",
    "splitTime()", "splitTime(1, 2)", "splitTime(1690000000)", "splitTime(1000000000000)",
    "splitTime(absTime(1690000000))", "splitTime(absTime(1690000000, -3600))",
    "formatTime(absTime(0))", "formatTime(absTime(1700000000, 3600))",
    'formatTime(1700000000, "%a %A %b %B %C %d %D %e %F %g %G %h %H %I %j %k %l %m %M")',
    'formatTime(1700000000, "%n%p %P %r %R %s %S %t %T %u %U %V %w %W %x %X %y %Y %z %%")',
    'formatTime(1700000000, "%c")', 'formatTime(1700000000, "%E %O %Q %q %i %v %+")',
    'formatTime(1700000000, "%-d %_d %05d %^a %#a %10Y %Ey %Od %5%")',
    'formatTime(1700000000, "%")', 'formatTime(1700000000, "abc%")', 'formatTime(1700000000, "")',
    "formatTime(relTime(5))", 'formatTime("x")', "formatTime(undefined)",
    "formatTime(5, undefined)", "formatTime(5, 5)", 'formatTime(5, "%Y", 3)',
    'formatTime([Year = 2020; Month = 2; Day = 30], "%Y-%m-%d %j %a")',
    'formatTime([Year = 2020], "%Y-%m-%d %j %a %H")',
    'formatTime([Year = 2020; Month = 14; Day = 1], "%Y-%m-%d %j %a %b")',
    'formatTime([Year = 1; Month = 1; Day = 1], "%Y-%m-%d %j %a %b %s")',
    'formatTime([], "%Y-%m-%d %j %a %b %U %V")',
    'formatTime(-1, "%Y-%m-%d %H:%M:%S %s %z")', 'formatTime(1e12, "%Y")',
    'formatTime(1000000000000, "%Y")',
    'formatTime([Year = 2020; Month = 2; Day = 3; Hours = 4; Minutes = 5; Seconds = 6.7], "%T")',
    'formatTime([Year = 2020; Month = 2; Day = 3; Seconds = true], "%T")',
    'formatTime([Year = 2020; Month = 2; Day = 3; Seconds = "7"], "%T")',
    'formatTime([Year = 2020; Month = 2; Day = 3; Seconds = 4294967297], "%T")',
    'formatTime([Year = 2020; Month = 2; Day = 3; Seconds = x; x = 9], "%T")',
    'formatTime(1700000000, "%s")', 'formatTime(1690000000, "%H %z %s")',
    'formatTime([Year = 2020; Month = 2; Day = 30; Hours = 25], "%s %c")',
    'formatTime([Year = 2023; Month = 7; Day = 22; Hours = 4], "%s")',
    'formatTime([Year = 0; Month = 1; Day = 1], "%Y %C %y %G %g %V %a %j %U %W")',
    'formatTime([Year = -1; Month = 1; Day = 1], "%Y %C %y %G %g %V %a %j %U %W")',
    'formatTime([Year = -101; Month = 12; Day = 31], "%Y %C %y %G %g %V %a %j %U %W %u %w")',
    'formatTime([Year = 1; Month = 1; Day = 1], "%F %C %G %D")',
    'formatTime([Year = 99; Month = 1; Day = 1], "%C %y %5C %-C %_5Y")',
    'formatTime([Year = 2021; Month = 1; Day = 1], "%G %g %V")',
    'formatTime([Year = 2020; Month = 12; Day = 31], "%G %g %V")',
    'formatTime([Year = 2024; Month = 12; Day = 30], "%G %g %V %U %W")',
    'formatTime([Year = 2027; Month = 1; Day = 3], "%G %g %V %U %W")',
    'formatTime([Year = 12345; Month = 6; Day = 7], "%Y %C %y %G %F")',
    'formatTime([Year = -12345; Month = 6; Day = 7], "%Y %C %y %G %g")',
    'formatTime(1700000000, "%5Q|%-5Q|%Ed|%Oy|%EY|%Ec|%OH|%E|%O")',
    'formatTime(1700000000, "%10a|%-10a|%010a|%_10a|%^10b|%#p|%^p|%#P|%^P")',
    'formatTime(1700000000, "%5n|%-3d|%_3d|%03e|%-e|%3j|%-j|%12c|%^c|%#c|%^15x")',
    'formatTime([Hours = 0], "%I %l %p")', 'formatTime([Hours = 12], "%I %l %p")',
    'formatTime([Hours = 13; Minutes = -5], "%I %l %p %M %_3M %-M %03M")',
    'formatTime([Month = -1], "%b %m")', 'formatTime([Day = -3], "%d %e %a %j")',
    'formatTime([Day = 5], "%-d|%-3M|%_M|%e|%-e|%0e|%3e|%-5e|%_-5d")',
]  # fmt: skip


@pytest.mark.parametrize("text", CONVERSIONS)
def test_time_conversions(text: str, world: World) -> None:
    """absTime() and relTime() convert numbers and times, with libclassad's C int casts."""
    assert_agree([text], world)


@pytest.mark.parametrize("text", LITERAL_TEXT)
def test_absolute_time_text(text: str, world: World) -> None:
    """absTime("...") reads ISO-like text in the local zone or with its own offset."""
    assert_agree([f"absTime({text})", f"string(absTime({text}))"], world)


@pytest.mark.parametrize("text", RELTIME_TEXT)
def test_relative_time_text(text: str, world: World) -> None:
    """relTime("...") reads [-][D+][HH:]MM:SS-style text (classad2 25.x yields a real)."""
    assert_agree([f"relTime({text})"], world)


BAD_TIME_TEXT = [
    ("absTime", '"s"'), ("absTime", '""'), ("absTime", '"1.5"'), ("absTime", '"20041"'),
    ("relTime", '"a, b"'), ("relTime", '"%Y"'), ("relTime", '"5."'), ("relTime", '"1:2:3:4"'),
    ("relTime", '"1.5:00"'), ("relTime", '"1e3"'), ("relTime", '"1 2"'),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text"), BAD_TIME_TEXT)
def test_bad_time_text(name: str, text: str, world: World) -> None:
    """Text that is no time: a syntax error as a literal; computed at run time, as classad2.

    libclassad reads absTime("...") and relTime("...") with a literal string while parsing,
    and so does epcore's parser; a string computed at run time reaches the function.
    """
    expression = f"{name}({text})"
    assert canon_oracle(expression, world.scenes[0]) == ("syntax-error",)
    with pytest.raises(ClassAdSyntaxError):
        parse_uncached(expression)
    assert_agree([f'{name}(strcat({text}, ""))'], world)
    literal = text.strip('"')
    assert (
        parse_abs_time(literal, local_offset) if name == "absTime" else parse_rel_time(literal)
    ) is None


@pytest.mark.parametrize("name", FIELDS)
def test_field_extraction(name: str, world: World) -> None:
    """get*() read local-time fields of absolute times and parts of relative times."""
    assert_agree([*(f"{name}({arg})" for arg in FIELD_ARGS), f"{name}()", f"{name}(1, 2)"], world)


@pytest.mark.parametrize("text", SPLIT_AND_FORMAT)
def test_split_and_format(text: str, world: World) -> None:
    """splitTime() builds libclassad's ad; formatTime() is glibc's strftime on its fields."""
    assert_agree([text], world)


#: formatTime formats whose text is exactly 1022 bytes, and some that are one byte more or far
#: more, by id.
FULL_BUFFER = {
    "width": "%1022Y",
    "width-no-pad": "%-1022d",
    "width-space-pad": "%_1022e",
    "unknown-conversion": "%1022Q",
    "width-and-literals": "%1019Y%%%%%%",
    "ascii": "x" * 1022,
    "two-byte-characters": "\u00e9" * 511,
}
PAST_THE_BUFFER = {
    "width": "%1023Y",
    "width-and-literals": "%1021Y%%%%",
    "ascii": "x" * 1023,
    "two-byte-characters": "\u00e9" * 512,
    "many-fields": "%c" * 50,
    "eleven-digit-width": "%99999999999Y",
    "ten-digit-width-no-pad": "%-9999999999d",
}


@pytest.mark.parametrize("fmt", FULL_BUFFER.values(), ids=FULL_BUFFER.keys())
def test_formatted_time_fills_libclassads_buffer(fmt: str, world: World) -> None:
    """A formatTime text of up to 1022 bytes, libclassad's buffer, is the one classad2 gives."""
    assert_agree([f'formatTime(1700000000, "{fmt}")'], world)


@pytest.mark.parametrize("fmt", PAST_THE_BUFFER.values(), ids=PAST_THE_BUFFER.keys())
def test_formatted_time_past_the_buffer_is_an_error(fmt: str) -> None:
    """Past 1022 bytes (where libclassad's buffer holds undefined bytes) formatTime is ERROR,
    found before the text is built: a width of eleven digits allocates nothing."""
    assert parse_expr(f'formatTime(1700000000, "{fmt}")').evaluate() is ERROR
