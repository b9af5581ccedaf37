"""Every mistake in a submit file is a SubmitError naming the file, the line and the command;
random text never raises anything else."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from submit_support import NOW, SUBMIT_DIR, Builder, make_host

from epcore.config import Config
from epcore.errors import SubmitError
from epcore.submit import SubmitContext, build_jobs, parse_submit

EXE = "executable = /bin/true\n"

# (submit text, line of the mistake, words the message must hold)
BUILD_ERRORS = [
    (f"{EXE}universe = wobble\nqueue\n", 2, "unknown universe 'wobble'"),
    (f"{EXE}universe = standard\nqueue\n", 2, "universe 'standard' is not supported"),
    (f"{EXE}request_memory = 2X\nqueue\n", 2, "request_memory"),
    (f"{EXE}request_memory = 2 parsecs\nqueue\n", 2, "unknown unit"),
    (f"{EXE}request_disk = ((\nqueue\n", 2, "request_disk"),
    (f"{EXE}request_cpus = 1 +\nqueue\n", 2, "request_cpus"),
    (f"{EXE}request_cpus = 99999999999999999999999\nqueue\n", 2, "too large"),
    (f"{EXE}request_memory = 99999999999999999999999999 G\nqueue\n", 2, "too large"),
    (f"{EXE}+Attr = [broken\nqueue\n", 2, "+Attr"),
    (f'{EXE}+Attr = "open\nqueue\n', 2, "not a ClassAd expression"),
    (f"{EXE}requirements = Memory >\nqueue\n", 2, "requirements"),
    (f"{EXE}rank = )\nqueue\n", 2, "rank"),
    (f"{EXE}on_exit_hold = ==\nqueue\n", 2, "on_exit_hold"),
    ("executable = /no/such/program\nqueue\n", 1, "executable /no/such/program does not exist"),
    ("arguments = x\nqueue\n", 2, "no executable"),
    (f"{EXE}initialdir = nowhere\nqueue\n", 2, "initialdir /home/alice/work/nowhere is not a"),
    (f"{EXE}include : missing.sub\nqueue\n", 2, "include : cannot read"),
    (f"{EXE}queue a from missing.txt\n", 2, "cannot read the item file"),
    (f"{EXE}queue x\n", 2, "count"),
    (f"{EXE}queue -1\n", 2, "count"),
    (f"{EXE}N = many\nqueue $(N)\n", 3, "count 'many'"),
    (f"{EXE}hold = maybe\nqueue\n", 2, "hold"),
    (f"{EXE}run_as_owner = perhaps\nqueue\n", 2, "run_as_owner"),
    (f"{EXE}allowed_job_duration = 3 +\nqueue\n", 2, "allowed_job_duration"),
    (f"{EXE}coresize = 1 +\nqueue\n", 2, "coresize"),
    (f"{EXE}priority = high\nqueue\n", 2, "priority"),
    (f"{EXE}notification = sometimes\nqueue\n", 2, "notification"),
    (f"{EXE}should_transfer_files = perhaps\nqueue\n", 2, "should_transfer_files"),
    (f"{EXE}when_to_transfer_output = later\nqueue\n", 2, "when_to_transfer_output"),
    (f'{EXE}arguments = "a\nqueue\n', 2, "arguments"),
    (f'{EXE}arguments = "\'a"\nqueue\n', 2, "arguments"),
    (f'{EXE}arguments = "a"b"\nqueue\n', 2, "arguments"),
    (f"{EXE}environment = novalue\nqueue\n", 2, "environment"),
    (f"{EXE}concurrency_limits = a:b\nqueue\n", 2, "concurrency_limits"),
    (f'{EXE}concurrency_limits = a\nconcurrency_limits_expr = "a"\nqueue\n', 3, "both"),
    ("universe = docker\nqueue\n", 2, "docker_image"),
    ("universe = container\nqueue\n", 2, "container_image"),
    (f"{EXE}docker_image = a\ncontainer_image = b.sif\nqueue\n", 3, "both docker_image"),
    ("universe = vm\nvm_type = kvm\nqueue\n", 3, "vm_memory"),
    (f"{EXE}if $(A) == $(B)\nendif\nqueue\n", 2, "condition"),
    (f"{EXE}A = $(A)$(B)\nB = $(A)\narguments = $(B)\nqueue\n", 4, "does not terminate"),
]


@pytest.mark.parametrize(("text", "line", "words"), BUILD_ERRORS)
def test_mistake_is_reported_at_its_line(build: Builder, text: str, line: int, words: str) -> None:
    """Each mistake raises SubmitError with the submit file, the line and the command."""
    with pytest.raises(SubmitError) as raised:
        build(text)
    assert (raised.value.source, raised.value.line) == ("job.sub", line)
    assert words in str(raised.value)
    assert str(raised.value).startswith(f"job.sub, line {line}: ")


PARSE_ERRORS = [
    ("if true\nqueue\n", 1, "if without matching endif"),
    ("endif\n", 1, "endif without matching if"),
    ("else\n", 1, "else without matching if"),
    ("elif true\n", 1, "elif without matching if"),
    ("if true\nelse\nelse\nendif\n", 3, "else is not allowed after else"),
    ("if true\nelse\nelif false\nendif\n", 3, "elif is not allowed after else"),
    ("if\nendif\n", 1, "needs a condition"),
    ("if true\nendif now\n", 2, "takes no condition"),
    ("just words\n", 1, "not a submit command"),
    ("+ = 3\n", 1, "not a valid job attribute name"),
    ("+a.b = 3\n", 1, "not a valid job attribute name"),
    ("9lives = 3\n", 1, "not a valid command"),
    ("queue x in (a\n", 1, "must end with ')'"),
    ("queue x from (\na\n", 1, "without the ')'"),
    ("queue x from (\na\n) extra\n", 3, "unexpected 'extra'"),
    ("queue x y in (a)\nqueue 1 2\n", 2, "invalid queue count"),
    ("queue x-1 in (a)\n", 1, "not a valid queue variable"),
    ("queue x matching\n", 1, "at least one pattern"),
    ("queue x from\n", 1, "needs an item list"),
    ("queue x in [1:2:0] (a)\n", 1, "step cannot be 0"),
    ("queue x in [a] (a)\n", 1, "slice"),
    ("queue x matching (*.c\n", 1, "same line"),
    ("A = 1\noutput = a\x00b\n", 2, "NUL"),
    ("include command : date\n", 1, "not supported"),
    ("include sometimes : x\n", 1, "not a kind of include"),
    ("include :\n", 1, "needs a file name"),
]


@pytest.mark.parametrize(("text", "line", "words"), PARSE_ERRORS)
def test_parse_mistake_is_reported_at_its_line(text: str, line: int, words: str) -> None:
    """Statement and block mistakes are found by parse_submit, at their line."""
    with pytest.raises(SubmitError) as raised:
        parse_submit(text, source="f.sub")
    assert (raised.value.source, raised.value.line) == ("f.sub", line)
    assert words in str(raised.value)


_SUBMIT_WORDS = st.sampled_from(
    [
        "queue",
        "queue 2",
        "in",
        "from",
        "matching",
        "(",
        ")",
        "=",
        "+",
        "$(",
        "$$(",
        "if",
        "else",
        "endif",
        "elif",
        "executable",
        "/bin/true",
        "arguments",
        '"',
        "'",
        "\\",
        "\n",
        " ",
        "request_memory",
        "2G",
        "universe",
        "vm",
        "docker",
        "#",
        ",",
        "[",
        "]",
        ":",
        "X",
        "$(X)",
        "hold",
        "true",
        "requirements",
        "&&",
        "\x00",
        "$INT(X)",
        "1e400",
        "99999999999999999999999",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_SUBMIT_WORDS | st.text(max_size=5), max_size=25), st.sampled_from([" ", "\n"]))
def test_random_text_raises_only_submit_errors(
    build: Builder, words: list[str], separator: str
) -> None:
    """Random submit text either builds jobs or raises SubmitError, never anything else."""
    try:
        cluster = build(separator.join(words))
    except SubmitError:
        return
    assert [ad.evaluate("ProcId") for ad in cluster.procs] == list(range(len(cluster.procs)))


@pytest.mark.parametrize(
    ("text", "closed", "line", "words"),
    [
        (f"{EXE}initialdir = run1\nqueue\n", "run1", 2, "initialdir /home/alice/work/run1 cannot"),
        (f"{EXE}queue\n", "", 2, "the submit directory (the job's Iwd) /home/alice/work cannot"),
        (f"{EXE}log = job.log\nqueue\n", "job.log", 2, "log /home/alice/work/job.log cannot be"),
    ],
)
def test_a_closed_initialdir_or_log_is_refused_with_its_line(
    submit_config: Config, text: str, closed: str, line: int, words: str
) -> None:
    """An Iwd the submitter cannot enter or a user log it cannot write is refused at
    submission, as condor_submit refuses them, naming the path, why and the line."""
    host = make_host()
    host.closed.add(posixpath.join(SUBMIT_DIR, closed).rstrip("/"))
    context = SubmitContext(owner="alice", submit_dir=SUBMIT_DIR, now=NOW, config=submit_config)
    with pytest.raises(SubmitError) as raised:
        build_jobs(parse_submit(text, source="job.sub"), context, host, cluster_id=1)
    message = str(raised.value)
    assert message.startswith(f"job.sub, line {line}: ") and words in message
    assert message.endswith("Permission denied")
