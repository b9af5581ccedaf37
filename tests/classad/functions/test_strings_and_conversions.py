"""String functions and the int/real/string/bool conversions agree with classad2."""

from __future__ import annotations

import pytest
from fn_oracle import assert_agree
from oracle import World

pytestmark = pytest.mark.oracle

STRINGS = [
    # strcat unparses non-strings: reals as %.15E, lists and ads in new syntax
    'strcat("a", "b", "c")', "strcat(1.5, 2)", 'strcat(1e10, "x")', "strcat(0.1)",
    "strcat(1.0 / 3)", "strcat(1e100)", "strcat(-0.0)", "strcat(true)", "strcat({1, 2})",
    "strcat([a = 1])", "strcat(absTime(0))", "strcat(relTime(90))", "strcat()",
    'strcat("a", undefined, "b")', "strcat(undefined, error)", "strcat(error, undefined)",
    'strcat("a", error)', 'strcat({"x", 2.5})', 'strcat(real("INF"), real("-INF"))',
    # join: separator first, or a single list
    'join(",", "a", "b")', 'join(",", {"a", "b"})', 'join({"a", "b"})', 'join("a")',
    'join(",", {"a", undefined, "b"})', 'join(undefined, {"a", "b"})', "join(undefined, {})",
    'join(",", {})', 'join(",", {1, 2.5, true})', 'join(",", {error})', "join()",
    'join(",", "x")', 'join(",", undefined)', 'join("s", "", "s")', 'join("-", {"", "a", ""})',
    # case changes touch ASCII letters only
    'toUpper("abcé")', 'toLower("ABC")', "toUpper(1.5)", "toUpper(undefined)", "toLower(error)",
    "toUpper({1})", 'toUpper("a", "b")', "toLower()",
    # substr counts bytes, Perl-like negative offsets and lengths
    'substr("abc", 1, 0)', 'substr("abcdef", -2)', 'substr("abcdef", -10, 2)',
    'substr("abcdef", 2, -1)', 'substr("abcdef", 10)', 'substr("abcdef", 1.5)', "substr(5, 1)",
    'substr("abc", undefined)', 'substr(undefined, "x")', 'substr("abcdef", 2, 2)',
    'substr("abcdef", 2, -10)', 'substr("abcdef", -3, -1)', 'substr("abc")',
    'substr("abc", 4294967297)', 'substr("héllo", 3)', 'substr("abc", 1, error)',
    # strcmp/stricmp convert with string() and answer -1, 0 or 1
    'strcmp("a", "b")', 'strcmp("b", "a")', 'strcmp("a", "a")', 'strcmp("A", "a")',
    'stricmp("A", "a")', 'stricmp("[", "a")', 'strcmp(1, "1")', 'strcmp(undefined, "1")',
    "strcmp(error, undefined)", 'strcmp(error, "a")', 'strcmp("a")', "strcmp({1}, {1})",
    'stricmp("abc", "ABD")', 'strcmp("é", "e")',
    # ads print their attributes in libclassad's storage order: by length, then caselessly
    'string([B = 1; a = 2])', 'string([_a = 1; Za = 2; za = 3])',
    'string([a1 = 1; A_ = 2; a0 = 3])',
    "string(['a b' = 1; ab = 2; 'é' = 3])", 'string([z = [y = 1; b = 2]; a = {[d = 1; c = 2]}])',
    'join(",", {[bb = 1; a = 2], 1})', "string([a = 0.30000000000000004; b = -5; c = 1e309])",
]  # fmt: skip

CONVERSIONS = [
    'int("0x10")', 'int("1e3")', 'int("12k")', 'int("abc")', 'int("")', 'int(" 12")',
    'int("12abc")', "int(3.9)", "int(-3.9)", "int(true)", "int(relTime(5.7))",
    "int(absTime(5))", 'int("inf")', 'int("nan")', 'int("-inf")', 'int("1e30")', "int(1e30)",
    "int(-1e30)", 'int("9223372036854775807")', 'int(" +5")', 'int("-0x10")', 'int("0b11")',
    'int("1e")', 'int(".")', 'int(".5")', "int(undefined)", "int(error)", "int({1})",
    "int([a = 1])", "int()", "int(1, 2)", "int(relTime(1e30))",
    'real("0x10")', 'real("1e3")', 'real("1.5K")', "real(absTime(5))", "real(relTime(1.5))",
    'real("1e400")', 'real("-inf")', 'real("  -INF")', 'real("infinity")', 'real("nanx")',
    'real(".")', 'real("+")', 'real("0x1.8p1")', "real(true)", "real(7)", "real(undefined)",
    "real({})", 'real("-0.0")',
    "string(3)", "string(3.0)", "string(1e-5)", "string(true)", "string(undefined)",
    "string(error)", 'string({1, "a", 2.5})', 'string([a = 1; b = "x"])', "string({})",
    'string("abc")', "string(absTime(0))", "string(absTime(0, 3600))",
    "string(absTime(0, -5400))", "string(absTime(0, 59))", "string(relTime(90))",
    "string(relTime(90.5))", "string(relTime(-90061))", "string(relTime(-5))",
    "string(relTime(0))", "string(relTime(86400))", "string(relTime(3600))",
    "string(relTime(59.9))", "string(relTime(1e30))", 'string(real("nan"))',
    'string(real("inf"))', 'string(real("-inf"))', "string(-0.0)", "string(0.0)",
    'string({"a\\"b\\\\c\\n"})', "string()",
    'bool("TRUE")', 'bool(" true")', 'bool("yes")', 'bool("false")', "bool(0.0)", "bool(2)",
    "bool(relTime(0))", "bool(relTime(2))", "bool(absTime(0))", "bool({})", "bool([])",
    "bool(undefined)", "bool(error)", 'bool(real("nan"))', "bool()",
]  # fmt: skip


@pytest.mark.parametrize("text", STRINGS)
def test_string_functions(text: str, world: World) -> None:
    """strcat, join, toUpper, toLower, substr, strcmp and stricmp agree with classad2."""
    assert_agree([text], world)


@pytest.mark.parametrize("text", CONVERSIONS)
def test_conversions(text: str, world: World) -> None:
    """int(), real(), string() and bool() convert (and refuse) exactly as classad2 does."""
    assert_agree([text], world)
