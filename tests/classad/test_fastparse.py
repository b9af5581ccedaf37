"""The parser's fast path: it reads plain text as the full parser does, and gives up on the rest."""

from __future__ import annotations

import os
import pickle

import pytest
from hypothesis import given
from strategies import ad_texts, expressions, mutations, scaled

from epcore.classad import ClassAdSyntaxError, ast, fastparse, parser, scanner
from epcore.classad.unparse import unparse


def _full(text: str) -> ast.Node | None:
    """The full parser's tree of an expression, or None when it refuses the text."""
    try:
        return parser.Parser(text).parse_whole_expression()
    except (ClassAdSyntaxError, RecursionError):
        return None


def _full_ad(text: str) -> ast.Node | None:
    """The full parser's tree of a new-syntax ad (parse_ad_node without its fast path)."""
    reader = parser.Parser(text)
    reader.depth = -parser._BRACKET_COST
    try:
        node = reader.ad_literal()
    except (ClassAdSyntaxError, RecursionError):
        return None
    return node if reader.token.kind == parser.END else None


def _same_tree(fast: ast.Node, full: ast.Node | None) -> None:
    assert full is not None, "the fast path accepted text the full parser refuses"
    assert fast == full
    assert repr(fast) == repr(full)  # also the types of literals: 1 and 1.0 and true differ
    assert unparse(fast) == unparse(full)
    # Nodes whose slots the fast path fills itself hash and pickle as attrs-made ones.
    assert hash(fast) == hash(full)
    assert pickle.loads(pickle.dumps(fast)) == full


@scaled(1.0)
@given(text=expressions)
def test_generated_expressions_read_alike(text: str) -> None:
    """On generated expressions the fast path gives the full parser's tree or gives up."""
    fast = fastparse.fast_expression(text)
    if fast is not None:
        _same_tree(fast, _full(text))


@scaled(1.0)
@given(text=mutations())
def test_damaged_expressions_read_alike(text: str) -> None:
    """On expressions with characters deleted, inserted or cut off, the fast path never accepts
    what the full parser refuses, and accepts the rest as the full parser reads it."""
    fast = fastparse.fast_expression(text)
    if fast is not None:
        _same_tree(fast, _full(text))


@scaled(0.5)
@given(text=ad_texts())
def test_generated_ads_read_alike(text: str) -> None:
    """On generated ads the fast path gives the full parser's tree or gives up."""
    fast = fastparse.fast_ad(text)
    if fast is not None:
        _same_tree(fast, _full_ad(text))


PLAIN = [
    "a - 1",
    "a -1",
    "a-1",
    "1-2",
    "a - -1",
    "--1",
    "- 1",
    "-1 + 2",
    "a*-2.5",
    "x -.5",
    "-9223372036854775808",
    "9223372036854775808",
    "- 9223372036854775807 - 1",
    "-0.0",
    "0",
    "1e5 - 2E-3",
    "!a-1",
    "-a.b ?: 3",
    "0 ?: -1",
    "1 + undefined ?: 5",
    "0 ?: a.b[1]",
    "a is b == c",
    "a IS b isnt C",
    "a =?= b =!= c",
    "a ? b : -1",
    "a ? b ? c : d : e",
    "x.y.z[0][1]",
    ".Name",
    "TARGET.Memory >= RequestMemory && MY.Cpus > 1",
    "f()",
    "ifThenElse(a, {1, 2}, [x = 1; y = -2])",
    "[ ;; a = 1 ;; b = 2 ; ]",
    "[]",
    "{}",
    "TRUE || False && UNDEFINED || Error",
    '"a string" == "another"',
    '"//" + "/*"',
    "a >>> 2 << 1 >> 3 & 4 | 5 ^ 6 % 7",
    "\t a \n\r+\f\vb ",
]


@pytest.mark.parametrize("text", PLAIN)
def test_plain_text_takes_the_fast_path(text: str) -> None:
    """Plain expressions (minus signs against numbers, keywords in any case, nested lists and
    ads) are read by the fast path, as the full parser reads them."""
    fast = fastparse.fast_expression(text)
    assert fast is not None
    _same_tree(fast, _full(text))


def test_a_plain_ad_takes_the_fast_path() -> None:
    """A whole ad is read by the fast path, as the full parser reads it."""
    text = '[ MyType = "Machine"; Cpus = 4; Start = KeyboardIdle > 15 * 60; L = {1, -2.5} ]'
    fast = fastparse.fast_ad(text)
    assert fast is not None
    _same_tree(fast, _full_ad(text))


