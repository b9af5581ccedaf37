"""epcore against classad2 on the shapes the fresh corpus found beyond issue 21's list.

Selections over lists of ads and nested ads reaching back to themselves, calls that fail the
whole evaluation inside operators, and unicode strings cut inside a character and ordered
(strategies_scopes.py); each evaluated in the four scenes of test_differential.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from oracle import World, assert_same_everywhere
from strategies import scaled
from strategies_scopes import failing_call_shapes, scope_shapes, unicode_string_shapes

pytestmark = pytest.mark.oracle

Tick = Callable[[], None]


@scaled(0.5)
@given(text=scope_shapes)
def test_scopes_and_selections_agree_with_classad2(
    text: str, world: World, example_counter: Tick
) -> None:
    """Selections over lists of ads, nested ads selecting themselves and 0.5.a agree."""
    example_counter()
    assert_same_everywhere(text, world)


@scaled(0.25)
@given(text=failing_call_shapes)
def test_failing_calls_agree_with_classad2(text: str, world: World, example_counter: Tick) -> None:
    """A call that fails the evaluation fails it under predicates and operators too."""
    example_counter()
    assert_same_everywhere(text, world)


@scaled(0.25)
@given(text=unicode_string_shapes)
def test_unicode_strings_agree_with_classad2(
    text: str, world: World, example_counter: Tick
) -> None:
    """Unicode strings, whole or cut inside a character, compare and order as in classad2."""
    example_counter()
    assert_same_everywhere(text, world)
