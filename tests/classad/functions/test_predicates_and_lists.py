"""Type predicates, membership and the list functions agree with classad2."""

from __future__ import annotations

import pytest
from fn_oracle import assert_agree
from oracle import World

pytestmark = pytest.mark.oracle

SAMPLES = [
    "undefined", "error", "1", "2.5", '"s"', "true", "{1}", "[a = 1]", "absTime(0)",
    "relTime(5)", "x", "{}", "[]",
]  # fmt: skip
PREDICATES = [
    "isUndefined", "isError", "isString", "isInteger", "isReal", "isList", "isClassAd",
    "isBoolean", "isAbsTime", "isRelTime",
]  # fmt: skip

MEMBERSHIP = [
    "member(1, {1, 2})",
    "member(1.0, {1, 2})",
    'member("A", {"a"})',
    'identicalMember("A", {"a"})',
    "identicalMember(1.0, {1})",
    "member(undefined, {1})",
    "identicalMember(undefined, {undefined})",
    "identicalMember(error, {error})",
    "member(error, {1})",
    "member(1, undefined)",
    "member(1, 2)",
    "member({1}, {1})",
    "member([a = 1], {1})",
    "member(1, {undefined, 1})",
    "member(1, {error, 1})",
    'member(1, {"a", 1})',
    "member(absTime(0), {absTime(0)})",
    "member(1)",
    "member(1, {1}, 2)",
]

LISTS = [
    "size({1, 2})", "size({})", "size([a = 1; b = 2])", 'size("héllo")', 'size("")',
    "size(undefined)", "size(3)", "size(error)", "size()", "size({1}, {2})",
    "sum({})", "avg({})", "sum({undefined})", "avg({undefined, 2})", "sum({true})",
    "sum({true, 1})", "sum({1, 2.5})", 'sum({1, "a"})', "sum({1, error})", "sum(undefined)",
    "sum(3)", "avg({1, 2})", "avg({1, 2, 4})", "sum({9223372036854775807, 1})",
    "sum({relTime(1)})", "avg({1.5, undefined, 2.5})",
    "min({})", "min({3, 1.5, 2})", "max({3, 1.5, 3.0})", "min({undefined})",
    'max({1, "x"})', "max({3, 3.0})", "max({3.0, 3})", "min({1, 1.0})", "max({1, 2, 2.0})",
    "max({true})", "min({false, true})", "max({1.5, true})", "max({undefined, 2})",
    "max({9223372036854775807, 1.0})", "min({-0.0, 0})", "min({0, -0.0})",
    'max({real("nan"), 1})', 'max({1, real("nan")})', 'min({1, real("nan"), 0})',
    "min(undefined)", "max(5)", "max()",
    'anyCompare("<", {1, 2, 3}, 2)', 'anyCompare("<", {5, undefined, 1}, 2)',
    'anyCompare("<", {1, undefined}, 2)', 'allCompare("<", {1, 2}, 3)',
    'allCompare("<", {1, undefined}, 3)', 'allCompare("<", {1, "a"}, 3)',
    'anyCompare("==", {"A"}, "a")', 'anyCompare("is", {"A"}, "a")',
    'anyCompare("isnt", {"A"}, "a")', 'anyCompare("=?=", {"A"}, "a")',
    'anyCompare("!=", {1, 1}, 1)', 'allCompare(">=", {3, 4}, 3)', 'allCompare("<=", {}, 0)',
    "anyCompare(undefined, {1}, 1)", 'anyCompare("<", undefined, 1)',
    'anyCompare("<", {1}, undefined)', 'allCompare("<", {}, undefined)',
    "anyCompare(1, {1}, 1)", 'anyCompare("<", 1, 1)', 'anyCompare("<", {1})',
    'allCompare("<", {1, error}, 3)', 'anyCompare("<", {1, error}, 3)',
]  # fmt: skip


@pytest.mark.parametrize("name", PREDICATES)
def test_type_predicates(name: str, world: World) -> None:
    """Each is*() predicate answers for every kind of value, and is ERROR with wrong arity."""
    texts = [f"{name}({sample})" for sample in SAMPLES]
    assert_agree([*texts, f"{name}()", f"{name}(1, 2)", f"{name.upper()}(1)"], world)


@pytest.mark.parametrize("text", MEMBERSHIP)
def test_membership(text: str, world: World) -> None:
    """member() compares with ==, identicalMember() with =?=, with libclassad's strictness."""
    assert_agree([text], world)


@pytest.mark.parametrize("text", LISTS)
def test_list_functions(text: str, world: World) -> None:
    """size, sum, avg, min, max, anyCompare and allCompare keep libclassad's types and edges."""
    assert_agree([text], world)
