"""ClassAd text formats: new and old syntax, JSON, and the ClassAd mapping itself."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import (
    ERROR,
    UNDEFINED,
    ClassAd,
    ClassAdSyntaxError,
    Expr,
    format_old,
    from_json,
    parse_ad,
    parse_ads,
    parse_expr,
    to_json,
)
from epcore.classad.formats import parse_old_attribute, set_old_line
from epcore.errors import ClassAdError

OLD = """\
# a machine
MyType = "Machine"
Cpus = 4
Memory = Cpus * 1024
Path = "C:\\temp\\new"
Quote = "say \\"hi\\""
"""


def test_old_syntax_reads_lines_and_keeps_backslashes() -> None:
    """Old syntax takes one assignment per line; a backslash escapes only a double quote."""
    ad = parse_ad(OLD)
    assert list(ad) == ["MyType", "Cpus", "Memory", "Path", "Quote"]
    assert ad.evaluate("Memory") == 4096
    assert ad.evaluate("Path") == "C:\\temp\\new"
    assert ad.evaluate("Quote") == 'say "hi"'


def test_format_old_round_trips() -> None:
    """format_old writes what parse_ad reads back unchanged."""
    ad = parse_ad(OLD)
    assert parse_ad(format_old(ad)) == ad
    assert format_old(ad).splitlines()[2] == "Memory = Cpus * 1024"


# Old-syntax lines whose strings and quoted names hold backslashes, with the value of A that
# libclassad's old-syntax lexer gives (None: the line is refused). A backslash escapes only the
# closing quote, and not when that quote ends the text or its line; a carriage return after
# it is string text (HTCondor's old writer puts one there raw).
OLD_BACKSLASHES = [
    ('A = "x\\"\r"', 'x"\r'),
    ('A = "x\\"', "x\\"),
    ('A = "x\\"\nB = 1', "x\\"),
    ('A = "x\\"   ', None),
    ('A = "x\\"\r', None),
    ('A = "a\\\\b"', "a\\\\b"),
    ('A = "a\\nb"', "a\\nb"),
    ("A = [ 'a\\'b' = 1 ].'a\\'b'", 1),
    ("A = [ 'q\\r' = 2 ].'q\\r'", 2),
    ("A = [ 'a\\' = 3 ]", None),
]


@pytest.mark.parametrize(("text", "value"), OLD_BACKSLASHES)
def test_old_syntax_backslashes_are_read_as_libclassad_reads_them(text: str, value: object) -> None:
    """A backslash in an old-syntax string or quoted name escapes only a closing quote that
    does not end the line."""
    if value is None:
        with pytest.raises(ClassAdSyntaxError):
            parse_ad(text)
    else:
        assert parse_ad(text).evaluate("A") == value


@pytest.mark.oracle
@pytest.mark.parametrize(("text", "value"), OLD_BACKSLASHES)
def test_old_syntax_backslash_cases_agree_with_classad2(text: str, value: object) -> None:
    """classad2's old-syntax reader gives the values (or refusals) the cases above expect."""
    classad2 = pytest.importorskip("classad2")
    theirs = classad2.parseOne(text, classad2.ParserType.Old)
    if value is None:
        assert "A" not in theirs
    else:
        assert theirs.eval("A") == value


@pytest.mark.oracle
@pytest.mark.parametrize(
    "text",
    [
        "[ A = 'a\\\\b' + 1 ]",
        "[ A = 'a\\'b' + 1 ]",
        '[ A = "x\\"\\r" ]',
        '[ A = "C:\\\\temp" ]',
        "[ A = [ 'q\\\\r' = 1 ] ]",
    ],
)
def test_format_old_writes_what_classad2_writes(text: str) -> None:
    """format_old spells strings and quoted names as classad2's printOld does (only the quote
    escaped), and reads its text back unchanged."""
    classad2 = pytest.importorskip("classad2")
    ad = parse_ad(text)
    assert format_old(ad) == classad2.parseOne(text, classad2.ParserType.New).printOld()
    assert parse_ad(format_old(ad)) == ad


