"""The starter's job hooks, run for real: keywords, paths, prepare outcomes, stdin contents."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from job_hooks_support import config, runner, sample_job, write_hook

from epcore.classad import ClassAd, format_old, parse_ad
from epcore.errors import EpError
from epcore.jobs.codes import HoldCode
from epcore.starter.hooks import (
    HOOK_NAMES,
    HookError,
    HookResult,
    JobExitInfo,
    JobRuntimeInfo,
    PrepareOutcome,
    hook_path,
    job_exit_input,
    prepare_job_input,
    prepare_outcome,
    starter_hook_keyword,
    update_job_info_input,
)

Tick = Callable[[], None]


# -- keyword resolution -------------------------------------------------------------------------

HOOKS = "JAVA_HOOK_PREPARE_JOB = /usr/local/java_prepare\n"
EXIT_ONLY = "WEB_HOOK_JOB_EXIT = /usr/local/web_exit\n"
FETCH_ONLY = "DB_HOOK_FETCH_WORK = /usr/local/db_fetch\n"
DEFAULT = "STARTER_DEFAULT_JOB_HOOK_KEYWORD = FALLBACK\n"
FORCED = "STARTER_JOB_HOOK_KEYWORD = FORCED\n"


@pytest.mark.parametrize(
    ("config_text", "job_text", "expected"),
    [
        pytest.param(FORCED + HOOKS + DEFAULT, 'HookKeyword = "JAVA"', "FORCED", id="forced"),
        pytest.param(FORCED, "", "FORCED", id="forced-without-job-keyword"),
        pytest.param(HOOKS + DEFAULT, 'HookKeyword = "JAVA"', "JAVA", id="job-valid"),
        pytest.param(HOOKS, 'HookKeyword = "java"', "java", id="job-valid-any-case"),
        pytest.param(EXIT_ONLY, 'HookKeyword = "WEB"', "WEB", id="job-valid-exit-hook-only"),
        pytest.param(HOOKS + DEFAULT, 'HookKeyword = "OTHER"', "FALLBACK", id="job-invalid"),
        pytest.param(FETCH_ONLY + DEFAULT, 'HookKeyword = "DB"', "FALLBACK", id="fetch-only"),
        pytest.param(HOOKS + DEFAULT, "HookKeyword = 42", "FALLBACK", id="job-not-a-string"),
        pytest.param(HOOKS + DEFAULT, 'HookKeyword = "JA.VA"', "FALLBACK", id="job-dotted"),
        pytest.param(HOOKS + DEFAULT, 'HookKeyword = ""', "FALLBACK", id="job-empty"),
        pytest.param(HOOKS + DEFAULT, "", "FALLBACK", id="job-missing"),
        pytest.param(HOOKS, 'HookKeyword = "OTHER"', None, id="job-invalid-no-default"),
        pytest.param(HOOKS, "", None, id="nothing"),
        pytest.param("", 'HookKeyword = "JAVA"', None, id="no-hooks-at-all"),
    ],
)
def test_starter_hook_keyword_resolution(
    config_text: str, job_text: str, expected: str | None
) -> None:
    """The forced keyword wins, then a valid job keyword, then the default, else none."""
    assert starter_hook_keyword(config(config_text), parse_ad(job_text)) == expected


@pytest.mark.parametrize("knob", ["STARTER_JOB_HOOK_KEYWORD", "STARTER_DEFAULT_JOB_HOOK_KEYWORD"])
def test_malformed_configured_keyword_names_the_knob(knob: str) -> None:
    """A configured keyword that cannot prefix a knob name is refused, naming the knob."""
    with pytest.raises(HookError, match=knob) as caught:
        starter_hook_keyword(config(f"{knob} = BAD.KEY\n"), ClassAd())
    assert caught.value.knob == knob


# -- hook paths ---------------------------------------------------------------------------------


def test_hook_path_unset_is_none() -> None:
    """A hook whose knob is not set is simply absent."""
    assert hook_path(config(HOOKS), "JAVA", "JOB_EXIT") is None


@pytest.mark.parametrize("hook_name", HOOK_NAMES)
def test_hook_path_accepts_an_executable(tmp_path: Path, hook_name: str) -> None:
    """An absolute path to an executable file is the hook, for every starter hook name."""
    path = write_hook(tmp_path, "hook", "exit 0\n")
    assert hook_path(config(f"K_HOOK_{hook_name} = {path}\n"), "K", hook_name) == path


@pytest.mark.parametrize(
    ("setup", "problem"),
    [
        pytest.param(lambda d: "relative/hook", "not an absolute path", id="relative"),
        pytest.param(lambda d: str(d / "missing"), "No such file", id="missing"),
        pytest.param(lambda d: str(d), "not a regular file", id="directory"),
        pytest.param(lambda d: write_hook(d, "h", "", 0o644), "not executable", id="not-exec"),
        pytest.param(lambda d: write_hook(d, "h", "", 0o777), "world-writable", id="world-w"),
    ],
)
def test_hook_path_errors_name_the_knob(
    tmp_path: Path, setup: Callable[[Path], str], problem: str
) -> None:
    """An unusable hook path raises HookError naming the knob, the path and the problem."""
    path = setup(tmp_path)
    with pytest.raises(HookError) as caught:
        hook_path(config(f"JAVA_HOOK_PREPARE_JOB = {path}\n"), "JAVA", "PREPARE_JOB")
    message = str(caught.value)
    assert "JAVA_HOOK_PREPARE_JOB" in message
    assert path in message
    assert problem in message
    assert caught.value.knob == "JAVA_HOOK_PREPARE_JOB"
    assert isinstance(caught.value, EpError)


def test_hook_path_rejects_unknown_hook_names() -> None:
    """Only the starter's four hooks can be looked up."""
    with pytest.raises(HookError, match="FETCH_WORK"):
        hook_path(config(FETCH_ONLY), "DB", "FETCH_WORK")


