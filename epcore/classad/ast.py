"""The ClassAd abstract syntax tree: frozen, comparable, hashable value objects.

Parentheses are kept as :class:`Paren` nodes, as libclassad keeps them, so that
unparsing reproduces what the author wrote.
"""

from __future__ import annotations

import operator
from typing import TypeVar

import attrs

from epcore.classad.values import AbsTime, RelTime, _Error, _Undefined

LiteralValue = _Undefined | _Error | bool | int | float | str | AbsTime | RelTime


def _literal_key(value: LiteralValue) -> tuple[type, object]:
    # 1 == 1.0 == True in Python; ClassAd literals of different types are different
    # trees, and NaN must equal itself for round-trip comparisons of trees.
    if type(value) is float and value != value:
        return (float, "nan")
    if type(value) is float:
        return (float, value.hex())
    if type(value) is RelTime:
        return (RelTime, _literal_key(value.secs))
    return (type(value), value)


_Node = TypeVar("_Node")


def _pickled_by_fields(cls: type[_Node]) -> type[_Node]:
    """Pickle the node as its class and its fields in order, not as attrs' state keyed by
    name: half the time and two thirds of the size, for the ads a startd sends its zygote
    with every job."""
    names = [field.name for field in attrs.fields(cls)]  # type: ignore[arg-type]
    get = operator.attrgetter(*names)
    if len(names) == 1:

        def reduce_one(node: object) -> tuple[type[_Node], tuple[object, ...]]:
            return (cls, (get(node),))

        cls.__reduce__ = reduce_one  # type: ignore[assignment,method-assign]
    else:

        def reduce_many(node: object) -> tuple[type[_Node], tuple[object, ...]]:
            return (cls, get(node))

        cls.__reduce__ = reduce_many  # type: ignore[assignment,method-assign]
    return cls


def literal_value(value: LiteralValue) -> LiteralValue:
    """What a literal evaluates to: a relTime literal is a real, as in libclassad 25.x."""
    if type(value) is RelTime:
        return value.secs
    return value


@_pickled_by_fields
@attrs.frozen(slots=True, eq=False)
class Literal:
    """A constant: number, string, boolean, undefined, error or a time."""

    value: LiteralValue

    def __eq__(self, other: object) -> bool:
        return type(other) is Literal and _literal_key(self.value) == _literal_key(other.value)

    def __hash__(self) -> int:
        return hash(_literal_key(self.value))


@_pickled_by_fields
@attrs.frozen(slots=True, cache_hash=True)
class AttrRef:
    """``name``, ``.name`` (absolute) or ``scope.name``."""

    name: str
    scope: Node | None = None
    absolute: bool = False


@_pickled_by_fields
@attrs.frozen(slots=True, cache_hash=True)
class Unary:
    """A prefix operator: ``+``, ``-``, ``!`` or ``~``."""

    op: str
    operand: Node


@_pickled_by_fields
@attrs.frozen(slots=True, cache_hash=True)
class Binary:
    """An infix operator as written, except that ``=?=``/``=!=`` are stored as ``is``/``isnt``."""

    op: str
    left: Node
    right: Node


@_pickled_by_fields
@attrs.frozen(slots=True, cache_hash=True)
class Ternary:
    """``cond ? then : otherwise``."""

    cond: Node
    then: Node
    otherwise: Node


@_pickled_by_fields
@attrs.frozen(slots=True, cache_hash=True)
class Elvis:
    """``left ?: right``: left unless it is undefined."""

    left: Node
    right: Node


@_pickled_by_fields
@attrs.frozen(slots=True, cache_hash=True)
class Paren:
    """Parentheses the author wrote."""

    inner: Node


@_pickled_by_fields
@attrs.frozen(slots=True, cache_hash=True)
class Subscript:
    """``base[index]`` on a list or a ClassAd."""

    base: Node
    index: Node


@_pickled_by_fields
@attrs.frozen(slots=True, cache_hash=True)
class Call:
    """A function call; ``name`` keeps the author's spelling, lookup is case-insensitive."""

    name: str
    args: tuple[Node, ...]


@_pickled_by_fields
@attrs.frozen(slots=True, cache_hash=True)
class ListExpr:
    """A list literal ``{a, b, ...}``."""

    items: tuple[Node, ...]


@_pickled_by_fields
@attrs.frozen(slots=True, cache_hash=True)
class AdExpr:
    """A nested ClassAd literal ``[a = 1; b = 2]``; a repeated name replaces the earlier one."""

    attrs: tuple[tuple[str, Node], ...]


Node = (
    Literal
    | AttrRef
    | Unary
    | Binary
    | Ternary
    | Elvis
    | Paren
    | Subscript
    | Call
    | ListExpr
    | AdExpr
)
