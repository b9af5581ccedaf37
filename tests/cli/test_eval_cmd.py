"""``ep eval``: classad_eval's argument walk, context ads, files, two-ad evaluation and errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from epcore.classad import ClassAd, parse_ad
from epcore.cli.main import ep


def run_eval(*args: str) -> Result:
    return CliRunner().invoke(ep, ["eval", *args])


def ad_contents(ad: ClassAd) -> dict[str, str]:
    return {name.lower(): str(expr) for name, expr in ad.items()}


def printed_ad(line: str) -> dict[str, str]:
    return ad_contents(parse_ad(line))


JOB_NEW = """[
  MyType = "Job";
  Owner = "coltrane";
  RequestMemory = 1024;
  RequestCpus = 2;
  Requirements = TARGET.Memory >= MY.RequestMemory && TARGET.Cpus >= RequestCpus
]
"""

JOB_OLD = """MyType = "Job"
Owner = "coltrane"
RequestMemory = 1024
RequestCpus = 2
Requirements = TARGET.Memory >= MY.RequestMemory && TARGET.Cpus >= RequestCpus
"""

SLOT_NEW = """[
  MyType = "Machine";
  Name = "slot1@ep.example";
  Memory = 2048;
  Cpus = 4
]
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    paths = {}
    for name, text in {"job-new": JOB_NEW, "job-old": JOB_OLD, "slot": SLOT_NEW}.items():
        path = tmp_path / f"{name}.ad"
        path.write_text(text, encoding="utf-8")
        paths[name] = str(path)
    return paths


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["[a = 2; b = 3]", "a + b"], ["5"]),
        (["a = 2", "a * 2"], ["4"]),
        (["a=2", "a*2"], ["4"]),
        (["a = 2; b = 3", "a * b"], ["6"]),
        (['strcat("foo", "bar")'], ['"foobar"']),
        (
            ["x = y", "x", "y = 7", "x", '[x = 6; z = "foo"]', "x", "z"],
            ["undefined", "7", "6", '"foo"'],
        ),
        (["Memory = 1", "memory = 2", "MEMORY"], ["2"]),
        (["a = 1", "a = a + 1"], []),
        (["-1 + 2"], ["1"]),
        (["a = 5", "-a"], ["-5"]),
        (["nosuch", "1 / 0"], ["undefined", "error"]),
        (["TARGET.Memory", "MY.a", "a = 3", "MY.a"], ["undefined", "undefined", "3"]),
    ],
)
@pytest.mark.parametrize("quiet", ["-quiet", "--quiet"])
def test_quiet_prints_results_in_order(quiet: str, args: list[str], expected: list[str]) -> None:
    """With -quiet only the results are printed, each after the arguments before it took effect."""
    result = run_eval(quiet, *args)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == expected


def test_context_ad_is_printed_before_the_first_result_and_after_each_change() -> None:
    """The context ad is shown before a result whenever it changed since it was last shown."""
    result = run_eval("x = y", "x", "y = 7", "x", "x")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 5
    assert printed_ad(lines[0]) == {"x": "y"}
    assert lines[1] == "undefined"
    assert printed_ad(lines[2]) == {"x": "y", "y": "7"}
    assert lines[3:] == ["7", "7"]


def test_empty_context_is_printed_when_no_ad_was_given() -> None:
    """An expression with no ad before it is shown after the empty context ad."""
    result = run_eval("1 + 1")
    assert result.exit_code == 0, result.output
    first, second = result.stdout.splitlines()
    assert printed_ad(first) == {}
    assert second == "2"


def test_quiet_takes_effect_from_where_it_stands() -> None:
    """-quiet in the middle silences the context ad only for the results after it."""
    result = run_eval("x = y", "x", "-quiet", "y = 7", "x")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert printed_ad(lines[0]) == {"x": "y"}
    assert lines[1:] == ["undefined", "7"]


def test_assignment_replaces_keeping_other_attributes() -> None:
    """Assignments and inline ads add or replace attributes; others stay as they were."""
    result = run_eval('[a = 1; b = "keep"]', "A = 10", "[c = a * 2]", "a", "b", "c")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert printed_ad(lines[0]) == {"a": "10", "b": '"keep"', "c": "a * 2"}
    assert lines[1:] == ["10", '"keep"', "20"]


@pytest.mark.parametrize("syntax", ["job-new", "job-old"])
@pytest.mark.parametrize("spelling", ["-file", "--file", "-my-file", "--my-file", "--file="])
def test_file_gives_the_context_ad(files: dict[str, str], syntax: str, spelling: str) -> None:
    """-file (any spelling) loads the context ad from a new- or old-syntax file."""
    where = [spelling + files[syntax]] if spelling.endswith("=") else [spelling, files[syntax]]
    result = run_eval("-quiet", *where, "Owner", "RequestMemory * 2", "Requirements")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ['"coltrane"', "2048", "undefined"]


def test_file_ad_is_printed_without_quiet(files: dict[str, str]) -> None:
    """Without -quiet the ad read from the file is printed before the first result."""
    result = run_eval("-file", files["job-old"], "RequestCpus")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert printed_ad(lines[0]) == ad_contents(parse_ad(JOB_NEW))
    assert lines[1] == "2"


