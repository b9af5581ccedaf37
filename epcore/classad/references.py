"""Which attributes matchmaking can read, so that ads equal on them get the same answers.

The analysis is deliberately coarse: every attribute name an expression mentions counts,
whatever its scope, and the names the bound expressions of those attributes mention count
too (in any ad), until nothing new appears. Two slots (or two jobs) whose expressions for all
those names are equal give identical results in every evaluation of a cycle. An expression
that can look names up at run time (``eval``, ``unparse``...) defeats the analysis; then the
whole ad is the key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter

import attrs

from epcore.classad import ClassAd, Expr, ast
from epcore.classad.classad import default_functions

#: Functions whose result depends on attributes their arguments do not name, or that give a
#: different answer on every call.
_DYNAMIC_FUNCTIONS = frozenset(
    {"eval", "unparse", "unresolved", "evalineachcontext", "countmatches", "random"}
)
_SCOPE_WORDS = frozenset({"my", "target", "parent", "self", "toplevel", "root"})

#: What the cycle reads from every slot besides the expressions' references.
SLOT_STATE_ATTRIBUTES = (
    "requirements",
    "rank",
    "state",
    "activity",
    "currentrank",
    "remoteuser",
    "accountinggroup",
    "retirementtimeremaining",
    "maxjobretirementtime",
    "jobstart",
    "slotweight",
    "partitionableslot",
    "dynamicslot",
    "uiddomain",
)


@attrs.define
class _Collector:
    names: set[str] = attrs.field(factory=set)
    dynamic: bool = False

    def visit(self, node: ast.Node) -> None:
        kind = type(node)
        if kind is ast.Literal:
            return
        if kind is ast.AttrRef:
            assert isinstance(node, ast.AttrRef)
            name = node.name.lower()
            if name not in _SCOPE_WORDS or node.scope is not None:
                self.names.add(name)
            if node.scope is not None:
                self.visit(node.scope)
            return
        if kind is ast.Call:
            assert isinstance(node, ast.Call)
            name = node.name.lower()
            if name in _DYNAMIC_FUNCTIONS or name not in default_functions():
                # A plugin's function may read anything, or change its answer at any time.
                self.dynamic = True
            for arg in node.args:
                self.visit(arg)
            return
        if kind is ast.AdExpr:
            assert isinstance(node, ast.AdExpr)
            for _, child in node.attrs:
                self.visit(child)
            return
        if kind is ast.ListExpr:
            assert isinstance(node, ast.ListExpr)
            for child in node.items:
                self.visit(child)
            return
        for field in attrs.fields(kind):
            value = getattr(node, field.name)
            if isinstance(value, ast.Node):
                self.visit(value)


def _literal_print(value: object) -> tuple[object, ...]:
    kind = type(value)
    if kind is float:
        # -0.0 == 0.0 and NaN != NaN in Python; ClassAd literals keep both apart.
        number = float(value)  # type: ignore[arg-type]
        return ("L", float, number.hex() if number == number else "nan")
    if kind is bool or kind is int or kind is str:
        return ("L", kind, value)
    return ("L", kind, repr(value))


def fingerprint(node: ast.Node) -> tuple[object, ...]:
    """A tree as nested tuples of plain values: equal exactly when the trees are equal, and
    compared and hashed at C speed (the AST's own comparisons walk Python methods)."""
    kind = type(node)
    if kind is ast.Literal:
        return _literal_print(node.value)  # type: ignore[union-attr]
    if kind is ast.AttrRef:
        assert isinstance(node, ast.AttrRef)
        scope = None if node.scope is None else fingerprint(node.scope)
        return ("R", node.name, scope, node.absolute)
    if kind is ast.Binary:
        assert isinstance(node, ast.Binary)
        return ("B", node.op, fingerprint(node.left), fingerprint(node.right))
    if kind is ast.Paren:
        assert isinstance(node, ast.Paren)
        return ("P", fingerprint(node.inner))
    if kind is ast.Unary:
        assert isinstance(node, ast.Unary)
        return ("U", node.op, fingerprint(node.operand))
    if kind is ast.Call:
        assert isinstance(node, ast.Call)
        return ("C", node.name, tuple(fingerprint(arg) for arg in node.args))
    if kind is ast.Ternary:
        assert isinstance(node, ast.Ternary)
        parts = (node.cond, node.then, node.otherwise)
        return ("T", *(fingerprint(part) for part in parts))
    if kind is ast.Elvis:
        assert isinstance(node, ast.Elvis)
        return ("E", fingerprint(node.left), fingerprint(node.right))
    if kind is ast.Subscript:
        assert isinstance(node, ast.Subscript)
        return ("S", fingerprint(node.base), fingerprint(node.index))
    if kind is ast.ListExpr:
        assert isinstance(node, ast.ListExpr)
        return ("LIST", tuple(fingerprint(item) for item in node.items))
    assert isinstance(node, ast.AdExpr)
    return ("AD", tuple((name, fingerprint(child)) for name, child in node.attrs))


class Canonical:
    """Cheap, hashable stand-ins for expressions: literals by type and value, other trees by
    a small number shared by all equal trees, so keys compare and hash quickly."""

    def __init__(self) -> None:
        self.numbers: dict[tuple[object, ...], int] = {}
        # By identity, holding the node so that its id cannot be reused while remembered.
        self.seen: dict[int, tuple[ast.Node, int]] = {}

    def __call__(self, expr: Expr | None) -> object:
        if expr is None:
            return None
        return self.of_node(expr.node)

    def of_node(self, node: ast.Node) -> object:
        """The stand-in of the expression ``node`` (what calling with its Expr gives)."""
        if type(node) is ast.Literal:
            return _literal_print(node.value)
        known = self.seen.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        number = self.numbers.setdefault(fingerprint(node), len(self.numbers))
        self.seen[id(node)] = (node, number)
        return number


def _lowered(names: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The names in lower case, as an ad keys its bindings."""
    return None if names is None else tuple(name.lower() for name in names)


#: ``part``'s key of an ad, from the ad and its key under a larger set of references.
Projector = Callable[[ClassAd, tuple[object, ...]], tuple[object, ...]]


@attrs.frozen
class References:
    """The attribute names (lower case) matchmaking may read; None means "all of them"."""

    names: tuple[str, ...] | None = attrs.field(converter=_lowered)
    canonical: Canonical = attrs.field(factory=Canonical, eq=False, repr=False)

    def key(self, ad: ClassAd) -> tuple[object, ...]:
        """What identifies ``ad`` for matchmaking: its expressions for the names."""
        canonical = self.canonical
        if self.names is None:
            return tuple(sorted((name.lower(), canonical(ad[name])) for name in ad))
        if type(ad) is not ClassAd:
            # A subclass may look its names up otherwise: through its own lookup.
            lookup = ad.lookup
            return tuple(canonical(lookup(name)) if name in ad else None for name in self.names)
        # The bindings themselves (names here are lower case, as the ad keys them): no Expr
        # made per name, and most names belong to the other kind of ad.
        of_node = canonical.of_node
        get = ad._bindings.get
        return tuple(
            None if (binding := get(name)) is None else of_node(binding.node) for name in self.names
        )

    def projector(
        self, part: References
    ) -> Callable[[ClassAd, tuple[object, ...]], tuple[object, ...]]:
        """A function giving ``part``'s key of an ad from the ad and its key under these
        references (without looking the names up again when ``part``'s names are among
        these)."""
        mine, theirs = self.names, part.names
        if mine is None or theirs is None or not set(theirs) <= set(mine):
            return lambda ad, key: part.key(ad)
        if not theirs:
            return lambda ad, key: ()
        where = {name: position for position, name in enumerate(mine)}
        pick = itemgetter(*(where[name] for name in theirs))
        if len(theirs) == 1:
            return lambda ad, key: (pick(key),)
        return lambda ad, key: pick(key)


class ReferenceIndex:
    """The names each attribute's bindings (in any of the ads) refer to, found once per name
    and shared by every closure asked of it."""

    def __init__(self, ads: Sequence[ClassAd]) -> None:
        self.ads = ads
        self.refers_to: dict[str, frozenset[str] | None] = {}
        self.canonical = Canonical()

    def _names_bound_to(self, name: str) -> frozenset[str] | None:
        found = self.refers_to.get(name, frozenset())
        if name in self.refers_to:
            return found
        collector = _Collector()
        canonical = self.canonical
        # Equal trees are visited once; a binding many ads share (copies, or the same line
        # decoded: formats.set_old_line) is looked at once.
        visited: set[object] = set()
        seen: set[int] = set()
        key = name.lower()
        for ad in self.ads:
            if type(ad) is not ClassAd:
                expr = ad.lookup(name) if name in ad else None
                if expr is not None and type(expr.node) is not ast.Literal:
                    tree = canonical(expr)
                    if tree not in visited:
                        visited.add(tree)
                        collector.visit(expr.node)
                continue
            binding = ad._bindings.get(key)
            if binding is None or id(binding) in seen:
                continue
            seen.add(id(binding))
            node = binding.node
            if type(node) is ast.Literal:
                continue
            tree = canonical.of_node(node)
            if tree not in visited:
                visited.add(tree)
                collector.visit(node)
        result = None if collector.dynamic else frozenset(collector.names)
        self.refers_to[name] = result
        return result

    def closure(self, expressions: Iterable[Expr], extra: Iterable[str] = ()) -> References:
        """The names ``expressions`` and ``extra`` name, and those their bindings name."""
        collector = _Collector()
        for expr in expressions:
            collector.visit(expr.node)
        if collector.dynamic:
            return References(None, self.canonical)
        names = set(collector.names)
        names.update(extra)
        pending = list(names)
        while pending:
            bound = self._names_bound_to(pending.pop())
            if bound is None:
                return References(None, self.canonical)
            for found in bound - names:
                names.add(found)
                pending.append(found)
        return References(tuple(sorted(names)), self.canonical)


def analyse(
    expressions: Iterable[Expr], ads: Sequence[ClassAd], extra: Iterable[str] = ()
) -> References:
    """The closure of the names ``expressions`` and ``extra`` name over ``ads``' bindings."""
    return ReferenceIndex(ads).closure(expressions, extra)


def consumption_names(slots: Sequence[ClassAd]) -> set[str]:
    """The Consumption<resource> attributes of the slots, and the job attributes a
    consumption policy reads besides those the expressions name (Request<resource> and the
    schedd's _condor_Request<resource>)."""
    names: set[str] = set()
    for slot in slots:
        # The ad's keys are the names in lower case.
        for lowered in slot._bindings:
            if lowered.startswith("consumption"):
                resource = lowered[len("consumption") :]
                names.update(
                    (lowered, resource, f"request{resource}", f"_condor_request{resource}")
                )
    return names
