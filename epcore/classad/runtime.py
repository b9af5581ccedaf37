"""The evaluation machinery behind compiled expressions: scopes, lookups, calls.

Scoping follows libclassad. Each ClassAd being evaluated is a :class:`Frame`; an
unscoped name is looked up in the current frame, then in the lexically enclosing
ones, and (for the two ads of a match) finally in the other ad. A match is laid out
exactly as libclassad's MatchClassAd lays it out::

    [ lCtx = [ ad = .LEFT; my = .LEFT; other = .RIGHT; target = .RIGHT ];
      rCtx = [ ad = .RIGHT; my = .RIGHT; other = .LEFT; target = .LEFT ];
      LEFT = <my ad>; RIGHT = <target ad>; symmetricMatch = ...; ... ]

with MY's parent scope ``lCtx`` and TARGET's ``rCtx``. So ``TARGET.x`` is an ordinary
attribute reference that finds ``target`` in the context ad. The compiler short-cuts
that path (``scoped_ref``) when the ad itself does not define ``MY``/``TARGET``.

A reference to an attribute whose evaluation is already in progress (a cycle)
evaluates to UNDEFINED, as in libclassad 25.x.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, Final

from epcore.classad import ast
from epcore.classad.calls import EvalContext, FunctionTable
from epcore.classad.cnum import c_int32
from epcore.classad.values import ERROR, UNDEFINED, RelTime, Value

if TYPE_CHECKING:
    from epcore.classad.classad import Binding, ClassAd

Code = Callable[["State", "Frame | None"], Value]

# Attribute-evaluation depth at which evaluation gives up with ERROR, as libclassad's
# depth limit does. Each level costs a few Python frames, so this stays well inside
# Python's default recursion limit.
MAX_DEPTH: Final = 200

_SPECIAL_NAMES: Final = frozenset({"toplevel", "root", "self", "my", "parent", "currenttime"})
# Every name defined by the match layout's root and context ads.
_MATCH_NAMES: Final = frozenset(
    {
        "ad",
        "my",
        "other",
        "target",
        "lctx",
        "rctx",
        "left",
        "right",
        "leftrankvalue",
        "rightrankvalue",
        "symmetricmatch",
        "leftmatchesright",
        "rightmatchesleft",
    }
)


class EvaluationFailure(Exception):
    """libclassad's failed evaluation (as opposed to an ERROR value).

    A failure abandons the whole evaluation, whatever operator or function is around it;
    the entry points turn it into ERROR. It happens for ``.name`` with no ad at all and
    when references nest beyond the depth bound.
    """


class Frame:
    """One ad on the scope chain: the ad, its lexical parent, and its alternate scope."""

    __slots__ = ("ad", "alternate", "parent")

    def __init__(self, ad: ClassAd, parent: Frame | None, alternate: Frame | None = None) -> None:
        self.ad = ad
        self.parent = parent
        self.alternate = alternate


class State:
    """Everything one top-level evaluation carries: context, functions, scopes, cycle guard.

    For a match, only MY's frame (and TARGET's, when there is a target) exist at first;
    the context ads and the root are built by :meth:`layout` the first time a lookup
    climbs past MY or TARGET, which most evaluations never do.
    """

    __slots__ = (
        "active",
        "context",
        "depth",
        "functions",
        "left",
        "lexical_ads",
        "list_sources",
        "made_ads",
        "right",
        "root",
        "walk",
        "walked",
    )

    def __init__(
        self,
        context: EvalContext,
        functions: FunctionTable,
        left: Frame | None = None,
        right: Frame | None = None,
    ) -> None:
        self.context = context
        self.functions = functions
        self.root: Frame | None = None
        self.left = left
        self.right = right
        self.active: set[int] = set()
        self.depth = 0
        # May code not yet compiled be walked (interpreter.WARM_UP), and was some? A walk
        # that runs out of stack is run again compiled (Expr and ClassAd.evaluate).
        self.walk = True
        self.walked = False
        # List values built from list literals, by id, with the literal they came from:
        # libclassad prints such a list as its unevaluated expressions.
        self.list_sources: dict[int, tuple[list[Value], ast.ListExpr]] | None = None
        # Ad literals that keep the scope where they were written (a moved call's arguments).
        self.lexical_ads: tuple[frozenset[ast.Node], Frame] | None = None
        # Ads made from ad literals, by literal and enclosing ad (see make_ad).
        self.made_ads: dict[tuple[int, int], tuple[ast.AdExpr, ClassAd | None, ClassAd]] | None = (
            None
        )

    def layout(self) -> Frame:
        """Build the match's root and context frames (once) and return the root."""
        root = self.root
        if root is not None:
            return root
        from epcore.classad.classad import ClassAd

        left = self.left
        assert left is not None, "only a match has a layout"
        right = self.right
        if right is None:
            right = self.right = Frame(ClassAd(), None, left)
        root_ad = ClassAd._from_entries(_match_template())
        root_ad._set_value("LEFT", left.ad)
        root_ad._set_value("RIGHT", right.ad)
        root = Frame(root_ad, None)
        left.parent = Frame(_context_ad(root_ad, "lctx"), root)
        right.parent = Frame(_context_ad(root_ad, "rctx"), root)
        left.alternate = right
        right.alternate = left
        self.root = root
        return root

    def now(self) -> float:
        """The evaluation's idea of the current time."""
        now = self.context.now
        return time.time() if now is None else now

    def rng(self) -> random.Random:
        """The random source of the evaluation."""
        rng = self.context.rng
        return rng if rng is not None else random.Random()