# -- prepare hooks, run for real ----------------------------------------------------------------


def run_prepare(tmp_path: Path, body: str, job: ClassAd | None = None) -> PrepareOutcome:
    path = write_hook(tmp_path, "prepare", body)
    ad = sample_job() if job is None else job
    result = runner(tmp_path).run(path, [], prepare_job_input(ad), name="PREPARE_JOB")
    return prepare_outcome(result, "PREPARE_JOB")


def test_prepare_hook_update_continues(tmp_path: Path) -> None:
    """A hook that prints a new Cmd and exits 0 lets the job continue with that Cmd."""
    outcome = run_prepare(tmp_path, "cat > /dev/null\necho 'Cmd = \"/bin/echo\"'\n")
    assert outcome.kind == "continue"
    assert outcome.status == 0
    assert outcome.message == ""
    assert [(name, str(expr)) for name, expr in outcome.updates] == [("Cmd", '"/bin/echo"')]
    merged = outcome.merged_into(sample_job())
    assert merged.evaluate("Cmd") == "/bin/echo"
    assert merged.evaluate("ClusterId") == 12


def test_prepare_hook_reads_the_job_ad(tmp_path: Path) -> None:
    """The prepare hook's stdin is the job ad in old syntax."""
    run_prepare(tmp_path, f"cat > {tmp_path}/stdin.txt\n")
    assert parse_ad((tmp_path / "stdin.txt").read_text()) == sample_job()


@pytest.mark.parametrize(
    ("code", "kind"),
    [(0, "continue"), (1, "hold"), (299, "hold"), (300, "idle"), (500, "idle")],
)
@pytest.mark.parametrize("exit_status", [0, 7])
def test_hook_status_code_decides(tmp_path: Path, code: int, kind: str, exit_status: int) -> None:
    """HookStatusCode replaces the exit status: 0 continue, 1-299 hold, 300+ idle."""
    body = (
        f"echo 'HookStatusCode = {code}'\necho 'HookStatusMessage = \"site says {code}\"'\n"
        f"echo 'Extra = 1'\nexit {exit_status}\n"
    )
    outcome = run_prepare(tmp_path, body)
    assert (outcome.kind, outcome.status, outcome.message) == (kind, code, f"site says {code}")
    assert [name for name, _ in outcome.updates] == ["Extra"]
    error = outcome.hold_error()
    assert (error.hold_code, error.hold_subcode) == (HoldCode.HOOK_PREPARE_JOB_FAILURE, code)
    assert HoldCode.HOOK_PREPARE_JOB_FAILURE == 19


@pytest.mark.parametrize(
    ("body", "kind", "status", "message"),
    [
        pytest.param("exit 3\n", "hold", 3, "PREPARE_JOB hook exited with status 3", id="exit-3"),
        pytest.param(
            "echo 'HookStatusCode = -1'\nexit 4\n", "hold", 4, "status 4", id="negative-code"
        ),
        pytest.param("echo 'HookStatusCode = -1'\n", "continue", 0, "", id="negative-code-exit-0"),
        pytest.param(
            "echo 'HookStatusCode = \"x\"'\nexit 2\n", "hold", 2, "status 2", id="string-code"
        ),
        pytest.param(
            "echo 'HookStatusCode = 12'\n", "hold", 12, "reported HookStatusCode 12", id="no-msg"
        ),
        pytest.param(
            "echo 'HookStatusCode = 301.9'\n", "idle", 301, "HookStatusCode 301", id="real-code"
        ),
        pytest.param(
            "echo 'HookStatusMessage = \"why\"'\nexit 5\n", "hold", 5, "why", id="exit-with-msg"
        ),
    ],
)
def test_prepare_exit_status_without_code(
    tmp_path: Path, body: str, kind: str, status: int, message: str
) -> None:
    """Without a usable HookStatusCode the exit status decides; non-zero holds."""
    outcome = run_prepare(tmp_path, body)
    assert (outcome.kind, outcome.status) == (kind, status)
    assert message in outcome.message
    if kind == "hold":
        assert outcome.message


