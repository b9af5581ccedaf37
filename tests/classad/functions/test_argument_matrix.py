"""Every built-in against classad2 with arguments of every kind and arity (0 to 4).

This is where type-error behaviour is pinned down: which argument kinds give ERROR, which
propagate UNDEFINED, and what a wrong number of arguments does.
"""

from __future__ import annotations

import itertools

import pytest
from oracle import World, canon_epcore, canon_oracle, mismatch_report

from epcore.classad.functions import builtin_functions

pytestmark = [pytest.mark.oracle, pytest.mark.usefixtures("compat")]

SAMPLES = [
    "undefined", "error", "1", "-7", "2.5", '"s"', '"a, b"', "true", '{1, "x"}', "[a = 1]",
    "absTime(0)", "relTime(5)", '""', '"%Y"', '"1.5"', "{2, 3.5}", '"i"',
]  # fmt: skip
FIXED = ['"s"', "1", '{1, "x"}']
#: Functions that read the clock or the random source: covered in test_context.py.
UNREPEATABLE = {"random", "time", "currenttime", "daytime", "timezoneoffset"}
#: Functions that read the clock only when called without arguments.
CLOCK_WITHOUT_ARGUMENTS = {"abstime", "formattime"}
#: classad2 crashes (SIGSEGV) evaluating these with no ad at all, so they run with MY set.
NEEDS_AN_AD = {"countmatches", "evalineachcontext"}


def _argument_lists(name: str) -> list[tuple[str, ...]]:
    lists: list[tuple[str, ...]] = [] if name in CLOCK_WITHOUT_ARGUMENTS else [()]
    lists += [(sample,) * arity for sample in SAMPLES for arity in (1, 3, 4)]
    lists += list(itertools.product(SAMPLES, repeat=2))
    for fixed in FIXED:
        for position in range(3):
            for sample in SAMPLES:
                args = [fixed] * 3
                args[position] = sample
                lists.append(tuple(args))
    if name == "eval":
        # eval(relTime(5)) parses "05": a parser question (see the parser's own tests).
        lists = [args for args in lists if "relTime(5)" not in args]
    return lists


@pytest.mark.parametrize("name", sorted(set(builtin_functions()) - UNREPEATABLE))
def test_every_argument_kind(name: str, world: World) -> None:
    """The function gives classad2's value for every combination of argument kinds tried."""
    scene = world.scenes[1] if name in NEEDS_AN_AD else world.scenes[0]
    reports: list[str] = []
    for args in _argument_lists(name):
        text = f"{name}({', '.join(args)})"
        theirs = canon_oracle(text, scene)
        if theirs == ("syntax-error",):
            # absTime("bad")/relTime("bad"): classad2 rejects the text when parsing it;
            # test_times.test_bad_time_text covers what epcore does with it.
            continue
        ours = canon_epcore(text, scene, world.context)
        if ours != theirs:
            reports.append(mismatch_report(text, scene, ours, theirs))
        if len(reports) > 5:
            break
    assert not reports, "\n\n".join(reports)
