"""Regular expressions (PCRE2 semantics on the regex package) and version comparisons agree."""

from __future__ import annotations

import pytest
from fn_oracle import assert_agree
from oracle import World

pytestmark = pytest.mark.oracle

MATCHING = [
    'regexp("A", "abc")', 'regexp("A", "abc", "i")', 'regexp("A", "abc", "I")',
    'regexp("^b", "a\\nb")', 'regexp("^b", "a\\nb", "m")', 'regexp("a.b", "a\\nb")',
    'regexp("a.b", "a\\nb", "s")', 'regexp("a b", "ab", "x")', 'regexp("(", "ab")',
    'regexp("a", undefined)', "regexp(undefined, error)", 'regexp("a", 5)',
    'regexp("a", "a", 5)', 'regexp("a", "a", undefined)', 'regexp("a")', 'regexp("a", "a", "", 1)',
    'regexp("(?<n>a)\\\\k<n>", "aa")', 'regexp("\\\\d+", "x12")', 'regexp("[[:alpha:]]+", "12ab")',
    'regexp("[^[:alpha:]]+", "ab")', 'regexp("[[:^digit:]]", "a")', 'regexp("[[.a.]]", "a")',
    'regexp("a\\\\z", "a\\n")', 'regexp("a\\\\Z", "a\\n")', 'regexp("a$", "a\\n")',
    'regexp("\\\\Qa.b\\\\E", "a.b")', 'regexp("\\\\Qa.b\\\\E", "axb")', 'regexp("é", "café")',
    'regexp("caf.$", "café")', 'regexp("^.{5}$", "café")', 'regexp("\\\\w+", "é")',
    'regexp("(?i)A", "a")', 'regexp("a(?i)b", "aB")', 'regexp("a(?i)b|C", "c")',
    'regexp("(a(?i)b)c", "aBC")', 'regexp("a++b", "aab")', 'regexp("(?>a+)b", "aab")',
    'regexp("\\\\x{41}", "A")', 'regexp("\\\\h", "a b")', 'regexp("\\\\v", "a\\nb")',
    'regexp("[\\\\h]", "a\\tb")', 'regexp("\\\\R", "a\\r\\nb")', 'regexp("(?P<x>a)(?P=x)", "aa")',
    'regexp("(a)\\\\g{1}", "aa")', 'regexp("(a)\\\\g1", "aa")', 'regexp("(a)\\\\g-1", "aa")',
    'regexp("[]a]", "]")', 'regexp("[^]a]", "b")', 'regexp("\\\\N", "a")',
    'regexp("\\\\cA", "\\001")', 'regexp("(?#comment)a", "a")', 'regexp("a # c", "a", "x")',
    'regexp("\\\\e", "\\033")', 'regexp("\\\\o{101}", "A")', 'regexp("\\\\101", "A")',
    'regexp("\\\\bfoo\\\\b", "a foo b")', 'regexp("\\\\Bfoo", "afoo")', 'regexp("\\\\C", "a")',
    'regexp("[[:word:]]", "_")', 'regexp("a\\\\", "a")', 'regexp("[a|b&&c~~d]", "&")',
    'regexpMember("a", {"b", "ca"})', 'regexpMember("a", {"b", undefined})',
    'regexpMember("a", {"a", undefined})', 'regexpMember("a", {"b", 1})', 'regexpMember("a", {})',
    'regexpMember("a", "a")', 'regexpMember("(", {"a"})', 'regexpMember("(", {})',
    'regexpMember("A", {"a"}, "i")', 'regexpMember("A", {"a"}, undefined)',
    'regexpMember("A", {"a"}, 1)', 'regexpMember(undefined, {"a"})', 'regexpMember(1, {"a"})',
    'regexp("a\\\\Kb", "ab")', 'regexp("\\\\G", "a")', 'regexp("\\\\X", "a")',
    'regexp("\\\\p{L}", "a")', 'regexp("\\\\p{L}", "1")',
]  # fmt: skip

