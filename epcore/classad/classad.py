"""ClassAds and expressions: the objects users hold.

A :class:`ClassAd` maps attribute names (case-insensitive, spelling preserved) to
:class:`Expr` objects. Evaluation with a MY ad always happens in a match context, as in
HTCondor's daemons: ``MY.x`` is the ad's own ``x``, ``TARGET.x`` the target's (UNDEFINED
without a target), and an unscoped name that the ad lacks is looked up in the target.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, MutableMapping
from functools import cache
from math import copysign
from typing import Any, Final

from epcore.classad import ast, interpreter
from epcore.classad.calls import EvalContext, FunctionTable
from epcore.classad.compiler import compile_node
from epcore.classad.runtime import (
    NOT_CONSTANT,
    Code,
    EvaluationFailure,
    Frame,
    State,
    evaluate_binding,
    ref,
)
from epcore.classad.unparse import (
    attribute_name,
    old_attribute_name,
    old_literal,
    unparse,
    unparse_attributes,
)
from epcore.classad.values import ERROR, UNDEFINED, AbsTime, RelTime, Value, _Error, _Undefined

_DEFAULT_CONTEXT: Final = EvalContext()

# Each ad keys its bindings by the lowered name. Lowering makes a new string for every
# attribute set, and a daemon's ads hold the same hundred names over and over (a startd's
# slot ads about 95 each, rebuilt at every change): the key of a spelling is made once and
# interned, so that all ads share one string per name (5 KB per dynamic slot). Emptied when
# full, as ads with ever new names (a collector's) would otherwise grow it for good.
_KEYS: Final[dict[str, str]] = {}
_MAX_KEYS: Final = 8192


def _new_key(name: str) -> str:
    """The binding key of ``name``, remembered for the next ad that sets it."""
    key = sys.intern(name.lower())
    if len(_KEYS) >= _MAX_KEYS:
        _KEYS.clear()
    _KEYS[name] = key
    return key


# The literals daemons set most when they build ads (booleans, small counts and sizes):
# one shared node each, as nodes are immutable, instead of one per attribute per build.
_TRUE: Final = ast.Literal(True)
_FALSE: Final = ast.Literal(False)
_SMALL_INTS: Final = tuple(ast.Literal(n) for n in range(256))


@cache
def default_functions() -> FunctionTable:
    """The built-in function table (sections A and B of the function reference)."""
    from epcore.classad.functions import builtin_functions

    return builtin_functions()


def _default_table() -> FunctionTable:
    """The function table of an evaluation with the default context and no table given."""
    functions = _DEFAULT_CONTEXT.functions
    return default_functions() if functions is None else functions


class Binding:
    """One attribute of one ad: its name as written, its expression, its compiled code."""

    __slots__ = ("_code", "_old", "_piece", "_runs", "constant", "name", "node")

    def __init__(self, name: str, node: ast.Node, constant: object = NOT_CONSTANT) -> None:
        self.name = name
        self.node = node
        self._code: Code | None = None
        # Evaluations walked so far; the one after interpreter.WARM_UP compiles.
        self._runs = 0
        self._old: str | None = None
        self._piece: str | None = None
        if constant is NOT_CONSTANT and type(node) is ast.Literal:
            constant = ast.literal_value(node.value)
        self.constant = constant

    def __reduce__(self) -> tuple[type[Binding], tuple[object, ...]]:
        # The compiled code is generated Python, which does not pickle: it is made again.
        if self.constant is NOT_CONSTANT:
            return (Binding, (self.name, self.node))
        return (Binding, (self.name, self.node, self.constant))

    def old_line(self) -> str:
        """``Name = Expr`` in old syntax, made once: copies of an ad share their bindings,
        and the wire sends a collector's stored ads over and over."""
        line = self._old
        if line is None:
            text = unparse(self.node, old_literal, old_attribute_name)
            line = self._old = f"{old_attribute_name(self.name)} = {text}"
        return line

    def piece(self) -> str:
        """``Name = Expr`` as :meth:`ClassAd.line` writes it, made once: an ad rebuilt with
        most of its bindings kept (a startd's slot ads) is written again without unparsing
        them again."""
        piece = self._piece
        if piece is None:
            piece = self._piece = f"{attribute_name(self.name)} = {unparse(self.node)}"
        return piece

    def code(self, state: State) -> Code:
        """The attribute's code for ``state``: a walk of its tree for its first evaluations
        (interpreter.WARM_UP), then its compiled code."""
        code = self._code
        if code is None:
            runs = self._runs
            if runs < interpreter.WARM_UP and state.walk:
                self._runs = runs + 1
                state.walked = True
                return interpreter.walker(self.node)
            code = self._code = compile_node(self.node)
        return code


