"""Helpers shared by the built-in function tests (fixtures live in conftest.py)."""

from __future__ import annotations

from collections.abc import Sequence

from oracle import Scene, World, compare_everywhere, make_context

from epcore.classad import ClassAd, EvalContext, parse_expr


def assert_agree(texts: Sequence[str], world: World, scenes: Sequence[Scene] | None = None) -> None:
    """Every expression gives the same value in epcore and classad2, in every scene given.

    Without scenes, the world's "no ad" and "MY = machine" scenes are used: functions see
    their arguments only, so the two target scenes add nothing but time.
    """
    chosen = list(scenes) if scenes is not None else list(world.scenes[:2])
    reports: list[str] = []
    for text in texts:
        reports.extend(compare_everywhere(text, world, chosen))
    assert not reports, "\n\n".join(reports)


def fixed_context(now: float = 1_700_003_600, offset: int = 0, **extra: object) -> EvalContext:
    """A context with a fixed clock and a constant local zone offset."""
    return EvalContext(now=now, local_offset=lambda _secs: offset, **extra)  # type: ignore[arg-type]


def evaluate(text: str, context: EvalContext | None = None, my: ClassAd | None = None) -> object:
    """epcore's value of ``text``."""
    return parse_expr(text).evaluate(my, context=context or make_context())
