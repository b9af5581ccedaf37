"""Reading a startd cron job's output into ads (seed 000, "Job output"): attribute lines,
``-`` separators with uniqueness tags and ``update:`` flags, located errors, and a fuzz test."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.slots.cron_output import CronOutputError, parse_cron_output

SEED_OUTPUT = """\
Value=1
SlotId=1
-s1
Value=2
SlotId=2
-s2
Value=10
- update:true
"""


def _plain(output) -> list[tuple[str, list[tuple[str, object]], bool | None]]:
    return [
        (ad.tag, [(name, expr.evaluate()) for name, expr in ad.attributes], ad.update)
        for ad in output.ads
    ]


def test_seed_output_gives_three_ads_and_an_update() -> None:
    """The seed's example is two tagged ads and the untagged one, with update:true."""
    output = parse_cron_output(SEED_OUTPUT)
    assert _plain(output) == [
        ("s1", [("Value", 1), ("SlotId", 1)], None),
        ("s2", [("Value", 2), ("SlotId", 2)], None),
        ("", [("Value", 10)], True),
    ]
    assert output.update is True


@pytest.mark.parametrize(
    ("text", "expected", "update"),
    [
        ("A = 1\n", [("", [("A", 1)], None)], None),
        ("A = 1\n-\n", [("", [("A", 1)], None)], None),
        ('A = "x"\n- update:false\n', [("", [("A", "x")], False)], False),
        ("- tag update:TRUE\n", [("tag", [], True)], True),
        ("- update:true\n", [], True),
        ("\n# comment\n  B = 2 + 3  \n", [("", [("B", 5)], None)], None),
        ("A = 1\n-t\nA = 2\n-t\n", [("t", [("A", 2)], None)], None),
        ("A = 1\n-\nC = true\n", [("", [("C", True)], None)], None),
        ("A=1\n-a\nB=2\n-b update:0\n", [("a", [("A", 1)], None), ("b", [("B", 2)], False)], False),
    ],
)
def test_separator_lines_tags_and_flags(text: str, expected, update) -> None:
    """Tags name ads (a repeated tag keeps the later ad), update: flags are read in any case,
    blank and comment lines are skipped."""
    output = parse_cron_output(text)
    assert _plain(output) == expected
    assert output.update is update


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("A = 1\nnot an attribute\n", 2, "neither"),
        ("A = 1\n1bad = 2\n", 2, "not an attribute name"),
        ("A = \n", 1, "has no value"),
        ("A = (1 +\n", 1, "attribute A"),
        ("A = 1\n- update:maybe\n", 2, "update:maybe"),
        ("- one two\n", 1, "unexpected 'two'"),
        ("- bad-tag\n", 1, "not a name for an ad"),
    ],
)
def test_malformed_output_names_the_line(text: str, line: int, words: str) -> None:
    """Output that is not ads is a CronOutputError naming the job, the line and the fault."""
    with pytest.raises(CronOutputError) as caught:
        parse_cron_output(text, "probe")
    assert caught.value.line == line
    assert words in str(caught.value)
    assert str(caught.value).startswith(f"cron job probe output, line {line}: ")


_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)


@given(
    st.lists(
        st.tuples(
            st.one_of(st.just(""), _names),
            st.lists(st.tuples(_names, st.integers(-(2**31), 2**31)), min_size=1, max_size=4),
            st.sampled_from([None, True, False]),
        ),
        max_size=5,
    )
)
def test_formatted_ads_read_back(ads) -> None:
    """Ads written in the output format read back with their tags, attributes and flags."""
    text = ""
    expected: dict[str, tuple[list[tuple[str, int]], bool | None]] = {}
    for tag, attributes, update in ads:
        for name, value in attributes:
            text += f"{name} = {value}\n"
        flag = "" if update is None else f" update:{str(update).lower()}"
        text += f"-{' ' + tag if tag else ''}{flag}\n"
        expected.pop(tag, None)
        expected[tag] = (attributes, update)
    output = parse_cron_output(text)
    got = {ad.tag: ([(n, e.evaluate()) for n, e in ad.attributes], ad.update) for ad in output.ads}
    assert got == expected
    flags = [update for _, _, update in ads if update is not None]
    assert output.update == (flags[-1] if flags else None)


def _check_parse(text: str) -> None:
    try:
        output = parse_cron_output(text)
    except CronOutputError as error:
        assert 1 <= error.line <= len(text.splitlines())
    else:
        assert all(ad.attributes or ad.tag for ad in output.ads)
        assert len({ad.tag for ad in output.ads}) == len(output.ads)


@given(st.text(max_size=300))
def test_fuzz_random_text_raises_only_cron_output_error(text: str) -> None:
    """Random text is either ads or a CronOutputError naming one of its lines, never another
    exception."""
    _check_parse(text)


@given(st.lists(st.sampled_from(["A = 1", "-", "- x", "- update:true", "B=(", "==", "#", ""])))
def test_fuzz_line_mixtures(lines: list[str]) -> None:
    """Mixtures of valid and broken lines give ads or a CronOutputError only."""
    _check_parse("\n".join(lines))
