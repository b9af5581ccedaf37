"""Functions that evaluate their arguments themselves: ifThenElse, eval, unparse, unresolved,
evalInEachContext, countMatches and debug, in an ad with and without a TARGET."""

from __future__ import annotations

import pytest
from fn_oracle import assert_agree
from oracle import Scene, World

pytestmark = [pytest.mark.oracle, pytest.mark.usefixtures("compat")]

CASES = [
    "ifThenElse(true, 1, 2)", "ifThenElse(0.0, 1, 2)", "ifThenElse(undefined, 1, 2)",
    'ifThenElse("x", 1, 2)', "ifThenElse(true, 1)", "ifThenElse(false, error, 2)",
    "ifThenElse(error, 1, 2)", "ifThenElse(2, x, y)", "ifThenElse(true, 1, 2, 3)",
    'eval("x + 1")', "eval(s)", 'eval("q")', "eval(5)", "eval(undefined)", 'eval("1 +")',
    "eval({1, 2})", 'eval("[a = 1].a")', 'eval("eval(\\"x\\")")', "eval()", "eval(1.5)",
    'eval(strcat("rel", "Time(5)"))',
    "debug(x + 1)", "debug()", "debug(1, 2)",
    "unparse(x)", "unparse(y)", "unparse(MY.x)", "unparse(w)", "unparse(q)",
    "unparse(nonexistent)", "unparse(n.p)", "unparse(1)", "unparse(x, y)", "unparse(z)",
    "unparse(l)", "unparse(n)", "unparse(e1)", "unparse(e2)", "unparse(e3)", "unparse(e4)",
    "unparse(e5)", "unparse(e7)", "unparse(e8)", "unparse(e9)", "unparse(e12)",
    "unresolved(z)", "unresolved(y)", "unresolved(x)", "unresolved(t)",
    "unresolved(nonexistent)", 'unresolved(z, "^w$")', 'unresolved(z, "^W")', 'unresolved(z, "q")',
    'unresolved(z, "nomatch")', 'unresolved(z, "(")', "unresolved(z, 5)", "unresolved(n)",
    "unresolved(1)", "unresolved(u)", "unresolved(m1)", "unresolved(f)", "unresolved(ap)",
    "unresolved(cyc)", "unresolved(MY.z)", "unresolved(n.r)", "unresolved(sc)", "unresolved()",
    "evalInEachContext(a, l)", "evalInEachContext(req, l)", "countMatches(req, l)",
    "countMatches(a, l)", "evalInEachContext(b, l)", "evalInEachContext(a + 1, l)",
    "evalInEachContext(a, undefined)", "countMatches(a, undefined)", "evalInEachContext(a, 5)",
    "countMatches(a, 5)", "evalInEachContext(a, {})", "evalInEachContext(a)",
    "evalInEachContext(x, {[x = 5]})", "evalInEachContext(MY.x, {[x = 5]})",
    "evalInEachContext(TARGET.w, {[x = 5]})", "evalInEachContext(w, {[w = 1]})",
    "evalInEachContext(nonexistentattr, {[nonexistentattr = 5]})",
    'countMatches(a, {[a = 2], [a = 0.5], [a = "x"], [a = true]})',
    "evalInEachContext(b, ifThenElse(true, {[a = 1]}, {}))", "evalInEachContext(b, MY.l)",
    "evalInEachContext(b, {[a = 1], [b = 2]})", "evalInEachContext(b, x)", "countMatches(b, l)",
    "countMatches(b, x)", "evalInEachContext(q, l)", "evalInEachContext(1, l)",
    "evalInEachContext(p, {n, [p = x]})", "evalInEachContext(r, {n})",
    # After a failed lookup of the first argument, unparse() and unresolved() in the list
    # argument find nothing ("" and UNDEFINED), not ERROR.
    "evalInEachContext(nonexistentattr, unresolved(z))", "countMatches(zz9, unresolved(x))",
    'evalInEachContext(zz9, unresolved(z, "w"))', "evalInEachContext(zz9, unparse(x))",
    'evalInEachContext(zz9, ifThenElse(unparse(x) == "", {[a = 1]}, {}))',
    "evalInEachContext(zz9, ifThenElse(isUndefined(unresolved(x)), {[a = 1]}, {}))",
    # The list argument is evaluated in the ad where the first argument was found.
    "evalInEachContext(w, MY.l)", "evalInEachContext(w, l)", "countMatches(w, MY.l)",
    "evalInEachContext(w, ifThenElse(isUndefined(MY.x), {[a = 1]}, {[a = 2]}))",
    # A relative time among the results is (int) of its seconds, as a real.
    "evalInEachContext(relTime(2.5), l)", "evalInEachContext(-relTime(a), l)",
    "evalInEachContext(relTime(0) / 0, l)", "isReal(evalInEachContext(relTime(5), l)[0])",
    "countMatches(relTime(a), l)",
]  # fmt: skip


@pytest.mark.parametrize("text", CASES)
def test_evaluation_functions(text: str, world: World, scope_scenes: tuple[Scene, ...]) -> None:
    """Each call agrees with classad2 in an ad of references, with and without a TARGET."""
    assert_agree([text], world, scope_scenes)


#: Evaluated with the sample machine and job ads, each as MY and as TARGET: the machine's
#: AvailableGPUs holds a nested ad whose alternate scope must be the job whichever side it is.
MATCH_CASES = [
    "evalInEachContext(toUpper(Owner), AvailableGPUs)", "evalInEachContext(Owner, AvailableGPUs)",
    "evalInEachContext(RequestMemory, AvailableGPUs)", "evalInEachContext(MY.Owner, AvailableGPUs)",
    'countMatches(Owner =?= "alice", AvailableGPUs)', "evalInEachContext(Owner, {[a = 1]})",
    "evalInEachContext(TARGET.Cpus, AvailableGPUs)",
    "evalInEachContext(Memory, MY.AccountingGroup)", "evalInEachContext(Memory, AccountingGroup)",
]  # fmt: skip


@pytest.mark.parametrize("text", MATCH_CASES)
def test_evaluation_functions_in_a_match(text: str, world: World) -> None:
    """Each call agrees with classad2 with MY = machine or job and TARGET = the other."""
    assert_agree([text], world, world.scenes[1:])