# -- bindings -----------------------------------------------------------------------------


def evaluate_binding(state: State, frame: Frame, binding: Binding) -> Value:
    """Evaluate an attribute's expression in the frame that holds it, guarding cycles."""
    constant = binding.constant
    if constant is not NOT_CONSTANT:
        return constant  # type: ignore[return-value]
    key = id(binding)
    active = state.active
    if key in active:
        return UNDEFINED
    if state.depth >= MAX_DEPTH:
        raise EvaluationFailure("attribute references nest too deeply")
    active.add(key)
    state.depth += 1
    try:
        return binding.code(state)(state, frame)
    finally:
        state.depth -= 1
        active.discard(key)


class _NotConstant:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_CONSTANT"


NOT_CONSTANT: Final = _NotConstant()


# -- frames -------------------------------------------------------------------------------


def frame_of(state: State, ad: ClassAd) -> Frame:
    """The frame in which a ClassAd value is looked into."""
    left = state.left
    if left is not None:
        if ad is left.ad:
            return left
        right = state.right
        if right is not None and ad is right.ad:
            return right
    parent = ad._scope
    return Frame(ad, parent)


def lookup(state: State, start: Frame, key: str) -> tuple[Binding, Frame] | Value | None:
    """libclassad's LookupInScope: the binding and its frame, a special value, or None."""
    current: Frame | None = start
    root = state.root
    while current is not None:
        binding = current.ad._bindings.get(key)
        if binding is not None:
            return (binding, current)
        if current is root:
            superscope = None
        else:
            superscope = current.parent
            if (
                superscope is None
                and root is None
                and state.left is not None
                and (current is state.left or current is state.right)
            ):
                if key not in _MATCH_NAMES and key not in _SPECIAL_NAMES:
                    # Above MY and TARGET only the match's own names live; skip building them.
                    return None
                root = state.layout()
                superscope = current.parent
        if key not in _SPECIAL_NAMES:
            current = superscope
            if current is start:
                return None
            continue
        if key == "toplevel" or key == "root":
            if root is None and state.left is not None:
                root = state.layout()
            return root.ad if root is not None else ERROR
        if key == "self" or key == "my":
            return current.ad
        if key == "parent":
            return superscope.ad if superscope is not None else None
        return int(state.now())  # CurrentTime, old ClassAds' alias of time()
    return None


def _resolve(state: State, frame: Frame, key: str) -> Value:
    found = lookup(state, frame, key)
    if found is None:
        alternate = frame.alternate
        if alternate is None:
            return UNDEFINED
        found = lookup(state, alternate, key)
        if found is None:
            return UNDEFINED
    if type(found) is tuple:
        binding, holder = found
        return evaluate_binding(state, holder, binding)
    return found  # type: ignore[return-value]


