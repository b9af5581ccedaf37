"""A tree-walking evaluator for an expression's first evaluations, before it is compiled.

Compiling a tree (:mod:`epcore.classad.compiler`) costs one to three milliseconds, paid
back only when the tree is evaluated again and again. Most trees that arrive with an ad
are evaluated once or not at all, so an expression is walked here for its first
:data:`WARM_UP` evaluations and compiled only on the next one: a hot expression (a
policy, a job's Requirements in a negotiation) still runs compiled, a cold one never pays
for the compiler.

The walk is the compiler's semantics node by node: the same runtime and operator functions,
the same short-circuit readings of ``&&``, ``||``, ``?:`` and ``?:`` (elvis), the same
constant lists, so that both give the same values (a test compares them on the generated
expressions that are compared with classad2). What the compiler adds is only speed: inline
copies of the operators for same-typed numbers, and constant folding, which gives what the
operators give at run time since literals are pure.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Final

from epcore.classad import ast, operators
from epcore.classad.invocation import call_function
from epcore.classad.runtime import (
    NOT_CONSTANT,
    Code,
    Frame,
    State,
    absolute_ref,
    make_ad,
    make_list,
    ref,
    scoped_ref,
    select,
    subscript,
    target_ref,
)
from epcore.classad.values import ERROR, UNDEFINED, RelTime, Value

#: How many evaluations of one holder (an Expr, an attribute of an ad) walk its tree before
#: the next one compiles it. Read at each evaluation, so tests can set it.
WARM_UP = 2

_UNARY: Final = operators.unary
_TRUTH: Final = operators.truth
_BINARY: Final = operators.BINARY
_NO_BINDINGS: Final[dict[str, object]] = {}


def walker(node: ast.Node) -> Code:
    """``node`` as :data:`~epcore.classad.runtime.Code` that walks it. A partial, not a
    function of ours, so that calling it costs no Python frame: a walked reference chain
    then takes as much of the stack as a compiled one."""
    return partial(interpret, node)


def interpret(node: ast.Node, state: State, frame: Frame | None) -> Value:
    """The value of ``node`` with ``frame`` as the current ad, as its compiled code gives."""
    kind = type(node)
    if kind is ast.Binary:
        return _binary(node, state, frame)  # type: ignore[arg-type]
    if kind is ast.AttrRef:
        if node.scope is not None or node.absolute:  # type: ignore[union-attr]
            return _scoped(node, state, frame)  # type: ignore[arg-type]
        # An attribute of this ad that holds a constant is read here (one frame less for
        # each level of a reference chain); anything else takes runtime.ref, which does the
        # same lookup first (as the compiled code does).
        key = node.name.lower()  # type: ignore[union-attr]
        found = (frame.ad._bindings if frame is not None else _NO_BINDINGS).get(key)
        if found is not None:
            constant = found.constant  # type: ignore[attr-defined]
            if constant is not NOT_CONSTANT:
                return constant  # type: ignore[no-any-return]
        return ref(state, frame, key)
    if kind is ast.Literal:
        return ast.literal_value(node.value)  # type: ignore[union-attr]
    if kind is ast.Paren:
        return interpret(node.inner, state, frame)  # type: ignore[union-attr]
    if kind is ast.Call:
        codes = tuple([walker(arg) for arg in node.args])  # type: ignore[union-attr]
        return call_function(state, frame, node, node.name.lower(), codes)  # type: ignore[arg-type,union-attr]
    if kind is ast.Unary:
        return _UNARY(node.op, interpret(node.operand, state, frame))  # type: ignore[union-attr]
    if kind is ast.Ternary:
        return _ternary(node, state, frame)  # type: ignore[arg-type]
    if kind is ast.Elvis:
        left = interpret(node.left, state, frame)  # type: ignore[union-attr]
        if left is UNDEFINED:
            return interpret(node.right, state, frame)  # type: ignore[union-attr]
        return left
    if kind is ast.Subscript:
        base = interpret(node.base, state, frame)  # type: ignore[union-attr]
        return subscript(state, base, interpret(node.index, state, frame))  # type: ignore[union-attr]
    if kind is ast.ListExpr:
        return _list(node, state, frame)  # type: ignore[arg-type]
    if kind is ast.AdExpr:
        return make_ad(state, frame, node)  # type: ignore[arg-type]
    raise TypeError(f"not a ClassAd AST node: {node!r}")


def _scoped(node: ast.AttrRef, state: State, frame: Frame | None) -> Value:
    """``.name`` or ``scope.name``."""
    key = node.name.lower()
    scope = node.scope
    if scope is None:
        return absolute_ref(state, frame, key)
    if type(scope) is ast.AttrRef and scope.scope is None and not scope.absolute:
        scope_key = scope.name.lower()
        if scope_key == "target":
            return target_ref(state, frame, key)
        return scoped_ref(state, frame, scope_key, key)
    return select(state, interpret(scope, state, frame), key)


def _binary(node: ast.Binary, state: State, frame: Frame | None) -> Value:
    op = node.op
    if op == "&&":
        return _logical(node, state, frame, False, True, operators.and_right)
    if op == "||":
        return _logical(node, state, frame, True, False, operators.or_right)
    left = interpret(node.left, state, frame)
    return _BINARY[op](left, interpret(node.right, state, frame))


def _logical(
    node: ast.Binary,
    state: State,
    frame: Frame | None,
    deciding: bool,
    other: bool,
    combine: Callable[[Value, Value], Value],
) -> Value:
    """``&&`` (False decides) or ``||`` (True decides), reading the right side only when
    the left does not decide."""
    left = interpret(node.left, state, frame)
    if left is deciding:
        return deciding
    reading = left if left is other else _TRUTH(left)
    if reading is deciding or reading is ERROR:
        return reading
    right = interpret(node.right, state, frame)
    if reading is other and type(right) is bool:
        return right
    return combine(reading, right)


def _ternary(node: ast.Ternary, state: State, frame: Frame | None) -> Value:
    condition = interpret(node.cond, state, frame)
    reading = condition if condition is True or condition is False else _TRUTH(condition)
    if reading is True:
        return interpret(node.then, state, frame)
    if reading is False:
        return interpret(node.otherwise, state, frame)
    return reading


def _list(node: ast.ListExpr, state: State, frame: Frame | None) -> Value:
    items = node.items
    if all(type(item) is ast.Literal and type(item.value) is not RelTime for item in items):
        # A list of constants is a plain list, as the compiler makes it (no source kept).
        return [item.value for item in items]  # type: ignore[union-attr]
    return make_list(state, frame, node, tuple([walker(item) for item in items]))