def test_old_syntax_errors_name_line_and_column() -> None:
    """A bad old-syntax line is reported at its own line and column, with the file name."""
    with pytest.raises(ClassAdSyntaxError) as caught:
        parse_ad("A = 1\nB = 2 +\nC = 3\n", source="job.ad")
    assert (caught.value.line, caught.value.column) == (2, 8)
    assert str(caught.value).startswith("job.ad:2:8:")
    with pytest.raises(ClassAdSyntaxError) as missing:
        parse_ad("A = 1\n  not an assignment\n")
    assert (missing.value.line, missing.value.column) == (2, 3)


def test_parse_ads_splits_old_ads_at_blank_lines_and_new_ads_at_brackets() -> None:
    """parse_ads yields each ad of a text in either syntax."""
    old = list(parse_ads("A = 1\nB = 2\n\nA = 3\n\n\n"))
    assert [ad.evaluate("A") for ad in old] == [1, 3]
    new = list(parse_ads("[ A = 1 ] [ A = 2 ]\n[ A = 3 ]"))
    assert [ad.evaluate("A") for ad in new] == [1, 2, 3]


def test_json_has_htcondor_layout() -> None:
    """to_json writes literals as JSON, undefined as null and expressions as /Expr(...)/."""
    ad = parse_ad('[ a = 1; s = "x"; u = undefined; e = a + 1; n = [ k = { 1, 2 } ] ]')
    text = to_json(ad)
    assert '"e": "\\/Expr(a + 1)\\/"' in text
    assert '"u": null' in text
    assert from_json(text) == ad


@pytest.mark.oracle
def test_json_is_read_by_classad2() -> None:
    """classad2 reads epcore's JSON into the same attributes."""
    classad2 = pytest.importorskip("classad2")
    ad = parse_ad('[ a = 1; b = 2.5; s = "q\\"x"; e = a + 1; l = { 1, "two" } ]')
    theirs = next(iter(classad2.parseAds(to_json(ad), classad2.ParserType.JSON)))
    assert theirs.eval("e") == 2
    assert theirs.eval("s") == 'q"x'
    assert theirs.eval("b") == 2.5


@pytest.mark.parametrize(
    "text",
    ["not json", "[1, 2]", '{"a": "\\/Expr(1 +)\\/"}', '{"a": 99999999999999999999}'],
)
def test_bad_json_raises_clear_errors(text: str) -> None:
    """Malformed JSON, a non-object, a bad embedded expression or a huge integer is an error."""
    with pytest.raises(ClassAdError):
        from_json(text)


def test_classad_mapping_is_case_insensitive_and_keeps_spelling() -> None:
    """Keys match case-insensitively; iteration gives the first spelling used."""
    ad = ClassAd({"RequestMemory": 2048})
    ad["requestmemory"] = 4096
    assert list(ad) == ["RequestMemory"]
    assert ad.evaluate("REQUESTMEMORY") == 4096
    assert "requestMEMORY" in ad
    del ad["REQUESTmemory"]
    assert len(ad) == 0


def test_classad_stores_python_values_and_expressions() -> None:
    """Python values become literals, lists and dicts become lists and nested ads."""
    ad = ClassAd()
    ad["n"] = None
    ad["l"] = [1, "a", {"k": True}]
    ad["e"] = parse_expr("size(l)")
    ad["nested"] = parse_ad("[ x = 1 ]")
    assert ad.evaluate("n") is UNDEFINED
    assert str(ad["l"]) == '{ 1,"a",[ k = true ] }'
    assert ad.evaluate("nested").evaluate("x") == 1  # type: ignore[union-attr]
    with pytest.raises(TypeError):
        ad["bad"] = object()
    with pytest.raises(ValueError, match="64-bit"):
        ad["huge"] = 1 << 70
    with pytest.raises(ValueError, match="NUL"):
        ad["nul"] = "a\x00b"
    with pytest.raises(ValueError, match="encodable"):
        ad["surrogate"] = "\ud800"


