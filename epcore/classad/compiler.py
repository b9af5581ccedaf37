"""Compile an AST into one Python function, so evaluation does not walk the tree.

Each expression becomes straight-line Python: every sub-expression lands in a local
temporary, short-circuit operators become ``if`` blocks, common same-type numeric
comparisons run inline and everything else calls the operator functions in
:mod:`epcore.classad.operators`. Sub-expressions built only from literals are folded
at compile time (they are pure, so this cannot change a result). Blocks nested deeper
than a fixed limit move into helper functions, keeping the generated source within
what CPython's own compiler accepts.

Compiled code is cached by AST (nodes are hashable values), so two ads holding the
same expression share one function.

Two paths are inlined because nearly every evaluation takes them: an unscoped reference
to an attribute of the ad that holds a constant (most attributes of a slot or job ad) reads
the binding's constant without calling :func:`~epcore.classad.runtime.ref`, and ``+``,
``-``, ``*`` on two reals run as Python arithmetic; everything else calls the runtime and
the operator functions. (Integers are left to the operators: inlining their 64-bit wrap
doubled the time Python takes to compile the generated source, which every new tree pays.)
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Final

from epcore.classad import ast, operators
from epcore.classad.invocation import call_function
from epcore.classad.runtime import NOT_CONSTANT, RUNTIME_NAMES, Code
from epcore.classad.values import ERROR, UNDEFINED, RelTime, Value

_MAX_NESTING: Final = 30
_COMPARISONS: Final = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}
_ARITHMETIC: Final = frozenset({"+", "-", "*"})
# The bindings of the ad being evaluated, read once per generated function.
_BINDINGS_PROLOGUE: Final = "_B = F.ad._bindings if F is not None else NO_BINDINGS"


class _Function:
    """The body of one generated function."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lines: list[str] = []
        self.indent = 1
        # Whether the body reads _B (then the prologue defines it first).
        self.reads_bindings = False

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)


