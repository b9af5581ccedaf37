"""What the fresh corpus (fresh_corpus.py) found where epcore parted from classad2, kept.

Each expression is evaluated in the differential suite's scenes with an ad (the context
functions crash classad2 without one) and in the one without an ad where it makes sense; both
engines must agree, and epcore's own value is pinned too, so that a case still says something
where classad2 is not installed the same way.
"""

from __future__ import annotations

import pytest
from oracle import World, canon_epcore, compare_everywhere, render

pytestmark = pytest.mark.oracle

#: (expression, epcore's value in the scene MY = machine, rendered as oracle.render does)
CASES = [
    # A real followed by a selection is a real and a selection, as libclassad reads it.
    ("0.5.a", "error"),
    ("1e400.Id", "error"),
    ("unparse(1.5.x)", "string ''"),
    ("1.5. x =?= error", "bool True"),
    # userHome() with other than one or two arguments fails the whole evaluation.
    ("isBoolean(userHome())", "error"),
    ("userHome(1, 2, 3) is undefined", "error"),
    ("{userHome()}", "{error}"),
    ("size({userHome()})", "int 1"),
    # splitTime of an infinite or NaN relative time: C's (int) gives INT32_MIN, seconds NaN.
    (
        "splitTime(relTime(1e400))",
        "[days = int -24855; hours = int -3; minutes = int -14; seconds = real NaN;"
        " type = string 'RelativeTime']",
    ),
    ("splitTime(-relTime(1e400)).Seconds", "real NaN"),
    ('splitTime(relTime(real("NaN"))).Days', "int -24855"),
    # A selection over a list keeps each result as a literal: a relative time as (int) of its
    # seconds, a real; an ad or a list copied out of every scope.
    ("{[a = relTime(2.5)]}.a", "{real 2.0}"),
    ("{[a = -relTime(2.5)], [a = relTime(1e400)]}.a", "{real -2.0, real -2147483648.0}"),
    ("{{[a = relTime(7.9)]}}.a", "{{real 7.0}}"),
    ("[a = relTime(2.5)].a", "relTime 2.5"),
    ("{[a = Cpus]}.a", "{int 8}"),
    ("{[a = [b = Cpus]]}.a[0].b", "undefined"),
    ("{[a = {Cpus, 2 + 3}]}.a", "{{undefined, int 5}}"),
    ("{[a = [b = 1; c = b + 1]]}.a[0].c", "int 2"),
    ("[x = 1; y = {[a = [b = x]]}.a[0].b].y", "undefined"),
    ("{[a = TransferInputStats]}.a", "{undefined}"),
    # A reference that comes back to an attribute through a selection of its own ad is a cycle.
    ("[b = [d = b.d]].b.d", "undefined"),
    ("[b = [c = b; d = c.d]].b.c.d", "undefined"),
    ("[a = [x = 1; y = a.x + 1]].a.y", "int 2"),
    # After evalInEachContext fails to find its first argument, MY (self, root) is still an
    # ad, in which nothing is found.
    ("evalInEachContext(NoSuchAttr, MY)", "error"),
    ("countMatches(NoSuchAttr, self)", "error"),
    ("evalInEachContext(NoSuchAttr, {MY})", "{undefined}"),
    ("evalInEachContext(NoSuchAttr, ifThenElse(isError(MY), {[a = 1]}, {}))", "{}"),
    ("evalInEachContext(NoSuchAttr, ifThenElse((MY).Memory == 32000, {[a = 1]}, {}))", "undefined"),
    ("evalInEachContext(NoSuchAttr, ifThenElse(size(root) > 5, {[a = 1]}, {}))", "{undefined}"),
    # A selection from a value that is no ad looks nothing up: the list argument is read as
    # usual, not in the unusable scope of a failed lookup.
    ("evalInEachContext(NoSuchAttr.x, ChildCpus)", "{error, error}"),
    ("evalInEachContext((1).x, ChildCpus)", "{error, error}"),
    ("evalInEachContext(TARGET.AvailableGPUs[0].Id, ChildCpus)", "{error, error}"),
    ("evalInEachContext(GPUs_GPU_c4a646d7.Nope, ChildCpus)", "undefined"),
    ("evalInEachContext(([a = 1]).Nope, ChildCpus)", "undefined"),
    # unresolved()'s references resolve in the ad that holds the expression (TARGET's here).
    ("unresolved(ConsumptionCpus)", "string 'RequestCpus'"),
    ("unresolved(MemoryUsage)", "undefined"),
    ('unresolved(ConsumptionCpus, "req")', "bool True"),
    ("unresolved(TARGET.ChildCpus, MY.GPUs_GPU_c4a646d7.DeviceName)", "undefined"),
    ("unresolved(Requirements, TARGET.Owner)", "error"),
    # An ad literal in evalInEachContext's list keeps the scope it is written in, also when the
    # first argument was found in TARGET and the call goes on there.
    ("evalInEachContext(ConsumptionCpus, {[Memory = 4]})", "{error}"),
    ("evalInEachContext(TARGET.Rank, {[Memory = 4], [y = TARGET.Mips]})", "{undefined, undefined}"),
    ("countMatches(TARGET.Requirements, {[Memory = 4]})", "int 0"),
    ("evalInEachContext(TARGET.ConsumptionCpus, AvailableGPUs)", "undefined"),
    # unresolved() with a pattern that is no string fails the evaluation (after a lookup).
    ("isUndefined(unresolved(Requirements, 5))", "error"),
    ("isUndefined(unresolved(Requirements, NoSuchAttr))", "error"),
    ("isUndefined(unresolved(NoSuchAttr, 5))", "bool True"),
    # A failed evaluation in one ad of evalInEachContext is that ad's ERROR, not the call's.
    ('evalInEachContext(userHome(10, 1, "x"), {[a = 1; b = 2], [b = 3]})', "{error, error}"),
    ("evalInEachContext(a + userHome(), {[a = 1], 5, undefined})", "{error, error, undefined}"),
    ("countMatches(userHome(), {[a = 1]})", "int 0"),
    # Strings order by their bytes, also where a byte is no UTF-8 (substr() cut a character).
    ('substr("😀日本é", 2) < "Åÿ ς日本ÿ😀"', "bool True"),
    ('substr("😀", 1) > "日"', "bool False"),
    ('substr("é", 1) < "a"', "bool False"),
    ('"b" < "A"', "bool False"),
    # A name selected from an ad prints bare when it is "parent", as libclassad prints it.
    ("[a = b.parent; u = unparse(a)].u", "string 'b.parent'"),
    ("[a = parent.parent.x; u = unparse(a)].u", "string \"'parent'.parent.x\""),
    ("[a = .parent; u = unparse(a)].u", "string \".'parent'\""),
    # In multiline mode ^ does not match after a newline that ends the subject (PCRE2).
    (r'regexps("^$", "x\n", "z", "m")', "string ''"),
    (r'regexps("^$", "x\n", "z\\9", "m")', "string ''"),
    (r'replace("^$", "x\n", "z", "m")', r"string 'x\n'"),
    (r'replaceAll("^", "x\ny\n", "z", "m")', r"string 'zx\nzy\n'"),
    (r'replaceAll("(?m)^$", "\n\n", "z")', r"string 'z\nz\n'"),
    (r'regexp("^b", "a\nb", "m")', "bool True"),
]  # fmt: skip

#: Expressions starting with these calls are not evaluated without an ad (classad2 crashes).
_NEEDS_AN_AD = ("evalInEachContext", "countMatches")


@pytest.mark.parametrize(("text", "ours"), CASES)
def test_fresh_corpus_find(text: str, ours: str, world: World) -> None:
    """epcore gives the pinned value with MY = machine and agrees with classad2 in every scene."""
    assert render(canon_epcore(text, world.scenes[1], world.context)) == ours
    scenes = world.scenes[1:] if text.startswith(_NEEDS_AN_AD) else world.scenes
    reports = compare_everywhere(text, world, scenes)
    assert not reports, "\n\n".join(reports)