def ref(state: State, frame: Frame | None, key: str) -> Value:
    """An unscoped reference ``name`` (``key`` is the lower-cased name)."""
    if frame is None:
        return UNDEFINED
    binding = frame.ad._bindings.get(key)
    if binding is not None:
        constant = binding.constant
        if constant is not NOT_CONSTANT:
            return constant  # type: ignore[return-value]
        return evaluate_binding(state, frame, binding)
    return _resolve(state, frame, key)


def target_ref(state: State, frame: Frame | None, key: str) -> Value:
    """``TARGET.name``: the hot path of two-ad evaluation, without the context-ad detour."""
    right = state.right
    if (
        right is not None
        and frame is state.left
        and frame is not None
        and "target" not in frame.ad._bindings
    ):
        binding = right.ad._bindings.get(key)
        if binding is not None:
            constant = binding.constant
            if constant is not NOT_CONSTANT:
                return constant  # type: ignore[return-value]
            return evaluate_binding(state, right, binding)
    return scoped_ref(state, frame, "target", key)


def absolute_ref(state: State, frame: Frame | None, key: str) -> Value:
    """``.name``: a name looked up from the root scope.

    Without any ad there is no root scope, and libclassad fails the whole evaluation.
    """
    root = state.root
    if root is None and state.left is not None:
        root = state.layout()
    if root is None:
        raise EvaluationFailure(f"absolute reference .{key} with no ad to start from")
    return _resolve(state, root, key)


def select(state: State, base: Value, key: str) -> Value:
    """``base.name``: look into a ClassAd value, or into each ClassAd of a list."""
    from epcore.classad.classad import ClassAd

    if base is UNDEFINED:
        return UNDEFINED
    if isinstance(base, ClassAd):
        frame = frame_of(state, base)
        found = lookup(state, frame, key)
        if found is None:
            return UNDEFINED
        if type(found) is tuple:
            binding, holder = found
            return evaluate_binding(state, holder, binding)
        return found  # type: ignore[return-value]
    if type(base) is list:
        # libclassad applies the selection to each element: an undefined element selects
        # to UNDEFINED, a nested list to a nested list, anything else but an ad to ERROR.
        # It keeps each result as a literal (_as_literal).
        return [_as_literal(state, select(state, item, key)) for item in base]
    return ERROR


def _as_literal(state: State, value: Value) -> Value:
    """A value as libclassad's literal of it, made by a selection over a list.

    A relative time's literal holds (int) of its seconds and evaluates to a real. An ad or a
    list is copied out of every scope: what its attributes or elements find beyond the ad
    itself (MY, TARGET, enclosing ads) is UNDEFINED, as libclassad reads the copy later.
    """
    from epcore.classad.classad import ClassAd

    if isinstance(value, RelTime):
        return float(c_int32(value.secs))
    if isinstance(value, ClassAd):
        copy = ClassAd()
        copy._bindings = dict(value._bindings)
        return copy
    if type(value) is list and state.list_sources is not None:
        source = state.list_sources.get(id(value))
        if source is not None and source[0] is value:
            from epcore.classad.compiler import compile_node

            return compile_node(source[1])(state, None)
    return value


def scoped_ref(state: State, frame: Frame | None, scope_key: str, key: str) -> Value:
    """``MY.name`` / ``TARGET.name`` and friends, short-cutting the match context ads."""
    left = state.left
    if left is not None and frame is not None and scope_key not in frame.ad._bindings:
        right = state.right
        own_side = _CONTEXT_SIDE.get(scope_key)
        if own_side is not None and right is not None:
            if frame is left:
                return _in_frame(state, left if own_side else right, key)
            if frame is right:
                return _in_frame(state, right if own_side else left, key)
        elif own_side is True and frame is left:
            return _in_frame(state, left, key)
    return select(state, ref(state, frame, scope_key), key)


def _in_frame(state: State, frame: Frame, key: str) -> Value:
    binding = frame.ad._bindings.get(key)
    if binding is not None:
        return evaluate_binding(state, frame, binding)
    found = lookup(state, frame, key)
    if found is None:
        return UNDEFINED
    if type(found) is tuple:
        binding, holder = found
        return evaluate_binding(state, holder, binding)
    return found  # type: ignore[return-value]


