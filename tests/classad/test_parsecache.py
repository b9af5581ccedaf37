"""The parse cache: trees kept from a text's second sighting on, within a bound."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from epcore.classad import ClassAdSyntaxError, ast, fastparse, parsecache
from epcore.classad.parser import parse_uncached


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    parsecache.clear()
    yield
    parsecache.clear()


def test_a_text_is_kept_from_its_second_sighting() -> None:
    """The first parse of a text is not kept, the second is, and later ones return that tree."""
    first = parsecache.parse_node("KeyboardIdle > 15 * 60")
    second = parsecache.parse_node("KeyboardIdle > 15 * 60")
    third = parsecache.parse_node("KeyboardIdle > 15 * 60")
    assert first == second == parse_uncached("KeyboardIdle > 15 * 60")
    assert first is not second
    assert third is second


def test_a_first_sighting_shares_no_leaves_and_a_kept_tree_does() -> None:
    """A tree parsed once owns its leaves (they go with it); the kept one takes the shared ones."""
    fastparse._LEAVES.clear()
    once = parsecache.parse_node("Only_seen_here_once + 1")
    assert isinstance(once, ast.Binary)
    assert "Only_seen_here_once" not in fastparse._LEAVES
    kept = parsecache.parse_node("Only_seen_here_once + 1")
    assert isinstance(kept, ast.Binary)
    assert fastparse._LEAVES["Only_seen_here_once"] is kept.left


def test_old_syntax_strings_are_kept_apart() -> None:
    """The same text read with old-syntax strings is its own entry, and reads as such."""
    text = r'"a\\b"'
    new = [parsecache.parse_node(text) for _ in range(3)]
    old = [parsecache.parse_node(text, old_strings=True) for _ in range(3)]
    assert new[2] == parse_uncached(text)
    assert old[2] == parse_uncached(text, old_strings=True)
    assert new[2] != old[2]


def test_a_text_that_does_not_parse_fails_every_time() -> None:
    """Errors are not kept: a text that does not parse raises on every sighting, with its source."""
    for _ in range(3):
        with pytest.raises(ClassAdSyntaxError, match="conf"):
            parsecache.parse_node("1 +", "conf")


def test_the_cache_stays_within_its_bound() -> None:
    """However many texts come twice, at most CACHE_SIZE trees and a bounded set of hashes are
    kept, and a tree used lately is among them."""
    for n in range(parsecache.CACHE_SIZE + 100):
        parsecache.parse_node(f"x{n}")
        parsecache.parse_node(f"x{n}")
        parsecache.parse_node("Recent")
    kept = len(parsecache._trees) + len(parsecache._older_trees)
    assert kept <= parsecache.CACHE_SIZE
    assert len(parsecache._seen) + len(parsecache._seen_before) <= parsecache._REMEMBERED
    assert "Recent" in parsecache._trees or "Recent" in parsecache._older_trees


def test_the_hashes_remembered_are_nothing_for_the_collector_to_follow() -> None:
    """The texts seen once are remembered in containers the garbage collector does not track."""
    for n in range(100):
        parsecache.parse_node(f"y{n}")
    assert not gc.is_tracked(parsecache._seen)