IRREGULAR = [
    "a /* comment */ + 1",
    "a // comment",
    '"tab\\t"',
    "'quoted name'",
    'absTime("2020-01-01T00:00:00")',
    'relTime("1:00")',
    "5.e",
    "1e",
    "08",
    "-08",
    "0x1F",
    "123abc",
    "a + é",
    "a\x00",
    "",
    "1 2",
    "f(1,)",
    "0 ?: - 1",
    "0 ?: !a",
    "a is",
    "is a",
    "[a = 1, b = 2]",
    "[ ; ]",
    "a.true",
    "(" * 67 + "1" + ")" * 67,
    " || ".join(["x"] * 202),
]


@pytest.mark.parametrize("text", IRREGULAR)
def test_other_text_is_left_to_the_full_parser(text: str) -> None:
    """Comments, escapes, quoted names, time literals, malformed numbers, text nested beyond
    the budget and syntax errors are left to the full parser, which decides and explains."""
    assert fastparse.fast_expression(text) is None


def test_the_nesting_budget_is_the_full_parsers() -> None:
    """The fast path gives up exactly where the full parser's budget ends."""
    assert fastparse._MAX_NESTING == parser.MAX_NESTING
    assert fastparse._BRACKET_COST == parser._BRACKET_COST
    deepest = " || ".join(["x"] * (parser.MAX_NESTING + 1))
    assert fastparse.fast_expression(deepest) == _full(deepest)
    assert fastparse.fast_expression(deepest + " || x") is None


@pytest.mark.skipif(
    os.environ.get("EPCORE_COMPILED") != "1",
    reason="only in CI's pass over the mypyc build (EPCORE_COMPILED=1, see .ci/run)",
)
def test_the_compiled_build_is_the_one_tested() -> None:
    """In CI's second pass the fast path is mypyc's extension module, not the Python source,
    and it makes its nodes through the branch written for the compiler."""
    assert fastparse.__file__ is not None and not fastparse.__file__.endswith(".py")
    assert fastparse._COMPILED
    # And its scanner is the character loop, not the regular expression.
    assert not scanner.__file__.endswith(".py")
    assert scanner._COMPILED


def test_trees_share_their_leaves_within_a_bounded_table() -> None:
    """The same name, number or string read twice is one node, and the table of such
    leaves is emptied when full rather than growing with every fresh name."""
    first = fastparse.fast_expression('Memory > 1024 && OpSys == "LINUX"')
    second = fastparse.fast_expression('(Memory > 1024) || OpSys != "LINUX"')
    assert isinstance(first, ast.Binary) and isinstance(second, ast.Binary)
    left, right = first.left, second.left
    assert isinstance(left, ast.Binary) and isinstance(right, ast.Paren)
    inner = right.inner
    assert isinstance(inner, ast.Binary)
    assert inner.left is left.left and inner.right is left.right
    for n in range(fastparse._MAX_LEAVES + 10):
        fastparse.fast_expression(f"fresh_name_{n}")
    assert len(fastparse._LEAVES) <= fastparse._MAX_LEAVES


def test_a_tree_not_kept_makes_its_own_leaves() -> None:
    """Read with shared=False, a text gives the same tree as with sharing, but none of its
    leaves is a node of the shared table or of another tree, and the table is not filled."""
    text = 'Memory > 1024 && OpSys == "LINUX" && Cpus >= 1.5 && Unshared_name_only_here'
    shared = fastparse.fast_expression(text)
    assert shared is not None
    fastparse._LEAVES.clear()
    own = fastparse.fast_expression(text, shared=False)
    assert own is not None
    _same_tree(own, _full(text))
    assert own == shared
    assert fastparse._LEAVES == {}
    again = fastparse.fast_expression(text, shared=False)
    assert isinstance(own, ast.Binary) and isinstance(again, ast.Binary)
    assert own.right is not again.right  # Unshared_name_only_here: a reference each


@scaled(1.0)
@given(text=expressions)
def test_generated_expressions_read_alike_without_sharing(text: str) -> None:
    """Without shared leaves the fast path gives the full parser's tree or gives up, as with."""
    fast = fastparse.fast_expression(text, shared=False)
    if fast is not None:
        _same_tree(fast, _full(text))
        assert fast == fastparse.fast_expression(text)
