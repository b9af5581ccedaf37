"""The image cache's record and its eviction plan (epcore_docker.images, the pure parts)."""

from __future__ import annotations

import pytest
from epcore_docker.images import CacheEntry, plan_eviction, read_entries, write_entries
from hypothesis import given
from hypothesis import strategies as st

IMAGE = st.from_regex(r"[a-z0-9][a-z0-9._/:-]{0,40}", fullmatch=True)
ENTRY = st.builds(
    CacheEntry,
    IMAGE,
    st.integers(min_value=0, max_value=2**40).map(lambda n: n / 1000),
    st.integers(min_value=0, max_value=2**50),
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("12.5 100 reg/a:1\n", [CacheEntry("reg/a:1", 12.5, 100)]),
        ("12.5 reg/a:1\n", [CacheEntry("reg/a:1", 12.5, 0)]),
        ("  3 7 b:2  \n\n4 c:3", [CacheEntry("b:2", 3.0, 7), CacheEntry("c:3", 4.0, 0)]),
        ("x 1 a:1\n", []),
        ("1 x a:1\n", []),
        ("1\n", []),
        ("1 2 3 4\n", []),
        ("1 -5 a:1\n", [CacheEntry("a:1", 1.0, 0)]),
        (
            "1 2 a:1\ngarbage line here too\n2 3 b:1",
            [CacheEntry("a:1", 1, 2), CacheEntry("b:1", 2, 3)],
        ),
    ],
)
def test_the_record_is_read_and_torn_lines_are_skipped(
    text: str, expected: list[CacheEntry]
) -> None:
    """Good lines become entries (an old two-field line has no size); others are skipped."""
    assert read_entries(text) == expected


@given(st.text())
def test_any_text_reads_without_error(text: str) -> None:
    """Whatever the file holds, reading it gives entries and never raises."""
    assert all(isinstance(entry, CacheEntry) for entry in read_entries(text))


@given(st.lists(ENTRY, max_size=20))
def test_written_entries_read_back(entries: list[CacheEntry]) -> None:
    """Writing entries and reading them back gives them again (times to the millisecond)."""
    assert read_entries(write_entries(entries)) == entries


@pytest.mark.parametrize(
    ("used", "size", "kept", "evicted"),
    [
        ({"a": 1, "b": 2, "c": 3}, 2, ["c", "b"], ["a"]),
        ({"a": 1, "b": 2}, 8, ["b", "a"], []),
        ({"a": 3, "b": 2, "c": 1}, 1, ["a"], ["b", "c"]),
        ({}, 1, [], []),
    ],
)
def test_the_least_recently_used_images_are_evicted(
    used: dict[str, float], size: int, kept: list[str], evicted: list[str]
) -> None:
    """The ``size`` images used last are kept, newest first; the rest are evicted."""
    entries = [CacheEntry(name, when) for name, when in used.items()]
    keep, out = plan_eviction(entries, size)
    assert [entry.image for entry in keep] == kept
    assert out == evicted
