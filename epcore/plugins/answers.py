"""Tests and folds of the plugins' answers to a hook, shared by the calling machinery
(:mod:`epcore.plugins.registry`) and the typed hooks (:mod:`epcore.plugins.manager`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeGuard, TypeVar

_T = TypeVar("_T")


def is_sequence(value: object) -> TypeGuard[Sequence[object]]:
    """Whether ``value`` is a hook's list of records (a string is a sequence, but not that)."""
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def holding(item: object) -> Callable[[object], bool]:
    """A test of one plugin's answer: does it hold ``item``?"""

    def holds(answer: object) -> bool:
        return is_sequence(answer) and item in answer

    return holds


def holding_name(key: str) -> Callable[[object], bool]:
    """A test of one plugin's answer: does it hold a record named ``key`` (any case)?"""

    def holds(answer: object) -> bool:
        return is_sequence(answer) and any(
            str(getattr(other, "name", "")).lower() == key for other in answer
        )

    return holds


def name_plugins(plugins: Sequence[str]) -> str:
    """The plugins as an error message names them: "plugin A", "plugins A, B", "a plugin"."""
    if not plugins:
        return "a plugin"
    label = "plugin" if len(plugins) == 1 else "plugins"
    return f"{label} {', '.join(plugins)}"


def name_of(item: object) -> str:
    """The record's ``name``, or "" when it has none (a plugin's Python is not checked)."""
    name = getattr(item, "name", None)
    return name if isinstance(name, str) else ""


def last_wins(items: Iterable[_T]) -> list[_T]:
    """One item per name (without regard to case): the last one, at the first one's place."""
    by_name: dict[str, _T] = {}
    for item in items:
        by_name[name_of(item).lower()] = item
    return list(by_name.values())