# Which match ad a context name names, seen from MY or TARGET (see lCtx / rCtx above):
# True for the frame's own ad, False for the other one.
_CONTEXT_SIDE: Final[dict[str, bool]] = {"my": True, "ad": True, "target": False, "other": False}


def subscript(state: State, base: Value, index: Value) -> Value:
    """``list[i]`` and ``ad["name"]``."""
    from epcore.classad.classad import ClassAd

    if base is ERROR or index is ERROR:
        return ERROR
    if base is UNDEFINED or index is UNDEFINED:
        return UNDEFINED
    if type(base) is list:
        if type(index) is not int:
            return ERROR
        # libclassad reads the index into a C int: only its low 32 bits count.
        position = ((index + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
        if position < 0 or position >= len(base):
            return ERROR
        return base[position]
    if isinstance(base, ClassAd):
        if type(index) is not str:
            return ERROR
        return select(state, base, index.lower())
    return ERROR


def make_list(
    state: State, frame: Frame | None, node: ast.ListExpr, codes: tuple[Code, ...]
) -> list[Value]:
    """The value of a list literal.

    libclassad evaluates list elements only when something reads them, so an element
    whose evaluation fails (``{.x}`` with no ad) does not fail the list itself; epcore,
    which evaluates elements at once, keeps such an element as ERROR.
    """
    items: list[Value] = []
    for code in codes:
        try:
            items.append(code(state, frame))
        except EvaluationFailure:
            items.append(ERROR)
    sources = state.list_sources
    if sources is None:
        sources = state.list_sources = {}
    sources[id(items)] = (items, node)
    return items


def make_ad(state: State, frame: Frame | None, node: ast.AdExpr) -> ClassAd:
    """The ClassAd value of a nested ad literal, scoped inside ``frame``."""
    from epcore.classad.classad import ClassAd

    # One ad per literal and enclosing ad in an evaluation, as libclassad's literal is one
    # object: a reference that comes back to an attribute of it through a selection
    # ([b = [d = b.d]].b.d) is then the cycle it is (UNDEFINED), not a new ad each time.
    lexical = state.lexical_ads
    if lexical is not None and node in lexical[0]:
        frame = lexical[1]
    made = state.made_ads
    if made is None:
        made = state.made_ads = {}
    holder = frame.ad if frame is not None else None
    key = (id(node), id(holder))
    found = made.get(key)
    if found is not None:
        return found[2]
    ad = ClassAd._from_node(node)
    ad._scope = frame
    made[key] = (node, holder, ad)  # the node and holder too, so that their ids stay theirs
    return ad


# -- the match context --------------------------------------------------------------------


@cache
def _match_template() -> tuple[tuple[str, ast.Node], ...]:
    from epcore.classad.parser import parse_ad_node

    return parse_ad_node(
        "[ lCtx = [ ad = .LEFT; my = .LEFT; other = .RIGHT; target = .RIGHT ];"
        "  rCtx = [ ad = .RIGHT; my = .RIGHT; other = .LEFT; target = .LEFT ];"
        "  leftRankValue = LEFT.rank; rightRankValue = RIGHT.rank;"
        "  symmetricMatch = RIGHT.requirements && LEFT.requirements;"
        "  leftMatchesRight = RIGHT.requirements; rightMatchesLeft = LEFT.requirements ]"
    ).attrs


def _context_ad(root_ad: ClassAd, key: str) -> ClassAd:
    binding = root_ad._bindings[key]
    node = binding.node
    assert type(node) is ast.AdExpr
    from epcore.classad.classad import ClassAd

    return ClassAd._from_node(node)


RUNTIME_NAMES: Final[Mapping[str, Any]] = {
    "ref": ref,
    "absolute_ref": absolute_ref,
    "scoped_ref": scoped_ref,
    "target_ref": target_ref,
    "select": select,
    "subscript": subscript,
    "make_ad": make_ad,
    "make_list": make_list,
}
"""What generated code may call, besides the operators."""
