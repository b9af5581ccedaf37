"""ClassAd lexer: text to tokens, each with its 1-based line and column.

Numbers follow libclassad's reading of them: a leading ``0`` starts an octal-looking
token and ``0x`` a hex-looking one, but the value is read in base 10 up to the first
non-digit (so ``017`` is 17 and ``0x1F`` is 0), and an integer outside the signed
64-bit range reads as 0. Strings are byte strings in libclassad; epcore keeps them as
Python ``str`` decoded from UTF-8 with ``surrogateescape`` so that any byte survives a
round trip.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

import attrs

from epcore.classad.values import INT64_MAX, INT64_MIN
from epcore.errors import ClassAdSyntaxError

# Token kinds
INT: Final = "INT"
REAL: Final = "REAL"
STRING: Final = "STRING"
NAME: Final = "NAME"  # identifier or quoted attribute name
OP: Final = "OP"  # operators and punctuation
KEYWORD: Final = "KEYWORD"  # true false undefined error is isnt (lower-cased in .text)
END: Final = "END"

KEYWORDS: Final = frozenset({"true", "false", "undefined", "error", "is", "isnt"})

# Longest first, so that maximal munch is a simple scan of this tuple.
_OPERATORS: Final = (
    "=?=",
    "=!=",
    ">>>",
    "<<",
    ">>",
    "<=",
    ">=",
    "==",
    "!=",
    "&&",
    "||",
    "?:",
    "+",
    "-",
    "*",
    "/",
    "%",
    "<",
    ">",
    "!",
    "~",
    "&",
    "|",
    "^",
    "?",
    ":",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ".",
    "=",
)
_OPERATOR_STARTS: Final = frozenset(op[0] for op in _OPERATORS)

_IDENT_START: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_IDENT_CHARS: Final = _IDENT_START | frozenset("0123456789")
_DIGITS: Final = frozenset("0123456789")
_SIMPLE_ESCAPES: Final = {
    "n": 0x0A,
    "t": 0x09,
    "r": 0x0D,
    "b": 0x08,
    "f": 0x0C,
    "a": 0x07,
    "v": 0x0B,
}
_LEADING_DIGITS: Final = re.compile(r"[+-]?[0-9]*")


@attrs.frozen(slots=True)
class Token:
    """One lexical token; ``text`` is the source text (keywords lower-cased)."""

    kind: str
    text: str
    value: object
    line: int
    column: int
    offset: int
    end: int


def integer_value(text: str) -> int:
    """The value libclassad gives an integer token: base-10 prefix, 0 when out of range."""
    digits = _LEADING_DIGITS.match(text)
    prefix = digits.group(0) if digits else ""
    if prefix in ("", "+", "-"):
        return 0
    value = int(prefix, 10)
    if value < INT64_MIN or value > INT64_MAX:
        return 0
    return value


class Lexer:
    """Splits ClassAd text into tokens on demand."""

    def __init__(self, text: str, source: str | None = None, *, old_strings: bool = False) -> None:
        self.text = text
        self.source = source
        # Old ClassAd syntax: a backslash escapes only a double quote, and is kept otherwise.
        self.old_strings = old_strings
        self.pos = 0
        self.line = 1
        self.line_start = 0

    def error(self, message: str, offset: int | None = None) -> ClassAdSyntaxError:
        """A syntax error located at ``offset`` (default: the current position)."""
        at = self.pos if offset is None else offset
        line = self.text.count("\n", 0, at) + 1
        column = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return ClassAdSyntaxError(message, line, column, self.source)

    def tokens(self) -> Iterator[Token]:
        """Every token of the text, ending with one END token."""
        while True:
            token = self.next_token()
            yield token
            if token.kind == END:
                return

    def _skip_space_and_comments(self) -> None:
        text = self.text
        length = len(text)
        while self.pos < length:
            char = text[self.pos]
            if char in " \t\r\n\f\v":
                self.pos += 1
            elif text.startswith("/*", self.pos):
                close = text.find("*/", self.pos + 2)
                if close < 0:
                    raise self.error("unterminated /* comment")
                self.pos = close + 2
            elif text.startswith("//", self.pos):
                # libclassad's new-syntax lexer ends a // comment at the end of the line,
                # and everything after it on that line is ignored.
                newline = text.find("\n", self.pos)
                self.pos = length if newline < 0 else newline + 1
            else:
                return

    def _make(self, kind: str, text: str, value: object, start: int) -> Token:
        line = self.text.count("\n", 0, start) + 1
        column = start - (self.text.rfind("\n", 0, start) + 1) + 1
        return Token(kind, text, value, line, column, start, self.pos)

    def next_token(self) -> Token:
        """Scan and return the next token."""
        self._skip_space_and_comments()
        text = self.text
        start = self.pos
        if start >= len(text):
            return self._make(END, "", None, start)
        char = text[start]
        if char in _DIGITS or (
            char == "." and start + 1 < len(text) and text[start + 1] in _DIGITS
        ):
            return self._number(start)
        if char in _IDENT_START:
            end = start + 1
            while end < len(text) and text[end] in _IDENT_CHARS:
                end += 1
            word = text[start:end]
            self.pos = end
            lowered = word.lower()
            if lowered in KEYWORDS:
                return self._make(KEYWORD, lowered, None, start)
            return self._make(NAME, word, word, start)
        if char == '"':
            value = self._quoted('"', "string")
            return self._make(STRING, text[start : self.pos], value, start)
        if char == "'":
            name = self._quoted("'", "quoted attribute name")
            return self._make(NAME, text[start : self.pos], name, start)
        if char in _OPERATOR_STARTS:
            for op in _OPERATORS:
                if text.startswith(op, start):
                    self.pos = start + len(op)
                    return self._make(OP, op, None, start)
        raise self.error(f"unexpected character {char!r}")

    def _number(self, start: int) -> Token:
        text = self.text
        length = len(text)
        pos = start
        is_real = False
        if text[pos] == "0" and pos + 1 < length and text[pos + 1] in "xX":
            pos += 2
            hex_start = pos
            while pos < length and text[pos] in "0123456789abcdefABCDEF":
                pos += 1
            if pos == hex_start:
                self.pos = pos
                raise self.error("hexadecimal number without digits", start)
        elif text[pos] == "0" and pos + 1 < length and text[pos + 1] in _DIGITS:
            while pos < length and text[pos] in "01234567":
                pos += 1
        else:
            while pos < length and text[pos] in _DIGITS:
                pos += 1
            if pos < length and text[pos] == ".":
                is_real = True
                pos += 1
                fraction_start = pos
                while pos < length and text[pos] in _DIGITS:
                    pos += 1
                if pos == fraction_start:
                    self.pos = pos
                    raise self.error("digits expected after the decimal point", start)
            if pos < length and text[pos] in "eE":
                is_real = True
                pos += 1
                if pos < length and text[pos] in "+-":
                    pos += 1
                exponent_start = pos
                while pos < length and text[pos] in _DIGITS:
                    pos += 1
                if pos == exponent_start:
                    self.pos = pos
                    raise self.error("digits expected in the exponent", start)
        if pos < length and (text[pos] in _IDENT_CHARS or text[pos] == "."):
            self.pos = pos
            raise self.error(f"malformed number {text[start : pos + 1]!r}", start)
        self.pos = pos
        literal = text[start:pos]
        if is_real:
            return self._make(REAL, literal, float(literal), start)
        return self._make(INT, literal, integer_value(literal), start)

    def _quoted(self, quote: str, what: str) -> str:
        text = self.text
        length = len(text)
        start = self.pos
        pos = start + 1
        out = bytearray()
        while True:
            if pos >= length:
                self.pos = pos
                raise self.error(f"unterminated {what}", start)
            char = text[pos]
            if char == quote:
                pos += 1
                break
            if char == "\\" and self.old_strings and quote == '"':
                if pos + 1 < length and text[pos + 1] == '"':
                    out.append(0x22)
                    pos += 2
                else:
                    out.append(0x5C)
                    pos += 1
                continue
            if char == "\\":
                pos += 1
                if pos >= length:
                    self.pos = pos
                    raise self.error(f"unterminated {what}", start)
                escape = text[pos]
                if escape in "01234567":
                    # One to three octal digits; a first digit above 3 allows only two,
                    # so that the value fits in a byte.
                    limit = 3 if escape in "0123" else 2
                    digits_end = pos
                    while (
                        digits_end < length
                        and digits_end - pos < limit
                        and (text[digits_end] in "01234567")
                    ):
                        digits_end += 1
                    byte = int(text[pos:digits_end], 8)
                    if byte == 0:
                        self.pos = pos
                        raise self.error(f"NUL character in {what}", pos - 1)
                    out.append(byte)
                    pos = digits_end
                    continue
                simple = _SIMPLE_ESCAPES.get(escape)
                if simple is not None:
                    out.append(simple)
                else:
                    out += escape.encode("utf-8", "surrogateescape")
                pos += 1
                continue
            out += char.encode("utf-8", "surrogateescape")
            pos += 1
        self.pos = pos
        return out.decode("utf-8", "surrogateescape")
