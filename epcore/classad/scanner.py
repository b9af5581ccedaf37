"""The token strings of a plain ClassAd text, for the parser's fast path.

A text is cut into a list of strings: names, numbers, strings with their quotes, operators
and punctuation, then a NUL that ends the list. Offsets are not kept, and a text the
scanner does not read (an escape, an unclosed string, a malformed number, a character no
token starts with) gives None; comments come out as operators, which the parser gives up
on. Two scanners do this and give the same lists (a test compares them): one regular
expression call, which is the fastest way in the interpreter, and a loop over the
characters, which is the fastest once mypyc compiles this module (there ``ord(text[i])``
reads a character as a C integer without making a string, while the regular expression
engine still tries its alternatives one after the other).

What a token is follows the regular expression; the loop is its transcription. Two
offsets matter: a minus sign written against a number belongs to the literal
(``-9223372036854775808``), and a number written against a name character or a dot is
malformed (``5.e``), so the number is not a token and the text is not plain, except that
a minus or a dot in front of such a number is then an operator on its own.
"""

from __future__ import annotations

import re
from typing import Final

END: Final = "\x00"
_TOKENS: Final = re.compile(
    # Most frequent first, since the engine tries the branches in turn: punctuation that
    # starts no longer operator, names, numbers (before "-" and "."), strings, the rest.
    r"""[ \t\r\n\f\v]*(
      [()\[\]{},;*/%~^+]
    | [A-Za-z_][A-Za-z0-9_]*
    | -?(?:[0-9]+\.[0-9]+|\.[0-9]+)(?:[eE][+-]?[0-9]+)?(?![A-Za-z0-9_.])
    | -?[0-9]+(?:[eE][+-]?[0-9]+)?(?![A-Za-z0-9_.])
    | "[^"\\\x00]*"
    | &&|\|\||==|!=|<=|>=|=\?=|=!=|>>>|<<|>>|\?:|[-<>!&|?:.=]
    | .+
    )""",
    re.VERBOSE | re.DOTALL,
)

_COMPILED: Final = not __file__.endswith(".py")

# Character codes, named for the comparisons below.
_TAB: Final = 9
_CR: Final = 13
_SPACE: Final = 32
_QUOTE: Final = 34
_PLUS: Final = 43
_MINUS: Final = 45
_DOT: Final = 46
_ZERO: Final = 48
_NINE: Final = 57
_BACKSLASH: Final = 92
_UNDERSCORE: Final = 95
# The characters that are a whole token on their own wherever they appear.
_PUNCTUATION: Final = frozenset(ord(c) for c in "()[]{},;*/%~^+")


def tokens(text: str) -> list[str] | None:
    """The token strings of ``text`` ending with END, or None when the text is not plain."""
    if _COMPILED:
        return scan_characters(text)
    return scan_pattern(text)


def scan_pattern(text: str) -> list[str] | None:
    """:func:`tokens` by the regular expression: anything it does not know falls into the
    catch-all that takes the rest of the text (read with END appended), so a text is plain
    exactly when its last token is END alone."""
    found: list[str] = _TOKENS.findall(text + END)
    if found[-1] != END:
        return None
    return found


def _is_digit(c: int) -> bool:
    return _ZERO <= c <= _NINE


def _is_name_start(c: int) -> bool:
    return (97 <= c <= 122) or (65 <= c <= 90) or c == _UNDERSCORE


def _is_name_part(c: int) -> bool:
    return (97 <= c <= 122) or (65 <= c <= 90) or (_ZERO <= c <= _NINE) or c == _UNDERSCORE


def scan_characters(text: str) -> list[str] | None:
    """:func:`tokens` by one loop over the characters (the transcription of the pattern)."""
    found: list[str] = []
    n = len(text)
    i = 0
    while True:
        c = 0
        while i < n:
            c = ord(text[i])
            if c == _SPACE or _TAB <= c <= _CR:
                i += 1
            else:
                break
        if i >= n:
            found.append(END)
            return found
        start = i
        if c in _PUNCTUATION:
            i += 1
        elif _is_name_start(c):
            i += 1
            while i < n and _is_name_part(ord(text[i])):
                i += 1
        elif _is_digit(c) or c in (_MINUS, _DOT):
            end = _number_end(text, n, i)
            if end >= 0:
                i = end
            elif c in (_MINUS, _DOT):
                i += 1  # not a number after all: the operator
            else:
                return None  # a malformed number
        elif c == _QUOTE:
            i += 1
            while True:
                if i >= n:
                    return None  # not closed
                c = ord(text[i])
                i += 1
                if c == _QUOTE:
                    break
                if c == _BACKSLASH or c == 0:
                    return None  # an escape is the full parser's to read
        else:
            i = _operator_end(text, n, i, c)
            if i < 0:
                return None
        found.append(text[start:i])


def _digits_end(text: str, n: int, i: int) -> int:
    while i < n and _is_digit(ord(text[i])):
        i += 1
    return i


def _number_end(text: str, n: int, i: int) -> int:
    """Where the number starting at ``i`` ends, or -1 when none starts there or it is
    malformed (the pattern's two number branches: a maximal match, then the lookahead)."""
    if ord(text[i]) == _MINUS:
        i += 1
    if i < n and _is_digit(ord(text[i])):
        i = _digits_end(text, n, i)
        if i + 1 < n and ord(text[i]) == _DOT and _is_digit(ord(text[i + 1])):
            i = _digits_end(text, n, i + 2)
    elif i + 1 < n and ord(text[i]) == _DOT and _is_digit(ord(text[i + 1])):
        i = _digits_end(text, n, i + 2)
    else:
        return -1
    if i < n and (ord(text[i]) | 32) == 101:  # e or E: an exponent if digits follow
        exponent = i + 1
        if exponent < n and (ord(text[exponent]) == _PLUS or ord(text[exponent]) == _MINUS):
            exponent += 1
        if exponent < n and _is_digit(ord(text[exponent])):
            i = _digits_end(text, n, exponent)
    if i < n and (_is_name_part(ord(text[i])) or ord(text[i]) == _DOT):
        return -1
    return i


def _next_is(text: str, n: int, i: int, c: int) -> bool:
    return i < n and ord(text[i]) == c


def _operator_end(text: str, n: int, i: int, c: int) -> int:
    """Where the operator starting at ``i`` (character ``c``) ends, or -1 for no operator."""
    if c == 61:  # =: ==, =?=, =!= or =
        if _next_is(text, n, i + 1, 61):
            return i + 2
        if (_next_is(text, n, i + 1, 63) or _next_is(text, n, i + 1, 33)) and _next_is(
            text, n, i + 2, 61
        ):
            return i + 3
        return i + 1
    if c == 38 or c == 124:  # & or |, doubled or not
        return i + 2 if _next_is(text, n, i + 1, c) else i + 1
    if c == 33:  # !: != or !
        return i + 2 if _next_is(text, n, i + 1, 61) else i + 1
    if c == 60:  # <: <=, << or <
        if _next_is(text, n, i + 1, 61) or _next_is(text, n, i + 1, 60):
            return i + 2
        return i + 1
    if c == 62:  # >: >=, >>>, >> or >
        if _next_is(text, n, i + 1, 61):
            return i + 2
        if _next_is(text, n, i + 1, 62):
            return i + 3 if _next_is(text, n, i + 2, 62) else i + 2
        return i + 1
    if c == 63:  # ?: ?: or ?
        return i + 2 if _next_is(text, n, i + 1, 58) else i + 1
    if c == 58:  # :
        return i + 1
    return -1
