"""The fast path of the ClassAd parser: the common text, read quickly or not at all.

Ads arrive from the network by the thousand, nearly all of them plain: names, numbers,
strings without escapes, operators, calls, lists and nested ads. This parser reads exactly
that, as :class:`epcore.classad.parser.Parser` would, and gives up (returns None) on
anything else: a comment, a string with an escape, a quoted attribute name, a time literal,
a malformed number, text nested beyond the budget, and every syntax error. The full parser
then reads the text again and decides, so results and error messages cannot differ: the
fast path only ever accepts what the full parser accepts, giving the same tree (the tests
compare the two on generated expressions).

It is fast because :mod:`epcore.classad.scanner` splits the whole text into token strings
first, with no match objects, offsets or token objects, and because one function reads a
whole operand (prefix operators, primary, selections) instead of one per level. The
scanner glues a minus sign to the number written against it, so ``a -1`` gives the tokens
``a`` and ``-1``; where an operator is expected the parser splits it again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from epcore.classad import ast, scanner
from epcore.classad.grammar import BINARY_PRECEDENCE, CANONICAL_OPERATORS, UNARY_OPERATORS
from epcore.classad.lexer import KEYWORDS, integer_value
from epcore.classad.values import ERROR, UNDEFINED

# What a token is, by its first character. A token starting with "-" or "." longer than
# one character is a number; one character long, an operator.
_NAME: Final = 1
_NUMBER: Final = 2
_STRING: Final = 3
_FIRST: Final[dict[str, int]] = {
    **dict.fromkeys("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_", _NAME),
    **dict.fromkeys("0123456789", _NUMBER),
    '"': _STRING,
}

# The binary operators written with symbols: the fast path leaves the keyword ones (is,
# isnt) to the full parser.
_PRECEDENCE: Final[dict[str, int]] = {
    op: precedence for op, precedence in BINARY_PRECEDENCE.items() if not op.isalpha()
}
# Most names are not keywords: the first letter tells most of them apart without lower().
_KEYWORD_INITIALS: Final = frozenset("tTfFuUeEiI")
_POSTFIX: Final = frozenset({".", "[", "?:"})
# The same budget as the full parser's (see parser.MAX_NESTING; kept equal by a test).
_MAX_NESTING: Final = 200
_BRACKET_COST: Final = 3


# attrs' __init__ of a frozen class sets each field through object.__setattr__, which costs
# about as much as the rest of reading a token. The nodes that every text has many of
# (operators, references, literals, parentheses) are made here by filling their slots
# directly: each field and attrs' cached hash (None until the first hash), nothing else,
# so they are the nodes attrs would make (the tests compare both). The interpreter does
# that fastest through each slot's own setter; mypyc turns a written-out object.__setattr__
# into one C call, twice as fast again, so the compiled module takes that branch.
Setter = Callable[[object, object], None]


def _setter(cls: type, slot: str) -> Setter:
    """The slot's own setter, which the frozen class's __setattr__ does not stand in front of."""
    setter: Setter = vars(cls)[slot].__set__
    return setter


_COMPILED: Final = not __file__.endswith(".py")
_new: Final = object.__new__
_BINARY: Final = ast.Binary
_ATTR_REF: Final = ast.AttrRef
_LITERAL: Final = ast.Literal
_PAREN: Final = ast.Paren
_BINARY_OP: Final = _setter(ast.Binary, "op")
_BINARY_LEFT: Final = _setter(ast.Binary, "left")
_BINARY_RIGHT: Final = _setter(ast.Binary, "right")
_BINARY_HASH: Final = _setter(ast.Binary, "_attrs_cached_hash")
_ATTR_NAME: Final = _setter(ast.AttrRef, "name")
_ATTR_SCOPE: Final = _setter(ast.AttrRef, "scope")
_ATTR_ABSOLUTE: Final = _setter(ast.AttrRef, "absolute")
_ATTR_HASH: Final = _setter(ast.AttrRef, "_attrs_cached_hash")
_LITERAL_VALUE: Final = _setter(ast.Literal, "value")
_PAREN_INNER: Final = _setter(ast.Paren, "inner")
_PAREN_HASH: Final = _setter(ast.Paren, "_attrs_cached_hash")


def _binary(op: str, left: ast.Node, right: ast.Node) -> ast.Binary:
    node = _new(_BINARY)
    if _COMPILED:
        object.__setattr__(node, "op", op)
        object.__setattr__(node, "left", left)
        object.__setattr__(node, "right", right)
        object.__setattr__(node, "_attrs_cached_hash", None)
    else:
        _BINARY_OP(node, op)
        _BINARY_LEFT(node, left)
        _BINARY_RIGHT(node, right)
        _BINARY_HASH(node, None)
    return node


def _reference(name: str, scope: ast.Node | None) -> ast.AttrRef:
    node = _new(_ATTR_REF)
    if _COMPILED:
        object.__setattr__(node, "name", name)
        object.__setattr__(node, "scope", scope)
        object.__setattr__(node, "absolute", False)
        object.__setattr__(node, "_attrs_cached_hash", None)
    else:
        _ATTR_NAME(node, name)
        _ATTR_SCOPE(node, scope)
        _ATTR_ABSOLUTE(node, False)
        _ATTR_HASH(node, None)
    return node


def _literal(value: ast.LiteralValue) -> ast.Literal:
    node = _new(_LITERAL)
    if _COMPILED:
        object.__setattr__(node, "value", value)
    else:
        _LITERAL_VALUE(node, value)
    return node


def _paren(inner: ast.Node) -> ast.Paren:
    node = _new(_PAREN)
    if _COMPILED:
        object.__setattr__(node, "inner", inner)
        object.__setattr__(node, "_attrs_cached_hash", None)
    else:
        _PAREN_INNER(node, inner)
        _PAREN_HASH(node, None)
    return node


# The leaves of trees (names, numbers and strings) by their token: the same text is the
# same immutable node, so a tree shares the references and literals of earlier ones (ads
# repeat TARGET, Memory, "LINUX" and small numbers by the thousand) instead of allocating
# them again for the garbage collector to follow while the parse cache keeps the tree.
# Emptied when full, so that it holds the names in use now. Only trees that are kept share:
# a tree its caller frees at once (a text seen for the first time, which the parse cache
# does not keep) makes its own leaves, so that they go with it; leaves the table kept alive
# after their tree would count as new objects toward the collector's next pass.
_LEAVES: Final[dict[str, ast.Node]] = {}
_MAX_LEAVES: Final = 4096


def _new_leaf(token: str) -> ast.Node:
    """The reference, number or string literal that ``token`` (not a keyword) reads as."""
    first = token[0]
    if first == '"':
        return _literal(token[1:-1])
    if _FIRST.get(first) == _NAME:
        return _reference(token, None)
    return _literal(_number(token))


def _shared_leaf(token: str) -> ast.Node:
    """The leaf of ``token`` as :func:`_new_leaf` makes it, the same node as last time."""
    node = _LEAVES.get(token)
    if node is None:
        node = _new_leaf(token)
        if len(_LEAVES) >= _MAX_LEAVES:
            _LEAVES.clear()
        _LEAVES[token] = node
    return node


class _GiveUp(Exception):
    """The fast path does not read this text; the full parser will."""


class _Reader:
    """Precedence climbing over the token strings of one text."""

    def __init__(self, tokens: list[str], depth: int, shared: bool) -> None:
        self.tokens = tokens
        self.at = 0
        self.depth = depth
        self.shared = shared

    def leaf(self, token: str) -> ast.Node:
        if self.shared:
            return _shared_leaf(token)
        return _new_leaf(token)

    def expect(self, token: str) -> None:
        if self.tokens[self.at] != token:
            raise _GiveUp
        self.at += 1

    def enter(self, cost: int) -> None:
        self.depth += cost
        if self.depth > _MAX_NESTING:
            raise _GiveUp

    def expression(self) -> ast.Node:
        condition = self.binary(2)
        if self.tokens[self.at] != "?":
            return condition
        self.at += 1
        self.enter(1)
        then = self.expression()
        self.expect(":")
        otherwise = self.expression()
        self.depth -= 1
        return ast.Ternary(condition, then, otherwise)

    def binary(self, least: int) -> ast.Node:
        left = self.operand()
        tokens = self.tokens
        chain = 0
        while True:
            token = tokens[self.at]
            precedence = _PRECEDENCE.get(token)
            if precedence is not None:
                if precedence < least:
                    break
                self.at += 1
                op = CANONICAL_OPERATORS.get(token, token)
            elif token[0] == "-":
                # A minus glued to the number after it: here it is the binary operator.
                if least > 10:
                    break
                tokens[self.at] = token[1:]
                op = "-"
                precedence = 10
            else:
                op = token.lower()
                if op != "is" and op != "isnt":
                    break
                if least > 7:
                    break
                self.at += 1
                precedence = 7
            self.enter(1)
            chain += 1
            left = _binary(op, left, self.binary(precedence + 1))
        self.depth -= chain
        return left

    def operand(self) -> ast.Node:
        """Prefix operators, a primary, then its selections, subscripts and elvis operators."""
        tokens = self.tokens
        at = self.at
        token = tokens[at]
        kind = _FIRST.get(token[0])
        node: ast.Node
        if kind == _NAME:
            self.at = at + 1
            if token[0] in _KEYWORD_INITIALS and token.lower() in KEYWORDS:
                node = _literal(_keyword(token.lower()))
            elif tokens[at + 1] == "(":
                node = self.call(token)
            else:
                node = self.leaf(token)
        elif kind in (_STRING, _NUMBER) or (len(token) > 1 and token[0] in "-."):
            self.at = at + 1
            node = self.leaf(token)
        elif token in UNARY_OPERATORS:
            self.at = at + 1
            self.enter(1)
            inner = self.operand()
            self.depth -= 1
            return ast.Unary(token, inner)
        else:
            node = self.bracketed(token)
        if tokens[self.at] in _POSTFIX:
            return self.postfix(node)
        return node

    def bracketed(self, token: str) -> ast.Node:
        """An absolute reference, parentheses, a list or a nested ad."""
        if token == "(":
            self.at += 1
            self.enter(_BRACKET_COST)
            inner = self.expression()
            self.depth -= _BRACKET_COST
            self.expect(")")
            return _paren(inner)
        if token == ".":
            self.at += 1
            name = self.name()
            return ast.AttrRef(name, None, absolute=True)
        if token == "{":
            self.at += 1
            self.enter(_BRACKET_COST)
            items = self.items("}")
            self.depth -= _BRACKET_COST
            self.expect("}")
            return ast.ListExpr(items)
        if token == "[":
            return self.ad()
        raise _GiveUp

    def name(self) -> str:
        """An attribute name (not a keyword)."""
        token = self.tokens[self.at]
        if _FIRST.get(token[0]) != _NAME or token.lower() in KEYWORDS:
            raise _GiveUp
        self.at += 1
        return token

    def postfix(self, node: ast.Node) -> ast.Node:
        node = self.selections(node)
        chain = 0
        while self.tokens[self.at] == "?:":
            self.at += 1
            self.enter(1)
            chain += 1
            token = self.tokens[self.at]
            if token[0] == "-" and len(token) > 1:
                self.at += 1
                fallback: ast.Node = _literal(_number(token))
            elif token == "-":
                raise _GiveUp
            else:
                # A primary: no prefix operator, and postfix operators only after it.
                fallback = self.primary()
            node = ast.Elvis(node, self.selections(fallback))
        self.depth -= chain
        return node

    def primary(self) -> ast.Node:
        tokens = self.tokens
        token = tokens[self.at]
        if token in UNARY_OPERATORS:
            raise _GiveUp
        kind = _FIRST.get(token[0])
        if kind == _NAME:
            self.at += 1
            if token[0] in _KEYWORD_INITIALS and token.lower() in KEYWORDS:
                return _literal(_keyword(token.lower()))
            if tokens[self.at] == "(":
                return self.call(token)
            return self.leaf(token)
        if kind in (_STRING, _NUMBER) or (len(token) > 1 and token[0] == "."):
            self.at += 1
            return self.leaf(token)
        return self.bracketed(token)

    def selections(self, node: ast.Node) -> ast.Node:
        tokens = self.tokens
        chain = 0
        while True:
            token = tokens[self.at]
            if token == ".":
                self.enter(1)
                chain += 1
                self.at += 1
                node = _reference(self.name(), node)
            elif token == "[":
                self.enter(1)
                chain += 1
                self.at += 1
                self.enter(_BRACKET_COST)
                index = self.expression()
                self.depth -= _BRACKET_COST
                self.expect("]")
                node = ast.Subscript(node, index)
            else:
                break
        self.depth -= chain
        return node

    def call(self, name: str) -> ast.Node:
        self.at += 1  # the "(" after the name
        self.enter(_BRACKET_COST)
        args = self.items(")")
        self.depth -= _BRACKET_COST
        self.expect(")")
        lowered = name.lower()
        if (lowered == "abstime" or lowered == "reltime") and len(args) == 1:
            arg = args[0]
            if type(arg) is ast.Literal and type(arg.value) is str:
                raise _GiveUp  # a time literal: the full parser reads and checks the text
        return ast.Call(name, args)

    def items(self, closing: str) -> tuple[ast.Node, ...]:
        """Expressions separated by commas up to ``closing`` (not consumed)."""
        tokens = self.tokens
        if tokens[self.at] == closing:
            return ()
        items = [self.expression()]
        while tokens[self.at] == ",":
            self.at += 1
            items.append(self.expression())
        return tuple(items)

    def ad(self) -> ast.AdExpr:
        """'[' [name '=' expression {';' [name '=' expression]}] ']'."""
        tokens = self.tokens
        self.at += 1  # the "["
        self.enter(_BRACKET_COST)
        entries: list[tuple[str, ast.Node]] = []
        leading = self.at
        while tokens[self.at] == ";":
            self.at += 1
        if tokens[self.at] == "]":
            if self.at != leading:
                raise _GiveUp  # separators alone: "[ ; ]"
        else:
            while True:
                name = self.name()
                self.expect("=")
                entries.append((name, self.expression()))
                if tokens[self.at] != ";":
                    break
                while tokens[self.at] == ";":
                    self.at += 1
                if tokens[self.at] == "]":
                    break
        self.depth -= _BRACKET_COST
        self.expect("]")
        return ast.AdExpr(tuple(entries))


def _keyword(lowered: str) -> ast.LiteralValue:
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    if lowered == "undefined":
        return UNDEFINED
    if lowered == "error":
        return ERROR
    raise _GiveUp  # "is" or "isnt" where an operand belongs


def _number(token: str) -> int | float:
    if "." in token or "e" in token or "E" in token:
        return float(token)
    digits = token[1:] if token[0] == "-" else token
    if digits[0] == "0" and len(digits) > 1:
        raise _GiveUp  # a leading zero: the full parser says why that is an error
    if len(token) < 19:
        return int(token)
    return integer_value(token)


def fast_expression(text: str, shared: bool = True) -> ast.Node | None:
    """The tree of ``text`` as one whole expression, or None when the full parser must read it.

    With ``shared`` false the tree's leaves are its own (for a tree that is not kept).
    """
    tokens = scanner.tokens(text)
    if tokens is None:
        return None
    reader = _Reader(tokens, 0, shared)
    try:
        node = reader.expression()
    except (_GiveUp, RecursionError):
        return None
    if reader.at != len(tokens) - 1:
        return None
    return node


def fast_ad(text: str) -> ast.AdExpr | None:
    """The tree of ``text`` as one whole new-syntax ad, or None as for :func:`fast_expression`."""
    tokens = scanner.tokens(text)
    if tokens is None or tokens[0] != "[":
        return None
    # The outermost brackets are free, as in parser.parse_ad_node.
    reader = _Reader(tokens, -_BRACKET_COST, True)
    try:
        node = reader.ad()
    except (_GiveUp, RecursionError):
        return None
    if reader.at != len(tokens) - 1:
        return None
    return node
