"""Function tables beyond the built-ins: built by function_table, carried by EvalContext to
every evaluation made with that context, and kept from breaking evaluation."""

from __future__ import annotations

import pytest

from epcore.classad import ERROR, ClassAd, EvalContext, FunctionCall, parse_ad, parse_expr
from epcore.classad.functions import builtin_functions, function_table
from epcore.classad.match import rank, symmetric_match
from epcore.classad.values import UNDEFINED, is_value
from epcore.errors import ClassAdError


def _twice(call: FunctionCall) -> object:
    (value,) = call.values()
    return value * 2 if isinstance(value, int) else ERROR


def _context(report: list[str] | None = None) -> EvalContext:
    sink = report if report is not None else []
    return EvalContext(functions=function_table({"Twice": _twice}, sink.append))


def test_extra_functions_join_the_built_ins_under_lower_case_names() -> None:
    """The table holds every built-in and the extra function, keyed by its lower-case name."""
    table = function_table({"Twice": _twice}, print)
    assert set(table) == set(builtin_functions()) | {"twice"}


def test_an_extra_function_cannot_redefine_a_built_in() -> None:
    """An extra function named like a built-in one (in any case) is a ClassAdError."""
    with pytest.raises(ClassAdError, match="StrCat is already defined"):
        function_table({"StrCat": _twice}, print)


def test_evaluations_with_the_context_call_its_functions() -> None:
    """Expr.evaluate, ClassAd.evaluate, matching and ranking all call the context's functions,
    which evaluation without it does not know."""
    context = _context()
    assert parse_expr("twice(21)").evaluate(context=context) == 42
    assert parse_expr("twice(21)").evaluate() is ERROR
    slot = parse_ad("[Requirements = twice(TARGET.N) == 14; Rank = twice(TARGET.N)]")
    job = parse_ad("[N = 7; Requirements = true]")
    assert slot.evaluate("Rank", target=job, context=context) == 14
    assert symmetric_match(slot, job, context=context)
    assert not symmetric_match(slot, job)
    assert rank(slot, job, context=context) == 14.0


def test_a_context_at_another_time_keeps_its_functions() -> None:
    """at(now) fixes the clock and keeps the function table (and equals a context built so)."""
    context = _context()
    later = context.at(1000.0)
    assert later.now == 1000.0 and later.functions is context.functions
    assert parse_expr("twice(time())").evaluate(context=later) == 2000
    assert hash(later) == hash(EvalContext(now=1000.0, functions=dict(context.functions or {})))


def test_an_explicit_table_wins_over_the_contexts() -> None:
    """functions= given to an evaluation replaces the context's table for it."""
    assert parse_expr("twice(1)").evaluate(context=_context(), functions=builtin_functions()) is (
        ERROR
    )


@pytest.mark.parametrize(
    ("impl", "said"),
    [
        (lambda call: 1 / 0, "Twice failed: ZeroDivisionError"),
        (lambda call: {"not": "a value"}, "which is no ClassAd value"),
        (lambda call: 2**70, "which is no ClassAd value"),
    ],
    ids=["raises", "dict", "too-big"],
)
def test_a_broken_extra_function_is_error_and_reported(impl: object, said: str) -> None:
    """A function that raises or answers no ClassAd value is ERROR, and the report says why."""
    report: list[str] = []
    context = EvalContext(functions=function_table({"Twice": impl}, report.append))  # type: ignore[dict-item]
    assert parse_expr("Twice(1) + 1").evaluate(context=context) is ERROR
    assert len(report) == 1 and said in report[0]


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        (UNDEFINED, True),
        ([1, "a", [True, 2.5]], True),
        (ClassAd({"a": 1}), True),
        (2**63, False),
        ([1, object()], False),
        (None, False),
        ((1, 2), False),
    ],
)
def test_is_value(candidate: object, expected: bool) -> None:
    """is_value accepts exactly the Python forms of ClassAd values."""
    assert is_value(candidate) is expected
