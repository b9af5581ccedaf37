"""Tests of epcore.jobs.syntax: the argument, environment and signal texts of a job ad."""

from __future__ import annotations

import signal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.errors import JobSetupError
from epcore.jobs import syntax
from epcore.jobs.syntax import JobSpecError

# The condor_submit manual's own examples, as they appear in the job ad: condor_submit drops
# the outer double quotes of the submit value and turns each "" into ".
ARGS_V2_CASES = [
    pytest.param("3 simple arguments", ("3", "simple", "arguments"), id="manual-simple"),
    pytest.param("one 'two with spaces' 3", ("one", "two with spaces", "3"), id="manual-spaces"),
    pytest.param(
        "one \"two\" 'spacey ''quoted'' argument'",
        ("one", '"two"', "spacey 'quoted' argument"),
        id="manual-quotes",
    ),
    pytest.param("", (), id="empty"),
    pytest.param("   \t  ", (), id="only-blanks"),
    pytest.param("''", ("",), id="empty-argument"),
    pytest.param("a '' b", ("a", "", "b"), id="empty-in-middle"),
    pytest.param("ab'c d'e", ("abc de",), id="quotes-join-a-word"),
    pytest.param("''''", ("'",), id="lone-literal-quote"),
    pytest.param("a\tb\nc", ("a", "b", "c"), id="any-white-space"),
    pytest.param("  lead trail  ", ("lead", "trail"), id="outer-blanks"),
]

ARGS_V1_CASES = [
    pytest.param("-v  --out file", ("-v", "--out", "file"), id="words"),
    pytest.param("'not quoted'", ("'not", "quoted'"), id="no-quoting"),
    pytest.param('"x y"', ('"x', 'y"'), id="double-quotes-ordinary"),
    pytest.param("", (), id="empty"),
    pytest.param("a\tb", ("a", "b"), id="tab"),
]

ENV_V2_CASES = [
    pytest.param(
        "one=1 two=\"2\" three='spacey ''quoted'' value'",
        (("one", "1"), ("two", '"2"'), ("three", "spacey 'quoted' value")),
        id="manual-example",
    ),
    pytest.param("A=", (("A", ""),), id="empty-value"),
    pytest.param("A=x=y", (("A", "x=y"),), id="equals-in-value"),
    pytest.param("'A=b c'", (("A", "b c"),), id="whole-word-quoted"),
    pytest.param("A=1 A=2", (("A", "2"),), id="later-wins"),
    pytest.param("", (), id="empty"),
]

ENV_V1_CASES = [
    pytest.param("A=b;C=d", ";", (("A", "b"), ("C", "d")), id="fetchwork-example"),
    pytest.param(
        "one=1;two=2;three=\"quotes have no 'special' meaning\"",
        ";",
        (("one", "1"), ("two", "2"), ("three", "\"quotes have no 'special' meaning\"")),
        id="manual-old-syntax",
    ),
    pytest.param("A=b c;;D=", ";", (("A", "b c"), ("D", "")), id="blanks-and-empty-entries"),
    pytest.param("A=b|C=d;e", "|", (("A", "b"), ("C", "d;e")), id="pipe-delimiter"),
    pytest.param("", ";", (), id="empty"),
]

MALFORMED_ARGS_V2 = [
    pytest.param("one 'two", 5, id="unterminated"),
    pytest.param("'", 1, id="lone-quote"),
    pytest.param("a b 'c'' d", 5, id="doubled-quote-then-end"),
]

MALFORMED_ENV = [
    pytest.param(syntax.parse_env_v2, "NOEQUALS", "Environment", id="v2-no-equals"),
    pytest.param(syntax.parse_env_v2, "=value", "Environment", id="v2-empty-name"),
    pytest.param(syntax.parse_env_v2, "A='x", "Environment", id="v2-unterminated"),
    pytest.param(syntax.parse_env_v1, "A=b;junk", "Env", id="v1-no-equals"),
    pytest.param(syntax.parse_env_v1, "=x", "Env", id="v1-empty-name"),
]


@pytest.mark.parametrize(("text", "expected"), ARGS_V2_CASES)
def test_args_v2_follow_htcondor_quoting(text: str, expected: tuple[str, ...]) -> None:
    """V2 arguments split on white space, with single quotes grouping and '' a literal quote."""
    assert syntax.parse_args_v2(text) == expected