finite_reals = st.floats(allow_nan=False)
scalars = st.one_of(
    st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1),
    finite_reals,
    st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"])),
    st.booleans(),
    st.sampled_from([UNDEFINED, ERROR]),
)


@given(scalars)
def test_literals_round_trip_through_text(value: object) -> None:
    """str() of any literal parses back to the identical literal (reals bit for bit)."""
    ad = ClassAd({"x": value})
    text = str(ad["x"])
    again = parse_expr(text)
    assert again == ad["x"], text
    result = again.evaluate()
    if isinstance(value, float):
        assert isinstance(result, float) and (math.copysign(1, result) == math.copysign(1, value))


@given(st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True), scalars))
def test_ads_round_trip_through_new_syntax_and_json(values: dict[str, object]) -> None:
    """Ads of literals survive str()/parse_ad and to_json/from_json unchanged."""
    ad = ClassAd(values)
    assert parse_ad(str(ad)) == ad
    assert from_json(to_json(ad)) == _json_view(ad)


def _json_view(ad: ClassAd) -> ClassAd:
    # JSON writes non-finite reals and error as /Expr(...)/, which read back as the same
    # expressions, so the ad is unchanged.
    return ad


def test_expr_equality_and_hash_follow_structure() -> None:
    """Equal text gives equal, equally-hashed expressions; 1 and 1.0 differ."""
    assert parse_expr("a + 1") == Expr(parse_expr("a + 1").node)
    assert hash(parse_expr("a + 1")) == hash(parse_expr("a+1"))
    assert parse_expr("1") != parse_expr("1.0")


@pytest.mark.parametrize(
    "line",
    [
        'A = "\\"',  # a string that is one backslash, as the old syntax writes it
        'A = "a\\"',
        'A = "x\\"y"',  # a backslash inside escapes the quote
        'A = "\\\\"',
        'A = "\\" ',  # a space after the quote: HTCondor escapes it, and nothing ends the string
    ],
)
def test_old_string_ending_in_a_backslash_reads_as_htcondor_reads_it(line: str) -> None:
    """A backslash before the quote that ends an old-syntax line is literal, as in classad2."""
    import classad2

    try:
        expected = classad2.parseOne(line + "\n", classad2.ParserType.Old).get("A")
    except Exception:  # classad2 raises several kinds for a line it cannot read
        expected = None
    if expected is None:
        with pytest.raises(ClassAdError):
            parse_old_attribute(line)
    else:
        assert parse_old_attribute(line)[1].evaluate() == expected


def test_a_line_read_again_gives_the_binding_it_gave_and_keeps_the_first_spelling() -> None:
    """set_old_line: the same line in two ads gives both the same (immutable) binding, with
    its value; an ad that spelled the name otherwise keeps its spelling; a line too long to
    keep, or one read with keep=False, gets a binding of its own."""
    first, second = ClassAd(), ClassAd()
    set_old_line(first, 'Arch = "X86_64"')
    set_old_line(second, 'Arch = "X86_64"')
    assert first._bindings["arch"] is second._bindings["arch"]
    assert second.evaluate("Arch") == "X86_64"
    spelled = ClassAd({"ARCH": "other"})
    set_old_line(spelled, 'Arch = "X86_64"')
    assert list(spelled) == ["ARCH"] and spelled.evaluate("arch") == "X86_64"
    long_line = 'Long = "' + "x" * 1100 + '"'
    set_old_line(first, long_line)
    set_old_line(second, long_line)
    assert first._bindings["long"] is not second._bindings["long"]
    assert first.evaluate("Long") == "x" * 1100
    set_old_line(first, "Fresh = 7", keep=False)
    set_old_line(second, "Fresh = 7")
    assert first._bindings["fresh"] is not second._bindings["fresh"]
    with pytest.raises(ClassAdSyntaxError):
        set_old_line(first, "= 1")
