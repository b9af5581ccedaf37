"""Why a ClassAd expression has its value: the tree of the sub-expressions that decided it.

An :class:`Explanation` is a tree: an expression's text, its value, and the sub-expressions
that decided the value (for ``a && b`` that is false, the first false operand; for a
comparison, its operands; for an attribute reference, the attribute's own expression). Every
value is computed by the ClassAd engine itself: each sub-expression is evaluated as its own
:class:`~epcore.classad.Expr` with the same MY and TARGET ads as the whole, so an explanation
never disagrees with the evaluation it explains. :mod:`epcore.state.explain` puts these trees
to a slot's policy expressions, ``ep q -better-analyze`` (:mod:`epcore.analysis`) to a job's
Requirements.

Pure: no I/O and no clock; time arrives as ``now``.
"""

from __future__ import annotations

from typing import Any

import attrs

from epcore.classad import ERROR, UNDEFINED, ClassAd, EvalContext, Value, ast
from epcore.classad.classad import Expr, to_node
from epcore.classad.formats import parse_expr
from epcore.classad.unparse import format_literal, unparse

#: How many attribute references deep an explanation follows attributes' own expressions.
MAX_REFERENCE_DEPTH = 4

_CONNECTIVES = frozenset({"&&", "||"})
_BUILT_IN_NAMES = frozenset({"currenttime"})


@attrs.frozen
class Explanation:
    """One expression, its value, and the sub-expressions that decided it.

    ``reduced`` is the expression with its computed operands replaced by their values
    (``KeyboardIdle > 900`` for ``KeyboardIdle > 15 * 60``), when that differs from ``text``.
    For an attribute reference, ``origin`` says where the name was found (``MY``, ``TARGET``,
    ``undefined`` or ``built-in``) and ``ad`` names that ad (``slot``, ``job``).
    """

    text: str
    value: Value
    reduced: str | None = None
    origin: str | None = None
    ad: str | None = None
    children: tuple[Explanation, ...] = ()
    note: str | None = None


@attrs.frozen
class _Scope:
    my: ClassAd | None
    target: ClassAd | None
    context: EvalContext
    my_name: str
    target_name: str
    depth: int = 0
    following: frozenset[tuple[int, str]] = frozenset()

    def value(self, node: ast.Node) -> Value:
        return Expr(node).evaluate(self.my, self.target, context=self.context)

    def swapped(self, key: str) -> _Scope:
        assert self.target is not None
        mine = (self.target_name, self.my_name, self.depth + 1)
        seen = self.following | {(id(self.target), key)}
        return _Scope(self.target, self.my, self.context, *mine, seen)

    def deeper(self, key: str) -> _Scope:
        assert self.my is not None
        return attrs.evolve(
            self, depth=self.depth + 1, following=self.following | {(id(self.my), key)}
        )


def _literal(value: object) -> str:
    """A literal as a person reads it: a finite real as Python writes it (0.3, not 3.0E-01)."""
    if type(value) is float and value == value and abs(value) != float("inf"):
        return repr(value)
    return format_literal(value)


#: ``is``/``isnt`` as policy authors write them.
_SPELLINGS = {"is": "=?=", "isnt": "=!="}


def _spelled(node: ast.Node) -> ast.Node:
    """``node`` with ``=?=`` and ``=!=`` written as such (the tree stores them as words)."""
    if isinstance(node, ast.Literal):
        return node
    changes: dict[str, Any] = {}
    for field in attrs.fields(type(node)):
        part = getattr(node, field.name)
        if isinstance(part, tuple):
            changes[field.name] = tuple(
                (item[0], _spelled(item[1])) if isinstance(item, tuple) else _spelled(item)
                for item in part
            )
        elif part is not None and not isinstance(part, str | bool):
            changes[field.name] = _spelled(part)
    if isinstance(node, ast.Binary):
        changes["op"] = _SPELLINGS.get(node.op, node.op)
    return attrs.evolve(node, **changes)