class _Generator:
    def __init__(self) -> None:
        self.namespace: dict[str, Any] = dict(RUNTIME_NAMES, call_function=call_function)
        self.namespace.update(
            UNDEFINED=UNDEFINED,
            ERROR=ERROR,
            truth=operators.truth,
            and_right=operators.and_right,
            or_right=operators.or_right,
            unary=operators.unary,
            NOT_CONSTANT=NOT_CONSTANT,
            NO_BINDINGS={},
            INF=math.inf,
        )
        for op, function in operators.BINARY.items():
            self.namespace[self._operator_name(op)] = function
        self.functions: list[_Function] = []
        self.counter = 0

    @staticmethod
    def _operator_name(op: str) -> str:
        names = {
            "+": "op_add", "-": "op_sub", "*": "op_mul", "/": "op_div", "%": "op_mod",
            "<": "op_lt", "<=": "op_le", ">": "op_gt", ">=": "op_ge", "==": "op_eq",
            "!=": "op_ne", "is": "op_is", "isnt": "op_isnt", "&": "op_and", "|": "op_or",
            "^": "op_xor", "<<": "op_shl", ">>": "op_shr", ">>>": "op_ushr",
        }  # fmt: skip
        return names[op]

    def fresh(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"_{prefix}{self.counter}"

    def constant(self, value: object) -> str:
        kind = type(value)
        if value is UNDEFINED:
            return "UNDEFINED"
        if value is ERROR:
            return "ERROR"
        if kind is bool or kind is int or kind is str:
            return repr(value)
        if kind is float and math.isfinite(value) and value != 0.0:  # type: ignore[arg-type]
            return repr(value)
        name = self.fresh("k")
        self.namespace[name] = value
        return name

    def function(self, node: ast.Node) -> str:
        """Generate a function evaluating ``node``; return its name."""
        body = _Function(self.fresh("f"))
        self.functions.append(body)
        result = self.expression(node, body)
        body.emit(f"return {result}")
        return body.name

    # -- expressions -------------------------------------------------------------------
    def expression(self, node: ast.Node, fn: _Function) -> str:
        """Emit code computing ``node`` into ``fn``; return a name or constant holding it."""
        folded = _fold(node)
        if folded is not _NOT_FOLDED:
            return self.constant(folded)
        kind = type(node)
        if kind is ast.Paren:
            return self.expression(node.inner, fn)  # type: ignore[union-attr]
        if kind is ast.AttrRef:
            return self.reference(node, fn)  # type: ignore[arg-type]
        if kind is ast.Unary:
            operand = self.expression(node.operand, fn)  # type: ignore[union-attr]
            target = self.fresh()
            fn.emit(f"{target} = unary({node.op!r}, {operand})")  # type: ignore[union-attr]
            return target
        if kind is ast.Binary:
            # Dispatched here, not through binary(), so that each level of a long chain
            # costs two frames of recursion (the parser's budget is counted on that).
            if node.op in ("&&", "||"):  # type: ignore[union-attr]
                if fn.indent > _MAX_NESTING:
                    return self.call_helper(node, fn)
                return self.logical(node, fn)  # type: ignore[arg-type]
            return self.binary(node, fn)  # type: ignore[arg-type]
        if kind in (ast.Ternary, ast.Elvis) and fn.indent > _MAX_NESTING:
            return self.call_helper(node, fn)
        if kind is ast.Ternary:
            return self.ternary(node, fn)  # type: ignore[arg-type]
        if kind is ast.Elvis:
            return self.elvis(node, fn)  # type: ignore[arg-type]
        if kind is ast.Subscript:
            base = self.expression(node.base, fn)  # type: ignore[union-attr]
            index = self.expression(node.index, fn)  # type: ignore[union-attr]
            target = self.fresh()
            fn.emit(f"{target} = subscript(S, {base}, {index})")
            return target
        if kind is ast.Call:
            return self.call(node, fn)  # type: ignore[arg-type]
        if kind is ast.ListExpr:
            target = self.fresh()
            items = node.items  # type: ignore[union-attr]
            if all(type(item) is ast.Literal and type(item.value) is not RelTime for item in items):
                constants = [self.expression(item, fn) for item in items]
                fn.emit(f"{target} = [{', '.join(constants)}]")
            else:
                # Kept with its literal, so that printing the value can show the expressions.
                codes = tuple(compile_node(item) for item in items)
                fn.emit(
                    f"{target} = make_list(S, F, {self.constant(node)}, {self.constant(codes)})"
                )
            return target
        if kind is ast.AdExpr:
            target = self.fresh()
            fn.emit(f"{target} = make_ad(S, F, {self.constant(node)})")
            return target
        raise TypeError(f"not a ClassAd AST node: {node!r}")

    def local(self, value: str, fn: _Function) -> str:
        """``value`` in a local variable, so that ``is`` tests never compare with a literal."""
        if value.startswith("_t"):
            return value
        target = self.fresh()
        fn.emit(f"{target} = {value}")
        return target

    def call_helper(self, node: ast.Node, fn: _Function) -> str:
        helper = self.function(node)
        target = self.fresh()
        fn.emit(f"{target} = {helper}(S, F)")
        return target

    def reference(self, node: ast.AttrRef, fn: _Function) -> str:
        target = self.fresh()
        key = node.name.lower()
        scope = node.scope
        if scope is None and not node.absolute:
            # A constant attribute of this ad is read here; anything else (an expression, an
            # attribute the ad lacks) takes runtime.ref, which does the same lookup first.
            fn.reads_bindings = True
            found = self.fresh("b")
            fn.emit(f"{found} = _B.get({key!r})")
            fn.emit(
                f"{target} = {found}.constant if {found} is not None and {found}.constant"
                f" is not NOT_CONSTANT else ref(S, F, {key!r})"
            )
        elif scope is None:
            fn.emit(f"{target} = absolute_ref(S, F, {key!r})")
        elif type(scope) is ast.AttrRef and scope.scope is None and not scope.absolute:
            scope_key = scope.name.lower()
            if scope_key == "target":
                fn.emit(f"{target} = target_ref(S, F, {key!r})")
            else:
                fn.emit(f"{target} = scoped_ref(S, F, {scope_key!r}, {key!r})")
        else:
            base = self.expression(scope, fn)
            fn.emit(f"{target} = select(S, {base}, {key!r})")
        return target

    def binary(self, node: ast.Binary, fn: _Function) -> str:
        op = node.op
        left = self.expression(node.left, fn)
        right = self.expression(node.right, fn)
        target = self.fresh()
        function = self._operator_name(op)
        if op in _COMPARISONS:
            fn.emit(f"{target} = {self.comparison(op, node, left, right, function)}")
        elif op in _ARITHMETIC:
            # Two reals: IEEE arithmetic, but +infinity is ERROR (operators.arithmetic).
            result = self.fresh("v")
            fn.emit(
                f"{target} = {result} if (type({left}) is float and type({right}) is float"
                f" and ({result} := {left} {op} {right}) != INF) else {function}({left}, {right})"
            )
        else:
            fn.emit(f"{target} = {function}({left}, {right})")
        return target

    def comparison(self, op: str, node: ast.Binary, left: str, right: str, function: str) -> str:
        """A comparison with an inline fast path for same-typed numbers and ASCII strings."""
        slow = f"{function}({left}, {right})"
        for value, other in ((_fold(node.right), left), (_fold(node.left), right)):
            kind = type(value)
            if kind is int or kind is float:
                # Comparing with a numeric constant: inline only when the types agree.
                return f"{left} {op} {right} if type({other}) is {kind.__name__} else {slow}"
            if kind is str and op in ("==", "!=") and value.isascii():  # type: ignore[union-attr]
                folded = repr(value.lower())  # type: ignore[union-attr]
                return (
                    f"({other}.lower() {op} {folded}) if type({other}) is str"
                    f" and {other}.isascii() else {slow}"
                )
        kind_name = self.fresh("ty")
        return (
            f"{left} {op} {right} if ({kind_name} := type({left})) is type({right})"
            f" and ({kind_name} is int or {kind_name} is float) else {slow}"
        )

    def logical(self, node: ast.Binary, fn: _Function) -> str:
        deciding, other = ("False", "True") if node.op == "&&" else ("True", "False")
        combine = "and_right" if node.op == "&&" else "or_right"
        target = self.fresh()
        left = self.local(self.expression(node.left, fn), fn)
        fn.emit(f"if {left} is {deciding}:")
        fn.indent += 1
        fn.emit(f"{target} = {deciding}")
        fn.indent -= 1
        fn.emit("else:")
        fn.indent += 1
        reading = self.fresh()
        fn.emit(f"{reading} = {left} if {left} is {other} else truth({left})")
        fn.emit(f"if {reading} is {deciding} or {reading} is ERROR:")
        fn.indent += 1
        fn.emit(f"{target} = {reading}")
        fn.indent -= 1
        fn.emit("else:")
        fn.indent += 1
        right = self.local(self.expression(node.right, fn), fn)
        fn.emit(
            f"{target} = {right} if {reading} is {other} and type({right}) is bool"
            f" else {combine}({reading}, {right})"
        )
        fn.indent -= 2
        return target

    def ternary(self, node: ast.Ternary, fn: _Function) -> str:
        target = self.fresh()
        condition = self.local(self.expression(node.cond, fn), fn)
        reading = self.fresh()
        fn.emit(
            f"{reading} = {condition} if {condition} is True or {condition} is False"
            f" else truth({condition})"
        )
        fn.emit(f"if {reading} is True:")
        fn.indent += 1
        fn.emit(f"{target} = {self.expression(node.then, fn)}")
        fn.indent -= 1
        fn.emit(f"elif {reading} is False:")
        fn.indent += 1
        fn.emit(f"{target} = {self.expression(node.otherwise, fn)}")
        fn.indent -= 1
        fn.emit("else:")
        fn.indent += 1
        fn.emit(f"{target} = {reading}")
        fn.indent -= 1
        return target

    def elvis(self, node: ast.Elvis, fn: _Function) -> str:
        target = self.fresh()
        left = self.local(self.expression(node.left, fn), fn)
        fn.emit(f"if {left} is UNDEFINED:")
        fn.indent += 1
        fn.emit(f"{target} = {self.expression(node.right, fn)}")
        fn.indent -= 1
        fn.emit("else:")
        fn.indent += 1
        fn.emit(f"{target} = {left}")
        fn.indent -= 1
        return target

    def call(self, node: ast.Call, fn: _Function) -> str:
        codes = tuple(compile_node(arg) for arg in node.args)
        target = self.fresh()
        fn.emit(
            f"{target} = call_function(S, F, {self.constant(node)}, {node.name.lower()!r},"
            f" {self.constant(codes)})"
        )
        return target

    def source(self) -> str:
        chunks = []
        for body in self.functions:
            lines = body.lines
            if body.reads_bindings:
                lines = [f"    {_BINDINGS_PROLOGUE}", *lines]
            chunks.append(f"def {body.name}(S, F):\n" + "\n".join(lines))
        return "\n\n".join(chunks) + "\n"


class _NotFolded:
    __slots__ = ()


_NOT_FOLDED: Final = _NotFolded()


def _fold(node: ast.Node) -> Value | _NotFolded:
    """The value of a sub-tree made only of scalar literals and strict operators."""
    kind = type(node)
    if kind is ast.Literal:
        return ast.literal_value(node.value)  # type: ignore[union-attr]
    if kind is ast.Paren:
        return _fold(node.inner)  # type: ignore[union-attr]
    if kind is ast.Unary:
        operand = _fold(node.operand)  # type: ignore[union-attr]
        if operand is _NOT_FOLDED:
            return _NOT_FOLDED
        return operators.unary(node.op, operand)  # type: ignore[union-attr,arg-type]
    if kind is ast.Binary and node.op in operators.BINARY:  # type: ignore[union-attr]
        left = _fold(node.left)  # type: ignore[union-attr]
        if left is _NOT_FOLDED:
            return _NOT_FOLDED
        right = _fold(node.right)  # type: ignore[union-attr]
        if right is _NOT_FOLDED:
            return _NOT_FOLDED
        return operators.BINARY[node.op](left, right)  # type: ignore[union-attr,arg-type]
    return _NOT_FOLDED


@lru_cache(maxsize=16384)
def compile_node(node: ast.Node) -> Code:
    """A Python function ``code(state, frame) -> value`` that evaluates ``node``."""
    generator = _Generator()
    entry = generator.function(node)
    namespace = generator.namespace
    exec(compile(generator.source(), "<classad>", "exec"), namespace)
    code: Code = namespace[entry]
    return code
