"""``if`` / ``elif`` / ``else`` / ``endif``: the conditions and the nesting of blocks.

A condition is expanded first (when it contains ``$``); an expansion to nothing is false. What
is left must be one of: a number (true when not zero), ``true`` / ``false`` (and, as single
words, ``yes`` / ``no`` / ``t`` / ``f``), ``version <op> X.Y[.Z]``, ``defined NAME``,
``defined <number or bool>``, ``defined use CATEGORY[:TEMPLATE]``, each optionally preceded by
``!``. Anything else (``$(A) == $(B)``, a bare word) is an error, as in HTCondor.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs

#: The HTCondor version whose configuration language epcore reads; ``if version >= X`` compares
#: against it. It is the version of the reference implementation the tests compare with.
HTCONDOR_VERSION = (25, 14, 1)

_SPACE = 0x01
_DIGIT = 0x02
_ALPHA = 0x04
_IDENT = 0x08
_CMP = 0x10
_SUM = 0x20
_LOGIC = 0x40
_GROUP = 0x80
_MONEY = 0x100
_COLON = 0x200
_OTHER = 0x400
_FLOAT = 0x1000
_MACRO = 0x2000

_WS = " \t\n\r\f\v"


class ConditionError(Exception):
    """A condition HTCondor cannot evaluate; the message says why."""


def _matches_word(text: str, word: str, alone: bool = True) -> bool:
    text = text.lstrip(_WS)
    if text[: len(word)].lower() != word:
        return False
    rest = text[len(word) :]
    if alone:
        return not rest.strip(_WS)
    return not (rest[:1].isascii() and rest[:1].isalnum())


_QUICK_BOOL = re.compile(r"[ \t\n\r\f\v]*(?:true|false)[ \t\n\r\f\v]*", re.IGNORECASE)
_QUICK_NUMBER = re.compile(r"[ \t\n\r\f\v]*-?[0-9]+[ \t\n\r\f\v]*")
_QUICK_DEFINED = re.compile(r"[ \t\n\r\f\v]*defined[ \t]+[A-Za-z_][A-Za-z0-9_]*[ \t]*", re.I)


def _classify(expr: str, keywords: bool) -> str:
    """Sort a condition into HTCondor's kinds: empty, number, bool, identifier, version, ..."""
    # The common shapes, decided without the character-by-character survey below.
    if _QUICK_BOOL.fullmatch(expr):
        return "bool"
    if _QUICK_NUMBER.fullmatch(expr):
        return "number"
    if keywords and _QUICK_DEFINED.fullmatch(expr):
        return "defined"
    p = expr.lstrip(_WS)
    if not p:
        return "empty"
    begin = p
    i = 1 if p[0] == "-" else 0
    bits = 0
    n = len(p)
    while i < n:
        ch = p[i]
        nxt = p[i + 1] if i + 1 < n else ""
        i += 1
        if "0" <= ch <= "9":
            bits |= _DIGIT
        elif ch == ".":
            bits |= _FLOAT if bits == _DIGIT or not nxt or "0" <= nxt <= "9" else _IDENT
        elif ch in "eE":
            bits |= _FLOAT if bits & ~_FLOAT == _DIGIT else _ALPHA
        elif ch in "+-":
            if bits != _DIGIT | _FLOAT:
                bits |= _SUM
        elif ch.isascii() and ch.isalpha():
            bits |= _ALPHA
        elif ch in "_/":
            bits |= _IDENT
        elif ch in "<=>" or (ch == "!" and nxt == "="):
            bits |= _CMP
        elif ch == "$":
            bits |= _MONEY | (_MACRO if nxt == "(" else 0)
        elif ch in _WS:
            if nxt and nxt not in _WS:
                bits |= _SPACE
        elif ch in "&|":
            bits |= _LOGIC
        elif ch in "{|}()[]":
            bits |= _GROUP
        elif ch == ":":
            bits |= _COLON
        else:
            bits |= _OTHER
    if bits == 0:
        return "empty"
    if bits in (_DIGIT, _DIGIT | _FLOAT):
        return "number"
    if bits == _ALPHA:
        if _matches_word(expr, "false") or _matches_word(expr, "true"):
            return "bool"
        if keywords and (_matches_word(begin, "version") or _matches_word(begin, "defined")):
            return "version" if _matches_word(begin, "version") else "defined"
    if bits in (
        _ALPHA,
        _ALPHA | _DIGIT,
        _ALPHA | _DIGIT | _FLOAT,
        _ALPHA | _IDENT,
        _ALPHA | _IDENT | _DIGIT,
        _ALPHA | _IDENT | _DIGIT | _FLOAT,
    ):
        return "identifier"
    if bits in (_ALPHA | _SPACE | _CMP | _DIGIT, _ALPHA | _SPACE | _CMP | _DIGIT | _FLOAT):
        if keywords and _matches_word(begin, "version", alone=False):
            return "version"
        return "complex"
    defined_sets = {
        _ALPHA | _SPACE,
        _ALPHA | _SPACE | _COLON,
        _ALPHA | _SPACE | _IDENT,
        _ALPHA | _SPACE | _IDENT | _COLON,
        _ALPHA | _SPACE | _DIGIT,
        _ALPHA | _SPACE | _DIGIT | _IDENT,
        _ALPHA | _SPACE | _DIGIT | _FLOAT,
        _ALPHA | _SPACE | _DIGIT | _IDENT | _FLOAT,
    }
    if bits in defined_sets:
        if keywords and _matches_word(begin, "defined", alone=False):
            return "defined"
        return "complex"
    allowed = _MONEY | _IDENT | _ALPHA | _DIGIT | _MACRO | _COLON
    if bits & _MACRO and not bits & ~allowed:
        return "macro"
    return "complex"