SUBSTITUTION = [
    'regexps("x*", "abc", "-", "g")', 'replaceAll("x*", "abc", "-")',
    'replaceAll("b*", "abc", "-")', 'replaceAll("b", "abcb", "-")',
    'replaceAll("b", "abcb", "<\\\\0>")', 'replace("b", "abcb", "-")',
    'regexps("b", "abcb", "-")', 'regexps("(b)(c)", "abcb", "\\\\2\\\\1\\\\0")',
    'regexps("(b)(x)?", "abcb", "[\\\\2]")', 'regexps("(b)(x)?", "abcb", "[\\\\1]")',
    'regexps("((a)b)", "abcb", "[\\\\2]")', 'regexps("(b)", "abcb", "[\\\\3]")',
    'regexps("(b)", "abcb", "a\\\\nb\\\\")', 'regexps("z", "abcb", "-")',
    'replace("z", "abcb", "-")',
    'regexps("b", "abcb", "-", "g")', 'regexps("b", "abcb", "-", "fg")',
    'regexps("B", "abcb", "-", "ig")', 'regexps("^", "ab\\ncd", "-", "gm")',
    'replaceAll("^", "ab\\ncd", "-")', 'replaceAll("$", "ab", "-")', 'replaceAll("a|", "bab", "-")',
    'replaceAll("", "", "-")', 'replaceAll("x*", "", "-")', 'replace("", "abc", "-")',
    'replace("é", "café!", "e")', 'replaceAll("(\\\\w+)@(\\\\w+)", "a@b c@d", "\\\\2/\\\\1")',
    'regexps("a", "a", undefined)', 'regexps("a", error, undefined)', 'regexps("a", "a", 1)',
    'regexps("a", "a", "b", 1)', 'regexps("a", "a")', 'replace("(", "a", "b")',
    'regexps("a", "a", "b", "c", "d")', 'regexps("a\\\\Kb", "ab", "x")',
    'replace("a\\\\Kb", "zab", "x")',
]  # fmt: skip

VERSIONS = [
    'versioncmp("1.10", "1.9")', 'VERSIONCMP("1.10", "1.9")', 'versioncmp("a", "b")',
    'versioncmp("1.01", "1.1")', 'versioncmp("1.001", "1.01")', "versioncmp(1, 2)",
    "versioncmp(undefined, 2)", "versioncmp(error, 2)", 'versioncmp({1}, "x")',
    'versioncmp("8.9.10", "8.9.9")', 'versioncmp("1.0", "1.00")', 'versioncmp("v1", "v01")',
    'versioncmp("1.2a", "1.2")', 'versioncmp("", "1")', 'versioncmp("é", "e")',
    'versioncmp("10", "9")', 'versioncmp("0", "00")', 'versioncmp("a0", "a")', 'versioncmp("1")',
    'versionLE("1", "2")', 'versionle("1", "2")', 'versionLT("1", "1")', 'versionGE("1", "1")',
    'versionGT("8.9.10", "8.9.9")', 'versionEQ("1.0", "1.0")', "versionEQ(undefined, undefined)",
    'versionEQ(1, "1")', 'version_in_range("1.5", "1.0", "2.0")',
    'version_in_range(undefined, "1.0", "2.0")', 'version_in_range(error, "1.0", "2.0")',
    'Version_In_Range("1.5", "1.0", "2.0")', 'version_in_range("1.5", undefined, "2.0")',
    'version_in_range("2.0.1", "1.0", "2.0")', 'version_in_range("1.5", "1.0")',
]  # fmt: skip


@pytest.mark.parametrize("text", MATCHING)
def test_matching(text: str, world: World) -> None:
    """regexp() and regexpMember() match bytes as PCRE2 does, option letters included."""
    assert_agree([text], world)


@pytest.mark.parametrize("text", SUBSTITUTION)
def test_substitution(text: str, world: World) -> None:
    """regexps(), replace() and replaceAll() substitute \\0-\\9 with libclassad's quirks."""
    assert_agree([text], world)


@pytest.mark.parametrize("text", VERSIONS)
def test_versions(text: str, world: World) -> None:
    """Natural version order, with libclassad's exact versioncmp() magnitudes."""
    assert_agree([text], world)