class Expr:
    """A parsed ClassAd expression."""

    __slots__ = ("_code", "_runs", "node")

    def __init__(self, node: ast.Node) -> None:
        self.node = node
        # Walked for its first evaluations, then compiled and kept, as an attribute's
        # Binding does (interpreter.WARM_UP).
        self._code: Code | None = None
        self._runs = 0

    def __reduce__(self) -> tuple[type[Expr], tuple[ast.Node]]:
        # The compiled code is generated Python, which does not pickle: it is made again.
        return (Expr, (self.node,))

    def evaluate(
        self,
        my: ClassAd | None = None,
        target: ClassAd | None = None,
        *,
        context: EvalContext | None = None,
        functions: FunctionTable | None = None,
    ) -> Value:
        """Evaluate with ``my`` as MY and ``target`` as TARGET (both optional)."""
        code = self._code
        node = self.node
        if code is None and type(node) is ast.Literal:
            # A constant (a policy's ``KILL = False``) needs no evaluation state at all.
            return ast.literal_value(node.value)
        if my is not None and target is None and context is None and functions is None:
            # The common case (a policy expression against one ad), without _start's choices.
            frame: Frame | None = Frame(my, None)
            state = State(_DEFAULT_CONTEXT, _default_table(), frame)
        else:
            state, frame = _start(my, target, context, functions)
        if code is None:
            runs = self._runs
            if runs < interpreter.WARM_UP:
                self._runs = runs + 1
                state.walked = True
                code = interpreter.walker(node)
            else:
                code = self._code = compile_node(node)
        try:
            return code(state, frame)
        except EvaluationFailure:
            return ERROR
        except RecursionError:
            # See ClassAd.evaluate; a walk that ran out of stack is run again compiled.
            if not state.walked:
                return ERROR
        state, frame = _start(my, target, context, functions)
        state.walk = False
        code = self._code = compile_node(node)
        try:
            return code(state, frame)
        except (EvaluationFailure, RecursionError):
            return ERROR

    def __str__(self) -> str:
        return unparse(self.node)

    def __repr__(self) -> str:
        return f"Expr({unparse(self.node)!r})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not Expr:
            return NotImplemented
        return self.node == other.node

    def __hash__(self) -> int:
        return hash(self.node)


def _start(
    my: ClassAd | None,
    target: ClassAd | None,
    context: EvalContext | None,
    functions: FunctionTable | None,
) -> tuple[State, Frame | None]:
    context = context or _DEFAULT_CONTEXT
    if functions is None:
        functions = context.functions
    table = default_functions() if functions is None else functions
    if my is None and target is None:
        return State(context, table), None
    if my is None:
        my = ClassAd()
    left = Frame(my, None)
    right = None
    if target is not None:
        right = Frame(target, None, left)
        left.alternate = right
    return State(context, table, left, right), left


