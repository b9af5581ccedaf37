"""AST to text in libclassad's new syntax, on one line.

The layout follows libclassad's unparser (``a + b``, `` -x``, ``f(a,b)``,
``{ a,b }``, ``[ a = 1; b = 2 ]``), so that text epcore writes reads like text
HTCondor writes. Reals are the one deliberate difference: libclassad prints
``%.15E``, which can lose the last bits of a double; epcore prints that form when it
is exact and 17 significant digits otherwise, so every expression round-trips;
infinities print as ``1E309``, and minus applied to a number prints as ``- 5``, for the
same reason.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Final

import attrs

from epcore.classad import ast
from epcore.classad.timetext import format_abs_time, format_rel_time
from epcore.classad.values import ERROR, UNDEFINED, AbsTime, RelTime

NameFormatter = Callable[[str], str]

_PLAIN_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Names that must be quoted to read back as attribute names.
_RESERVED_NAMES: Final = frozenset({"true", "false", "undefined", "error", "is", "isnt", "parent"})
_STRING_ESCAPES: Final = {
    0x5C: "\\\\",
    0x0A: "\\n",
    0x09: "\\t",
    0x0D: "\\r",
    0x08: "\\b",
    0x0C: "\\f",
    0x07: "\\a",
    0x0B: "\\v",
}


def quote_string(text: str, quote: str = '"') -> str:
    """A string literal for ``text``; bytes outside printable ASCII become octal escapes."""
    out = [quote]
    quote_byte = ord(quote)
    for byte in text.encode("utf-8", "surrogateescape"):
        if byte == quote_byte:
            out.append("\\" + quote)
        elif byte in _STRING_ESCAPES:
            out.append(_STRING_ESCAPES[byte])
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    out.append(quote)
    return "".join(out)


def _is_plain(name: str) -> bool:
    """Whether ``name`` reads back as an attribute name unquoted, in either syntax."""
    return _PLAIN_NAME.match(name) is not None and name.lower() not in _RESERVED_NAMES


def attribute_name(name: str) -> str:
    """An attribute name as it must be written: plain, or single-quoted when needed."""
    return name if _is_plain(name) else quote_string(name, "'")


def old_attribute_name(name: str) -> str:
    """An attribute name as HTCondor's old syntax writes it: single-quoted when needed, with
    only the quote escaped (old syntax reads other backslashes literally)."""
    return name if _is_plain(name) else "'" + name.replace("'", "\\'") + "'"


def _selected_name(name: str, spelled: NameFormatter) -> str:
    # Selected from an ad, "parent" is a plain name, which libclassad prints bare (b.parent); the
    # literal keywords stay quoted, as only quoted they read back (libclassad prints b.true).
    if name.lower() == "parent":
        return name
    return spelled(name)


def format_real(value: float) -> str:
    """A real literal that reads back as exactly ``value``."""
    if math.isnan(value):
        return 'real("NaN")'
    if math.isinf(value):
        # The ClassAd language has no infinity literal; 1E309 overflows to one when read
        # back, so the literal round-trips (libclassad prints real("INF"), a call).
        return "1E309" if value > 0 else "-1E309"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    text = f"{value:.15E}"
    if float(text) != value:
        text = f"{value:.16E}"
    return text


def format_literal(value: object) -> str:
    """The text of a literal value."""
    if value is UNDEFINED:
        return "undefined"
    if value is ERROR:
        return "error"
    kind = type(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is float:
        return format_real(value)  # type: ignore[arg-type]
    if kind is str:
        return quote_string(value)  # type: ignore[arg-type]
    if isinstance(value, (AbsTime, RelTime)):
        if isinstance(value, AbsTime):
            return 'absTime("' + format_abs_time(value) + '")'
        return 'relTime("' + format_rel_time(value.secs) + '")'
    raise TypeError(f"not a literal value: {value!r}")


LiteralFormatter = Callable[[object], str]


@attrs.frozen
class _Spelling:
    """How one syntax writes the two things the syntaxes write differently."""

    literal: LiteralFormatter
    name: NameFormatter


_NEW_SPELLING: Final = _Spelling(format_literal, attribute_name)


def unparse(
    node: ast.Node,
    literal: LiteralFormatter = format_literal,
    name: NameFormatter = attribute_name,
) -> str:
    """The text of ``node`` on one line; ``literal`` and ``name`` write the literals and the
    attribute names (new syntax by default)."""
    parts: list[str] = []
    _emit(node, parts, _Spelling(literal, name))
    return "".join(parts)


def unparse_attributes(entries: tuple[tuple[str, ast.Node], ...]) -> str:
    """``[ a = 1; b = 2 ]`` for a sequence of (name, node) pairs."""
    parts: list[str] = []
    _emit(ast.AdExpr(entries), parts, _NEW_SPELLING)
    return "".join(parts)


def _emit(node: ast.Node, out: list[str], spelling: _Spelling) -> None:
    # An explicit stack would be faster to write for deep trees, but the parser bounds
    # nesting well below Python's recursion limit, so plain recursion is safe here.
    kind = type(node)
    if kind is ast.Literal:
        out.append(spelling.literal(node.value))  # type: ignore[union-attr]
    elif kind is ast.AttrRef:
        ref: ast.AttrRef = node  # type: ignore[assignment]
        if ref.scope is not None:
            _emit(ref.scope, out, spelling)
            out.append(".")
            out.append(_selected_name(ref.name, spelling.name))
        else:
            out.append("." if ref.absolute else "")
            out.append(spelling.name(ref.name))
    elif kind is ast.Binary:
        binary: ast.Binary = node  # type: ignore[assignment]
        _emit(binary.left, out, spelling)
        out.append(f" {binary.op} ")
        _emit(binary.right, out, spelling)
    elif kind is ast.Unary:
        unary: ast.Unary = node  # type: ignore[assignment]
        operand: list[str] = []
        _emit(unary.operand, operand, spelling)
        text = "".join(operand)
        # "-5" would read back as the literal -5, not as minus applied to 5.
        gap = " " if unary.op == "-" and text[:1] in "0123456789." and text else ""
        out.append(" " + unary.op + gap + text)
    elif kind is ast.Paren:
        out.append("(")
        _emit(node.inner, out, spelling)  # type: ignore[union-attr]
        out.append(")")
    elif kind is ast.Ternary:
        ternary: ast.Ternary = node  # type: ignore[assignment]
        _emit(ternary.cond, out, spelling)
        out.append(" ? ")
        _emit(ternary.then, out, spelling)
        out.append(" : ")
        _emit(ternary.otherwise, out, spelling)
    elif kind is ast.Elvis:
        elvis: ast.Elvis = node  # type: ignore[assignment]
        _emit(elvis.left, out, spelling)
        out.append(" ?: ")
        _emit(elvis.right, out, spelling)
    elif kind is ast.Subscript:
        subscript: ast.Subscript = node  # type: ignore[assignment]
        _emit(subscript.base, out, spelling)
        out.append("[")
        _emit(subscript.index, out, spelling)
        out.append("]")
    elif kind is ast.Call:
        call: ast.Call = node  # type: ignore[assignment]
        out.append(call.name + "(")
        for position, arg in enumerate(call.args):
            if position:
                out.append(",")
            _emit(arg, out, spelling)
        out.append(")")
    elif kind is ast.ListExpr:
        items = node.items  # type: ignore[union-attr]
        out.append("{ ")
        for position, item in enumerate(items):
            if position:
                out.append(",")
            _emit(item, out, spelling)
        out.append(" }")
    elif kind is ast.AdExpr:
        entries = node.attrs  # type: ignore[union-attr]
        out.append("[ ")
        for position, (name, value) in enumerate(entries):
            if position:
                out.append("; ")
            out.append(spelling.name(name) + " = ")
            _emit(value, out, spelling)
        out.append(" ]")
    else:
        raise TypeError(f"not a ClassAd AST node: {node!r}")


def old_literal(value: object) -> str:
    """A literal as HTCondor's old syntax writes it.

    Strings are written raw with only ``"`` escaped (old syntax reads backslashes
    literally), and reals as ``%.15G`` (17 digits when that is not exact) with a ``.0``
    kept on integral values so that they stay reals.
    """
    if type(value) is str:
        return '"' + value.replace('"', '\\"') + '"'
    if type(value) is float and math.isfinite(value) and value != 0.0:
        text = f"{value:.15G}"
        if float(text) != value:
            text = f"{value:.17G}"
        if "." not in text and "E" not in text:
            text += ".0"
        return text
    return format_literal(value)