def _text(node: ast.Node) -> str:
    return unparse(_spelled(node), _literal).strip()


def value_text(value: Value) -> str:
    """A value as a person reads it: TRUE, FALSE, UNDEFINED, ERROR, else ClassAd syntax (with
    reals as Python writes them: 2.5)."""
    if value is True or value is False:
        return "TRUE" if value else "FALSE"
    if value is UNDEFINED:
        return "UNDEFINED"
    if value is ERROR:
        return "ERROR"
    return _text(to_node(value))


def _is_true(value: Value) -> bool:
    return value is True or (type(value) in (int, float) and value != 0)


def _is_false(value: Value) -> bool:
    return value is False or (type(value) in (int, float) and value == 0)


def _interesting(node: ast.Node) -> bool:
    """Whether a sub-expression says more than its text (it has a reference or a call)."""
    # Without recursion: _explain asks this at every level of a tree it already recurses into.
    pending = [node]
    while pending:
        kind = type(current := pending.pop())
        if kind is ast.AttrRef or kind is ast.Call:
            return True
        pending.extend(_subnodes(current))
    return False


def _subnodes(node: ast.Node) -> tuple[ast.Node, ...]:
    if isinstance(node, ast.Literal):
        return ()
    found: list[ast.Node] = []
    for field in attrs.fields(type(node)):
        part = getattr(node, field.name)
        if isinstance(part, tuple):
            found.extend(item[1] if isinstance(item, tuple) else item for item in part)
        elif part is not None and not isinstance(part, str | bool):
            found.append(part)
    return tuple(found)


def _substituted(node: ast.Node, scope: _Scope) -> ast.Node:
    """``node`` itself when it is a name or a literal, else a literal of its value."""
    if isinstance(node, ast.AttrRef | ast.Literal):
        return node
    try:
        return to_node(scope.value(node))
    except (TypeError, ValueError):
        return node


def _reduced(node: ast.Binary | ast.Call, scope: _Scope, text: str) -> str | None:
    if isinstance(node, ast.Binary):
        shown: ast.Node = ast.Binary(
            node.op, _substituted(node.left, scope), _substituted(node.right, scope)
        )
    else:
        shown = ast.Call(node.name, tuple(_substituted(arg, scope) for arg in node.args))
    result = _text(shown)
    return None if result == text else result


def _flatten(node: ast.Node, op: str) -> list[ast.Node]:
    inner = node.inner if isinstance(node, ast.Paren) else node
    if isinstance(inner, ast.Binary) and inner.op == op:
        return _flatten(inner.left, op) + _flatten(inner.right, op)
    return [node]


def conjuncts(node: ast.Node) -> tuple[ast.Node, ...]:
    """The top-level operands of an ``&&`` chain as written (``node`` alone when it is not
    one); parentheses around the chain or a part of it do not hide it."""
    inner = node
    while isinstance(inner, ast.Paren):
        inner = inner.inner
    if isinstance(inner, ast.Binary) and inner.op == "&&":
        return conjuncts(inner.left) + conjuncts(inner.right)
    return (node,)


def expression_text(node: ast.Node) -> str:
    """``node`` as a policy author reads it: ``=?=``/``=!=`` spelled so, reals as Python
    writes them, the outer parentheses dropped."""
    while isinstance(node, ast.Paren):
        node = node.inner
    return _text(node)


def _connective(node: ast.Binary, value: Value, scope: _Scope) -> tuple[Explanation, ...]:
    operands = _flatten(node.left, node.op) + _flatten(node.right, node.op)
    values = [scope.value(operand) for operand in operands]
    decisive, alike = (_is_false, _is_true) if node.op == "&&" else (_is_true, _is_false)
    first = next((i for i, v in enumerate(values) if decisive(v)), None)
    if decisive(value) and first is not None:
        chosen = [first]
    elif alike(value) or decisive(value):
        chosen = list(range(len(operands)))
    else:
        chosen = [i for i, v in enumerate(values) if not alike(v)]
    return tuple(_explain(operands[i], scope) for i in chosen)


