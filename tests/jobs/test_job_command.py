"""Tests of epcore.jobs.command: a job ad read into the command the starter runs."""

from __future__ import annotations

import signal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from param_oracle import ParamOracle

from epcore.classad import ClassAd, parse_ad
from epcore.errors import JobSetupError
from epcore.jobs.command import (
    DEFAULT_THREAD_VARS,
    JobCommand,
    JobSpecError,
    job_command,
    job_environment,
    parse_args_v1,
    parse_args_v2,
    parse_env_v1,
    parse_env_v2,
    quote_args_v2,
    quote_env_v2,
    signal_number,
)

SCRATCH = "/var/lib/condor/execute/dir_42"

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
    pytest.param(parse_env_v2, "NOEQUALS", "Environment", id="v2-no-equals"),
    pytest.param(parse_env_v2, "=value", "Environment", id="v2-empty-name"),
    pytest.param(parse_env_v2, "A='x", "Environment", id="v2-unterminated"),
    pytest.param(parse_env_v1, "A=b;junk", "Env", id="v1-no-equals"),
    pytest.param(parse_env_v1, "=x", "Env", id="v1-empty-name"),
]


@pytest.mark.parametrize(("text", "expected"), ARGS_V2_CASES)
def test_args_v2_follow_htcondor_quoting(text: str, expected: tuple[str, ...]) -> None:
    """V2 arguments split on white space, with single quotes grouping and '' a literal quote."""
    assert parse_args_v2(text) == expected


@pytest.mark.parametrize(("text", "expected"), ARGS_V1_CASES)
def test_args_v1_split_on_white_space_only(text: str, expected: tuple[str, ...]) -> None:
    """V1 arguments are white-space separated words in which quotes are ordinary characters."""
    assert parse_args_v1(text) == expected


@pytest.mark.parametrize(("text", "expected"), ENV_V2_CASES)
def test_env_v2_reads_quoted_assignments(text: str, expected: tuple[tuple[str, str], ...]) -> None:
    """V2 environment words are NAME=value with the argument quoting rules."""
    assert parse_env_v2(text) == expected


@pytest.mark.parametrize(("text", "delimiter", "expected"), ENV_V1_CASES)
def test_env_v1_reads_delimited_assignments(
    text: str, delimiter: str, expected: tuple[tuple[str, str], ...]
) -> None:
    """V1 environment entries are NAME=value separated by the delimiter, quotes literal."""
    assert parse_env_v1(text, delimiter=delimiter) == expected


@pytest.mark.parametrize(("text", "column"), MALFORMED_ARGS_V2)
def test_unterminated_quote_names_attribute_and_column(text: str, column: int) -> None:
    """An unterminated quote is a JobSpecError naming the attribute and the quote's column."""
    with pytest.raises(JobSpecError) as caught:
        parse_args_v2(text, "Arguments")
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
    assert parse_args_v2(quote_args_v2(arguments)) == tuple(arguments)


@given(st.dictionaries(_names, _texts, max_size=6))
def test_quote_env_v2_round_trips(environment: dict[str, str]) -> None:
    """Any environment with writable names quoted in V2 syntax parses back to itself."""
    pairs = tuple(environment.items())
    assert parse_env_v2(quote_env_v2(pairs)) == pairs


@pytest.mark.parametrize("name", ["", "A=B", "A B", "it's"], ids=repr)
def test_quote_env_v2_refuses_unreadable_names(name: str) -> None:
    """A name that could not be read back is refused rather than written wrongly."""
    with pytest.raises(JobSpecError, match="cannot be written"):
        quote_env_v2([(name, "x")])


@given(st.text(max_size=40))
def test_parsers_raise_only_job_spec_errors(text: str) -> None:
    """On any text the four parsers return a tuple or raise JobSpecError, nothing else."""
    for parser in (parse_args_v1, parse_args_v2, parse_env_v1, parse_env_v2):
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
    assert signal_number(value) == expected