@pytest.mark.parametrize(("text", "expected"), ARGS_V1_CASES)
def test_args_v1_split_on_white_space_only(text: str, expected: tuple[str, ...]) -> None:
    """V1 arguments are white-space separated words in which quotes are ordinary characters."""
    assert syntax.parse_args_v1(text) == expected


@pytest.mark.parametrize(("text", "expected"), ENV_V2_CASES)
def test_env_v2_reads_quoted_assignments(text: str, expected: tuple[tuple[str, str], ...]) -> None:
    """V2 environment words are NAME=value with the argument quoting rules."""
    assert syntax.parse_env_v2(text) == expected


@pytest.mark.parametrize(("text", "delimiter", "expected"), ENV_V1_CASES)
def test_env_v1_reads_delimited_assignments(
    text: str, delimiter: str, expected: tuple[tuple[str, str], ...]
) -> None:
    """V1 environment entries are NAME=value separated by the delimiter, quotes literal."""
    assert syntax.parse_env_v1(text, delimiter=delimiter) == expected


@pytest.mark.parametrize(("text", "column"), MALFORMED_ARGS_V2)
def test_unterminated_quote_names_attribute_and_column(text: str, column: int) -> None:
    """An unterminated quote is a JobSpecError naming the attribute and the quote's column."""
    with pytest.raises(JobSpecError) as caught:
        syntax.parse_args_v2(text, "Arguments")
    assert str(caught.value) == f"job ad attribute Arguments: unterminated quote at column {column}"
    assert caught.value.hold_code == 6


@pytest.mark.parametrize(("parser", "text", "attribute"), MALFORMED_ENV)
def test_malformed_environment_is_refused(parser: object, text: str, attribute: str) -> None:
    """An environment entry without '=', with an empty name or an open quote is refused."""
    assert callable(parser)
    with pytest.raises(JobSpecError, match=f"job ad attribute {attribute}"):
        parser(text)


def test_job_spec_error_is_a_job_setup_error() -> None:
    """JobSpecError is a JobSetupError, so the starter holds the job with its code."""
    assert issubclass(JobSpecError, JobSetupError)


_texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
_names = st.text(
    st.characters(exclude_categories=["Cs", "Zs", "Cc"], exclude_characters="='"),
    min_size=1,
    max_size=8,
)


@given(st.lists(_texts, max_size=6))
def test_quote_args_v2_round_trips(arguments: list[str]) -> None:
    """Any argument list quoted in V2 syntax parses back to itself."""
    assert syntax.parse_args_v2(syntax.quote_args_v2(arguments)) == tuple(arguments)


@given(st.dictionaries(_names, _texts, max_size=6))
def test_quote_env_v2_round_trips(environment: dict[str, str]) -> None:
    """Any environment with writable names quoted in V2 syntax parses back to itself."""
    pairs = tuple(environment.items())
    assert syntax.parse_env_v2(syntax.quote_env_v2(pairs)) == pairs


@pytest.mark.parametrize("name", ["", "A=B", "A B", "it's"], ids=repr)
def test_quote_env_v2_refuses_unreadable_names(name: str) -> None:
    """A name that could not be read back is refused rather than written wrongly."""
    with pytest.raises(JobSpecError, match="cannot be written"):
        syntax.quote_env_v2([(name, "x")])


@given(st.text(max_size=40))
def test_parsers_raise_only_job_spec_errors(text: str) -> None:
    """On any text the four parsers return a tuple or raise JobSpecError, nothing else."""
    for parser in (
        syntax.parse_args_v1,
        syntax.parse_args_v2,
        syntax.parse_env_v1,
        syntax.parse_env_v2,
    ):
        try:
            result = parser(text)
        except JobSpecError:
            continue
        assert isinstance(result, tuple)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("SIGQUIT", signal.SIGQUIT),
        ("QUIT", signal.SIGQUIT),
        ("sigint", signal.SIGINT),
        (" SIGKILL ", signal.SIGKILL),
        ("3", 3),
        (3, 3),
        (15, signal.SIGTERM),
    ],
    ids=repr,
)
def test_signal_number_reads_names_and_numbers(value: object, expected: int) -> None:
    """KillSig may be a signal name with or without SIG, in any case, or a number."""
    assert syntax.signal_number(value) == expected


@pytest.mark.parametrize("value", ["SIGBOGUS", "", 0, 999, -1, True, 2.5, None], ids=repr)
def test_bad_signal_names_kill_sig(value: object) -> None:
    """An unknown name, an out-of-range number or a non-signal type is an error naming KillSig."""
    with pytest.raises(JobSpecError, match="KillSig"):
        syntax.signal_number(value)
