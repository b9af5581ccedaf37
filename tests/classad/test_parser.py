"""The ClassAd lexer and parser: literals, precedence, located errors, nesting bounds."""

from __future__ import annotations

import pytest

from epcore.classad import ClassAdSyntaxError, ast, parse_expr
from epcore.classad.parser import parse_uncached

# (text, expected unparse) pairs; the expected text is what classad2 prints for the
# same input, except where epcore.classad.unparse documents a deliberate difference.
SHAPES = [
    ("1 + 2 * 3", "1 + 2 * 3"),
    ("(1 + 2) * 3", "(1 + 2) * 3"),
    ("1 - 2 - 3", "1 - 2 - 3"),
    ("a || b && c", "a || b && c"),
    ("a =?= b", "a is b"),
    ("a =!= b", "a isnt b"),
    ("a.b[1].c", "a.b[1].c"),
    ("x ? y : z ?: w", "x ? y : z ?: w"),
    ("1 ?: 2 ?: 3", "1 ?: 2 ?: 3"),
    ("STRCAT(1, 2,3)", "STRCAT(1,2,3)"),
    ("[a=1;;b=2;]", "[ a = 1; b = 2 ]"),
    ("{1,{2}}", "{ 1,{ 2 } }"),
    ("{}", "{  }"),
    ("[]", "[  ]"),
    ("'a b'.c", "'a b'.c"),
    (".a.b", ".a.b"),
    ("'parent'.x", "'parent'.x"),
    ("'self'", "self"),
    ("~!a", " ~ !a"),
    ("-5", "-5"),
    ("-(5)", " -(5)"),
    ("1+-2", "1 + -2"),
    ("TRUE || UnDeFiNeD", "true || undefined"),
    ('"\\101\\n"', '"A\\n"'),
    ('"\\777"', '"?7"'),
    ('"\\q"', '"q"'),
    ('"é"', '"\\303\\251"'),
    ("/* comment */ 1", "1"),
    ("1.5e3", "1.500000000000000E+03"),
    (".5", "5.000000000000000E-01"),
    ("0.1 + 0.2", "1.000000000000000E-01 + 2.000000000000000E-01"),
]


@pytest.mark.parametrize(("text", "expected"), SHAPES)
def test_unparse_matches_libclassad_layout(text: str, expected: str) -> None:
    """Parsing then printing gives libclassad's layout for the same input."""
    assert str(parse_expr(text)) == expected


INTEGERS: list[object] = [
    ("0", 0),
    ("9223372036854775807", 9223372036854775807),
    ("9223372036854775808", 0),
    ("-9223372036854775808", -9223372036854775808),
    ("-9223372036854775809", 0),
    ("100000000000000000000", 0),
    # Past Python's 4300-digit limit for int(): still 0, not a ValueError out of the parser.
    pytest.param("9" * 5000, 0, id="5000-digits"),
    pytest.param("-" + "1" * 5000, 0, id="minus-5000-digits"),
]


@pytest.mark.parametrize(("text", "value"), INTEGERS)
def test_integer_literals_read_as_libclassad_reads_them(text: str, value: int) -> None:
    """Integer literals are base 10, with out-of-range values read as 0."""
    node = parse_expr(text).node
    assert node == ast.Literal(value)


def test_minus_against_a_number_is_part_of_the_literal() -> None:
    """A minus written against a number is folded into the literal, one with a space is not."""
    assert parse_expr("-5").node == ast.Literal(-5)
    assert parse_expr("- 5").node == ast.Unary("-", ast.Literal(5))


def test_precedence_puts_arithmetic_above_comparison_and_logic() -> None:
    """``a == b + 1 && c`` groups as ``(a == (b + 1)) && c``."""
    node = parse_expr("a == b + 1 && c").node
    assert node == ast.Binary(
        "&&",
        ast.Binary("==", ast.AttrRef("a"), ast.Binary("+", ast.AttrRef("b"), ast.Literal(1))),
        ast.AttrRef("c"),
    )


def test_equality_operators_share_one_level_left_to_right() -> None:
    """``a is b == c`` is ``(a is b) == c``, as in libclassad."""
    node = parse_expr("a is b == c").node
    assert isinstance(node, ast.Binary) and node.op == "=="
    assert node.left == ast.Binary("is", ast.AttrRef("a"), ast.AttrRef("b"))


