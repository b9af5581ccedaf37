"""Every ClassAd regular-expression function gives ERROR, within its bound, on a runaway match."""

from __future__ import annotations

import threading
import time

import pytest

from epcore.classad import ERROR, ClassAd, parse_ad, parse_expr
from epcore.classad.functions._pcre import MATCH_TIMEOUT, MatchTimeout, compile_pattern

# Exponential backtracking even for the regex package, which defuses ^(a+)+$ itself:
# without a bound this match runs for longer than the machine will exist.
RUNAWAY = "^(a|aa)+$"
# What the review used; the regex package needs no backtracking for it, Python's re did.
REVIEWED = "^(a+)+$"

# Each ad's v calls one function on a subject made of n a's followed by a non-matching byte.
CALLS = [
    '[ v = regexp("{p}", "{a}!") ]',
    '[ v = regexp("{p}", "{a}!", "i") ]',
    '[ v = regexpMember("{p}", {{"b", "{a}!"}}) ]',
    '[ v = regexps("{p}", "{a}!", "x") ]',
    '[ v = replace("{p}", "{a}!", "x") ]',
    '[ v = replaceAll("{p}", "{a}!", "x") ]',
    '[ v = stringList_regexpMember("{p}", "b, {a}!") ]',
    # unresolved() matches the names an expression refers to: a name can be hostile too.
    '[ x = {a}b; v = unresolved(x, "{p}") ]',
]
# Generous for a loaded machine, yet orders of magnitude below the unbounded match.
WALL_CLOCK_ALLOWANCE = 20 * MATCH_TIMEOUT + 1.0


def _ad(template: str, salt: int) -> ClassAd:
    """The ad with a subject nobody matched before (timed-out subjects are remembered)."""
    return parse_ad(template.format(p=RUNAWAY, a="a" * (60 + salt)))


@pytest.mark.parametrize("template", CALLS)
def test_runaway_match_is_error_within_the_bound(template: str) -> None:
    """A catastrophically backtracking match ends, within the bound, as the value ERROR."""
    ad = _ad(template, CALLS.index(template) + 1)
    started = time.monotonic()
    value = ad.evaluate("v")
    elapsed = time.monotonic() - started
    assert value is ERROR
    assert elapsed < WALL_CLOCK_ALLOWANCE, f"{template} took {elapsed:.2f} s"


def test_a_timed_out_subject_costs_nothing_the_second_time() -> None:
    """Evaluating the same runaway match again (Requirements against every slot) is immediate."""
    ad = _ad(CALLS[0], 100)
    assert ad.evaluate("v") is ERROR
    started = time.monotonic()
    for _ in range(50):
        assert ad.evaluate("v") is ERROR
    # Fifty bounded matches would take 50 * MATCH_TIMEOUT; remembered ones take microseconds.
    assert time.monotonic() - started < 5 * MATCH_TIMEOUT


def test_the_same_pattern_still_matches_other_subjects() -> None:
    """Only the subject that timed out is remembered: the pattern keeps working on others."""
    assert _ad(CALLS[0], 200).evaluate("v") is ERROR
    assert parse_expr(f'regexp("{RUNAWAY}", "aaaa")').evaluate() is True
    assert parse_expr(f'regexp("{RUNAWAY}", "aaab")').evaluate() is False


def test_the_reviewed_pattern_answers_quickly() -> None:
    """The review's ^(a+)+$ on 28 a's and a '!' is False at once (9.2 s with Python's re)."""
    started = time.monotonic()
    assert parse_expr(f'regexp("{REVIEWED}", "{"a" * 28}!")').evaluate() is False
    assert time.monotonic() - started < WALL_CLOCK_ALLOWANCE


def test_bounded_pattern_raises_match_timeout() -> None:
    """The bounded pattern itself raises MatchTimeout, the error the functions turn into ERROR."""
    pattern = compile_pattern(RUNAWAY, "")
    with pytest.raises(MatchTimeout, match="longer than"):
        pattern.search(("a" * 300 + "!").encode())
    with pytest.raises(MatchTimeout, match="before"):
        pattern.search(("a" * 300 + "!").encode())


def test_bound_holds_in_threads() -> None:
    """Matches timed out in several threads at once each end as ERROR."""
    results: list[object] = []

    def run(salt: int) -> None:
        results.append(_ad(CALLS[0], 300 + salt).evaluate("v"))

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert results == [ERROR] * 4


@pytest.mark.oracle
def test_libclassad_also_gives_error_on_a_runaway_match() -> None:
    """classad2 hits PCRE2's match limit on the same match and gives ERROR too."""
    classad2 = pytest.importorskip("classad2")
    text = CALLS[0].format(p=RUNAWAY, a="a" * 400)
    assert classad2.ClassAd(text).eval("v") == classad2.Value.Error
    assert parse_ad(text).evaluate("v") is ERROR
