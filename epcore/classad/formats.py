"""ClassAd text formats: new syntax, old syntax, and HTCondor's JSON form.

* New syntax: ``[ a = 1; b = a + 1 ]``.
* Old syntax: one ``Name = Expr`` per line; ``#`` starts a comment line; a blank line
  ends an ad. Inside strings a backslash escapes only a double quote, as in HTCondor.
* JSON: the form ``classad2.ClassAd.printJson`` writes: literals as JSON values,
  ``undefined`` as ``null``, any other expression as the string ``"/Expr(<text>)/"``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any, Final

from epcore.classad import ast
from epcore.classad.classad import Binding, ClassAd, Expr
from epcore.classad.parsecache import parse_node
from epcore.classad.parser import iter_new_ads, parse_ad_node
from epcore.classad.unparse import unparse
from epcore.classad.values import UNDEFINED
from epcore.errors import ClassAdError, ClassAdSyntaxError

_OLD_NAME: Final = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=")
#: The most attribute lines :func:`set_old_line` keeps the binding of (emptied when full),
#: and the longest it keeps: at most about 32 MB, whatever the peers send.
LINE_BINDINGS: Final = 32768
LINE_BINDING_LENGTH: Final = 1024
#: The binding of each attribute line read lately, with its lower-case name.
_line_bindings: dict[str, tuple[str, Binding]] = {}
_JSON_EXPR: Final = re.compile(r"\A/Expr\((.*)\)/\Z", re.DOTALL)


def parse_expr(text: str, source: str | None = None) -> Expr:
    """Parse one expression; ClassAdSyntaxError (with line and column) when it does not parse."""
    return Expr(parse_node(text, source))


def _is_new_syntax(text: str) -> bool:
    stripped = text.lstrip()
    while stripped.startswith(("/*", "//")):
        if stripped.startswith("//"):
            newline = stripped.find("\n")
            stripped = "" if newline < 0 else stripped[newline + 1 :].lstrip()
        else:
            close = stripped.find("*/")
            stripped = "" if close < 0 else stripped[close + 2 :].lstrip()
    return stripped.startswith("[")


def parse_ad(text: str, source: str | None = None) -> ClassAd:
    """Parse one ad in new syntax (``[...]``) or old syntax (``Name = Expr`` lines)."""
    if _is_new_syntax(text):
        return ClassAd._from_node(parse_ad_node(text, source))
    ad = ClassAd()
    for name, node in _old_lines(text, source):
        ad[name] = Expr(node)
    return ad


def parse_ads(text: str, source: str | None = None) -> Iterator[ClassAd]:
    """Every ad of a text: consecutive ``[...]`` ads, or old-syntax ads separated by blank lines."""
    if _is_new_syntax(text):
        for node in iter_new_ads(text, source):
            yield ClassAd._from_node(node)
        return
    current: ClassAd | None = None
    for entry in _old_lines(text, source, separators=True):
        if entry is None:
            if current is not None:
                yield current
            current = None
            continue
        name, node = entry
        if current is None:
            current = ClassAd()
        current[name] = Expr(node)
    if current is not None:
        yield current


def _old_lines(text: str, source: str | None, *, separators: bool = False) -> Iterator[Any]:
    """(name, node) for each old-syntax line; None for each ad-ending blank line if asked."""
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped:
            if separators:
                yield None
            continue
        if stripped.startswith("#"):
            continue
        match = _OLD_NAME.match(line)
        if match is None:
            column = len(line) - len(line.lstrip()) + 1
            raise ClassAdSyntaxError("expected 'Name = Expression'", number, column, source)
        start = match.end()
        try:
            node = parse_node(line[start:], source, old_strings=True)
        except ClassAdSyntaxError as error:
            raise ClassAdSyntaxError(error.reason, number, start + error.column, source) from error
        yield (match.group(1), node)


# -- old syntax output ----------------------------------------------------------------------


def format_old(ad: ClassAd) -> str:
    """The ad in old syntax: one ``Name = Expr`` line per attribute, newline-terminated."""
    return "".join(f"{line}\n" for _, line in old_attribute_lines(ad))


def old_attribute_lines(ad: ClassAd) -> Iterator[tuple[str, str]]:
    """Each attribute's name and its ``Name = Expr`` line in old syntax, in the ad's order
    (the form HTCondor's wire protocol sends one string per attribute in)."""
    for binding in ad._bindings.values():
        yield binding.name, binding.old_line()


def old_lines_by_key(ad: ClassAd) -> list[tuple[str, str]]:
    """Each attribute's lower-case name and its old-syntax line (the fast path of the wire,
    which sends every attribute of thousands of ads)."""
    return [(key, binding._old or binding.old_line()) for key, binding in ad._bindings.items()]


def parse_old_attribute(line: str, source: str | None = None) -> tuple[str, Expr]:
    """One old-syntax ``Name = Expr`` line: its name and expression (ClassAdSyntaxError,
    located in the line, when it is not one)."""
    match = _OLD_NAME.match(line)
    if match is None:
        column = len(line) - len(line.lstrip()) + 1
        raise ClassAdSyntaxError("expected 'Name = Expression'", 1, column, source)
    start = match.end()
    try:
        node = parse_node(line[start:], source, old_strings=True)
    except ClassAdSyntaxError as error:
        raise ClassAdSyntaxError(error.reason, error.line, start + error.column, source) from error
    return match.group(1), Expr(node)


def set_old_line(ad: ClassAd, line: str, *, keep: bool = True) -> ast.Node:
    """Set in ``ad`` the attribute an old-syntax ``Name = Expr`` line gives; its tree
    (ClassAdSyntaxError as :func:`parse_old_attribute`). ``keep`` False: the line is not
    kept (a peer not yet authenticated).

    A collector hears the same lines in every update of every host (most attributes of a
    slot ad never change), so a line read lately gives the binding it gave then: no match
    and no parse, and the ads share it as copies of an ad share theirs (it is immutable;
    its unparsed line and compiled code, made once, serve every ad that holds it)."""
    known = _line_bindings.get(line)
    if known is None:
        name, expr = parse_old_attribute(line)
        known = (name.lower(), Binding(name, expr.node))
        if keep and len(line) <= LINE_BINDING_LENGTH:
            if len(_line_bindings) >= LINE_BINDINGS:
                _line_bindings.clear()
            _line_bindings[line] = known
    key, binding = known
    bindings = ad._bindings
    old = bindings.get(key)
    if old is not None and old.name != binding.name:
        binding = Binding(old.name, binding.node)  # the first spelling stays, as ad[name] = ...
    bindings[key] = binding
    return binding.node


# -- JSON -----------------------------------------------------------------------------------


def _json_value(node: ast.Node) -> Any:
    kind = type(node)
    if kind is ast.Literal:
        value = node.value  # type: ignore[union-attr]
        if value is UNDEFINED:
            return None
        if type(value) in (bool, int, str) or (type(value) is float and math.isfinite(value)):
            return value
    elif kind is ast.ListExpr:
        return [_json_value(item) for item in node.items]  # type: ignore[union-attr]
    elif kind is ast.AdExpr:
        return {name: _json_value(value) for name, value in node.attrs}  # type: ignore[union-attr]
    return "/Expr(" + unparse(node) + ")/"


def to_json(ad: ClassAd) -> str:
    """The ad as JSON, in the layout ``classad2.ClassAd.printJson`` writes."""
    document = {b.name: _json_value(b.node) for b in ad._bindings.values()}
    # HTCondor escapes "/" so that "/Expr(...)/" reads as "\/Expr(...)\/".
    return json.dumps(document, indent=2, ensure_ascii=False).replace("/", "\\/")


def _json_node(value: Any, where: str) -> ast.Node:
    if value is None:
        return ast.Literal(UNDEFINED)
    if type(value) in (bool, int, float):
        if type(value) is int and not -(1 << 63) <= value < (1 << 63):
            raise ClassAdError(f"{where}: integer {value} does not fit in 64 bits")
        return ast.Literal(value)
    if type(value) is str:
        match = _JSON_EXPR.match(value)
        if match is None:
            return ast.Literal(value)
        try:
            return parse_node(match.group(1))
        except ClassAdSyntaxError as error:
            raise ClassAdError(f"{where}: {error}") from error
    if type(value) is list:
        return ast.ListExpr(
            tuple(_json_node(item, f"{where}[{index}]") for index, item in enumerate(value))
        )
    if type(value) is dict:
        return ast.AdExpr(tuple((str(k), _json_node(v, f"{where}.{k}")) for k, v in value.items()))
    raise ClassAdError(f"{where}: unsupported JSON value {value!r}")


def from_json(text: str) -> ClassAd:
    """A ClassAd from the JSON form :func:`to_json` (and HTCondor) writes."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ClassAdSyntaxError(error.msg, error.lineno, error.colno) from error
    if type(document) is not dict:
        raise ClassAdError("a ClassAd in JSON must be a JSON object")
    node = _json_node(document, "$")
    assert type(node) is ast.AdExpr
    return ClassAd._from_node(node)