def test_signal_wins_over_status_code(tmp_path: Path) -> None:
    """A hook killed by a signal holds the job even though it printed HookStatusCode = 0."""
    outcome = run_prepare(tmp_path, "echo 'HookStatusCode = 0'\nkill -TERM $$\nsleep 5\n")
    assert outcome.kind == "hold"
    assert outcome.status == signal.SIGTERM
    assert "signal 15" in outcome.message
    assert outcome.updates == ()


@pytest.mark.parametrize(
    ("stdout", "line", "shown"),
    [
        pytest.param("this is not an ad", 1, "this is not an ad", id="prose"),
        pytest.param('Cmd = "/bin/true"\nCmd = \n', 2, "Cmd =", id="no-expression"),
        pytest.param("A = 1\n\n# note\n= 3\n", 4, "= 3", id="no-name"),
        pytest.param("A = (1\n", 1, "A = (1", id="unbalanced"),
        pytest.param("[ A = 1 ]\n", 1, "[ A = 1 ]", id="new-syntax"),
        pytest.param("A = 1 B = 2\n", 1, "A = 1 B = 2", id="two-on-a-line"),
    ],
)
def test_garbage_output_holds_naming_the_line(
    tmp_path: Path, stdout: str, line: int, shown: str
) -> None:
    """Output that is not old-syntax ClassAd lines holds the job, naming the hook and line."""
    script = tmp_path / "out.txt"
    script.write_text(stdout)
    outcome = run_prepare(tmp_path, f"cat {script}\n")
    assert outcome.kind == "hold"
    assert outcome.status == 1
    assert f"PREPARE_JOB hook output line {line}" in outcome.message
    assert shown in outcome.message
    assert outcome.updates == ()


def test_prepare_outcome_ignores_comments_and_blank_lines() -> None:
    """Blank lines and # comments in a hook's output are not errors."""
    result = HookResult(0, None, '\n# hello\n  A = 1\n\nB = "x"\n', "", False)
    outcome = prepare_outcome(result, "PREPARE_JOB")
    assert outcome.kind == "continue"
    assert [(n, str(e)) for n, e in outcome.updates] == [("A", "1"), ("B", '"x"')]


# -- UPDATE_JOB_INFO and JOB_EXIT input ---------------------------------------------------------

RUNTIME = JobRuntimeInfo(
    state="Suspended",
    pid=4321,
    num_pids=3,
    start_date=1_700_000_000,
    sys_cpu=1.5,
    user_cpu=20.25,
    image_size_kb=2048,
)
RUNTIME_ATTRIBUTES = {
    "JobState": "Suspended",
    "JobPid": 4321,
    "NumPids": 3,
    "JobStartDate": 1_700_000_000,
    "RemoteSysCpu": 1.5,
    "RemoteUserCpu": 20.25,
    "ImageSize": 2048,
}


def assert_job_kept(seen: ClassAd) -> None:
    for name in sample_job():
        if name not in RUNTIME_ATTRIBUTES:
            assert seen[name] == sample_job()[name], name


def test_update_job_info_stdin(tmp_path: Path) -> None:
    """UPDATE_JOB_INFO reads the job ad plus JobState, JobPid, NumPids, JobStartDate, CPU, size."""
    path = write_hook(tmp_path, "update", f"cat > {tmp_path}/stdin.txt\n")
    stdin = update_job_info_input(sample_job(), RUNTIME)
    result = runner(tmp_path).start(path, [], stdin, name="UPDATE_JOB_INFO").wait()
    assert result.exit_code == 0
    seen = parse_ad((tmp_path / "stdin.txt").read_text())
    assert_job_kept(seen)
    for name, value in RUNTIME_ATTRIBUTES.items():
        assert seen.evaluate(name) == value, name
        assert type(seen.evaluate(name)) is type(value), name


