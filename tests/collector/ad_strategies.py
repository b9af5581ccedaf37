"""Hypothesis strategies for flat ClassAds of literal values (shared by the pool tests)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from epcore.classad import ClassAd

RESERVED = {"true", "false", "undefined", "error", "is", "isnt", "parent", "my", "target"}

attribute_names = st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_]{0,12}\Z").filter(
    lambda name: name.lower() not in RESERVED
)

text_values = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=30,
)

scalars: st.SearchStrategy[Any] = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    text_values,
)

values: st.SearchStrategy[Any] = st.one_of(scalars, st.lists(scalars, max_size=4))


@st.composite
def flat_ads(draw: st.DrawFn, min_size: int = 0) -> ClassAd:
    """An ad of literal attributes with distinct (case-insensitive) names."""
    chosen = draw(
        st.dictionaries(attribute_names, values, min_size=min_size, max_size=8).map(
            lambda found: {name.lower(): (name, value) for name, value in found.items()}
        )
    )
    return ClassAd({name: value for name, value in chosen.values()})