def _reference(node: ast.AttrRef, value: Value, scope: _Scope, text: str) -> Explanation:
    origin, holder_is_target = _origin(node, scope)
    ad = None
    if origin == "MY":
        ad = scope.my_name
    elif origin == "TARGET":
        ad = scope.target_name
    children: tuple[Explanation, ...] = ()
    holder = scope.target if holder_is_target else scope.my
    if holder_is_target is not None and holder is not None and scope.depth < MAX_REFERENCE_DEPTH:
        key = node.name.lower()
        bound = holder.lookup(node.name)
        expands = bound is not None and not isinstance(bound.node, ast.Literal)
        if bound is not None and expands and (id(holder), key) not in scope.following:
            inner = scope.swapped(key) if holder_is_target else scope.deeper(key)
            children = (_explain(bound.node, inner),)
    return Explanation(text, value, origin=origin, ad=ad, children=children)


def _origin(node: ast.AttrRef, scope: _Scope) -> tuple[str | None, bool | None]:
    """Where the engine finds ``node``'s name, and whether that is TARGET (None: no ad)."""
    if node.absolute:
        return None, None
    if node.scope is None:
        if scope.my is not None and node.name in scope.my:
            return "MY", False
        if scope.target is not None and node.name in scope.target:
            return "TARGET", True
        if node.name.lower() in _BUILT_IN_NAMES:
            return "built-in", None
        return "undefined", None
    prefix = node.scope
    if isinstance(prefix, ast.AttrRef) and prefix.scope is None and not prefix.absolute:
        side = prefix.name.lower()
        if side in ("my", "target"):
            ad = scope.my if side == "my" else scope.target
            if ad is not None and node.name in ad:
                return side.upper(), side == "target"
            return "undefined", None
    return None, None


def _explain(node: ast.Node, scope: _Scope) -> Explanation:
    if isinstance(node, ast.Paren):
        return _explain(node.inner, scope)  # the parentheses' value is their content's
    text = _text(node)
    value = scope.value(node)
    children: tuple[Explanation, ...] = ()
    reduced = None
    if isinstance(node, ast.AttrRef):
        return _reference(node, value, scope, text)
    if isinstance(node, ast.Binary) and node.op in _CONNECTIVES:
        children = _connective(node, value, scope)
    elif isinstance(node, ast.Binary | ast.Call):
        reduced = _reduced(node, scope, text)
        operands = (node.left, node.right) if isinstance(node, ast.Binary) else node.args
        children = tuple(_explain(o, scope) for o in operands if _interesting(o))
    elif isinstance(node, ast.Ternary):
        chosen = [node.cond]
        condition = scope.value(node.cond)
        if condition is True or condition is False:
            chosen.append(node.then if condition else node.otherwise)
        children = tuple(_explain(o, scope) for o in chosen if _interesting(o))
    elif isinstance(node, ast.Elvis):
        chosen = [node.left]
        if scope.value(node.left) is UNDEFINED:
            chosen.append(node.right)
        children = tuple(_explain(o, scope) for o in chosen if _interesting(o))
    elif isinstance(node, ast.Unary | ast.Subscript):
        children = tuple(_explain(o, scope) for o in _subnodes(node) if _interesting(o))
    return Explanation(text, value, reduced=reduced, children=children)


def explain_expression(
    expr: Expr | str,
    my: ClassAd | None = None,
    target: ClassAd | None = None,
    *,
    now: float,
    my_name: str = "MY",
    target_name: str = "TARGET",
    base: EvalContext | None = None,
) -> Explanation:
    """Explain ``expr`` evaluated with ``my`` as MY and ``target`` as TARGET at ``now``.

    Raises ClassAdSyntaxError when ``expr`` is text that does not parse.
    """
    parsed = parse_expr(expr) if isinstance(expr, str) else expr
    scope = _Scope(my, target, (base or EvalContext()).at(now), my_name, target_name)
    return _explain(parsed.node, scope)
