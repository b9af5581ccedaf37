"""What the functions take from the evaluation context: clock, zone, random source, users."""

from __future__ import annotations

import random

import pytest
from fn_oracle import evaluate, fixed_context

from epcore.classad import ERROR, UNDEFINED, AbsTime, ClassAd, EvalContext, RelTime

NOW = 1_700_003_600  # 2023-11-14T23:13:20Z
EST = -5 * 3600


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("time()", NOW),
        ("currentTime()", AbsTime(NOW, EST)),
        ("absTime()", AbsTime(NOW, EST)),
        ("timeZoneOffset()", RelTime(float(EST))),
        ("dayTime()", RelTime(float(18 * 3600 + 13 * 60 + 20))),
        ("formatTime()", "Tue Nov 14 18:13:20 2023"),
        ('formatTime(currentTime(), "%H:%M")', "18:13"),
        ("getHours(absTime(1700003600, 0))", 18),
        ("absTime(0)", AbsTime(0, EST)),
        ("splitTime(0).Offset", EST),
        ('formatTime(0, "%s")', "0"),
    ],
)
def test_clock_and_zone_come_from_the_context(text: str, expected: object) -> None:
    """Clock readers use the context's now; local-time functions use its local_offset."""
    assert evaluate(text, fixed_context(NOW, EST)) == expected


def test_clock_without_now_in_the_context_is_the_wall_clock() -> None:
    """With now=None, time() is the current time (as the evaluator defines it)."""
    import time

    before = int(time.time())
    value = evaluate("time()", EvalContext())
    assert isinstance(value, int) and before <= value <= int(time.time()) + 1


@pytest.mark.parametrize(
    ("text", "kind", "low", "high"),
    [("random()", float, 0.0, 1.0), ("random(10)", int, 0, 9), ("random(2.5)", float, 0.0, 2.5)],
)
def test_random_uses_the_context_source(text: str, kind: type, low: float, high: float) -> None:
    """random() draws from the context's generator: same seed, same values, within range."""
    first = [evaluate(text, fixed_context(rng=random.Random(7))) for _ in range(3)]
    again = [evaluate(text, fixed_context(rng=random.Random(7))) for _ in range(3)]
    assert first == again
    assert all(type(v) is kind and low <= v <= high for v in first)  # type: ignore[operator]


@pytest.mark.parametrize("text", ["random(0)", "random(-1)", "random(-1.5)", "random(0.0)"])
def test_random_refuses_empty_ranges(text: str) -> None:
    """A limit that is not positive gives ERROR (libclassad's evaluation fails)."""
    assert evaluate(text, fixed_context()) is ERROR


HOMES = {"alice": "/home/alice"}


@pytest.mark.parametrize(
    ("text", "with_resolver", "without_resolver"),
    [
        ('userHome("alice")', "/home/alice", UNDEFINED),
        ('userHome("alice", "/tmp")', "/home/alice", "/tmp"),
        ('userHome("bob")', UNDEFINED, UNDEFINED),
        ('userHome("bob", "/tmp")', "/tmp", "/tmp"),
        ("userHome(undefined)", UNDEFINED, UNDEFINED),
        ("userHome(3)", ERROR, ERROR),
    ],
)
def test_user_home_uses_the_context_resolver(
    text: str, with_resolver: object, without_resolver: object
) -> None:
    """userHome() asks context.user_home; without one every user is unknown."""
    assert evaluate(text, fixed_context(user_home=HOMES.get)) == with_resolver
    assert evaluate(text, fixed_context()) == without_resolver


MAPS = {("groups", "alice"): ["physics", "Chemistry", " biology "], ("groups", "nobody"): []}


def _user_map(map_name: str, user: str) -> list[str] | None:
    return MAPS.get((map_name, user))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('userMap("groups", "alice")', "physics,Chemistry, biology "),
        ('userMap("groups", "alice", "chemistry")', "Chemistry"),
        ('userMap("groups", "alice", "biology")', "biology"),
        ('userMap("groups", "alice", "art")', "physics"),
        ('userMap("groups", "alice", "art", "none")', "physics"),
        ('userMap("groups", "bob")', UNDEFINED),
        ('userMap("groups", "bob", "art", "none")', "none"),
        ('userMap("groups", "nobody")', ""),
        ('userMap("groups", "nobody", "art")', UNDEFINED),
        ('userMap("groups", "nobody", "art", 7)', 7),
        ('userMap("other", "alice")', UNDEFINED),
        ('userMap("groups", error)', ERROR),
    ],
)
def test_user_map_uses_the_context_resolver(text: str, expected: object) -> None:
    """userMap() maps through context.user_map, picking the preferred or the first item."""
    assert evaluate(text, fixed_context(user_map=_user_map)) == expected


@pytest.mark.parametrize(
    "text", ["splitTime(-9223372036854775807)", 'formatTime(9223372036854775807, "%Y")']
)
def test_times_beyond_the_platform_range_do_not_raise(text: str) -> None:
    """A time the platform's localtime() rejects still gives a value (offset taken as 0)."""
    value = evaluate(text, EvalContext(now=NOW))
    assert isinstance(value, (ClassAd, str))