@pytest.mark.parametrize("value", ["SIGBOGUS", "", 0, 999, -1, True, 2.5, None], ids=repr)
def test_bad_signal_names_kill_sig(value: object) -> None:
    """An unknown name, an out-of-range number or a non-signal type is an error naming KillSig."""
    with pytest.raises(JobSpecError, match="KillSig"):
        signal_number(value)


def _ad(text: str) -> ClassAd:
    return parse_ad(text)


def test_minimal_fetched_job_gets_defaults() -> None:
    """A job with only Cmd runs in the sandbox with /dev/null streams, SIGTERM and vanilla."""
    command = job_command(_ad('[ Cmd = "/bin/true" ]'), SCRATCH)
    assert command == JobCommand(
        executable="/bin/true",
        arguments=(),
        environment=(),
        iwd=SCRATCH,
        stdin="/dev/null",
        stdout="/dev/null",
        stderr="/dev/null",
        kill_signal=signal.SIGTERM,
        universe=5,
    )


def test_full_job_ad_is_interpreted() -> None:
    """Relative Cmd/In/Out/Err go under IWD, V2 wins over V1, KillSig and universe are read."""
    ad = _ad(
        """[ Cmd = "bin/run"; IWD = "/home/u/job"; In = "in.txt"; Out = "/tmp/out";
             Err = "err.txt"; Args = "v1 args"; Arguments = "a 'b c'"; Env = "X=1";
             Environment = "Y='2 3'"; KillSig = "SIGQUIT"; JobUniverse = 10 ]"""
    )
    command = job_command(ad, SCRATCH)
    assert command == JobCommand(
        executable="/home/u/job/bin/run",
        arguments=("a", "b c"),
        environment=(("Y", "2 3"),),
        iwd="/home/u/job",
        stdin="/home/u/job/in.txt",
        stdout="/tmp/out",
        stderr="/home/u/job/err.txt",
        kill_signal=signal.SIGQUIT,
        universe=10,
    )


@pytest.mark.parametrize(
    ("attrs_text", "arguments", "environment"),
    [
        ('Args = "x  y"; Env = "A=1;B=2"', ("x", "y"), (("A", "1"), ("B", "2"))),
        ('Args = "x"; Env = "A=1|B=2"; EnvDelim = "|"', ("x",), (("A", "1"), ("B", "2"))),
        ('Arguments = ""; Args = "ignored"', (), ()),
        ("Args = undefined; Env = undefined", (), ()),
    ],
    ids=["v1", "v1-delim", "empty-v2-wins", "undefined"],
)
def test_v1_attributes_used_without_v2(
    attrs_text: str, arguments: tuple[str, ...], environment: tuple[tuple[str, str], ...]
) -> None:
    """Args and Env (with EnvDelim) apply when Arguments and Environment are absent."""
    command = job_command(_ad(f'[ Cmd = "/bin/x"; {attrs_text} ]'), SCRATCH)
    assert (command.arguments, command.environment) == (arguments, environment)


def test_relative_iwd_is_under_the_sandbox() -> None:
    """A relative Iwd is taken inside the scratch directory, and Cmd under it."""
    command = job_command(_ad('[ Cmd = "run"; Iwd = "work" ]'), SCRATCH)
    assert (command.iwd, command.executable) == (f"{SCRATCH}/work", f"{SCRATCH}/work/run")


