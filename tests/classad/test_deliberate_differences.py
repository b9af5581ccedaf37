"""Where epcore differs from classad2 on purpose, each difference asserted both ways.

Each entry of DELIBERATE_DIFFERENCES names its reason and pins epcore's value and classad2's;
the differential tests (test_differential.py and friends) leave these shapes out. The function
table's own deliberate differences are in functions/test_differences.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import classad2
import pytest
from oracle import parse_oracle_ad
from sample_ads import JOB_AD_TEXT, MACHINE_AD_TEXT

from epcore.classad import ERROR, UNDEFINED, ClassAdSyntaxError, parse_ad, parse_expr

pytestmark = pytest.mark.oracle


def _oracle_value(text: str, my: classad2.ClassAd | None = None) -> object:
    holder = classad2.ClassAd(f"[__e = {text}]")
    return holder.lookup("__e").eval(my, classad2.ClassAd())


def _epcore_unparse_value(text: str) -> float:
    value = parse_expr(str(parse_expr(text))).evaluate()
    assert type(value) is float
    return value


def _oracle_unparse_value(text: str) -> float:
    holder = classad2.ClassAd(f"[__e = {text}]")
    unparsed = str(holder.lookup("__e"))
    value = _oracle_value(unparsed)
    assert type(value) is float
    return value


REAL_UNPARSE = (
    "epcore prints a real with the shortest text that reads back to the same double; classad2"
    " prints %.15E and loses the last bits on a round trip through text"
)

SUBSCRIPT_THEN_SELECT = (
    "classad2 answers UNDEFINED when an attribute is selected from an ad that a string"
    ' subscript returned (ad["k"].x), though the same ad selected by name (ad.k.x) works;'
    " this looks like a libclassad lifetime quirk, and epcore gives the attribute both ways"
)
LONG_CHAINS = (
    "epcore bounds flat operator chains (about 500 operators) as it bounds brackets, because"
    " it walks trees recursively; libclassad parses chains of any length, then fails to"
    " evaluate one this long"
)


def _epcore_value(text: str) -> object:
    try:
        return parse_expr(text).evaluate()
    except ClassAdSyntaxError:
        return "syntax-error"


def _oracle_plain(text: str) -> object:
    try:
        value = _oracle_value(text)
    except classad2.ClassAdException:
        return "fails to evaluate"
    return "undefined" if value == classad2.Value.Undefined else value


TIMES_IN_PYTHON = (
    "epcore hands Python a relative time as a RelTime (and an absolute time as an AbsTime);"
    " classad2's binding converts them to float and datetime, though inside the language both"
    " engines keep the type (isRelTime is true in both)"
)


def _epcore_python_type(text: str) -> str:
    return type(parse_expr(text).evaluate()).__name__


def _oracle_python_type(text: str) -> str:
    return type(_oracle_value(text)).__name__


def _epcore_is_reltime(text: str) -> object:
    return parse_expr(f"isRelTime({text})").evaluate()


def _oracle_is_reltime(text: str) -> object:
    return _oracle_value(f"isRelTime({text})")


UNRESOLVED_OF_ANOTHER_AD = (
    "unresolved(TARGET) (or parent, root): libclassad reads the references of that whole ad"
    " in a copy out of the match, where TARGET.x finds nothing and is listed as TARGET.x;"
    " epcore reads them from the current ad as for any attribute, so the same names come in"
    " another order and TARGET.x names are found or listed bare"
)
UNRESOLVED_MOVES_SCOPE = (
    "libclassad's unresolved() leaves the evaluation's current ad where its lookup of a"
    " selection ended (a state it never restores), so what the expression evaluates afterwards"
    " (the next argument of strcat, the branches of ifThenElse) resolves in that nested ad;"
    " epcore evaluates every part of an expression in its own scope"
)


def _machine_value(text: str) -> object:
    value = parse_expr(text).evaluate(parse_ad(MACHINE_AD_TEXT))
    return "undefined" if value is UNDEFINED else value


def _oracle_machine_value(text: str) -> object:
    value = _oracle_value(text, parse_oracle_ad(MACHINE_AD_TEXT))
    return "undefined" if value == classad2.Value.Undefined else value


def _job_then_machine_value(text: str) -> object:
    return parse_expr(text).evaluate(parse_ad(JOB_AD_TEXT), parse_ad(MACHINE_AD_TEXT))


def _oracle_job_then_machine_value(text: str) -> object:
    holder = classad2.ClassAd(f"[__e = {text}]")
    job, machine = parse_oracle_ad(JOB_AD_TEXT), parse_oracle_ad(MACHINE_AD_TEXT)
    return holder.lookup("__e").eval(job, machine)


FAILING_ELEMENT = (
    "libclassad evaluates a list element when a function reads it, so an element whose"
    " evaluation fails (userHome() with a wrong count of arguments) fails anyCompare or member"
    " over the list; epcore evaluates the elements with the list (epcore.classad.runtime."
    "make_list) and keeps such an element as ERROR"
)
COPIED_LIST_SELECTED = (
    "a list that a selection over a list of ads copies out of every scope: libclassad reads a"
    " reference among its elements as UNDEFINED when the copy is subscripted, but within the"
    " evaluation's scope when the copy is selected from again ({[a = {Cpus}]}.a[0].b reads"
    " Cpus as 8, so 8.b is ERROR); epcore's copy has no scope either way"
)
LIST_KINDS = (
    "libclassad keeps a list that a function built (split, splitUserName, splitSlotName,"
    " argsToList, evalInEachContext) as another kind of value than a list literal's, and =?="
    " between two kinds is false, between the same kind ERROR; epcore has one kind of list,"
    " and =?= between any two lists is ERROR"
)
KEYWORD_SELECTED = (
    "libclassad prints a selected name that is a literal keyword bare (b.true, b.is), text"
    " that neither engine reads back; epcore quotes it (b.'true') so that the printed"
    " expression reads back as itself"
)


def _epcore_text(text: str) -> str:
    return str(parse_expr(text))


def _oracle_text(text: str) -> str:
    return str(classad2.ClassAd(f"[__e = {text}]").lookup("__e"))


#: (expression, reason, epcore probe, epcore result, classad2 probe, classad2 result)
DELIBERATE_DIFFERENCES = [
    pytest.param(
        "-relTime(5)",
        TIMES_IN_PYTHON,
        _epcore_python_type,
        "RelTime",
        _oracle_python_type,
        "float",
        id="reltime-python-type",
    ),
    pytest.param(
        "-relTime(5)",
        TIMES_IN_PYTHON,
        _epcore_is_reltime,
        True,
        _oracle_is_reltime,
        True,
        id="reltime-same-in-the-language",
    ),
    pytest.param(
        'absTime("2004-01-01T00:00:00Z")',
        TIMES_IN_PYTHON,
        _epcore_python_type,
        "AbsTime",
        _oracle_python_type,
        "datetime",
        id="abstime-python-type",
    ),
    pytest.param(
        '[a = [b = 2]]["a"].b',
        SUBSCRIPT_THEN_SELECT,
        _epcore_value,
        2,
        _oracle_plain,
        "undefined",
        id="subscript-then-select",
    ),
    pytest.param(
        "strcat(unresolved(GPUs_GPU_c4a646d7.DeviceName), Id)",
        UNRESOLVED_MOVES_SCOPE,
        _machine_value,
        "undefined",
        _oracle_machine_value,
        "GPU-c4a646d7",
        id="unresolved-moves-the-scope",
    ),
    pytest.param(
        'anyCompare("is", {userHome()}, 1)',
        FAILING_ELEMENT,
        _epcore_value,
        False,
        _oracle_plain,
        "fails to evaluate",
        id="failing-list-element-read-by-anycompare",
    ),
    pytest.param(
        "member(1, {userHome()})",
        FAILING_ELEMENT,
        _epcore_value,
        False,
        _oracle_plain,
        "fails to evaluate",
        id="failing-list-element-read-by-member",
    ),
    pytest.param(
        "{[a = {Cpus}]}.a[0].b",
        COPIED_LIST_SELECTED,
        _machine_value,
        [UNDEFINED],
        _oracle_machine_value,
        [classad2.Value.Error],
        id="copied-list-selected",
    ),
    pytest.param(
        "{[a = {Cpus}]}.a[0][0]",
        COPIED_LIST_SELECTED,
        _machine_value,
        "undefined",
        _oracle_machine_value,
        "undefined",
        id="copied-list-subscripted",
    ),
    pytest.param(
        'split("a") is {"a"}',
        LIST_KINDS,
        _epcore_value,
        ERROR,
        _oracle_plain,
        False,
        id="built-list-is-literal-list",
    ),
    pytest.param(
        'split("a") isnt {"a"}',
        LIST_KINDS,
        _epcore_value,
        ERROR,
        _oracle_plain,
        True,
        id="built-list-isnt-literal-list",
    ),
    pytest.param(
        "b.'true'",
        KEYWORD_SELECTED,
        _epcore_text,
        "b.'true'",
        _oracle_text,
        "b.true",
        id="keyword-selected-prints-quoted",
    ),
    pytest.param(
        "unresolved(TARGET)",
        UNRESOLVED_OF_ANOTHER_AD,
        _job_then_machine_value,
        "CondorLoadAvg,CpuBusy,Cpus,Disk,GPUs_GPU_c4a646d7,JobPrio,KeyboardBusy,KeyboardIdle,"
        "LoadAvg,MachineLastMatchTime,Memory,Owner,RequestCpus,RequestDisk,RequestMemory,START,"
        "WithinResourceLimits",
        _oracle_job_then_machine_value,
        "CondorLoadAvg,CpuBusy,Cpus,Disk,GPUs_GPU_c4a646d7,KeyboardBusy,KeyboardIdle,LoadAvg,"
        "MachineLastMatchTime,Memory,START,JobPrio,Owner,RequestCpus,RequestDisk,RequestMemory,"
        "WithinResourceLimits",
        id="unresolved-of-another-ad",
    ),
    pytest.param(
        'ifThenElse(unresolved(GPUs_GPU_c4a646d7.DeviceName) == "", Id, 2)',
        UNRESOLVED_MOVES_SCOPE,
        _machine_value,
        "undefined",
        _oracle_machine_value,
        "GPU-c4a646d7",
        id="unresolved-moves-the-scope-into-a-branch",
    ),
    pytest.param(
        " + ".join(["1"] * 1000),
        LONG_CHAINS,
        _epcore_value,
        "syntax-error",
        _oracle_plain,
        "fails to evaluate",
        id="long-operator-chain",
    ),
    pytest.param(
        "0.30000000000000004",
        REAL_UNPARSE,
        _epcore_unparse_value,
        0.30000000000000004,
        _oracle_unparse_value,
        0.3,
        id="real-unparse-0.30000000000000004",
    ),
    pytest.param(
        "1.0000000000000002",
        REAL_UNPARSE,
        _epcore_unparse_value,
        1.0000000000000002,
        _oracle_unparse_value,
        1.0,
        id="real-unparse-1.0000000000000002",
    ),
    pytest.param(
        "1.7976931348623157e308",
        REAL_UNPARSE,
        _epcore_unparse_value,
        1.7976931348623157e308,
        _oracle_unparse_value,
        math.inf,
        id="real-unparse-largest-double",
    ),
]


@pytest.mark.parametrize(
    ("text", "reason", "ours", "expected_ours", "theirs", "expected_theirs"),
    DELIBERATE_DIFFERENCES,
)
def test_deliberate_differences(
    text: str,
    reason: str,
    ours: Callable[[str], object],
    expected_ours: object,
    theirs: Callable[[str], object],
    expected_theirs: object,
) -> None:
    """Each place where epcore differs from classad2 on purpose, with both behaviours asserted."""
    got_ours, got_theirs = ours(text), theirs(text)
    assert got_ours == expected_ours, f"epcore on {text!r}: {got_ours!r} ({reason})"
    assert got_theirs == expected_theirs, f"classad2 on {text!r}: {got_theirs!r} ({reason})"