@pytest.mark.parametrize("how", ["exit", "remove", "hold", "evict"])
@pytest.mark.parametrize(("code", "sig"), [(0, None), (3, None), (None, 9)])
def test_job_exit_argument_and_stdin(
    tmp_path: Path, how: str, code: int | None, sig: int | None
) -> None:
    """JOB_EXIT gets how the job left as its argument and the full exit ad on stdin."""
    body = f'echo "$#:$1" > {tmp_path}/argv\ncat > {tmp_path}/stdin.txt\n'
    path = write_hook(tmp_path, "exit", body)
    exit_info = JobExitInfo(
        how=how, reason="the job ended", exit_code=code, exit_signal=sig, duration=61.5
    )
    stdin = job_exit_input(sample_job(), RUNTIME, exit_info)
    result = runner(tmp_path).run(path, [exit_info.how], stdin, name="JOB_EXIT")
    assert result.exit_code == 0
    assert (tmp_path / "argv").read_text() == f"1:{how}\n"
    seen = parse_ad((tmp_path / "stdin.txt").read_text())
    assert_job_kept(seen)
    for name, value in RUNTIME_ATTRIBUTES.items():
        assert seen.evaluate(name) == value, name
    assert seen.evaluate("ExitReason") == "the job ended"
    assert seen.evaluate("ExitBySignal") is (sig is not None)
    assert seen.evaluate("JobDuration") == 61.5
    assert ("ExitSignal" in seen, "ExitCode" in seen) == (sig is not None, code is not None)
    if sig is not None:
        assert seen.evaluate("ExitSignal") == sig
    else:
        assert seen.evaluate("ExitCode") == code


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: JobExitInfo("vacate", "r", 0, None, 1.0), id="unknown-argument"),
        pytest.param(lambda: JobExitInfo("exit", "r", None, None, 1.0), id="no-code-no-signal"),
        pytest.param(lambda: JobExitInfo("exit", "r", 1, 9, 1.0), id="code-and-signal"),
        pytest.param(lambda: JobRuntimeInfo("Idle", 1, 1, 0, 0.0, 0.0, 0), id="bad-state"),
    ],
)
def test_exit_and_runtime_records_validate(build: Callable[[], object]) -> None:
    """JOB_EXIT's argument, JobState and the exit code/signal pair are checked."""
    with pytest.raises(HookError):
        build()


# -- properties ---------------------------------------------------------------------------------

LINES = st.sampled_from(
    [
        "HookStatusCode = 0",
        "HookStatusCode = 301",
        "HookStatusCode = -5",
        'HookStatusCode = "x"',
        "HookStatusCode = HookStatusCode",
        'HookStatusMessage = "m"',
        "HookStatusMessage = 3",
        'Cmd = "/bin/echo"',
        "A = ((((((((((1))))))))))",
        "B = [ x = 1 ]",
        "# comment",
        "",
        "garbage",
    ]
)
STDOUT = st.one_of(st.text(), st.lists(st.one_of(LINES, st.text()), max_size=8).map("\n".join))


@given(
    stdout=STDOUT,
    exit_code=st.one_of(st.none(), st.integers()),
    sig=st.one_of(st.none(), st.integers(min_value=-100, max_value=100)),
    timed_out=st.booleans(),
)
def test_prepare_outcome_never_raises(
    stdout: str, exit_code: int | None, sig: int | None, timed_out: bool, example_counter: Tick
) -> None:
    """Any output and any exit status give a PrepareOutcome whose kind matches its status."""
    example_counter()
    outcome = prepare_outcome(HookResult(exit_code, sig, stdout, "", timed_out), "PREPARE_JOB")
    assert isinstance(outcome, PrepareOutcome)
    expected = "continue" if outcome.status == 0 else "idle" if outcome.status >= 300 else "hold"
    assert outcome.kind == expected
    if outcome.kind != "continue":
        assert outcome.message
    if sig is not None or timed_out or exit_code is None:
        assert outcome.kind == "hold"


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(
    lambda n: (
        n.lower() not in ("hookstatuscode", "hookstatusmessage", "true", "false")
        and n.lower() not in ("undefined", "error", "is", "isnt", "my", "target", "parent")
    )
)
VALUES = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.booleans(),
    st.text(
        alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00\n\r\\"),
        max_size=20,
    ),
)


@given(updates=st.dictionaries(NAMES, VALUES, max_size=6))
def test_printed_ad_round_trips_as_updates(
    updates: dict[str, object], example_counter: Tick
) -> None:
    """Attributes printed in old syntax come back as the same updates, in order."""
    example_counter()
    ad = ClassAd(updates)
    outcome = prepare_outcome(HookResult(0, None, format_old(ad), "", False), "PREPARE_JOB")
    assert outcome.kind == "continue"
    assert ClassAd(dict(outcome.updates)) == ad
    assert [name for name, _ in outcome.updates] == list(ad)


def test_updates_skip_case_variants_of_status_attributes() -> None:
    """hookstatuscode and HOOKSTATUSMESSAGE steer the outcome and are not merged into the job."""
    stdout = 'hookstatuscode = 1\nHOOKSTATUSMESSAGE = "no"\nKeep = 2\n'
    outcome = prepare_outcome(HookResult(0, None, stdout, "", False), "PREPARE_JOB")
    assert (outcome.kind, outcome.status, outcome.message) == ("hold", 1, "no")
    assert [name for name, _ in outcome.updates] == ["Keep"]
