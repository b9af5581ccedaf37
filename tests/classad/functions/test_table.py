"""The built-in function table: every name of the reference's sections A and B, nothing else."""

from __future__ import annotations

import pytest
from fn_oracle import evaluate

from epcore.classad.functions import builtin_functions

#: Sections A (libclassad) and B (HTCondor's compat layer) of the function reference.
REFERENCE_NAMES = [
    "abstime", "allcompare", "anycompare", "argstolist", "avg", "bool", "ceil", "ceiling",
    "countmatches", "currenttime", "daytime", "debug", "envv1tov2", "eval", "evalineachcontext",
    "floor", "formattime", "getdayofmonth", "getdayofweek", "getdayofyear", "getdays", "gethours",
    "getminutes", "getmonth", "getseconds", "getyear", "identicalmember", "ifthenelse", "int",
    "interval", "isabstime", "isboolean", "isclassad", "iserror", "isinteger", "islist", "isreal",
    "isreltime", "isstring", "isundefined", "join", "listtoargs", "max", "member",
    "mergeenvironment", "min", "pow", "quantize", "random", "real", "regexp", "regexpmember",
    "regexps", "reltime", "replace", "replaceall", "round", "size", "split", "splitslotname",
    "splittime", "splitusername", "strcat", "strcmp", "stricmp", "string",
    "stringlist_regexpmember", "stringlistavg", "stringlistimember", "stringlistisubsetmatch",
    "stringlistmax", "stringlistmember", "stringlistmin", "stringlistsintersect",
    "stringlistsize", "stringlistsubsetmatch", "stringlistsum", "substr", "sum", "time",
    "timezoneoffset", "tolower", "toupper", "unparse", "unresolved", "userhome", "usermap",
    "version_in_range", "versioncmp", "versioneq", "versionge", "versiongt", "versionle",
    "versionlt",
]  # fmt: skip


def test_table_holds_exactly_the_reference_names() -> None:
    """The 73 core and 21 compat names are all there, keyed in lower case, and no others."""
    assert len(REFERENCE_NAMES) == 94
    assert sorted(builtin_functions()) == sorted(REFERENCE_NAMES)


def test_every_entry_is_callable() -> None:
    """Each entry is an implementation the evaluator can call."""
    assert all(callable(impl) for impl in builtin_functions().values())


def test_each_call_returns_a_new_table() -> None:
    """Changing one table (e.g. to add a site function) leaves the next one untouched."""
    table = dict(builtin_functions())
    table.pop("strcat")
    assert "strcat" in builtin_functions()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('STRCAT("a", "b")', "ab"),
        ('StrCat("a", "b")', "ab"),
        ("IsInteger(1)", True),
        ('stringlistsize("a,b")', 2),
        ('VERSION_IN_RANGE("2", "1", "3")', True),
    ],
)
def test_names_are_case_insensitive(text: str, expected: object) -> None:
    """A function is found whatever the case the expression spells its name in."""
    assert evaluate(text) == expected
