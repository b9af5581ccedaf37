"""floor, ceil, round, pow, quantize and interval agree with classad2."""

from __future__ import annotations

import pytest
from fn_oracle import assert_agree
from oracle import World

pytestmark = pytest.mark.oracle

MATHS = [
    "floor(3.7)", "floor(-3.2)", 'floor("3.7")', "floor(undefined)", "floor(true)",
    "floor(1e30)", "floor({})", 'floor("abc")', "floor(5)", "floor()", "floor(1, 2)",
    "round(2.5)", "round(3.5)", "round(-2.5)", "round(0.5)", "round(-0.5)",
    'round(real("nan"))', "round(5)", "round(relTime(2.5))", "ceil(2.1)", "ceiling(2.1)",
    "ceil(-0.5)", 'ceil(real("-inf"))', "CEILING(7)",
    "pow(-2, 3)", "pow(2, -1)", "pow(2, 0.5)", "pow(-8, 1.0 / 3)", "pow(0, -1)",
    "pow(0.0, -1)", "pow(-0.0, -1)", "pow(10, 400)", "pow(-10, 401.0)", "pow(2, 63)",
    "pow(2, 62)", "pow(3, 39)", 'pow("2", 3)', "pow(2, undefined)", "pow(true, 2)",
    "pow(2, true)", "pow(0, 0)", "pow(-1, 0.5)", "pow(1e308, 2.0)", "pow(2)", "pow({}, 1)",
    "quantize(7, 5)", "quantize(7.0, 5)", "quantize(7, 2.5)", "quantize(7, {1, 4, 8, 16})",
    "quantize(7, {1, 4, 8.0, 16})", "quantize(70, {1, 4, 8, 16})", "quantize(70, {1, 4, 8.0})",
    "quantize(7, {})", "quantize(7, 0)", "quantize(7, 0.0)", "quantize(-7, 5)",
    "quantize(7, -5)", 'quantize("7", 5)', 'quantize(7, "5")', 'quantize(7, {1, "x"})',
    "quantize(7, {1, undefined})", "quantize(undefined, 5)", "quantize(7, undefined)",
    "quantize(true, 5)", "quantize(7, true)", "quantize(7, 1e-9)",
    "quantize(9223372036854775807, 2)", "quantize(2.5, -7)", "quantize(7)",
    'random("x")', "random(undefined)", "random(1, 2)", "random(1)", "random(-1)",
    "interval(0)", "interval(59)", "interval(61)", "interval(3601)", "interval(86401)",
    "interval(-61)", "interval(-3601)", "interval(-86401)", "interval(90061.7)",
    'interval("100")', "interval(undefined)", "interval(relTime(100))",
    "interval(4294967296 + 61)", "interval(true)", "interval({})", "interval()",
]  # fmt: skip


@pytest.mark.parametrize("text", MATHS)
def test_maths(text: str, world: World) -> None:
    """Results keep libclassad's integer/real types, C casts and IEEE edge cases."""
    assert_agree([text], world)