@pytest.mark.parametrize(
    ("body", "attribute", "hold_code"),
    [
        ('Owner = "u"', "Cmd", 6),
        ('Cmd = ""', "Cmd", 6),
        ("Cmd = 3", "Cmd", 6),
        ("Cmd = undefined", "Cmd", 6),
        ('Cmd = "/x"; Arguments = 7', "Arguments", 6),
        ('Cmd = "/x"; Arguments = "a \'b"', "Arguments", 6),
        ('Cmd = "/x"; Args = true', "Args", 6),
        ('Cmd = "/x"; Environment = "NOVALUE"', "Environment", 6),
        ('Cmd = "/x"; Env = 1.5', "Env", 6),
        ('Cmd = "/x"; In = 4', "In", 8),
        ('Cmd = "/x"; Out = false', "Out", 7),
        ('Cmd = "/x"; Err = 2', "Err", 7),
        ('Cmd = "/x"; Iwd = 9', "Iwd", 14),
        ('Cmd = "/x"; KillSig = "SIGNOPE"', "KillSig", 6),
        ('Cmd = "/x"; KillSig = 1.0', "KillSig", 6),
        ('Cmd = "/x"; JobUniverse = "vanilla"', "JobUniverse", 6),
        ('Cmd = "/x"; JobUniverse = 1/0', "JobUniverse", 6),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_bad_job_ads_are_refused_naming_attribute(
    body: str, attribute: str, hold_code: int
) -> None:
    """A missing Cmd or an attribute of the wrong type or syntax is an error naming it."""
    with pytest.raises(JobSpecError, match=f"job ad attribute {attribute}\\b") as caught:
        job_command(_ad(f"[ {body} ]"), SCRATCH)
    assert caught.value.hold_code == hold_code


def _environment(command: JobCommand, cpus: float = 3.0) -> dict[str, str]:
    return dict(
        job_environment(
            command,
            scratch_dir=SCRATCH,
            slot_name="slot1_1",
            job_ad_path=f"{SCRATCH}/.job.ad",
            machine_ad_path=f"{SCRATCH}/.machine.ad",
            cpus=cpus,
            thread_vars=("OMP_NUM_THREADS", "GOMAXPROCS"),
        )
    )


def test_job_environment_adds_starter_variables() -> None:
    """The starter adds the _CONDOR_* variables, TMPDIR/TMP/TEMP and the thread counts."""
    command = job_command(_ad('[ Cmd = "/bin/x"; Iwd = "/w"; Env = "MINE=1" ]'), SCRATCH)
    assert _environment(command) == {
        "MINE": "1",
        "_CONDOR_SCRATCH_DIR": SCRATCH,
        "_CONDOR_SLOT": "slot1_1",
        "_CONDOR_JOB_AD": f"{SCRATCH}/.job.ad",
        "_CONDOR_MACHINE_AD": f"{SCRATCH}/.machine.ad",
        "_CONDOR_JOB_IWD": "/w",
        "TMPDIR": SCRATCH,
        "TMP": SCRATCH,
        "TEMP": SCRATCH,
        "OMP_NUM_THREADS": "3",
        "GOMAXPROCS": "3",
    }


@pytest.mark.parametrize(
    ("cpus", "threads"), [(0, "1"), (0.5, "1"), (1, "1"), (2.9, "2"), (8, "8")]
)
def test_thread_count_is_whole_cpus_at_least_one(cpus: float, threads: str) -> None:
    """Thread variables are the slot's whole CPU count, never below 1."""
    command = job_command(_ad('[ Cmd = "/bin/x" ]'), SCRATCH)
    assert _environment(command, cpus)["OMP_NUM_THREADS"] == threads


def test_job_wins_for_thread_vars_but_not_condor_vars() -> None:
    """The job's own value wins for thread and temp variables, never for _CONDOR_ ones."""
    env = "OMP_NUM_THREADS=7 TMPDIR=/mine _CONDOR_SLOT=fake _CONDOR_SCRATCH_DIR=/fake"
    command = job_command(_ad(f'[ Cmd = "/bin/x"; Environment = "{env}" ]'), SCRATCH)
    result = _environment(command)
    assert result["OMP_NUM_THREADS"] == "7"
    assert result["TMPDIR"] == "/mine"
    assert result["_CONDOR_SLOT"] == "slot1_1"
    assert result["_CONDOR_SCRATCH_DIR"] == SCRATCH


@pytest.mark.oracle
def test_default_thread_vars_match_htcondor(param_oracle: ParamOracle) -> None:
    """DEFAULT_THREAD_VARS is HTCondor's default STARTER_NUM_THREADS_ENV_VARS list."""
    name = "STARTER_NUM_THREADS_ENV_VARS"
    answer = param_oracle.load("", [name], subsystem="STARTER")
    assert answer.error is None, answer.error
    text = answer.values[name].text
    assert text is not None
    assert tuple(text.replace(",", " ").split()) == DEFAULT_THREAD_VARS
