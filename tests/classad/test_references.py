"""The reference analysis behind the indexed chooser: names, closures, fingerprints, keys."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import parse_ad, parse_expr
from epcore.classad.references import ReferenceIndex, References, fingerprint

_atoms = st.sampled_from(
    ["1", "1.0", "-0.0", "0.0", "true", "1", '"a"', '"A"', "x", "X", "MY.x", "TARGET.y",
     "undefined", "error", "real(\"NaN\")", "{1, 2}", "[a = 1]", "z[0]"]
)  # fmt: skip
_expressions = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["+", "*", "==", "=?=", "&&", "<"]), inner).map(
            lambda t: f"{t[0]} {t[1]} {t[2]}"
        ),
        inner.map(lambda e: f"({e})"),
        inner.map(lambda e: f"-({e})"),
        st.tuples(inner, inner, inner).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
        st.tuples(inner, inner).map(lambda t: f"ifThenElse({t[0]}, {t[1]}, 0)"),
        st.tuples(inner, inner).map(lambda t: f"({t[0]}) ?: ({t[1]})"),
    ),
    max_leaves=8,
)


@given(_expressions, _expressions)
def test_fingerprints_are_equal_exactly_when_trees_are(left: str, right: str) -> None:
    """Two parsed expressions have equal fingerprints if and only if their trees are equal."""
    a, b = parse_expr(left).node, parse_expr(right).node
    assert (fingerprint(a) == fingerprint(b)) == (a == b)
    assert fingerprint(a) == fingerprint(parse_expr(left).node)


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [("1", "1.0", False), ("0.0", "-0.0", False), ("x", "X", False), ("(x)", "x", False),
     ("a + b", "a + b", True), ('"a"', '"a"', True), ("true", "1", False)],
)  # fmt: skip
def test_fingerprint_examples(left: str, right: str, equal: bool) -> None:
    """Literals of different types or signs, and different spellings, are different trees."""
    a, b = parse_expr(left).node, parse_expr(right).node
    assert (fingerprint(a) == fingerprint(b)) is equal


def test_closure_follows_bindings_in_every_ad() -> None:
    """A closure holds the names the roots mention and those their bindings mention, in any ad."""
    slot = parse_ad("[Requirements = Busy == false; Busy = LoadAvg > Limit; Limit = 0.3]")
    job = parse_ad("[Requirements = TARGET.Memory >= Need; Need = Base * 2; Base = 7]")
    index = ReferenceIndex([slot, job])
    refs = index.closure((), ("requirements",))
    assert refs.names == ("base", "busy", "limit", "loadavg", "memory", "need", "requirements")


@pytest.mark.parametrize("text", ['eval("Memory")', "unparse(Memory)", "random(3)"])
def test_dynamic_lookups_make_the_whole_ad_the_key(text: str) -> None:
    """An expression that can look names up at run time gives up the analysis (None)."""
    slot = parse_ad(f'[Requirements = {text} > 0; Memory = 1; Name = "a"]')
    other = parse_ad('[Requirements = eval("Memory") > 0; Memory = 1; Name = "b"]')
    refs = ReferenceIndex([slot]).closure((), ("requirements",))
    assert refs.names is None
    assert refs.key(slot) != refs.key(other)


def test_keys_ignore_unreferenced_attributes_and_projection_agrees() -> None:
    """Ads equal on the referenced names have equal keys; a projected key equals a direct one."""
    a = parse_ad('[Requirements = Cpus > 0; Cpus = 2; Name = "a"; Memory = 5]')
    b = parse_ad('[Requirements = Cpus > 0; Cpus = 2; Name = "b"; Memory = 6]')
    index = ReferenceIndex([a, b])
    whole = index.closure((parse_expr("Memory"),), ("requirements",))
    part = index.closure((), ("requirements",))
    assert part.key(a) == part.key(b)
    assert whole.key(a) != whole.key(b)
    project = whole.projector(part)
    assert project(a, whole.key(a)) == part.key(a)
    assert References(("nothing",)).key(a) == (None,)
