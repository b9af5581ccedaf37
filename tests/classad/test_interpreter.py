"""The tree walk that evaluates an expression's first evaluations before it is compiled.

That it gives what compiled code gives is checked on every generated expression the
differential suite compares with classad2 (oracle.canon_epcore evaluates each both ways).
"""

from __future__ import annotations

import sys

import pytest

from epcore.classad import ERROR, UNDEFINED, classad, compiler, interpreter, parse_ad, parse_expr
from epcore.classad.parser import MAX_NESTING
from epcore.classad.runtime import Code


def _ternary(n: int) -> str:
    """``n`` nested ``true ? (...) : false`` around ``x``: as deep as a text may nest."""
    return "true ? " * n + "x" + " : false" * n


def test_first_evaluations_do_not_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh expression and a fresh attribute are walked, not compiled, until warm."""
    compiled: list[object] = []

    def spy(node: object) -> Code:
        compiled.append(node)
        return compiler.compile_node(node)  # type: ignore[arg-type]

    monkeypatch.setattr(classad, "compile_node", spy)
    ad = parse_ad('[a = b * 2 + size("xyz"); b = {1, c}[1]; c = 5]')
    expr = parse_expr("c > 1 && member(c, {5, 6}) ? TARGET.x ?: c : error")
    other = parse_ad("[c = 5]")
    for _ in range(interpreter.WARM_UP):
        assert ad.evaluate("a") == 13
        assert expr.evaluate(other) == 5
    assert compiled == []
    assert expr.evaluate(other) == 5
    assert compiled == [expr.node]
    assert ad.evaluate("a") == 13  # a's third evaluation, and b's
    assert compiled == [expr.node, ad._bindings["a"].node, ad._bindings["b"].node]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("undefined && false", False),
        ("error || true", ERROR),
        ('"yes" ? 1 : 2', ERROR),
        ("y ?: 7", 7),
        ("{1, x, y}[2]", UNDEFINED),
        ("[p = x + 1].p", 43),
        ("ifThenElse(x > 1, x, 1 / 0)", 42),
        ("-x << 2", -168),
    ],
)
def test_walked_and_compiled_values_agree(
    text: str, expected: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Short circuits, elvis, subscripts, nested ads and lazy arguments walk as compiled."""
    ad = parse_ad("[x = 42]")
    values = []
    for warm_up in (1 << 62, 0):
        monkeypatch.setattr(interpreter, "WARM_UP", warm_up)
        values.append(parse_expr(text).evaluate(ad))
    assert repr(values[0]) == repr(values[1]) == repr(expected)


def test_a_walk_that_runs_out_of_stack_is_run_again_compiled() -> None:
    """A walk takes more of the stack than compiled code: where it runs out, the evaluation
    is run again compiled and gives the compiled value, not ERROR."""
    ad = parse_ad(f"[v = {_ternary(MAX_NESTING)}; x = 42]")
    binding = ad._bindings["v"]
    # Compiled with the whole stack, outside the limit (compiling and comparing equal trees
    # take a frame or two a level themselves).
    compiler.compile_node(binding.node)
    depth = _frames_in_use()
    old = sys.getrecursionlimit()
    # Room for the compiled code's few frames, not for the walk's two a level.
    sys.setrecursionlimit(depth + MAX_NESTING)
    try:
        value = ad.evaluate("v")
    finally:
        sys.setrecursionlimit(old)
    assert value == 42
    assert binding._code is not None  # compiled on its first evaluation, by the second run


def _frames_in_use() -> int:
    frame = sys._getframe(1)
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    return depth
