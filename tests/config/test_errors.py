"""Malformed configurations: each is refused with a message that names the file and the line,
and HTCondor refuses the same text."""

from __future__ import annotations

from pathlib import Path

import pytest
from param_oracle import ParamOracle

from epcore.builtin.host import LocalHost
from epcore.config import CommandOutput, Config, ConfigError, MemoryHost
from epcore.config.macros import MAX_SUBSTITUTIONS, MacroRef, skip_dollar, substitute

#: (id, text, line the error must name, words the message must contain)
MALFORMED: list[tuple[str, str, int, str]] = [
    (
        "unknown-template",
        "A = 1\nuse POLICY : NoSuchPolicy\n",
        2,
        "does not recognise NoSuchPolicy",
    ),
    ("unknown-category", "use NOSUCHCATEGORY : Desktop\n", 1, "unknown category"),
    ("use-without-category", "use : Desktop\n", 1, "use needs a keyword"),
    ("if-without-endif", "A = 1\nif true\nB = 2\n", 4, "endif(s) not found"),
    ("endif-without-if", "A = 1\nendif\n", 2, "endif without matching if"),
    ("else-without-if", "else\n", 1, "else without matching if"),
    ("else-after-else", "if true\nelse\nelse\nendif\n", 3, "else is not allowed after else"),
    ("elif-after-else", "if true\nelse\nelif true\nendif\n", 3, "elif is not allowed after else"),
    ("complex-condition", "if $(A) == 1\nendif\n", 1, "complex conditionals are not supported"),
    ("word-condition", "if something\nendif\n", 1, "is not a conditional"),
    ("bad-version", "if version >= 5.1\nendif\n", 1, "version literal is invalid"),
    ("unterminated-here-document", "A = 1\nB @=end\n one\n two\n", 2, "@end"),
    ("bad-knob-name", "A-B = 1\n", 1, "Illegal Identifier: <A-B>"),
    ("bad-expanded-name", "N = a b\n$(N) = 1\n", 2, "Illegal Identifier"),
    ("no-operator", "A = 1\nJUSTAWORD\n", 2, "not a statement"),
    ("at-without-equals", "A @ tag\n", 1, "missing : or ="),
    ("error-statement", "A = 1\nerror : stop $(A) here\n", 2, "stop 1 here"),
    ("missing-include", "include : /no/such/epcore/file\n", 1, "/no/such/epcore/file"),
    ("bad-include-keyword", "include sometimes : /etc/passwd\n", 1, "unexpected keyword"),
    ("template-missing-argument", "use POLICY : Preempt_If\n", 1, "requires an argument"),
]


def _ids(cases: list[tuple[str, str, int, str]]) -> list[str]:
    return [case[0] for case in cases]


@pytest.mark.parametrize(("text", "line", "words"), [c[1:] for c in MALFORMED], ids=_ids(MALFORMED))
def test_malformed_text_names_file_and_line(
    text: str, line: int, words: str, local_host: LocalHost
) -> None:
    """The error carries the source name and the line of the faulty statement."""
    with pytest.raises(ConfigError) as caught:
        Config.from_text(text, host=local_host, source="site.conf")
    error = caught.value
    assert (error.source, error.line) == ("site.conf", line)
    assert str(error).startswith(f"site.conf, line {line}: ")
    assert words in str(error)


@pytest.mark.oracle
@pytest.mark.parametrize(("text", "line", "words"), [c[1:] for c in MALFORMED], ids=_ids(MALFORMED))
def test_htcondor_refuses_the_same_text(
    text: str, line: int, words: str, param_oracle: ParamOracle
) -> None:
    """HTCondor's reader fails on every malformed case too."""
    assert param_oracle.load(text, ["A"]).error is not None


def test_error_in_included_file_names_that_file(tmp_path: Path, local_host: LocalHost) -> None:
    """A fault inside an included file is reported at that file and line, not the includer's."""
    inner = tmp_path / "inner.conf"
    inner.write_text("A = 1\n\nif true\n")
    outer = tmp_path / "outer.conf"
    outer.write_text(f"X = 1\ninclude : {inner}\n")
    with pytest.raises(ConfigError) as caught:
        Config.load(outer, host=local_host)
    assert (caught.value.source, caught.value.line) == (str(inner), 4)


def test_include_loop_is_reported_with_the_chain(tmp_path: Path, local_host: LocalHost) -> None:
    """A file that includes itself through another is an error that shows the loop."""
    first, second = tmp_path / "a.conf", tmp_path / "b.conf"
    first.write_text(f"A = 1\ninclude : {second}\n")
    second.write_text(f"B = 1\n\ninclude : {first}\n")
    with pytest.raises(ConfigError) as caught:
        Config.load(first, host=local_host)
    assert (caught.value.source, caught.value.line) == (str(second), 3)
    assert f"include loop: {first} -> {second} -> {first}" in str(caught.value)


def test_include_ifexist_missing_file_is_not_an_error(local_host: LocalHost) -> None:
    """``include ifexist`` of a file that does not exist reads nothing and goes on."""
    cfg = Config.from_text("include ifexist : /no/such/file\nA = 1\n", host=local_host)
    assert cfg.get("A") == "1"