def to_node(value: object) -> ast.Node:
    """The expression tree for a Python value, an Expr or a ClassAd."""
    if type(value) is Expr:
        return value.node
    # The common cases when daemons build ads: no checks needed.
    if type(value) is int:
        if 0 <= value < 256:
            return _SMALL_INTS[value]
        if -(1 << 63) <= value < (1 << 63):
            return ast.Literal(value)
    if type(value) is bool:
        return _TRUE if value else _FALSE
    if type(value) is float:
        return ast.Literal(value)
    if isinstance(value, ClassAd):
        return ast.AdExpr(tuple((b.name, b.node) for b in value._bindings.values()))
    if value is None:
        return ast.Literal(UNDEFINED)
    if isinstance(value, str):
        if "\x00" in value:
            # libclassad strings are C strings; a NUL would silently cut the value short.
            raise ValueError(f"ClassAd strings cannot contain NUL characters: {value!r}")
        try:
            value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError as error:
            raise ValueError(f"ClassAd strings must be encodable bytes: {value!r}") from error
    if isinstance(value, (_Undefined, _Error, bool, float, str, AbsTime, RelTime)):
        return ast.Literal(value)
    if isinstance(value, int):
        if not -(1 << 63) <= value < (1 << 63):
            raise ValueError(f"integer {value} does not fit in a ClassAd (signed 64-bit)")
        return ast.Literal(value)
    if isinstance(value, (list, tuple)):
        return ast.ListExpr(tuple(to_node(item) for item in value))
    if isinstance(value, Mapping):
        return ast.AdExpr(tuple((str(k), to_node(v)) for k, v in value.items()))
    raise TypeError(f"cannot store a {type(value).__name__} in a ClassAd: {value!r}")


class ClassAd(MutableMapping[str, Expr]):
    """A ClassAd: attribute names (case-insensitive, spelling kept) bound to expressions."""

    __slots__ = ("_bindings", "_scope")

    def __init__(self, attributes: Mapping[str, Any] | None = None) -> None:
        self._bindings: dict[str, Binding] = {}
        self._scope: Frame | None = None
        if attributes:
            self.update(attributes)

    @classmethod
    def _from_entries(cls, entries: tuple[tuple[str, ast.Node], ...]) -> ClassAd:
        ad = cls()
        bindings = ad._bindings
        for name, node in entries:
            key = _KEYS.get(name)
            if key is None:
                key = _new_key(name)
            old = bindings.get(key)
            bindings[key] = Binding(old.name if old is not None else name, node)
        return ad

    @classmethod
    def _from_node(cls, node: ast.AdExpr) -> ClassAd:
        return cls._from_entries(node.attrs)

    def _set_value(self, name: str, value: ClassAd) -> None:
        # Used by the match layout: LEFT and RIGHT must evaluate to these very objects.
        self._bindings[name.lower()] = Binding(name, to_node(value), value)

    # -- mapping protocol ------------------------------------------------------------------
    def __getitem__(self, name: str) -> Expr:
        return Expr(self._bindings[name.lower()].node)

    def __setitem__(self, name: str, value: object) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"ClassAd attribute names are non-empty strings, not {name!r}")
        key = _KEYS.get(name)
        if key is None:
            key = _new_key(name)
        old = self._bindings.get(key)
        spelled = old.name if old is not None else name
        self._bindings[key] = Binding(spelled, to_node(value))

    def __delitem__(self, name: str) -> None:
        del self._bindings[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return (binding.name for binding in list(self._bindings.values()))

    def __len__(self) -> int:
        return len(self._bindings)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._bindings

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClassAd):
            return NotImplemented
        mine, theirs = self._bindings, other._bindings
        return mine.keys() == theirs.keys() and all(
            mine[key].node == theirs[key].node for key in mine
        )

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return unparse_attributes(tuple((b.name, b.node) for b in self._bindings.values()))

    def __repr__(self) -> str:
        return f"ClassAd({str(self)!r})"

    def line(self) -> str:
        """The same text as ``str(ad)``, from each binding's :meth:`Binding.piece`, kept in
        the binding. For ads written again and again that share their bindings with their
        earlier versions (slot ads, see ``SharedBindings``), where only the changed ones cost
        an unparse; elsewhere ``str`` is as fast and keeps nothing."""
        return "[ " + "; ".join([binding.piece() for binding in self._bindings.values()]) + " ]"

    # -- ClassAd operations ----------------------------------------------------------------
    def lookup(self, name: str) -> Expr | None:
        """The expression bound to ``name``, or None."""
        binding = self._bindings.get(name.lower())
        return None if binding is None else Expr(binding.node)

    def name_of(self, name: str) -> str | None:
        """The spelling under which ``name`` is stored, or None."""
        binding = self._bindings.get(name.lower())
        return None if binding is None else binding.name

    def evaluate(
        self,
        name: str,
        target: ClassAd | None = None,
        *,
        context: EvalContext | None = None,
        functions: FunctionTable | None = None,
    ) -> Value:
        """Evaluate attribute ``name`` of this ad (as MY), against ``target`` when given."""
        key = name.lower()
        binding = self._bindings.get(key)
        if binding is not None and binding.constant is not NOT_CONSTANT:
            # A literal is its value in any state (evaluate_binding's first step): the daemons'
            # reads of their ads' numbers and names need no evaluation state.
            return binding.constant  # type: ignore[return-value]
        state, frame = _start(self, target, context, functions)
        assert frame is not None
        try:
            if binding is not None:
                return evaluate_binding(state, frame, binding)
            return ref(state, frame, key)
        except EvaluationFailure:
            return ERROR
        except RecursionError:
            # An expression within the parser's budget evaluates in CONSUMER_FRAMES frames,
            # but attribute references nest evaluations (up to runtime.MAX_DEPTH of them):
            # when they exhaust the stack, the evaluation fails, as libclassad's does when it
            # nests too deeply. Walked trees (interpreter.WARM_UP) take more of the stack
            # than compiled code, so such an evaluation is first run again compiled.
            if not state.walked:
                return ERROR
        state, frame = _start(self, target, context, functions)
        assert frame is not None
        state.walk = False
        try:
            if binding is not None:
                return evaluate_binding(state, frame, binding)
            return ref(state, frame, key)
        except (EvaluationFailure, RecursionError):
            return ERROR

    def copy(self) -> ClassAd:
        """A shallow copy (expressions are immutable, so this is a full copy)."""
        ad = ClassAd()
        ad._bindings = dict(self._bindings)
        return ad


