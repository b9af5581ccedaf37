"""Functions about evaluation itself: ``ifThenElse``, ``eval``, ``unparse``, ``unresolved``,
``evalInEachContext``, ``countMatches`` and ``debug``.

These receive their arguments unevaluated and decide what to evaluate and where.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from epcore.classad.ast import AdExpr, AttrRef, Call, ListExpr, Literal, Node, Paren
from epcore.classad.classad import ClassAd
from epcore.classad.cnum import c_int32
from epcore.classad.functions._pcre import (
    BoundedPattern,
    MatchTimeout,
    PatternError,
    compile_pattern,
)
from epcore.classad.functions._pretty import pretty_in_ad_order
from epcore.classad.functions._support import arity_ok, children, map_children
from epcore.classad.functions._text import to_string
from epcore.classad.functions.strings import ascii_lower, to_bytes
from epcore.classad.runtime import EvaluationFailure
from epcore.classad.values import ERROR, UNDEFINED, RelTime, Value
from epcore.errors import ClassAdSyntaxError

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall, FunctionImpl

_SCOPE_NAMES: Final = frozenset({"self", "parent", "root", "toplevel"})
_MAX_SCOPE_DEPTH: Final = 64
_MAX_REFERENCE_DEPTH: Final = 200


def if_then_else(call: FunctionCall) -> Value:
    """``ifThenElse(cond, a, b)``: evaluates only the chosen branch."""
    if not arity_ok(call, 3):
        return ERROR
    condition = call.value(0)
    if condition is UNDEFINED:
        return UNDEFINED
    if type(condition) not in (bool, int, float):
        return ERROR
    return call.value(1) if condition else call.value(2)


def eval_string(call: FunctionCall) -> Value:
    """``eval(text)``: parse a string (other values print first) and evaluate it here."""
    if not arity_ok(call, 1):
        return ERROR
    text = to_string(call, call.value(0))
    if type(text) is not str:
        return ERROR
    assert isinstance(text, str)
    try:
        node = call.parse(text)
    except ClassAdSyntaxError:
        return ERROR
    return call.evaluate(node)


def debug(call: FunctionCall) -> Value:
    """``debug(expr)``: the value of expr (libclassad also logs it)."""
    return call.value(0) if arity_ok(call, 1) else ERROR


def _as_classad(value: Value) -> ClassAd | None:
    return value if isinstance(value, ClassAd) else None


def _current_ad(call: FunctionCall) -> ClassAd | None:
    """The ad in which the call is being evaluated (libclassad's ``state.curAd``)."""
    return _as_classad(call.evaluate(AttrRef("self")))


def unparse_attribute(call: FunctionCall) -> Value:
    """``unparse(attr)``: the text of the current ad's expression for ``attr``, or ""."""
    if not arity_ok(call, 1) or type(call.args[0]) is not AttrRef:
        return ERROR
    ad = _current_ad(call)
    # libclassad looks up the reference's own text, so a scoped reference finds nothing.
    expr = ad.lookup(call.unparse(call.args[0])) if ad is not None else None
    return "" if expr is None else pretty_in_ad_order(call, expr.node)


class _Unresolvable(Exception):
    """The reference analysis cannot finish (a cycle, or a scope that is not an ad)."""


@attrs.define
class _ExternalRefs:
    """libclassad's ``_GetExternalReferences`` with full names, over the caller's scopes."""

    call: FunctionCall
    origin: ClassAd | None
    found: dict[str, str] = attrs.field(factory=dict)
    active: set[int] = attrs.field(factory=set)

    def add(self, name: str) -> None:
        self.found.setdefault(ascii_lower(name), name)

    def lookup(self, start: ClassAd | None, name: str) -> tuple[Node, ClassAd] | bool | None:
        """The node bound to ``name`` from ``start`` outwards and the ad holding it; True for
        a scope keyword."""
        if ascii_lower(name) in _SCOPE_NAMES:
            return True
        ad = start
        for _ in range(_MAX_SCOPE_DEPTH):
            if ad is None:
                return None
            expr = ad.lookup(name)
            if expr is not None:
                return expr.node, ad
            ad = _as_classad(self.call.evaluate(AttrRef("parent"), scope=ad))
        return None

    def visit(self, node: Node) -> None:
        if type(node) is AttrRef:
            assert isinstance(node, AttrRef)
            self.visit_reference(node)
            return
        # Nested ad literals open no scope here: their names resolve from the origin.
        for child in children(node):
            self.visit(child)

    def visit_reference(self, node: AttrRef) -> None:
        if node.scope is None:
            start = self.origin
            if node.absolute and start is not None:
                start = _as_classad(self.call.evaluate(AttrRef("toplevel"), scope=start))
        else:
            scope = self.call.evaluate(node.scope)
            if scope is UNDEFINED:
                self.add(f"{self.call.unparse(node.scope)}.{node.name}")
                return
            start = _as_classad(scope)
            if start is None:
                raise _Unresolvable
        found = self.lookup(start, node.name)
        if found is None:
            self.add(node.name)
            return
        if found is True:
            return
        assert not isinstance(found, bool)
        bound, holder = found
        # Bound expressions are shared AST nodes, so their identity marks a cycle; the depth
        # bound stands in for libclassad's depth limit.
        key = id(bound)
        if key in self.active or len(self.active) >= _MAX_REFERENCE_DEPTH:
            raise _Unresolvable
        self.active.add(key)
        # The bound expression's own names resolve in the ad that holds it (libclassad's
        # curAd moves there), so a TARGET attribute's references are the target's.
        origin = self.origin
        if node.scope is not None:
            self.origin = holder
        try:
            self.visit(bound)
        finally:
            self.active.discard(key)
            self.origin = origin

    def names(self) -> list[str]:
        # libclassad keeps the names in a case-sensitive ordered set of the full names, so
        # "target.X" names sort after capitalised plain ones.
        ordered = sorted(self.found.values(), key=to_bytes)
        return [name[7:] if ascii_lower(name[:7]) == "target." else name for name in ordered]


def unresolved(call: FunctionCall) -> Value:
    """``unresolved(attr[, pattern])``: the names attr's expression needs from outside the ad.

    With a pattern (matched caselessly), whether any such name matches it.
    """
    if not arity_ok(call, 1, 2) or type(call.args[0]) is not AttrRef:
        return ERROR
    found = call.resolve_where(call.args[0])
    if found is None:
        return UNDEFINED
    # The expression's references resolve from the ad that holds it (TARGET's, for a name
    # found only there), as libclassad's lookup moves its current ad.
    target, holder = found
    pattern: BoundedPattern | None = None
    if len(call.args) == 2:
        text = holder.value(1)  # in the ad holding the expression, as libclassad reads it
        if type(text) is not str:
            # HTCondor's unresolved() then fails the evaluation, not just the call.
            raise EvaluationFailure("unresolved()'s pattern is not a string")
        assert isinstance(text, str)
        try:
            pattern = compile_pattern(text, "i")
        except PatternError:
            return ERROR
    refs = _ExternalRefs(holder, _current_ad(holder))
    try:
        if refs.origin is not None:
            refs.visit(target)
        names = refs.names()
    except _Unresolvable:
        names = []
    if pattern is None:
        return ",".join(names)
    try:
        return any(found.group(0) for name in names for found in pattern.finditer(to_bytes(name)))
    except MatchTimeout:
        return ERROR


#: Functions that read their argument as a reference, not as a value.
_TAKE_A_REFERENCE: Final = frozenset({"unparse", "unresolved"})


#: Names that find the current ad itself, which the unusable scope does not have.
_THE_AD_ITSELF: Final = frozenset({"my", "self", "root", "toplevel"})


def _blind(node: Node, in_list: bool = False) -> Node:
    """``node`` with every attribute reference outside nested ads read as UNDEFINED.

    A reference given to unparse() or unresolved() stays a reference that finds nothing (its
    scope is UNDEFINED): in the unusable scope they answer "" and UNDEFINED, as libclassad does.
    MY, self, root and toplevel there still give an ad, in which nothing is found (as list
    elements, which libclassad reads later, outside that scope, they too are UNDEFINED).
    """
    if type(node) is AttrRef:
        assert isinstance(node, AttrRef)
        if node.scope is None and not in_list and node.name.lower() in _THE_AD_ITSELF:
            return node
        if node.scope is None:
            return Literal(UNDEFINED)
        scope = node.scope
        while type(scope) is Paren:
            assert isinstance(scope, Paren)
            scope = scope.inner
        if type(scope) is AttrRef:
            # MY and the other names of the ad itself give the ad, but nothing in it.
            return Literal(UNDEFINED)
        # A selection from a computed value ((0).x) does not look in the unusable scope: its
        # value decides (a non-ad gives ERROR, as in libclassad).
        return AttrRef(node.name, _blind(node.scope, in_list), node.absolute)
    if type(node) is AdExpr:
        return node
    if type(node) is Call and node.name.lower() in _TAKE_A_REFERENCE:
        args = tuple(
            AttrRef(arg.name, Literal(UNDEFINED)) if type(arg) is AttrRef else _blind(arg, in_list)
            for arg in node.args
        )
        return Call(node.name, args)
    inside = in_list or type(node) is ListExpr
    return map_children(node, lambda child: _blind(child, inside))


def _as_result_literal(value: Value) -> Value:
    # libclassad keeps each result as a literal, and a relative time's literal holds (int) of
    # its seconds and evaluates to a real (ReltimeLiteral).
    if type(value) is RelTime:
        assert isinstance(value, RelTime)
        return float(c_int32(value.secs))
    return value


def _looked_into_an_ad(call: FunctionCall, ref: AttrRef) -> bool:
    """Whether a reference that found nothing was looked up in an ad at all: a selection from
    a value that is no ad ((1).x, NoSuch.x) looks nothing up and leaves the scope usable."""
    if ref.scope is None or ref.absolute:
        return True
    return isinstance(call.evaluate(ref.scope), ClassAd)


def _each_context(count: bool) -> FunctionImpl:
    def impl(call: FunctionCall) -> Value:
        if not arity_ok(call, 2):
            return ERROR
        expr, ads = call.args
        if type(expr) is AttrRef:
            found = call.resolve_where(expr)
            if found is not None:
                # The list argument is evaluated in the ad that holds the expression.
                expr, call = found
            elif _looked_into_an_ad(call, expr):
                # libclassad's failed lookup leaves its scope unusable for the list argument.
                ads = _blind(ads)
        items = call.evaluate(ads)
        if items is UNDEFINED:
            return 0 if count else UNDEFINED
        if type(items) is not list:
            return ERROR
        assert isinstance(items, list)
        results: list[Value] = []
        for item in items:
            ad = _as_classad(item)
            if ad is not None:
                try:
                    results.append(call.evaluate(expr, scope=ad))
                except EvaluationFailure:
                    # libclassad takes a failed evaluation in one ad as that ad's ERROR.
                    results.append(ERROR)
            else:
                results.append(UNDEFINED if item is UNDEFINED else ERROR)
        if not count:
            return [_as_result_literal(result) for result in results]
        return sum(1 for r in results if type(r) in (bool, int, float) and r)

    return impl


def functions() -> dict[str, FunctionImpl]:
    """The functions of this module by lower-case name."""
    return {
        "ifthenelse": if_then_else,
        "eval": eval_string,
        "debug": debug,
        "unparse": unparse_attribute,
        "unresolved": unresolved,
        "evalineachcontext": _each_context(count=False),
        "countmatches": _each_context(count=True),
    }
