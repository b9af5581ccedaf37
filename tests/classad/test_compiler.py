"""The compiler's inline paths give what the runtime and the operator functions give."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import scaled

from epcore.classad import ERROR, UNDEFINED, ClassAd, interpreter, operators, parse_ad, parse_expr
from epcore.classad.values import INT64_MAX, INT64_MIN, Value


@pytest.fixture(autouse=True)
def _compiled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about compiled code: every expression is compiled on first evaluation."""
    monkeypatch.setattr(interpreter, "WARM_UP", 0)


_edges = st.sampled_from([INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX])
_values: st.SearchStrategy[Value] = st.one_of(
    st.integers(INT64_MIN, INT64_MAX),
    _edges,
    st.floats(),  # with infinities and NaN
    st.sampled_from([1.7e308, -1.7e308, 0.0, -0.0]),
    st.booleans(),
    st.sampled_from(["text", UNDEFINED, ERROR]),
)


def _arithmetic(op: str, left: Value, right: Value) -> Value:
    """``left op right`` evaluated by compiled code, both operands attributes of the ad."""
    ad = ClassAd({"a": left, "b": right})
    return parse_expr(f"a {op} b").evaluate(ad)


@scaled(1.0)
@given(op=st.sampled_from(["+", "-", "*"]), left=_values, right=_values)
def test_inline_arithmetic_is_the_operators(op: str, left: Value, right: Value) -> None:
    """Reals added, subtracted and multiplied inline, and every other pair of values, give
    what operators.arithmetic gives: +infinity is ERROR, integers wrap at 64 bits."""
    assert repr(_arithmetic(op, left, right)) == repr(operators.arithmetic(op, left, right))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a + a", ERROR),  # 1.7e308 * 2 is +infinity
        ("-a - a", -math.inf),
        ("i + 1", INT64_MIN),
        ("i * 2", -2),
        ("i - -1", INT64_MIN),
        ("true + 1", 2),
        ("i + 0.5", float(INT64_MAX) + 0.5),
    ],
)
def test_inline_arithmetic_at_the_edges(text: str, expected: Value) -> None:
    """Overflowing reals take the operators' rules, not Python's."""
    ad = parse_ad(f"[a = 1.7e308; i = {INT64_MAX}]")
    assert repr(parse_expr(text).evaluate(ad)) == repr(expected)


def test_references_read_constants_expressions_and_the_target() -> None:
    """An unscoped name is the ad's constant, the ad's expression evaluated, the target's
    attribute when the ad lacks it, or UNDEFINED without either."""
    my = parse_ad("[x = 2; y = x * 10; cycle = cycle + 1]")
    target = parse_ad("[z = 300; x = 5]")
    expr = parse_expr("x + y + z")
    assert expr.evaluate(my, target) == 322
    assert expr.evaluate(my) is UNDEFINED
    assert parse_expr("cycle").evaluate(my) is UNDEFINED
    assert parse_expr("x").evaluate() is UNDEFINED
    assert parse_expr("x").evaluate(target, my) == 5


def test_a_standalone_expression_keeps_its_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """An Expr is walked for its first WARM_UP evaluations, then compiles once, evaluates
    against other ads with the same code, and pickles without it."""
    import pickle

    monkeypatch.setattr(interpreter, "WARM_UP", 2)
    expr = parse_expr("Memory * 2")
    assert expr.evaluate(parse_ad("[Memory = 3]")) == 6
    assert expr.evaluate(parse_ad("[Memory = 3.5]")) == 7.0
    assert expr._code is None
    assert expr.evaluate(parse_ad("[Memory = 3]")) == 6
    code = expr._code
    assert code is not None
    assert expr.evaluate(parse_ad("[Memory = 4.5]")) == 9.0
    assert expr._code is code
    back = pickle.loads(pickle.dumps(expr))
    assert back == expr and back._code is None
    assert back.evaluate(parse_ad("[Memory = 5]")) == 10


def test_an_attribute_is_walked_then_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """An attribute of an ad is walked for its first WARM_UP evaluations, then compiled once."""
    monkeypatch.setattr(interpreter, "WARM_UP", 2)
    ad = parse_ad("[a = b + 1; b = 2]")
    binding = ad._bindings["a"]
    assert [ad.evaluate("a"), ad.evaluate("a")] == [3, 3]
    assert binding._code is None
    assert ad.evaluate("a") == 3
    code = binding._code
    assert code is not None
    assert ad.evaluate("a") == 3
    assert binding._code is code
