"""``$$(Attr)``, ``$$(Attr:default)`` and ``$$([expr])``: job values taken from the slot a job
matched, substituted when the match is made (the schedd does this before starting a job).

As HTCondor does, each ``$$(Attr)`` substituted records ``MATCH_<Attr>`` in the job, and each
job attribute holding a ``$$([expr])`` records its expanded value as ``MATCH_EXP_<Attribute>``.
"""

from __future__ import annotations

import re

import attrs

from epcore.classad import ERROR, UNDEFINED, ClassAd, Value, ast, format_old, parse_expr
from epcore.errors import ClassAdSyntaxError, PoolError

_OPEN = "$$("


@attrs.frozen
class _Reference:
    start: int
    end: int  # just past the closing parenthesis
    body: str


def _references(text: str, attribute: str) -> list[_Reference]:
    found: list[_Reference] = []
    position = text.find(_OPEN)
    while position >= 0:
        body_start = position + len(_OPEN)
        if text.startswith("[", body_start):
            close = text.find("])", body_start)
            end = close + 2 if close >= 0 else -1
        else:
            close = text.find(")", body_start)
            end = close + 1 if close >= 0 else -1
        if end < 0:
            raise PoolError(f"job attribute {attribute}: $$( without its closing parenthesis")
        found.append(_Reference(position, end, text[body_start : end - 1]))
        position = text.find(_OPEN, end)
    return found


def _as_text(value: Value) -> str:
    if isinstance(value, str):
        return value
    # Old syntax, as HTCondor writes the value it substitutes (3.5, not 3.500000000000000E+00).
    line = format_old(ClassAd({"v": value}))
    return line.partition(" = ")[2].rstrip("\n")


def _unescape(text: str) -> str:
    # An expression inside a string literal arrives with its quotes and backslashes escaped.
    return re.sub(r"\\(.)", r"\1", text)


def _escape(text: str) -> str:
    # References live inside string literals of the unparsed attribute.
    return text.replace("\\", "\\\\").replace('"', '\\"')


def expand_match_references(job: ClassAd, slot: ClassAd) -> ClassAd:
    """A copy of ``job`` with every ``$$(...)`` replaced by the matched ``slot``'s values.

    A reference to an attribute the slot does not define (and that has no default), or an
    expression that evaluates to UNDEFINED or ERROR, is a PoolError naming both attributes.
    """
    expanded = job.copy()
    for name in list(job):
        expr = job[name]
        node = expr.node
        # A literal holds a reference only as a string's text: the numbers and plain strings
        # that make most of a job's attributes are not unparsed (this runs for every job a
        # claim runs, in the schedd's loop).
        if type(node) is ast.Literal and not (isinstance(node.value, str) and _OPEN in node.value):
            continue
        text = str(expr)
        if _OPEN not in text:
            continue
        pieces: list[str] = []
        last = 0
        has_expression = False
        for reference in _references(text, name):
            pieces.append(text[last : reference.start])
            last = reference.end
            body = reference.body
            if body.startswith("["):
                has_expression = True
                value = _evaluate_expression(_unescape(body[1:-1]), slot, job, name)
            else:
                attribute, colon, default = body.partition(":")
                attribute = attribute.strip()
                value = slot.evaluate(attribute, target=job) if attribute in slot else UNDEFINED
                if value is UNDEFINED or value is ERROR:
                    if not colon:
                        raise PoolError(
                            f"job attribute {name}: $$({attribute}) cannot be expanded, the "
                            f"matched slot has no usable {attribute}"
                        )
                    value = default
                else:
                    expanded[f"MATCH_{attribute}"] = value
            pieces.append(_escape(_as_text(value)))
        pieces.append(text[last:])
        new_text = "".join(pieces)
        try:
            expanded[name] = parse_expr(new_text)
        except ClassAdSyntaxError as error:
            raise PoolError(
                f"job attribute {name}: after $$ expansion {new_text!r} is not an expression"
            ) from error
        if has_expression:
            expanded[f"MATCH_EXP_{name}"] = expanded.evaluate(name, target=slot)
    return expanded


def _evaluate_expression(text: str, slot: ClassAd, job: ClassAd, attribute: str) -> Value:
    try:
        expr = parse_expr(text)
    except ClassAdSyntaxError as error:
        raise PoolError(f"job attribute {attribute}: $$([{text}]) is not an expression") from error
    value = expr.evaluate(slot, job)
    if value is UNDEFINED or value is ERROR:
        raise PoolError(
            f"job attribute {attribute}: $$([{text}]) evaluates to {value} against the slot"
        )
    return value
