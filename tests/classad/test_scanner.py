"""The fast path's two scanners: the character loop cuts every text as the pattern does."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import ad_texts, expressions, mutations, scaled

from epcore.classad import scanner

# Texts at the edges of each kind of token: numbers against names and dots, minus signs,
# exponents with and without digits, every operator and its prefixes, unclosed strings,
# escapes, NUL, blanks of each kind and characters outside ASCII.
EDGES = [
    "",
    " ",
    "\t\r\n\f\v",
    "a",
    "_a1",
    "1",
    "-1",
    "- 1",
    "a-1",
    "a -1",
    "1-1",
    "1.5",
    "-1.5",
    ".5",
    "-.5",
    "-.",
    "-.x",
    "1.",
    "1.x",
    "1.5x",
    "1.5.",
    "-1.5x",
    "5.e",
    "1e5",
    "1E+5",
    "1e-5",
    "1e",
    "1e+",
    "1ex",
    "1e5x",
    "1e5.",
    ".5e3",
    "1.5e3.2",
    "0x10",
    "1_000",
    "a.b",
    "a. b",
    "a.5",
    "x[1]",
    '"abc"',
    '""',
    '"a b\nc"',
    '"unclosed',
    '"esc\\"aped"',
    '"nul\x00"',
    "a\x00",
    "\x00",
    "a == b",
    "a =?= b",
    "a =!= b",
    "a =? b",
    "a =! b",
    "a = b",
    "a != b",
    "!a",
    "a <= b << c < d",
    "a >= b >>> c >> d > e",
    "a >>= b",
    "a >>>> b",
    "a && b & c || d | e",
    "a ? b : c",
    "a ?: b",
    "a ?? b",
    "{1, 2; 3}",
    "[a = 1; b = 2]",
    "f(x) * 2 / 3 % 4 ~ 5 ^ 6 + 7",
    "a // comment",
    "a /* comment */",
    "'quoted'",
    "$(MACRO)",
    "a @ b",
    "café",
    "\u00e9",
    '"caf\u00e9"',
    "a\u00a0b",
    "9223372036854775808",
    "-9223372036854775808",
]


@pytest.mark.parametrize("text", EDGES)
def test_edge_texts_are_cut_alike(text: str) -> None:
    """At the edges of every kind of token the loop gives the pattern's tokens, or None with it."""
    assert scanner.scan_characters(text) == scanner.scan_pattern(text)


@scaled(1.0)
@given(text=st.one_of(expressions, mutations(), ad_texts()))
def test_generated_texts_are_cut_alike(text: str) -> None:
    """On generated expressions and ads, damaged or not, the loop gives the pattern's tokens."""
    assert scanner.scan_characters(text) == scanner.scan_pattern(text)


@scaled(1.0)
@given(text=st.text(alphabet='ab1 .-+eE=?!<>&|:"\\()[]{},;*/%~^_\t\n\x00é', max_size=12))
def test_any_text_of_token_characters_is_cut_alike(text: str) -> None:
    """On any short text of the characters tokens are made of, the loop agrees with the pattern."""
    assert scanner.scan_characters(text) == scanner.scan_pattern(text)


def test_plain_text_ends_with_the_end_token() -> None:
    """A plain text's tokens are its names, numbers, strings and operators, then END."""
    assert scanner.tokens('a -1 >= "x"') == ["a", "-1", ">=", '"x"', scanner.END]
    assert scanner.tokens("a @ b") is None
