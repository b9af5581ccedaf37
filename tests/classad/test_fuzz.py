"""Fuzzing the parser and the evaluator: bad input is a ClassAdSyntaxError, never a crash.

Under the "ci" profile these tests run 6,000 + 3,000 + 3,000 + 8,000 = 20,000 examples. Their
input is bounded (MAX_TEXT characters of arbitrary text, ten leaves per generated expression),
random() draws from a seeded source (oracle.make_context), and each test's peak memory is
measured, printed and held under 1 GiB (epcore.testing.hypothesis_profiles).
"""

from __future__ import annotations

from collections.abc import Callable

import hypothesis.strategies as st
import pytest
from hypothesis import given
from oracle import UNREADABLE_YEAR, World, make_context
from strategies import ad_texts, expressions, mutations, scaled

from epcore.classad import ClassAd, ClassAdSyntaxError, Expr, parse_ad, parse_ads, parse_expr

Tick = Callable[[], None]

TOKENS = [
    "(", ")", "[", "]", "{", "}", ",", ";", ".", "?", ":", "?:", "=", "==", "!=", "=?=", "=!=",
    "<", "<=", ">", ">=", "<<", ">>", ">>>", "&&", "||", "&", "|", "^", "~", "!", "+", "-",
    "*", "/", "%", "is", "isnt", "true", "false", "undefined", "error", "MY", "TARGET", "x",
    "Memory", "strcat", "size", "1", "0x1F", "017", "1.5", "1e", ".5e-3", '"s"', '"\\', "'q'",
    "'", '"', "\\", "/*", "*/", "//", "\n", " ", "\t", "\x00", "\u00e9", "\ufeff", "$", "@",
]  # fmt: skip

#: The longest arbitrary text generated; longer input is the deep-nesting tests' business.
MAX_TEXT = 400

token_soup = st.lists(st.sampled_from(TOKENS), max_size=30).map("".join)
spaced_soup = st.lists(st.sampled_from(TOKENS), max_size=30).map(" ".join)
arbitrary_text = st.one_of(
    st.text(max_size=MAX_TEXT),
    st.text(st.characters(max_codepoint=127), max_size=MAX_TEXT),
    token_soup,
)


def _evaluate_everywhere(expr: Expr, world: World) -> None:
    expr.evaluate(context=world.context)
    for scene in world.scenes[1:]:
        expr.evaluate(scene.my, scene.target, context=world.context)


def _evaluate_ad(ad: ClassAd, world: World) -> None:
    for name in list(ad):
        ad.evaluate(name, context=world.context)
        ad.evaluate(name, target=world.job, context=world.context)


@scaled(6)
@given(text=st.one_of(arbitrary_text, spaced_soup))
def test_parse_expr_fails_only_with_syntax_error(
    text: str, world: World, example_counter: Tick
) -> None:
    """parse_expr on arbitrary text returns an Expr that evaluates, or raises ClassAdSyntaxError."""
    example_counter()
    try:
        expr = parse_expr(text)
    except ClassAdSyntaxError:
        return
    _evaluate_everywhere(expr, world)
    str(expr)


@scaled(3)
@given(text=st.one_of(arbitrary_text, arbitrary_text.map(lambda t: f"[{t}]")))
def test_parse_ad_fails_only_with_syntax_error(
    text: str, world: World, example_counter: Tick
) -> None:
    """parse_ad on arbitrary text returns an ad whose attributes evaluate, or a syntax error."""
    example_counter()
    try:
        ad = parse_ad(text)
    except ClassAdSyntaxError:
        return
    _evaluate_ad(ad, world)


@scaled(3)
@given(texts=st.lists(st.one_of(ad_texts(), mutations(ad_texts()), arbitrary_text), max_size=4))
def test_parse_ads_fails_only_with_syntax_error(
    texts: list[str], world: World, example_counter: Tick
) -> None:
    """Iterating parse_ads over several (possibly broken) ads yields ads or a syntax error."""
    example_counter()
    try:
        ads = list(parse_ads("\n".join(texts)))
    except ClassAdSyntaxError:
        return
    for ad in ads:
        _evaluate_ad(ad, world)


@scaled(8)
@given(text=mutations(expressions))
def test_mutated_expressions_fail_only_with_syntax_error(
    text: str, world: World, example_counter: Tick
) -> None:
    """Valid expressions with characters cut, added or doubled parse cleanly or fail cleanly."""
    example_counter()
    try:
        expr = parse_expr(text)
    except ClassAdSyntaxError:
        return
    _evaluate_everywhere(expr, world)
    # Printing is a fixed point. (Reparsing need not give the same tree: like libclassad, a
    # relTime literal prints four decimals, so relTime("0:0:1.123123") reads back rounded;
    # and a time before the year 100 prints a year neither engine reads back alike.)
    printed = str(expr)
    if UNREADABLE_YEAR.search(printed):
        return
    assert str(parse_expr(printed)) == printed


def test_random_repeats_in_the_tests_contexts() -> None:
    """random() draws the same numbers in every context the tests build, so that a
    derandomized example that calls it evaluates the same way in every run."""
    draw = parse_expr("random(1000000)")
    first, second = make_context(), make_context()
    assert [draw.evaluate(context=first) for _ in range(5)] == [
        draw.evaluate(context=second) for _ in range(5)
    ]


DEEP = 10_000


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("(" * DEEP, id="open-parens"),
        pytest.param("-" * DEEP, id="minus-signs"),
        pytest.param("{" * DEEP, id="open-braces"),
        pytest.param("[" * DEEP, id="open-brackets"),
        pytest.param("!" * DEEP + "x", id="not-signs"),
        pytest.param("x" + ".x" * DEEP + ")", id="selections"),
        pytest.param("(" * DEEP + "1" + ")" * DEEP + ")", id="parens-then-junk"),
    ],
)
def test_deep_nesting_is_a_syntax_error(text: str) -> None:
    """Deeply nested broken input raises ClassAdSyntaxError, never RecursionError."""
    with pytest.raises(ClassAdSyntaxError):
        parse_expr(text)
    with pytest.raises(ClassAdSyntaxError):
        parse_ad(f"[a = {text}]")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("(" * DEEP + "1" + ")" * DEEP, id="parens"),
        pytest.param("-" * DEEP + "1", id="minus-signs"),
        pytest.param("{" * DEEP + "}" * DEEP, id="lists"),
        pytest.param("[a = " * DEEP + "1" + "]" * DEEP, id="ads"),
        pytest.param(" + ".join(["1"] * DEEP), id="long-sum"),
        pytest.param("x" + "[0]" * DEEP, id="subscripts"),
    ],
)
def test_deep_valid_input_parses_or_fails_cleanly(text: str, world: World) -> None:
    """Deep but valid input either parses (and evaluates and unparses) or is a syntax error."""
    try:
        expr = parse_expr(text)
    except ClassAdSyntaxError:
        return
    _evaluate_everywhere(expr, world)
    assert parse_expr(str(expr)) == expr
