"""Nesting depth: the parser's budget, and every consumer of a tree within it.

The parser refuses an expression nested beyond MAX_NESTING with a located syntax error.
Every tree it accepts must then be safe to evaluate, compile, print, hash, compare, write
as JSON or old syntax, match, analyse and store in the job queue, with no more than
CONSUMER_FRAMES Python frames, so that a daemon deep in its own stack or a thread (whose
recursion limit is the same) can do all of it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from epcore.analysis.analysis import analyze_job
from epcore.classad import (
    ERROR,
    ClassAd,
    ClassAdSyntaxError,
    compiler,
    from_json,
    parse_ad,
    parse_ads,
    parse_expr,
    parsecache,
    parser,
    symmetric_match,
    to_json,
)
from epcore.classad.formats import format_old
from epcore.classad.parser import (
    CONSUMER_FRAMES,
    MAX_NESTING,
    MESSAGE_NESTING,
    check_nesting,
)
from epcore.classad.references import analyse, fingerprint
from epcore.schedd.jobqueue_codec import AdText, parse_stored_ad
from epcore.state.explain import explain_expression

BRACKET = 3  # what one level of brackets spends of the budget


def _ternary(n: int) -> str:
    return "true ? " * n + "x" + " : false" * n


# Each shape at a given number of levels; ``levels(n)`` is how many fit in the budget.
SHAPES: dict[str, tuple[Callable[[int], str], int]] = {
    "ternary-then": (_ternary, MAX_NESTING),
    "ternary-else": (lambda n: "false ? 1 : " * n + "x", MAX_NESTING),
    "or-chain": (lambda n: " || ".join(["x"] * (n + 1)), MAX_NESTING),
    "and-chain": (lambda n: " && ".join(["x"] * (n + 1)), MAX_NESTING),
    "sum-chain": (lambda n: " + ".join(["x"] * (n + 1)), MAX_NESTING),
    "elvis-chain": (lambda n: " ?: ".join(["x"] * (n + 1)), MAX_NESTING),
    "not": (lambda n: "!" * n + "x", MAX_NESTING),
    "minus": (lambda n: "- " * n + "x", MAX_NESTING),
    "selections": (lambda n: "x" + ".y" * n, MAX_NESTING),
    "subscripts": (lambda n: "x" + "[0]" * n, MAX_NESTING - BRACKET),
    "parentheses": (lambda n: "(" * n + "x" + ")" * n, MAX_NESTING // BRACKET),
    "calls": (lambda n: "size(" * n + "x" + ")" * n, MAX_NESTING // BRACKET),
    "lists": (lambda n: "{" * n + "x" + "}" * n, MAX_NESTING // BRACKET),
    "ads": (lambda n: "[a = " * n + "x" + "]" * n, MAX_NESTING // BRACKET),
}


def _deepest(shape: str) -> str:
    make, levels = SHAPES[shape]
    return make(levels)


def _stack_depth() -> int:
    frame = sys._getframe()
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    return depth


@contextmanager
def _frames_left(frames: int) -> Iterator[None]:
    """Run the body with only ``frames`` Python frames left before RecursionError."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(_stack_depth() + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _fresh(text: str) -> ClassAd:
    """An ad holding ``text`` as v, parsed and compiled anew (nothing cached helps)."""
    parsecache.clear()
    compiler.compile_node.cache_clear()
    return parse_ad(f"[ v = {text}; x = 1 ]")


def _consumers(text: str) -> dict[str, Callable[[], object]]:
    slot = parse_ad(
        '[ Name = "slot1@h"; MyType = "Machine"; Requirements = true; Cpus = 1;'
        ' State = "Unclaimed" ]'
    )

    def job() -> ClassAd:
        ad = _fresh(text)
        ad["Requirements"] = ad.lookup("v")
        ad["MyType"] = "Job"
        ad["ClusterId"] = 1
        ad["ProcId"] = 0
        return ad

    return {
        "parse": lambda: parser.parse_uncached(text),
        "evaluate": lambda: _fresh(text).evaluate("v"),
        "evaluate-expr": lambda: parse_expr(text).evaluate(),
        "print": lambda: str(_fresh(text).lookup("v")),
        "hash": lambda: hash(parser.parse_uncached(text)),
        "compare": lambda: parser.parse_uncached(text) == parser.parse_uncached(text + " "),
        "json": lambda: from_json(to_json(_fresh(text))),
        "old-syntax": lambda: list(parse_ads(format_old(_fresh(text)))),
        "match": lambda: symmetric_match(job(), slot),
        "explain": lambda: explain_expression(text, _fresh("1"), now=0.0),
        "analysis": lambda: analyze_job(job(), [slot], now=0.0),
        "references": lambda: (
            analyse([job().lookup("v")], [slot]),
            fingerprint(job().lookup("v").node),
        ),  # type: ignore[union-attr]
        "job-queue": lambda: parse_stored_ad(str(AdText(job())), "job 1.0"),
    }


