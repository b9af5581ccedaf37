"""The language around the commands: macros, conditionals, command-line macros, line joining,
and the quoting round trip of arguments and environments."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from submit_support import SUBMIT_DIR, Builder

from epcore.classad import UNDEFINED
from epcore.errors import SubmitError
from epcore.jobs.syntax import parse_args_v2, parse_env_v2
from epcore.submit import Assignment, Conditional, parse_submit

EXE = "executable = /bin/true\n"

# (submit text before the queue, the expected Arguments of the first job)
LANGUAGE_CASES = [
    ("arguments = a \\\n  b", "a b"),
    ("# comment\narguments = x", "x"),
    ("ARGUMENTS = upper", "upper"),
    ("Arguments=nospace", "nospace"),
    ("V = 1\nif $(V)\narguments = on\nelse\narguments = off\nendif", "on"),
    ("if defined V\narguments = on\nelse\narguments = off\nendif", "off"),
    ("V = 0\nif $(V)\narguments = a\nelif true\narguments = b\nelse\narguments = c\nendif", "b"),
    ("if false\nif true\narguments = inner\nendif\nelse\narguments = outer\nendif", "outer"),
    ("if ! defined V\narguments = negated\nendif", "negated"),
    ("arguments = $(Cluster)_$(Process)", "12_0"),
    ("arguments = $(ClusterId)_$(ProcId)", "12_0"),
    ("arguments = $(SUBMIT_FILE)", "job.sub"),
    ("arguments = $RANDOM_INTEGER(5, 5)", "5"),
    ("arguments = $(DOLLAR)(x)", "$(x)"),
    ("arguments = $$(Cpus)", "$$(Cpus)"),
    ("+Tag = 1\narguments = $(MY.Tag)", "1"),
]


@pytest.mark.parametrize(("text", "expected"), LANGUAGE_CASES)
def test_language_feature(build: Builder, text: str, expected: str) -> None:
    """Line joining, comments, case, conditionals and macros behave as in condor_submit."""
    ad = build(f"{EXE}{text}\nqueue\n").procs[0]
    assert ad.evaluate("Arguments") == expected


def test_command_line_macros_override_the_file(build: Builder) -> None:
    """extra_macros are visible to conditionals and override the file's values at queue time."""
    text = f"{EXE}if defined MODE\n+Seen = true\nendif\nMODE = file\narguments = $(MODE)\nqueue\n"
    given = build(text, extra=(("MODE", "cli"),)).procs[0]
    assert (given.evaluate("Arguments"), given.evaluate("Seen")) == ("cli", True)
    plain = build(text).procs[0]
    assert (plain.evaluate("Arguments"), "Seen" in plain) == ("file", False)


def test_statements_keep_their_lines() -> None:
    """parse_submit records each statement with the line it ends on."""
    description = parse_submit("A = 1\n\n+B = 2 \\\n  + 1\nif true\nendif\n")
    assert description.statements == (
        Assignment("A", "1", 1),
        Assignment("B", "2 + 1", 4, attribute=True),
        Conditional("if", "true", 5),
        Conditional("endif", "", 6),
    )


_WORD = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\x00"),
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORD, max_size=5))
def test_arguments_survive_the_round_trip(build: Builder, words: list[str]) -> None:
    """Any argument list written in V2 submit syntax reaches the job ad as the same words."""
    quoted = " ".join("'" + w.replace("'", "''") + "'" for w in words)
    # "$" starts a macro in submit files; $(DOLLAR) is how a user writes a literal one. Two in
    # a row cannot be written that way (HTCondor leaves "$$(DOLLAR)" alone, so do we).
    assume(all("$$" not in word for word in words))
    quoted = quoted.replace(chr(34), chr(34) * 2).replace("$", "$(DOLLAR)")
    text = f'{EXE}arguments = "{quoted}"\nqueue\n'
    value = build(text).procs[0].evaluate("Arguments")
    assert isinstance(value, str)
    assert list(parse_args_v2(value)) == words


_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_NAME, _WORD, max_size=4))
def test_environment_survives_the_round_trip(build: Builder, variables: dict[str, str]) -> None:
    """Any environment written in V2 submit syntax reaches the job ad with the same values."""
    words = " ".join(f"{k}='{v.replace(chr(39), chr(39) * 2)}'" for k, v in variables.items())
    assume(all("$$" not in value for value in variables.values()))
    words = words.replace(chr(34), chr(34) * 2).replace("$", "$(DOLLAR)")
    text = f'{EXE}environment = "{words}"\nqueue\n'
    value = build(text).procs[0].evaluate("Environment")
    assert isinstance(value, str)
    assert dict(parse_env_v2(value)) == variables


def test_include_reads_another_submit_file(build: Builder) -> None:
    """include : file runs the included file's commands and queue statements in place."""
    files = {"common.sub": "arguments = shared\nqueue\n", "extra.sub": "+Tag = 1\n"}
    text = f"{EXE}include : common.sub\ninclude ifexist : none.sub\ninclude : extra.sub\nqueue\n"
    cluster = build(text, files=files)
    assert [ad.evaluate("Arguments") for ad in cluster.procs] == ["shared", "shared"]
    assert [ad.evaluate("Tag") for ad in cluster.procs] == [UNDEFINED, 1]


def test_mistake_in_included_file_names_that_file(build: Builder) -> None:
    """An error in an included file is reported at that file's line."""
    files = {"bad.sub": "A = 1\nrequest_memory = 3 parsecs\n"}
    with pytest.raises(SubmitError) as raised:
        build(f"{EXE}include : bad.sub\nqueue\n", files=files)
    assert (raised.value.source, raised.value.line) == (f"{SUBMIT_DIR}/bad.sub", 2)


def test_include_loop_stops(build: Builder) -> None:
    """A file that includes itself is an error at the include line, not endless recursion."""
    with pytest.raises(SubmitError) as raised:
        build(f"{EXE}include : self.sub\n", files={"self.sub": "include : self.sub\n"})
    assert "nested more than" in str(raised.value)
