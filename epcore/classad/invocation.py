"""Built-in function invocations: the FunctionCall the evaluator hands to each built-in."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import attrs

from epcore.classad import ast
from epcore.classad.calls import EvalContext
from epcore.classad.runtime import Code, Frame, State, frame_of, lookup
from epcore.classad.values import ERROR, UNDEFINED, Value

if TYPE_CHECKING:
    from epcore.classad.classad import ClassAd


class Invocation:
    """The :class:`~epcore.classad.calls.FunctionCall` handed to a built-in function."""

    __slots__ = ("_codes", "_frame", "_lexical", "_state", "args", "name")

    def __init__(
        self,
        state: State,
        frame: Frame | None,
        name: str,
        args: tuple[ast.Node, ...],
        codes: tuple[Code, ...],
        lexical: Frame | None = None,
    ) -> None:
        self._state = state
        self._frame = frame
        self._codes = codes
        self.name = name
        self.args = args
        # Where the call was written, once resolve_where has moved it: the ad literals of
        # its arguments keep that scope (libclassad sets a literal's parent when it is read).
        self._lexical = lexical

    @property
    def context(self) -> EvalContext:
        """The evaluation context."""
        return self._state.context

    def now(self) -> float:
        """The evaluation's current time."""
        return self._state.now()

    def rng(self) -> random.Random:
        """The evaluation's random source."""
        return self._state.rng()

    def value(self, index: int) -> Value:
        """Evaluate one argument."""
        return self._codes[index](self._state, self._frame)

    def values(self) -> list[Value]:
        """Evaluate every argument, left to right."""
        state, frame = self._state, self._frame
        return [code(state, frame) for code in self._codes]

    def evaluate(self, node: ast.Node, scope: ClassAd | None = None) -> Value:
        """Evaluate ``node`` here, or with ``scope`` as the current ad."""
        from epcore.classad.compiler import compile_node

        code = compile_node(node)
        if self._lexical is not None:
            return self._in_lexical_scope(code, scope)
        if scope is None:
            return code(self._state, self._frame)
        return self._in(code, scope)

    def _in_lexical_scope(self, code: Code, scope: ClassAd | None) -> Value:
        state = self._state
        saved = state.lexical_ads
        lexical = self._lexical
        assert lexical is not None
        state.lexical_ads = (_ad_literals(self.args), lexical)
        try:
            return code(state, self._frame) if scope is None else self._in(code, scope)
        finally:
            state.lexical_ads = saved

    def _in(self, code: Code, scope: ClassAd) -> Value:
        state = self._state
        frame = frame_of(state, scope)
        right = state.right
        if frame.alternate is None and right is not None and frame is not right:
            # libclassad (evaluateInContext) gives an ad nested in one side of the match that
            # side's alternate scope: the other side.
            other = state.left if _nested_in(frame, right) else right
            frame = Frame(scope, frame.parent, other)
        return code(state, frame)

    def source_of(self, value: Value) -> ast.Node | None:
        """The list literal a list value was built from in this evaluation, if any."""
        sources = self._state.list_sources
        if sources is None or type(value) is not list:
            return None
        entry = sources.get(id(value))
        if entry is None or entry[0] is not value:
            return None
        return entry[1]

    def parse(self, text: str) -> ast.Node:
        """Parse expression text (raises ClassAdSyntaxError)."""
        from epcore.classad.parsecache import parse_node

        return parse_node(text)

    def resolve(self, node: ast.Node) -> ast.Node | None:
        """The expression an attribute reference refers to, or None."""
        found = self.resolve_where(node)
        return None if found is None else found[0]

    def resolve_where(self, node: ast.Node) -> tuple[ast.Node, Invocation] | None:
        """resolve(), with this call moved into the ad that holds the expression found.

        libclassad's lookup leaves its current ad at the ad where it found the name, and a
        built-in that looked a reference up goes on evaluating there.
        """
        if type(node) is not ast.AttrRef:
            return None
        state, frame = self._state, self._frame
        if node.scope is None and not node.absolute:
            if frame is None:
                return None
            found = lookup(state, frame, node.name.lower())
            if found is None and frame.alternate is not None:
                found = lookup(state, frame.alternate, node.name.lower())
        else:
            from epcore.classad.classad import ClassAd
            from epcore.classad.compiler import compile_node

            if node.absolute:
                base: Value = state.root.ad if state.root is not None else UNDEFINED
            else:
                assert node.scope is not None
                base = compile_node(node.scope)(state, frame)
            if not isinstance(base, ClassAd):
                return None
            found = lookup(state, frame_of(state, base), node.name.lower())
        if type(found) is tuple:
            binding, holder = found
            lexical = self._lexical or (frame if holder is not frame else None)
            moved = Invocation(state, holder, self.name, self.args, self._codes, lexical)
            return binding.node, moved
        from epcore.classad.classad import ClassAd, to_node

        if isinstance(found, ClassAd):
            # A special name (self, my, parent, toplevel) refers to an ad itself.
            return to_node(found), self
        return None

    def unparse(self, node: ast.Node) -> str:
        """The text of ``node``."""
        from epcore.classad.unparse import unparse

        return unparse(node)


def _nested_in(frame: Frame, side: Frame) -> bool:
    """Whether ``frame``'s ad lies inside ``side``'s ad (on its lexical scope chain)."""
    current = frame.parent
    while current is not None:
        if current is side or current.ad is side.ad:
            return True
        current = current.parent
    return False


def call_function(
    state: State,
    frame: Frame | None,
    node: ast.Call,
    key: str,
    codes: tuple[Code, ...],
) -> Value:
    """Run the built-in named ``key`` (lower-case); unknown names are ERROR."""
    impl = state.functions.get(key)
    if impl is None:
        return ERROR
    return impl(Invocation(state, frame, node.name, node.args, codes))


def _ad_literals(nodes: tuple[ast.Node, ...]) -> frozenset[ast.Node]:
    """The ad literals in ``nodes`` that are not inside another ad literal.

    By value, not identity: compiled code is shared between equal trees, so the literal a
    compiled ad expression carries may be an equal node of another parse.
    """
    found: set[ast.Node] = set()
    todo: list[object] = list(nodes)
    while todo:
        node = todo.pop()
        if type(node) is ast.AdExpr:
            assert isinstance(node, ast.AdExpr)
            found.add(node)
        elif isinstance(node, tuple):
            todo.extend(node)
        elif attrs.has(type(node)) and type(node) is not ast.Literal:
            todo.extend(getattr(node, field.name) for field in attrs.fields(type(node)))  # type: ignore[arg-type]
    return frozenset(found)
