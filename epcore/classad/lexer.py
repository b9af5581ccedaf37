"""ClassAd lexer: text to tokens, each with its 1-based line and column.

Numbers follow HTCondor's reading of them once its configuration layer is loaded, as in
every daemon: an integer written with a leading zero (``017``) or in hex (``0x1F``) is a
syntax error, and an integer outside the signed 64-bit range reads as 0. (Bare libclassad,
without HTCondor's layer, reads such tokens as base-10 prefixes, ``017`` as 17 and ``0x1F``
as 0; admins' expressions run in daemons, so epcore follows the daemons.)

Strings are byte strings in libclassad; epcore keeps them as Python ``str`` decoded from
UTF-8 with ``surrogateescape`` so that any byte survives a round trip.
"""

from __future__ import annotations

import re
from typing import Final

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


class Token:
    """One lexical token; ``text`` is the source text (keywords lower-cased).

    Tokens are internal and short-lived, so this is a plain slotted class rather than
    an attrs value: the lexer makes one per token and parsing speed depends on it.
    """

    __slots__ = ("end", "kind", "lexer", "offset", "text", "value")

    def __init__(
        self, kind: str, text: str, value: object, offset: int, end: int, lexer: Lexer
    ) -> None:
        self.kind = kind
        self.text = text
        self.value = value
        self.offset = offset
        self.end = end
        self.lexer = lexer

    @property
    def line(self) -> int:
        """1-based line of the token's first character."""
        return self.lexer.text.count("\n", 0, self.offset) + 1

    @property
    def column(self) -> int:
        """1-based column of the token's first character."""
        return self.offset - (self.lexer.text.rfind("\n", 0, self.offset) + 1) + 1

    def __repr__(self) -> str:
        return f"Token({self.kind}, {self.text!r}, {self.value!r}, offset={self.offset})"


# One match per token: optional blanks and comments, then the token itself. Text the
# scanner does not match (strings with escapes, malformed numbers, junk) goes the slow way.
_SCANNER: Final = re.compile(
    r"""
    (?:[ \t\r\n\f\v]+|/\*.*?\*/|//[^\n]*(?:\n|\Z))*
    (?:
      (?P<real>(?:[0-9]+\.[0-9]+|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
    | (?P<int>0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<string>"[^"\\\x00]*")
    | (?P<op>=\?=|=!=|>>>|<<|>>|<=|>=|==|!=|&&|\|\||\?:|[-+*/%<>!~&|^?:()\[\]{},;.=])
    | (?P<end>\Z)
    )?
    """,
    re.VERBOSE | re.DOTALL,
)


def integer_value(text: str) -> int:
    """The value libclassad gives an integer token: base-10 prefix, 0 when out of range."""
    digits = _LEADING_DIGITS.match(text)
    prefix = digits.group(0) if digits else ""
    if prefix in ("", "+", "-"):
        return 0
    if len(prefix.lstrip("+-").lstrip("0")) > len(str(INT64_MAX)):
        return 0  # out of range; and int() refuses more than 4300 digits with a ValueError
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

    def next_token(self) -> Token:
        """Scan and return the next token."""
        text = self.text
        match = _SCANNER.match(text, self.pos)
        assert match is not None  # every part of the pattern is optional
        group = match.lastgroup
        if group is None:
            # Blanks (maybe none) and then something the fast path leaves alone.
            pos = self.pos = match.end()
            return self._irregular(pos)
        pos = match.start(group)
        end = match.end()
        if group == "op":
            self.pos = end
            word = match.group(group)
            if word == "/" and text.startswith("/*", pos):
                raise self.error("unterminated /* comment", pos)
            return Token(OP, word, None, pos, end, self)
        if group == "name":
            self.pos = end
            word = match.group(group)
            lowered = word.lower()
            if lowered in KEYWORDS:
                return Token(KEYWORD, lowered, None, pos, end, self)
            return Token(NAME, word, word, pos, end, self)
        if group == "end":
            self.pos = end
            return Token(END, "", None, pos, pos, self)
        word = match.group(group)
        if group == "string":
            self.pos = end
            return Token(STRING, word, word[1:-1], pos, end, self)
        # A real may be followed by a selection (1.5.x, as libclassad reads it); an integer
        # may not (libclassad reads "5." as the start of a real and fails).
        if end < len(text) and (
            text[end] in _IDENT_CHARS or (text[end] == "." and group != "real")
        ):
            self.pos = end
            raise self.error(f"malformed number {text[pos : end + 1]!r}", pos)
        if group == "int" and len(word) > 1 and word[0] == "0":
            self.pos = end
            raise self.error(
                f"integer {word!r} has a leading zero (octal and hex are not ClassAd syntax)", pos
            )
        self.pos = end
        if group == "real":
            return Token(REAL, word, float(word), pos, end, self)
        return Token(INT, word, integer_value(word), pos, end, self)

    def _irregular(self, start: int) -> Token:
        """Tokens the fast scanner leaves alone: strings with escapes, quoted names, junk."""
        text = self.text
        char = text[start]
        if char == '"':
            value = self._quoted('"', "string")
            return Token(STRING, text[start : self.pos], value, start, self.pos, self)
        if char == "'":
            name = self._quoted("'", "quoted attribute name")
            return Token(NAME, text[start : self.pos], name, start, self.pos, self)
        raise self.error(f"unexpected character {char!r}")

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
            if char == "\x00":
                # libclassad reads text as a C string: a NUL ends it inside the literal.
                self.pos = pos
                raise self.error(f"NUL character in {what}", pos)
            if char == "\\" and self.old_strings:
                # As libclassad's old-syntax lexer reads strings and quoted names: a backslash
                # escapes only the closing quote, and not when that quote ends the text or its
                # line (a value ending in a backslash, which the old syntax writes unescaped).
                # A carriage return is not a line end here: HTCondor's old writer puts one raw
                # in a string (libclassad reads "\"<CR>" as quote, CR).
                if (
                    pos + 1 < length
                    and text[pos + 1] == quote
                    and not (pos + 2 == length or text[pos + 2] == "\n")
                ):
                    out.append(ord(quote))
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
                if escape == "\x00":
                    # An escaped NUL is still a NUL: a string cannot hold one.
                    self.pos = pos
                    raise self.error(f"NUL character in {what}", pos)
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