BAD = [
    ("1 2", 1, 3),
    ("[;]", 1, 3),
    ("f(1,)", 1, 5),
    ("a.(b)", 1, 3),
    ("08", 1, 1),
    ("017", 1, 1),
    ("0x1F", 1, 1),
    ("00", 1, 1),
    ("a + 07", 1, 5),
    ("019", 1, 1),
    ("1e", 1, 1),
    ("5.", 1, 1),
    ("123abc", 1, 1),
    ('"unterminated', 1, 1),
    ("/* unterminated", 1, 1),
    ("@", 1, 1),
    ("error(1)", 1, 6),
    ("f(1)(2)", 1, 5),
    ("[a=1,b=2]", 1, 5),
    ("{1;2}", 1, 3),
    ("a +\n  * b", 2, 3),
    ('"\\0"', 1, 2),
    ('"a\x00b"', 1, 3),
    ("", 1, 1),
]


@pytest.mark.parametrize(("text", "line", "column"), BAD)
def test_syntax_errors_carry_line_and_column(text: str, line: int, column: int) -> None:
    """Malformed text raises ClassAdSyntaxError located at the offending token."""
    with pytest.raises(ClassAdSyntaxError) as caught:
        parse_uncached(text)
    assert (caught.value.line, caught.value.column) == (line, column)
    assert f"{line}:{column}:" in str(caught.value)


@pytest.mark.parametrize("text", ["(" * 10000 + "1", "-" * 10000 + "1", "{" * 10000, "[a=" * 5000])
def test_deep_nesting_is_a_syntax_error_not_a_crash(text: str) -> None:
    """Input nested beyond libclassad's bound fails cleanly with ClassAdSyntaxError."""
    with pytest.raises(ClassAdSyntaxError, match="nested too deeply"):
        parse_uncached(text)


def test_nesting_within_the_bound_parses() -> None:
    """66 levels of parentheses and 200 unary operators are within the bound."""
    assert parse_expr("(" * 66 + "1" + ")" * 66).evaluate() == 1
    assert parse_expr("!" * 200 + "true").evaluate() is True


def test_parse_cache_returns_equal_trees_for_equal_text() -> None:
    """Parsing the same text twice gives equal expressions."""
    assert parse_expr("a + 1") == parse_expr("a + 1")
    assert parse_expr("a + 1") != parse_expr("a + 2")


ELVIS = [
    ("1 ?: 0 || 0", True),
    ("0 || 0 ?: 1", False),
    ("1 + undefined ?: 5", 6),
    ("2 * undefined ?: 3 * 2", 12),
    ("-undefined ?: 3", -3),
    ("!undefined ?: true", False),
    ("undefined ?: 1 ? 2 : 3", 2),
    ("false ?: true ? 5 : 6", 6),
    ("undefined ?: {1,2}[1]", 2),
]


@pytest.mark.parametrize(("text", "value"), ELVIS)
def test_elvis_binds_tighter_than_every_binary_operator(text: str, value: object) -> None:
    """``a ?: b`` groups before unary and binary operators, as libclassad parses it."""
    result = parse_expr(text).evaluate()
    assert type(result) is type(value) and result == value


@pytest.mark.parametrize("text", ["undefined ?: !false", "0 ?: -x", '0 ?: -""', "0 ?: - 1"])
def test_elvis_right_operand_is_a_primary(text: str) -> None:
    """The fallback of ``?:`` is a primary: no prefix operator, though -1 is a literal."""
    with pytest.raises(ClassAdSyntaxError):
        parse_uncached(text)
    assert parse_expr("undefined ?: -1.5").evaluate() == -1.5


def test_elvis_fallback_takes_its_own_selections() -> None:
    """``0 ?: a.b`` is ``0 ?: (a.b)``: selections after the fallback belong to it."""
    node = parse_expr("0 ?: a.b").node
    assert node == ast.Elvis(ast.Literal(0), ast.AttrRef("b", ast.AttrRef("a")))


def test_long_operator_chains_are_bounded() -> None:
    """A 201-term sum (200 operators) parses and evaluates; a 202-term one is a syntax error.

    A deliberate difference from libclassad, which accepts flat chains of any length:
    each operator deepens the tree, and epcore walks trees recursively (hashing,
    printing, compiling), so it bounds them as it bounds brackets.
    """
    assert parse_expr(" + ".join(["1"] * 201)).evaluate() == 201
    with pytest.raises(ClassAdSyntaxError, match="nested too deeply"):
        parse_uncached(" + ".join(["1"] * 202))
