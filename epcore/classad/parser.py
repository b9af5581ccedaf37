"""ClassAd parser: tokens to AST, with libclassad's grammar and operator precedence.

Precedence, loosest first: ``? :`` (conditional, right-associative), ``||``, ``&&``,
``|``, ``^``, ``&``, equality (``== != =?= =!= is isnt``), relational (``< <= > >=``),
shifts, additive, multiplicative, unary, then selection, subscripts, calls and the
elvis operator ``?:``, which libclassad binds tightest of all.

Nesting is bounded (:data:`MAX_NESTING`), so that hostile input yields a located
:class:`ClassAdSyntaxError` and never a ``RecursionError``, here or in any later consumer of
the tree: evaluation, compilation, printing, hashing and comparing, JSON and old syntax,
match analysis and the job queue all walk it recursively.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from epcore.classad import ast
from epcore.classad.calls import EvalContext
from epcore.classad.fastparse import fast_ad, fast_expression
from epcore.classad.grammar import BINARY_PRECEDENCE, CANONICAL_OPERATORS, UNARY_OPERATORS
from epcore.classad.lexer import (
    END,
    INT,
    KEYWORD,
    NAME,
    OP,
    REAL,
    STRING,
    Lexer,
    Token,
    integer_value,
)
from epcore.classad.timetext import parse_abs_time, parse_rel_time
from epcore.classad.values import ERROR, UNDEFINED, RelTime
from epcore.errors import ClassAdSyntaxError

_KEYWORD_LITERALS: Final[dict[str, ast.LiteralValue]] = {
    "true": True,
    "false": False,
    "undefined": UNDEFINED,
    "error": ERROR,
}

#: The nesting budget of one expression. Each operator, selection, subscript or elvis
#: around an operand spends one level, and so does each operator of a chain (``a || b || c``
#: is a left-deep tree); a bracket (parentheses, call, list, nested ad) spends three. So at
#: most 200 operators or about 66 brackets deep. Every consumer of a tree within the budget
#: needs fewer than :data:`CONSUMER_FRAMES` Python frames, which leaves the rest of Python's
#: default recursion limit (1000) to the caller: a daemon's own stack, a thread, and
#: attribute references evaluated one inside another. libclassad parses about 500 levels
#: but fails to evaluate beyond 400; deeper expressions are refused here when read.
MAX_NESTING: Final = 200
#: The most Python frames any consumer (tests/classad/test_depth.py measures each) needs
#: for an expression within :data:`MAX_NESTING`.
CONSUMER_FRAMES: Final = 500
_BRACKET_COST: Final = 3


class Parser:
    """Recursive-descent (precedence climbing) parser over one text."""

    def __init__(self, text: str, source: str | None = None, *, old_strings: bool = False) -> None:
        self.lexer = Lexer(text, source, old_strings=old_strings)
        self.token = self.lexer.next_token()
        self.depth = 0

    # -- token plumbing -------------------------------------------------------
    def advance(self) -> Token:
        """Consume the current token and return it."""
        token = self.token
        self.token = self.lexer.next_token()
        return token

    def error(self, message: str, token: Token | None = None) -> ClassAdSyntaxError:
        """A syntax error at ``token`` (default: the current token)."""
        at = token or self.token
        return ClassAdSyntaxError(message, at.line, at.column, self.lexer.source)

    def expect(self, op: str) -> Token:
        """Consume the operator ``op`` or fail naming what was found instead."""
        if self.token.kind != OP or self.token.text != op:
            raise self.error(f"expected {op!r} but found {describe(self.token)}")
        return self.advance()

    def at_op(self, op: str) -> bool:
        """Whether the current token is the operator ``op``."""
        return self.token.kind == OP and self.token.text == op

    def enter(self, cost: int) -> None:
        """Spend nesting budget; fail cleanly when input nests too deeply."""
        self.depth += cost
        if self.depth > MAX_NESTING:
            raise self.error(f"expression nested too deeply (the limit is {MAX_NESTING} levels)")

    def leave(self, cost: int) -> None:
        """Give back nesting budget."""
        self.depth -= cost

    # -- grammar ---------------------------------------------------------------
    def parse_whole_expression(self) -> ast.Node:
        """An expression that must span the whole text."""
        node = self.expression()
        if self.token.kind != END:
            raise self.error(f"unexpected {describe(self.token)} after the expression")
        return node

    def expression(self) -> ast.Node:
        """expression := binary [ '?' expression ':' expression ]."""
        condition = self.binary(2)
        if self.at_op("?"):
            self.advance()
            self.enter(1)
            then = self.expression()
            self.expect(":")
            otherwise = self.expression()
            self.leave(1)
            return ast.Ternary(condition, then, otherwise)
        return condition

    def _binary_operator(self) -> str | None:
        token = self.token
        if token.kind == OP and token.text in BINARY_PRECEDENCE:
            return token.text
        if token.kind == KEYWORD and token.text in ("is", "isnt"):
            return token.text
        return None

    def binary(self, min_precedence: int) -> ast.Node:
        """Left-associative binary operators at or above ``min_precedence``."""
        left = self.unary()
        chain = 0
        try:
            while True:
                op = self._binary_operator()
                if op is None:
                    return left
                precedence = BINARY_PRECEDENCE[op]
                if precedence < min_precedence:
                    return left
                self.advance()
                # A chain a + b + c ... is a left-deep tree: each operator adds a level
                # that every later walk of the tree (hashing, printing) recurses through.
                self.enter(1)
                chain += 1
                right = self.binary(precedence + 1)
                left = ast.Binary(CANONICAL_OPERATORS.get(op, op), left, right)
        finally:
            self.leave(chain)

    def unary(self) -> ast.Node:
        """unary := ('+' | '-' | '!' | '~') unary | postfix."""
        token = self.token
        if token.kind == OP and token.text in UNARY_OPERATORS:
            self.advance()
            if token.text == "-":
                literal = self._negative_number(token)
                if literal is not None:
                    return self.postfix(literal)
            self.enter(1)
            operand = self.unary()
            self.leave(1)
            return ast.Unary(token.text, operand)
        return self.postfix(self.primary())

    def postfix(self, node: ast.Node) -> ast.Node:
        """Selections, subscripts and the elvis operator after a primary.

        libclassad binds the elvis operator tighter than any other binary operator
        (``1 + undefined ?: 5`` is ``1 + (undefined ?: 5)``), and its fallback is a
        primary with its own selections and subscripts (``0 ?: a.b`` is ``0 ?: (a.b)``),
        so ``undefined ?: !x`` and ``0 ?: -x`` do not parse; a negative number (``0 ?: -1``)
        does, since its minus sign belongs to the literal.
        """
        node = self.selections(node)
        chain = 0
        try:
            while self.at_op("?:"):
                self.advance()
                # a ?: b ?: c is a left-deep tree, like a chain of binary operators.
                self.enter(1)
                chain += 1
                fallback = self.selections(self._elvis_fallback())
                node = ast.Elvis(node, fallback)
            return node
        finally:
            self.leave(chain)

    def _negative_number(self, minus: Token) -> ast.Literal | None:
        """The literal a minus sign (already consumed) makes with a number written against it.

        libclassad reads such a sign as part of the literal: -9223372036854775808 is a valid
        integer, "- 9223372036854775808" is not. None when no number follows directly.
        """
        number = self.token
        if number.kind not in (INT, REAL) or number.offset != minus.end:
            return None
        self.advance()
        if number.kind == INT:
            return ast.Literal(integer_value("-" + number.text))
        return ast.Literal(-float(number.text))

    def _elvis_fallback(self) -> ast.Node:
        minus = self.token
        if minus.kind == OP and minus.text == "-":
            self.advance()
            literal = self._negative_number(minus)
            if literal is None:
                raise self.error("unexpected '-'", minus)
            return literal
        return self.primary()

    def selections(self, node: ast.Node) -> ast.Node:
        """Selections ``.name`` and subscripts ``[index]`` after a primary."""
        chain = 0
        try:
            while self.at_op(".") or self.at_op("["):
                # Each selection nests the tree one level deeper, like a binary operator.
                self.enter(1)
                chain += 1
                if self.advance().text == ".":
                    name = self.token
                    if name.kind != NAME:
                        raise self.error(
                            f"expected an attribute name after '.' but found {describe(name)}"
                        )
                    self.advance()
                    node = ast.AttrRef(str(name.value), node)
                else:
                    self.enter(_BRACKET_COST)
                    index = self.expression()
                    self.leave(_BRACKET_COST)
                    self.expect("]")
                    node = ast.Subscript(node, index)
            return node
        finally:
            self.leave(chain)

    def primary(self) -> ast.Node:
        """Literals, references, calls, parentheses, lists and nested ads."""
        token = self.token
        kind = token.kind
        if kind in (INT, REAL):
            self.advance()
            number = token.value
            assert isinstance(number, (int, float))
            return ast.Literal(number)
        if kind == STRING:
            self.advance()
            return ast.Literal(str(token.value))
        if kind == KEYWORD and token.text in _KEYWORD_LITERALS:
            self.advance()
            return ast.Literal(_KEYWORD_LITERALS[token.text])
        if kind == NAME:
            self.advance()
            name = str(token.value)
            if self.at_op("(") and not token.text.startswith("'"):
                return self.call(name, token)
            return ast.AttrRef(name)
        if kind == OP:
            text = token.text
            if text == ".":
                self.advance()
                name_token = self.token
                if name_token.kind != NAME:
                    raise self.error(
                        f"expected an attribute name after '.' but found {describe(name_token)}"
                    )
                self.advance()
                return ast.AttrRef(str(name_token.value), None, absolute=True)
            if text == "(":
                self.advance()
                self.enter(_BRACKET_COST)
                inner = self.expression()
                self.leave(_BRACKET_COST)
                self.expect(")")
                return ast.Paren(inner)
            if text == "{":
                return self.list_literal()
            if text == "[":
                return self.ad_literal()
        raise self.error(f"unexpected {describe(token)}")

    def call(self, name: str, token: Token) -> ast.Node:
        """name '(' [expression {',' expression}] ')'.

        ``absTime("...")`` and ``relTime("...")`` with one string literal become time
        literals here, as libclassad makes them, and text that is not a time is a syntax
        error. (libclassad 25.x reads a relTime literal as a real number of seconds.)
        """
        self.expect("(")
        self.enter(_BRACKET_COST)
        args: list[ast.Node] = []
        if not self.at_op(")"):
            args.append(self.expression())
            while self.at_op(","):
                self.advance()
                args.append(self.expression())
        self.leave(_BRACKET_COST)
        self.expect(")")
        lowered = name.lower()
        if lowered in ("abstime", "reltime") and len(args) == 1:
            text = args[0].value if type(args[0]) is ast.Literal else None
            if type(text) is str:
                return self._time_literal(lowered, text, token)
        return ast.Call(name, tuple(args))

    def _time_literal(self, function: str, text: str, token: Token) -> ast.Literal:
        if function == "abstime":
            moment = parse_abs_time(text, EvalContext().local_offset)
            if moment is None:
                raise self.error(f"{text!r} is not an absolute time", token)
            return ast.Literal(moment)
        seconds = parse_rel_time(text)
        if seconds is None:
            raise self.error(f"{text!r} is not a relative time", token)
        return ast.Literal(RelTime(seconds))

    def list_literal(self) -> ast.Node:
        """'{' [expression {',' expression}] '}'."""
        self.expect("{")
        self.enter(_BRACKET_COST)
        items: list[ast.Node] = []
        if not self.at_op("}"):
            items.append(self.expression())
            while self.at_op(","):
                self.advance()
                items.append(self.expression())
        self.leave(_BRACKET_COST)
        self.expect("}")
        return ast.ListExpr(tuple(items))

    def ad_literal(self) -> ast.AdExpr:
        """'[' [attribute {';' [attribute]}] ']'."""
        self.expect("[")
        self.enter(_BRACKET_COST)
        entries = self.attribute_list(closing="]")
        self.leave(_BRACKET_COST)
        self.expect("]")
        return ast.AdExpr(entries)

    def attribute_list(self, closing: str | None) -> tuple[tuple[str, ast.Node], ...]:
        """Assignments separated by one or more ';' up to ``closing`` (or END)."""
        entries: list[tuple[str, ast.Node]] = []
        # libclassad lets separators lead ("[ ;; a = 1 ]") but not stand alone ("[ ; ]").
        leading = self.token
        while self.at_op(";"):
            self.advance()
        if leading is not self.token and self._at_close(closing):
            raise self.error(f"expected an attribute name but found {describe(self.token)}")
        while not self._at_close(closing):
            if entries:
                if not self.at_op(";"):
                    expected = repr(closing) if closing else "end of input"
                    raise self.error(f"expected ';' or {expected} but found {describe(self.token)}")
                while self.at_op(";"):
                    self.advance()
                if self._at_close(closing):
                    break
            entries.append(self.assignment())
        return tuple(entries)

    def _at_close(self, closing: str | None) -> bool:
        if closing is None:
            return self.token.kind == END
        return self.at_op(closing)

    def assignment(self) -> tuple[str, ast.Node]:
        """name '=' expression."""
        name = self.token
        if name.kind != NAME:
            raise self.error(f"expected an attribute name but found {describe(name)}")
        self.advance()
        self.expect("=")
        return (str(name.value), self.expression())


def describe(token: Token) -> str:
    """How an error message names a token."""
    if token.kind == END:
        return "end of input"
    return repr(token.text)


def parse_uncached(
    text: str, source: str | None = None, *, old_strings: bool = False, shared: bool = True
) -> ast.Node:
    """Parse one whole expression (epcore.classad.parsecache keeps the trees of repeated texts).

    ``shared`` false: the tree shares no leaves with others (see fastparse), for a tree
    that is not kept.
    """
    node = fast_expression(text, shared)
    if node is not None:
        return node
    parser = Parser(text, source, old_strings=old_strings)
    try:
        return parser.parse_whole_expression()
    except RecursionError:
        # Only a caller already deep in its own stack gets here: within the budget the
        # parser needs fewer than CONSUMER_FRAMES frames.
        raise parser.error("expression nested too deeply for the stack left") from None


#: Bracket levels that messages put around an ad's attributes: a reply's list of ads, a job
#: ad inside a claim inside a list. An ad that daemons pass on must fit inside them.
MESSAGE_LEVELS: Final = 4
#: How deep an expression of such an ad may nest (the budget less those brackets).
MESSAGE_NESTING: Final = MAX_NESTING - MESSAGE_LEVELS * _BRACKET_COST


def check_nesting(node: ast.Node, reserve: int = MESSAGE_LEVELS) -> None:
    """ClassAdSyntaxError unless ``node`` still parses inside ``reserve`` bracket levels.

    An attribute that fits the budget on its own may not once a message wraps its ad (a
    reply listing jobs): whoever accepts an ad that others will be sent checks it here.
    """
    from epcore.classad.unparse import unparse

    parser = Parser(unparse(node))
    parser.depth = reserve * _BRACKET_COST
    try:
        parser.parse_whole_expression()
    except RecursionError:
        raise parser.error("expression nested too deeply for the stack left") from None


def parse_ad_node(text: str, source: str | None = None) -> ast.AdExpr:
    """Parse one new-syntax ad ``[ ... ]`` spanning the whole text."""
    node = fast_ad(text)
    if node is not None:
        return node
    parser = Parser(text, source)
    # The outermost brackets are free: an attribute of an ad has the budget of an expression.
    parser.depth = -_BRACKET_COST
    try:
        node = parser.ad_literal()
    except RecursionError:
        # Only a caller already deep in its own stack gets here: within the budget the
        # parser needs fewer than CONSUMER_FRAMES frames.
        raise parser.error("expression nested too deeply for the stack left") from None
    if parser.token.kind != END:
        raise parser.error(f"unexpected {describe(parser.token)} after the ClassAd")
    return node


def iter_new_ads(text: str, source: str | None = None) -> Iterator[ast.AdExpr]:
    """Parse consecutive new-syntax ads ``[...] [...]`` until the end of the text."""
    parser = Parser(text, source)
    parser.depth = -_BRACKET_COST  # as in parse_ad_node
    try:
        while parser.token.kind != END:
            yield parser.ad_literal()
    except RecursionError:
        # Only a caller already deep in its own stack gets here: within the budget the
        # parser needs fewer than CONSUMER_FRAMES frames.
        raise parser.error("expression nested too deeply for the stack left") from None
