"""Targeted shapes the fresh corpus (fresh_corpus.py) found beyond issue 21's list.

Selections over lists of ads (whose results libclassad keeps as literals out of every scope),
nested ads that reach back to themselves through a selection, a real followed by a selection,
calls that fail the whole evaluation (userHome() with a wrong count of arguments) inside
operators and predicates, and unicode strings cut by byte-oriented functions and then ordered.
"""

from __future__ import annotations

import hypothesis.strategies as st
from strategies import (
    NESTED_PATHS,
    Text,
    names,
    real_literals,
    references,
    small_expressions,
)

# ----------------------------------------------------------------------------- scopes

_INNER = ["a", "b", "parent.a", "MY.a", "MY", "TARGET.Memory", "Memory", "Cpus", "c.d", "b.d"]
_inner_values: Text = st.one_of(
    st.sampled_from(_INNER),
    st.sampled_from(["relTime(2.5)", "-relTime(7.9)", "relTime(1e400)", "absTime(5)"]),
    st.sampled_from(["[b = Cpus]", "[b = 1; c = b + 1]"]),
    st.sampled_from(["TransferInputStats", "AvailableGPUs", "ChildCpus"]),
    references,
    small_expressions,
)
_selected = st.sampled_from(["a", "b", "c", "Memory", "x"])


def _ad(values: Text) -> Text:
    return st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", "Memory", "x"]), values),
        max_size=3,
        unique_by=lambda pair: pair[0],
    ).map(lambda pairs: "[" + "; ".join(f"{n} = {v}" for n, v in pairs) + "]")


#: A selection over a list of ads, then perhaps an element and a selection from it.
list_selections: Text = st.tuples(
    st.lists(_ad(_inner_values), max_size=3),
    _selected,
    st.sampled_from(["", "[0]", "[0].b", "[1]", "[0][0]", "[0].c", "[0].Memory"]),
).map(lambda t: f"{{{', '.join(t[0])}}}.{t[1]}{t[2]}")

#: A selection over a list of ads whose attribute is a list holding references, then its
#: elements (not a selection from it: test_deliberate_differences, copied-list-selected).
list_valued_selections: Text = st.tuples(
    st.sampled_from(["{Cpus, 2 + 3}", "{MY, x}", "{NoSuchAttr}", "{[b = Cpus]}", "{TARGET}"]),
    st.sampled_from(["", "[0]", "[1]", "[0][0]", "[0][1]"]),
).map(lambda t: f"{{[a = {t[0]}], [b = 1]}}.a{t[1]}")

#: Nested ads whose attributes reach back through selections of themselves (cycles).
self_selections: Text = st.tuples(
    small_expressions,
    st.sampled_from(["b", "c = b; d = c.d", "d = b.d", "d = parent.b.d", "c = parent; d = c.b"]),
    st.sampled_from(["b.d", "b.c", "b", "e", "b.c.d", "a", "b.parent"]),
).map(lambda t: f"[a = {t[0]}; b = [{t[1]}]; e = b.d].{t[2]}")

#: A real literal directly followed by a selection (0.5.a), as libclassad reads it.
_selectors: Text = st.one_of(names, st.sampled_from(NESTED_PATHS))
real_selections: Text = st.tuples(real_literals, _selectors).map(lambda t: f"{t[0]}.{t[1]}")

_scopes: Text = st.one_of(list_selections, list_valued_selections, self_selections, real_selections)
#: Each of the above, evaluated and printed by unparse() (b.parent prints bare).
scope_shapes: Text = st.one_of(_scopes, _scopes.map(lambda text: f"[z = {text}; u = unparse(z)].u"))

# ----------------------------------------------------------------------------- failing calls

_FAILING = ["userHome()", "userHome(1, 2, 3)", 'userHome("root", "x", 1, 2)']
#: A call whose evaluation fails, under operators and predicates that would catch an ERROR.
failing_call_shapes: Text = st.tuples(
    st.sampled_from(
        ["isBoolean({})", "isError({})", "{} is undefined", "{} =!= error", "{{{}}}",
         "size({{{}}})", "{} ?: 1", "ifThenElse(true, {}, 1)", "{{[a = {}]}}.a", "[a = {}].a",
         "({}) || true"]
    ),
    st.one_of(st.sampled_from(_FAILING), small_expressions),
).map(lambda t: t[0].format(t[1]))  # fmt: skip

# ----------------------------------------------------------------------------- unicode

_UNICODE = ["é", "ß", "İ", "\u0131", "Σ", "日本", "😀", "e\u0301", "Å", "ÿ", "a", "B", " "]
_unicode_texts: Text = st.lists(st.sampled_from(_UNICODE), max_size=5).map(
    lambda parts: '"' + "".join(parts) + '"'
)
_cut = st.tuples(_unicode_texts, st.integers(-4, 6)).map(lambda t: f"substr({t[0]}, {t[1]})")
_unicode_operands: Text = st.one_of(
    _unicode_texts,
    _cut,
    _unicode_texts.map(lambda text: f"toUpper({text})"),
    _unicode_texts.map(lambda text: f"toLower({text})"),
)
#: Unicode strings, whole or cut inside a character, ordered and compared.
unicode_string_shapes: Text = st.one_of(
    st.tuples(
        _unicode_operands,
        st.sampled_from(["<", "<=", ">", ">=", "==", "!=", "=?=", "is"]),
        _unicode_operands,
    ).map(" ".join),
    st.tuples(st.sampled_from(["strcmp", "stricmp"]), _unicode_operands, _unicode_operands).map(
        lambda t: f"{t[0]}({t[1]}, {t[2]})"
    ),
    st.tuples(st.sampled_from(["size", "toUpper", "toLower"]), _cut).map(
        lambda t: f"{t[0]}({t[1]})"
    ),
)
