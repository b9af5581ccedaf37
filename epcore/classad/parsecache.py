"""The parse cache: the trees of texts that come back, kept by text.

Pools repeat the same expressions across thousands of ads, so trees (immutable) are kept
by text, as HTCondor's own ClassAd cache does. Many texts are seen only once, though (a
slot's name, a time stamp, a fresh expression): keeping those would push out the trees
that do repeat, and every kept tree is more for the garbage collector to follow, while a
tree freed at once costs it nothing. So a text's tree is kept from its second sighting
on; the first sighting only remembers the text's hash, and its tree has its own leaves
(``fast_expression(text, shared=False)``), so that nothing of it outlives the caller's use.

Trees and hashes are each held in two generations, a young one that takes new entries
and the one before it: when the young one is full, the old one is dropped and the young
one takes its place. That bounds both (at most :data:`CACHE_SIZE` trees) at the cost of a
few dictionary operations a call, and a tree used lately survives (a hit in the old
generation moves it to the young one).
"""

from __future__ import annotations

from typing import Final

from epcore.classad import ast
from epcore.classad.parser import parse_uncached

#: At most this many trees are kept.
CACHE_SIZE: Final = 16384
_GENERATION: Final = CACHE_SIZE // 2
#: A text seen once is remembered (by its hash) for at least this many other first sightings.
_REMEMBERED: Final = 2 * CACHE_SIZE

# The generations, rebound when the young ones fill up (see the module's docstring). A
# key is the text itself, or (text, True) for old-syntax strings, which read differently;
# the source only names the text in error messages, and errors are not kept.
_trees: dict[object, ast.Node] = {}
_older_trees: dict[object, ast.Node] = {}
# The hashes are a dictionary's keys rather than a set's: a dictionary of integers alone
# is one the collector does not track, while it would visit every entry of a set.
_seen: dict[int, None] = {}
_seen_before: dict[int, None] = {}


def parse_node(text: str, source: str | None = None, *, old_strings: bool = False) -> ast.Node:
    """Parse one whole expression into an AST node, through the cache."""
    key: object = (text, True) if old_strings else text
    node = _trees.get(key)
    if node is None:
        return _missed(key, text, source, old_strings)
    return node


def _missed(key: object, text: str, source: str | None, old_strings: bool) -> ast.Node:
    global _trees, _older_trees, _seen, _seen_before
    node = _older_trees.get(key)
    if node is None:
        mark = hash(key)
        if mark not in _seen and mark not in _seen_before:
            node = parse_uncached(text, source, old_strings=old_strings, shared=False)
            # Remembered only once parsed: a text that does not parse is not counted.
            _seen[mark] = None
            if len(_seen) >= _REMEMBERED // 2:
                _seen_before, _seen = _seen, {}
            return node
        node = parse_uncached(text, source, old_strings=old_strings)
    _trees[key] = node
    if len(_trees) >= _GENERATION:
        _older_trees, _trees = _trees, {}
    return node


def clear() -> None:
    """Forget every tree and every text seen (for tests that need a first parse)."""
    _trees.clear()
    _older_trees.clear()
    _seen.clear()
    _seen_before.clear()