CONSUMERS = sorted(_consumers("x"))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_deepest_accepted_expression_parses(shape: str) -> None:
    """Each shape parses at the deepest nesting the budget allows."""
    assert parse_expr(_deepest(shape)) is not None


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_one_level_more_is_a_located_syntax_error(shape: str) -> None:
    """One level beyond the budget is a syntax error naming the limit, its line and column."""
    make, levels = SHAPES[shape]
    text = "\n  " + make(levels + 1)
    with pytest.raises(ClassAdSyntaxError, match=f"nested too deeply.*{MAX_NESTING}") as caught:
        parse_expr(text)
    assert caught.value.line == 2
    assert caught.value.column >= 3
    with pytest.raises(ClassAdSyntaxError, match="nested too deeply"):
        parse_ad(f"[ a = {make(levels + 1)} ]")


@pytest.mark.parametrize("consumer", CONSUMERS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_consumer_fits_in_its_frames(shape: str, consumer: str) -> None:
    """Every consumer handles the deepest accepted tree within CONSUMER_FRAMES frames."""
    run = _consumers(_deepest(shape))[consumer]
    with _frames_left(CONSUMER_FRAMES):
        run()


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_consumer_works_from_a_thread(shape: str) -> None:
    """A thread (the daemons' cron and I/O threads) runs every consumer at the deepest tree."""
    failures: list[BaseException] = []

    def run_all() -> None:
        for name, run in _consumers(_deepest(shape)).items():
            try:
                run()
            except BaseException as error:
                failures.append(RuntimeError(f"{name}: {error!r}"))

    thread = threading.Thread(target=run_all)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert failures == []


def test_the_deepest_ternary_evaluates_to_its_innermost_value() -> None:
    """A 200-level ``true ? ... : false`` evaluates to what its innermost branch holds."""
    ad = parse_ad(f"[ v = {_ternary(MAX_NESTING)}; x = 42 ]")
    assert ad.evaluate("v") == 42


def test_a_stack_exhausted_by_references_makes_the_evaluation_error() -> None:
    """Evaluation that runs out of stack (deep tree under deep references) is ERROR."""
    chain = "; ".join(f"a{i} = a{i + 1}" for i in range(150))
    ad = parse_ad(f"[ {chain}; a150 = {_ternary(MAX_NESTING)}; x = 1 ]")
    with _frames_left(CONSUMER_FRAMES):
        assert ad.evaluate("a0") is ERROR
    assert ad.evaluate("a0") == 1


def test_the_review_470_level_ternary_is_refused_when_read() -> None:
    """The review's 470-level OnExitHold is a syntax error, not a crash at evaluation."""
    with pytest.raises(ClassAdSyntaxError, match="nested too deeply"):
        parse_ad(f"[ OnExitHold = {_ternary(470)} ]")


@pytest.mark.oracle
def test_deliberate_difference_with_libclassad_on_depth() -> None:
    """classad2 parses 470 levels but cannot evaluate them; epcore refuses them when read.

    libclassad parses about 500 levels and fails evaluation beyond 400. epcore's budget is
    lower because Python's recursion limit, not a C stack, bounds its consumers; the two
    agree on every expression both accept and evaluate.
    """
    classad2 = pytest.importorskip("classad2")
    deep = classad2.ClassAd(f"[ v = {_ternary(470)}; x = 1 ]")
    with pytest.raises(classad2.ClassAdException):
        deep.eval("v")
    with pytest.raises(ClassAdSyntaxError):
        parse_ad(f"[ v = {_ternary(470)}; x = 1 ]")
    at_our_limit = f"[ v = {_ternary(MAX_NESTING)}; x = 1 ]"
    assert classad2.ClassAd(at_our_limit).eval("v") == parse_ad(at_our_limit).evaluate("v") == 1


def test_an_ad_that_fits_message_nesting_travels_inside_a_reply() -> None:
    """An attribute within MESSAGE_NESTING still parses inside the brackets of a reply (a list
    of ads in an ad); check_nesting refuses one level more."""
    deepest = parse_expr(_ternary(MESSAGE_NESTING))
    check_nesting(deepest.node)
    reply = parse_ad(f"[ Ok = true; Ads = {{ [ Claim = [ Job = [ v = {deepest} ] ] ] }} ]")
    assert reply.evaluate("Ok") is True
    with pytest.raises(ClassAdSyntaxError, match="nested too deeply"):
        check_nesting(parse_expr(_ternary(MESSAGE_NESTING + 1)).node)