def _atof(text: str) -> float:
    match = re.match(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text)
    return float(match.group(0)) if match else 0.0


def _crufty(text: str) -> bool | None:
    if _matches_word(text, "yes") or _matches_word(text, "t"):
        return True
    if _matches_word(text, "no") or _matches_word(text, "f"):
        return False
    return None


def _version(expr: str) -> bool:
    rest = expr.lstrip(_WS)[7:].lstrip(_WS)
    negated = rest.startswith("!")
    if negated:
        rest = rest[1:]
    op = 0
    or_equal = False
    if rest[:1] in ("<", "=", ">"):
        op = "<=>".index(rest[0]) - 1
        rest = rest[1:]
    if rest[:1] == "=":
        or_equal = True
        rest = rest[1:]
    rest = rest.lstrip(_WS)
    if rest[:1] in ("v", "V"):
        rest = rest[1:]
    match = re.match(r"([+-]?\d+)\.([+-]?\d+)(?:\.([+-]?\d+))?", rest)
    if not match or int(match.group(1)) < 6:
        raise ConditionError("the version literal is invalid")
    major, minor = int(match.group(1)), int(match.group(2))
    sub = int(match.group(3)) if match.group(3) is not None else HTCONDOR_VERSION[2]
    ours = HTCONDOR_VERSION
    theirs = (major, minor, sub)
    difference = (ours > theirs) - (ours < theirs)
    result = difference == op or (or_equal and difference == 0)
    return not result if negated else result


@attrs.frozen
class ConditionScope:
    """What a condition may consult: expansion, knob lookup and the template catalogue."""

    expand: Callable[[str], str]
    lookup: Callable[[str], str | None]
    has_template: Callable[[str, str | None], bool]


def _defined(expr: str, scope: ConditionScope) -> bool:
    rest = expr.lstrip(_WS)[7:].lstrip(_WS)
    if not rest:
        return False
    kind = _classify(rest, False)
    if kind == "identifier":
        value = scope.lookup(rest.strip(_WS))
        if value is None and _crufty(rest) is not None:
            return True
        return bool(value)
    if kind in ("number", "bool"):
        return True
    if rest[:4].lower() == "use " or rest[:4].lower() == "use\t":
        target = rest[4:].lstrip(_WS)
        category, _, name = target.partition(":")
        found = scope.has_template(category, name or None)
        if any(ch in target for ch in " \t\r"):
            raise ConditionError("defined use meta argument with internal spaces will never match")
        return found
    raise ConditionError("defined argument must be param name, boolean, or number")


def evaluate_condition(text: str, scope: ConditionScope) -> bool:
    """The truth of an ``if``/``elif`` condition; ConditionError when it is not one."""
    expr = text
    expanded = "$" in expr
    if expanded:
        expr = scope.expand(expr).rstrip(_WS)
    expr = expr.lstrip(_WS)
    inverted = expr.startswith("!")
    if inverted:
        expr = expr[1:].lstrip(_WS)
    value = False if expanded and not expr else _evaluate(expr, scope)
    return not value if inverted else value


def _evaluate(expr: str, scope: ConditionScope) -> bool:
    kind = _classify(expr, True)
    if kind == "number":
        return _atof(expr) != 0
    if kind == "bool":
        return _matches_word(expr, "true")
    if kind == "identifier":
        crufty = _crufty(expr)
        if crufty is not None:
            return crufty
    if kind == "version":
        return _version(expr)
    if kind == "defined":
        return _defined(expr, scope)
    if kind == "complex":
        raise ConditionError("complex conditionals are not supported")
    if kind == "empty":
        return False
    raise ConditionError("expression is not a conditional")


@attrs.define
class IfStack:
    """The state of nested ``if`` blocks, with HTCondor's limit of 63 levels."""

    # One entry per open block: [this branch is on, some branch was on, an else was seen].
    frames: list[list[bool]] = attrs.field(factory=list)

    def enabled(self) -> bool:
        """True when every enclosing branch is the one being read."""
        return all(frame[0] for frame in self.frames)

    def outer_enabled(self) -> bool:
        """True when every block around the innermost one is being read."""
        return all(frame[0] for frame in self.frames[:-1])

    def inside_if(self) -> bool:
        """True inside at least one block."""
        return bool(self.frames)

    def begin_if(self, value: bool) -> None:
        """Open a block whose first branch is ``value``."""
        if len(self.frames) >= 63:
            raise ConditionError("if nesting too deep!")
        self.frames.append([value, value, False])

    def begin_elif(self, value: bool) -> None:
        """Switch to an ``elif`` branch (``value`` is only used if no branch was on yet)."""
        if not self.frames:
            raise ConditionError("elif without matching if")
        frame = self.frames[-1]
        if frame[2]:
            raise ConditionError("elif is not allowed after else")
        on = value and not frame[1]
        frame[0] = on
        frame[1] = frame[1] or on

    def elif_needs_value(self) -> bool:
        """True when an ``elif`` here must evaluate its condition."""
        return bool(self.frames) and not self.frames[-1][1] and self.outer_enabled()

    def begin_else(self) -> None:
        """Switch to the ``else`` branch."""
        if not self.frames:
            raise ConditionError("else without matching if")
        frame = self.frames[-1]
        if frame[2]:
            raise ConditionError("else is not allowed after else")
        frame[0] = not frame[1]
        frame[2] = True

    def end_if(self) -> None:
        """Close the innermost block."""
        if not self.frames:
            raise ConditionError("endif without matching if")
        self.frames.pop()
