"""The operators of the ClassAd language, shared by the full parser and its fast path.

Binding strength from loosest (``||``) to tightest (``* / %``), as libclassad's grammar
orders them; the ternary ``?:`` is looser than all of these and the unary operators tighter.
"""

from __future__ import annotations

from typing import Final

BINARY_PRECEDENCE: Final[dict[str, int]] = {
    "||": 2,
    "&&": 3,
    "|": 4,
    "^": 5,
    "&": 6,
    "==": 7,
    "!=": 7,
    "=?=": 7,
    "=!=": 7,
    "is": 7,
    "isnt": 7,
    "<": 8,
    "<=": 8,
    ">": 8,
    ">=": 8,
    "<<": 9,
    ">>": 9,
    ">>>": 9,
    "+": 10,
    "-": 10,
    "*": 11,
    "/": 11,
    "%": 11,
}
# The AST keeps one spelling per operator: =?= and =!= are the same as is and isnt.
CANONICAL_OPERATORS: Final = {"=?=": "is", "=!=": "isnt"}
UNARY_OPERATORS: Final = frozenset({"+", "-", "!", "~"})