class SharedBindings:
    """Attribute values that many ads set alike, each bound once and the binding shared.

    A startd's slot ads set the same values over and over (``Cpus = 1``, ``State =
    "Claimed"``, the machine's strings and sizes: all but a handful of a dynamic slot's 86
    attributes are the same in every dynamic slot), and each ``ad[name] = value`` makes a
    binding and a literal of its own: about 12 KB per slot ad. Policy expressions set from
    the configuration are one tree each, bound again in every slot's ad. :meth:`set` gives every ad
    that sets the same spelling to the same scalar the same binding, as copies of an ad
    share theirs (a binding is immutable; its unparsed line and compiled code are made once
    for all). Other values (expressions, lists, ads) are set as ``ad[name] = value`` does.
    The table holds ``limit`` bindings at most and is emptied when full, so that values that
    never come back (times) cannot grow it for good.
    """

    __slots__ = ("_limit", "_table")

    def __init__(self, limit: int = 4096) -> None:
        self._table: dict[tuple[str, type, object], Binding] = {}
        self._limit = limit

    def __len__(self) -> int:
        return len(self._table)

    def set(self, ad: ClassAd, name: str, value: object) -> None:
        """``ad[name] = value``, with the binding shared when ``value`` is a plain scalar
        or an :class:`Expr`."""
        node: ast.Node | None = None
        entry: tuple[str, type, object]
        if type(value) is Expr:
            # By the tree's identity: the table's binding holds the tree, so the id stays
            # its own while the entry lives (comparing trees would walk them).
            node = value.node
            entry = (name, Expr, id(node))
        elif type(value) is float:
            if value != value or (value == 0.0 and copysign(1.0, value) < 0):
                # NaN equals no key, and -0.0 would find 0.0's literal.
                ad[name] = value
                return
            entry = (name, float, value)
        elif type(value) is str or type(value) is int or type(value) is bool:
            entry = (name, type(value), value)
        else:
            ad[name] = value
            return
        table = self._table
        binding = table.get(entry)
        if binding is None:
            binding = Binding(name, to_node(value) if node is None else node)
            if len(table) >= self._limit:
                table.clear()
            table[entry] = binding
        key = _KEYS.get(name)
        if key is None:
            key = _new_key(name)
        bindings = ad._bindings
        old = bindings.get(key)
        if old is not None and old.name != name:
            binding = Binding(old.name, binding.node)  # the first spelling stays, as ad[name]
        bindings[key] = binding