def test_failing_include_command_is_an_error() -> None:
    """``include command`` whose command exits non-zero stops the load at that line."""
    host = MemoryHost(commands={"make-config": CommandOutput("A = 1\n", 3)})
    with pytest.raises(ConfigError) as caught:
        Config.from_text("B = 1\ninclude command : make-config\n", host=host, source="c")
    assert (caught.value.source, caught.value.line) == ("c", 2)
    assert "exited with status 3" in str(caught.value)


def test_macro_cycle_is_an_error_naming_the_knob(local_host: LocalHost) -> None:
    """A = $(B), B = $(A) is refused when A is read, naming A and where it was set.

    HTCondor itself loops forever here; epcore stops and says why (a deliberate difference).
    """
    cfg = Config.from_text("X = 1\nA = $(B)\nB = $(A)\n", host=local_host, source="loop.conf")
    with pytest.raises(ConfigError) as caught:
        cfg.get("A")
    assert (caught.value.source, caught.value.line) == ("loop.conf", 2)
    assert "A: expanding A does not terminate" in str(caught.value)


@pytest.mark.parametrize(
    "value", [":$(A:$(A) X.Y", "$(A:$(A) $(A:$(A) $(A:$(A) ", "$(A:$(A) q)$(A)"]
)
def test_a_self_reference_that_grows_the_text_to_search_is_refused_early(value: str) -> None:
    """A value that refers to itself, so that every substitution leaves a longer text to search
    again (worst when an unclosed ``$(A:`` default is re-read to its end each time), is refused
    by the scanning budget long before the substitution limit (the fuzz suite found one that
    took eight minutes to reach it)."""
    substitutions = 0

    def evaluate(ref: MacroRef, text: str) -> str:
        nonlocal substitutions
        substitutions += 1
        return value

    with pytest.raises(ConfigError, match="expanding A does not terminate"):
        substitute(value, skip_dollar, evaluate, "A")
    assert substitutions < MAX_SUBSTITUTIONS // 2


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("A = $CHOICE(5, x, y)\n", "index 5 is out of range"),
        ("A = $CHOICE(x, y, z)\n", "'x' is invalid index"),
        ("A = $CHOICE(1, NOLIST)\n", "no list named NOLIST"),
        ("A = $INT(abc)\n", "abc does not evaluate to an integer"),
        ("A = $INT(5,%s)\n", "not a valid format specifier"),
        ("A = $REAL(x y)\n", "does not evaluate to a real"),
        ("A = $RANDOM_INTEGER(9, 1)\n", "min > max"),
        ("A = $RANDOM_INTEGER(a, 1)\n", "invalid min"),
        ("A = $SUBSTR(B, x)\nB = abc\n", "invalid start"),
    ],
    ids=[
        "choice-range",
        "choice-index",
        "choice-list",
        "int",
        "int-format",
        "real",
        "random-order",
        "random-min",
        "substr",
    ],
)
def test_bad_macro_function_is_an_error_naming_the_knob(
    text: str, words: str, local_host: LocalHost
) -> None:
    """A macro function that cannot produce a value fails the lookup of the knob that uses it."""
    cfg = Config.from_text(text, host=local_host, source="f.conf")
    with pytest.raises(ConfigError) as caught:
        cfg.get("A")
    assert (caught.value.source, caught.value.line) == ("f.conf", 1)
    assert str(caught.value).startswith("f.conf, line 1: A: ")
    assert words in str(caught.value)


def test_missing_condor_config_file_is_named() -> None:
    """CONDOR_CONFIG naming a missing file is refused with the file's name."""
    host = MemoryHost(environment={"CONDOR_CONFIG": "/etc/missing/condor_config"})
    with pytest.raises(ConfigError, match="/etc/missing/condor_config"):
        Config.load(host=host)


def test_no_configuration_anywhere_is_explained() -> None:
    """With no CONDOR_CONFIG and no file in the usual places, the error lists where it looked."""
    with pytest.raises(ConfigError, match="/etc/condor/"):
        Config.load(host=MemoryHost())


def test_required_local_file_missing_is_an_error() -> None:
    """A missing LOCAL_CONFIG_FILE is an error unless REQUIRE_LOCAL_CONFIG_FILE is false."""
    text = "LOCAL_CONFIG_FILE = /no/such/local.conf\n"
    with pytest.raises(ConfigError, match=r"/no/such/local\.conf"):
        Config.from_text(text, host=MemoryHost())
    relaxed = Config.from_text(text + "REQUIRE_LOCAL_CONFIG_FILE = false\n", host=MemoryHost())
    assert relaxed.get("LOCAL_CONFIG_FILE") == "/no/such/local.conf"


def test_bad_exclude_regexp_is_named() -> None:
    """An invalid LOCAL_CONFIG_DIR_EXCLUDE_REGEXP is refused, naming the knob."""
    host = MemoryHost(files={"/d/a.conf": "A = 1\n"})
    text = "LOCAL_CONFIG_DIR = /d\nLOCAL_CONFIG_DIR_EXCLUDE_REGEXP = (unclosed\n"
    with pytest.raises(ConfigError, match="LOCAL_CONFIG_DIR_EXCLUDE_REGEXP"):
        Config.from_text(text, host=host)