def test_file_replaces_the_context_and_assignments_extend_it(files: dict[str, str]) -> None:
    """-file replaces any earlier context ad; later assignments change the file's ad."""
    result = run_eval(
        "-quiet", "a = 1", "-file", files["job-new"], "a", "RequestMemory = 4096", "RequestMemory"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["undefined", "4096"]


@pytest.mark.parametrize(
    "text",
    [
        "[\n  a = 1;\n  b = 2\n]\n[\n  a = 3\n]\n",
        "{\n[\n  a = 1;\n  b = 2\n]\n,\n[\n  a = 3\n]\n}\n",
        "a = 1\nb = 2\n\na = 3\n",
        "# saved by hand\na = 1\nb = 2\n\n\na = 3\nc = 4\n",
    ],
    ids=["new", "long-new-braces", "old", "old-comment"],
)
def test_only_the_first_ad_of_a_file_is_used(tmp_path: Path, text: str) -> None:
    """A file holding several ads (condor_q -long style) gives its first ad as the context."""
    path = tmp_path / "many.ad"
    path.write_text(text, encoding="utf-8")
    result = run_eval("-file", str(path), "a", "b", "c")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert printed_ad(lines[0]) == {"a": "1", "b": "2"}
    assert lines[1:] == ["1", "2", "undefined"]


def test_empty_file_gives_an_empty_ad(tmp_path: Path) -> None:
    """An empty ad file is an empty context, as classad_eval reads it."""
    path = tmp_path / "empty.ad"
    path.write_text("", encoding="utf-8")
    result = run_eval("-quiet", "a = 1", "-file", str(path), "a")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["undefined"]


@pytest.mark.parametrize("spelling", ["-target-file", "--target-file"])
@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("Requirements", "true"),
        ("TARGET.Memory >= MY.RequestMemory", "true"),
        ("Memory", "2048"),
        ("MY.Memory", "undefined"),
        ("TARGET.Name", '"slot1@ep.example"'),
        ("TARGET.Owner", "undefined"),
        ("RequestCpus * 2 > TARGET.Cpus", "false"),
    ],
)
def test_two_ad_evaluation(
    files: dict[str, str], spelling: str, expression: str, expected: str
) -> None:
    """-my-file and -target-file evaluate as MY and TARGET; unscoped names fall back to TARGET."""
    result = run_eval("-quiet", "-my-file", files["job-new"], spelling, files["slot"], expression)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [expected]


def test_target_changes_follow_argument_order(files: dict[str, str]) -> None:
    """A result before -target-file sees no target; one after it sees the slot."""
    result = run_eval(
        "-quiet",
        "-file",
        files["job-new"],
        "Requirements",
        "-target-file",
        files["slot"],
        "Requirements",
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["undefined", "true"]


@pytest.mark.parametrize(
    ("argument", "line", "column"),
    [
        ("a + * 2", 1, 5),
        ("(1 + 2", 1, 7),
        ("[a = 1; b = ]", 1, 13),
        ("a = 2 +", 1, 8),
        ('strcat("a", )', 1, 13),
    ],
)
def test_argument_parse_error_names_argument_and_position(
    argument: str, line: int, column: int
) -> None:
    """An argument that is neither ad, assignment nor expression fails with its position."""
    result = run_eval("-quiet", "1", argument, "2")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == ["1"]
    assert "argument 3" in result.stderr
    assert repr(argument) in result.stderr
    assert f"line {line}, column {column}" in result.stderr


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("[\n  a = 1;\n  b = (2 +;\n]\n", 3, 11),
        ("a = 1\nb = (2 +\n", 2, 9),
        ("[ a = 1 ", 1, 9),
        ("{\n[\n  a = 1;\n  b = 1 +\n]\n}\n", 5, 1),
    ],
)
def test_file_parse_error_names_file_and_position(
    tmp_path: Path, text: str, line: int, column: int
) -> None:
    """An ad file that does not parse fails with its name, line and column."""
    path = tmp_path / "broken.ad"
    path.write_text(text, encoding="utf-8")
    result = run_eval("-quiet", "-file", str(path), "1")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert str(path) in result.stderr
    assert f"line {line}, column {column}" in result.stderr


@pytest.mark.parametrize("option", ["-file", "-target-file", "--my-file"])
def test_missing_file_fails_with_its_name(tmp_path: Path, option: str) -> None:
    """A file that cannot be read fails with status 1 and names the file."""
    missing = tmp_path / "no-such.ad"
    result = run_eval(option, str(missing), "1")
    assert result.exit_code == 1
    assert str(missing) in result.stderr
    assert re.search("no such file", result.stderr, re.IGNORECASE)


@pytest.mark.parametrize("option", ["-file", "--target-file"])
def test_file_option_without_a_name_is_a_usage_error(option: str) -> None:
    """A file option at the end of the arguments is a usage error (status 2)."""
    result = run_eval("1", option)
    assert result.exit_code == 2
    assert option in result.stderr


@pytest.mark.parametrize("flag", ["--help", "-help"])
def test_help_documents_the_options(flag: str) -> None:
    """``ep eval --help`` and ``-help`` describe the classad_eval options and exit 0."""
    result = run_eval(flag)
    assert result.exit_code == 0, result.output
    for word in ("-file", "-my-file", "-target-file", "-quiet", "Usage: ep eval"):
        assert word in result.stdout
