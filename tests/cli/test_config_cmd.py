"""``ep config``: condor_config_val's lookups, -v locations, --dump, prefixes, files and errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from param_oracle import ParamOracle

from epcore.cli.main import ep
from epcore.config import KNOB_DEFAULTS
from epcore.testing.system import missing

SAMPLE = """\
# An execute node's configuration, as a site might write it.
use ROLE : Execute
use POLICY : Desktop
use FEATURE : PartitionableSlot(1, cpus=100%)
MINUTE = 60
HOUR = $(MINUTE) * 60
StartIdleTime = 30 * $(MINUTE)
MY_SCRATCH = $(NO_SUCH_DIR:/var/lib/condor)/scratch
X = plain
STARTD.X = for the startd: $(X)
NEGOTIATOR.X = for the negotiator
ep1.X = for ep1
GREETING = hello
GREETING = $(GREETING), world
LONG = one \\
  two \\
  three
if defined MINUTE
  DEFINED_BRANCH = yes
else
  DEFINED_BRANCH = no
endif
CORES = $(DETECTED_CORES)
EMPTY =
"""

# Line numbers in SAMPLE, for the "# at:" comments.
LINE = {
    "USE_DESKTOP": 3,
    "HOUR": 6,
    "MY_SCRATCH": 8,
    "STARTD.X": 10,
    "GREETING": 14,
    "LONG": 15,
    "EMPTY": 24,
}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the caller's CONDOR_CONFIG and _CONDOR_ overrides out of every test."""
    for key in list(os.environ):
        if key == "CONDOR_CONFIG" or key.upper().startswith("_CONDOR_"):
            monkeypatch.delenv(key)


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    path = tmp_path / "condor_config"
    path.write_text(SAMPLE, encoding="utf-8")
    return path


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def run_config(*args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner().invoke(ep, ["config", *args], env=env)


def stdout_lines(result: Result) -> list[str]:
    return result.stdout.splitlines()


def dumped_names(result: Result) -> list[str]:
    """The knob names of a plain ``--dump``, in the order printed."""
    return [
        line.split(" = ", 1)[0]
        for line in stdout_lines(result)
        if line and not line.startswith(("#", " "))
    ]


# -- values ---------------------------------------------------------------------------------


def test_values_are_printed_expanded_one_per_line(sample: Path) -> None:
    """Each NAME's fully expanded value is printed on its own line, in the order asked."""
    result = run_config("--config", str(sample), "HOUR", "GREETING", "LONG", "MY_SCRATCH")
    assert result.exit_code == 0, result.output
    assert stdout_lines(result) == [
        "60 * 60",
        "hello, world",
        "one two three",
        "/var/lib/condor/scratch",
    ]
    assert result.stderr == ""


def test_names_are_case_insensitive(sample: Path) -> None:
    """A name is found whatever its case, as HTCondor compares names."""
    result = run_config("--config", str(sample), "hour", "startidletime")
    assert result.exit_code == 0, result.output
    assert stdout_lines(result) == ["60 * 60", "30 * 60"]


def test_template_and_conditional_values(sample: Path) -> None:
    """Values set by use lines and inside if blocks are printed like any other."""
    result = run_config(
        "--config", str(sample), "DEFINED_BRANCH", "SLOT_TYPE_1", "NUM_SLOTS_TYPE_1", "START"
    )
    assert result.exit_code == 0, result.output
    lines = stdout_lines(result)
    assert lines[:3] == ["yes", "cpus=100%", "1"]
    assert "KeyboardIdle > 30 * 60" in lines[3]


def test_undefined_name_reports_not_defined_and_fails(sample: Path) -> None:
    """An undefined name prints "Not defined: NAME" on stderr; the rest still print; status 1."""
    result = run_config("--config", str(sample), "MINUTE", "NO_SUCH_KNOB", "HOUR")
    assert result.exit_code == 1
    assert stdout_lines(result) == ["60", "60 * 60"]
    assert result.stderr == "Not defined: NO_SUCH_KNOB\n"


def test_empty_value_counts_as_not_defined(sample: Path) -> None:
    """A knob set to nothing has no value, as condor_config_val reports it."""
    result = run_config("--config", str(sample), "EMPTY")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "Not defined: EMPTY" in result.stderr


def test_default_table_value(sample: Path) -> None:
    """A knob no file sets gets its built-in default."""
    result = run_config("--config", str(sample), "NUM_CPUS", "CORES")
    assert result.exit_code == 0, result.output
    assert len(set(stdout_lines(result))) == 1  # NUM_CPUS defaults to the detected cores


def test_the_benchmark_programs_are_epcores_own(sample: Path) -> None:
    """BENCHMARKS_MIPS/KFLOPS_EXECUTABLE default to epcore's benchmark programs, as the
    startd runs them, where HTCondor's default names its condor_mips and condor_kflops (which
    an epcore machine does not have): a deliberate difference from the oracle."""
    names = ["BENCHMARKS_MIPS_EXECUTABLE", "BENCHMARKS_KFLOPS_ARGS"]
    result = run_config("--config", str(sample), *names)
    assert result.exit_code == 0, result.output
    executable, arguments = stdout_lines(result)
    assert executable == sys.executable
    assert arguments == "-m epcore.builtin.benchmarks kflops"


# -- -v -------------------------------------------------------------------------------------


def test_verbose_shows_file_line_and_raw(sample: Path) -> None:
    """-v prints NAME = value, the file and line, the raw text, then an empty line."""
    result = run_config("--config", str(sample), "-v", "MY_SCRATCH", "GREETING")
    assert result.exit_code == 0, result.output
    assert stdout_lines(result) == [
        "MY_SCRATCH = /var/lib/condor/scratch",
        f"  # at: {sample}, line {LINE['MY_SCRATCH']}",
        "  # raw: $(NO_SUCH_DIR:/var/lib/condor)/scratch",
        "",
        "GREETING = hello, world",
        f"  # at: {sample}, line {LINE['GREETING']}",
        "  # raw: hello, world",
        "",
    ]


def test_verbose_names_the_prefixed_definition_used(sample: Path) -> None:
    """-v shows which definition won: STARTD.X for the startd, with its own location."""
    result = run_config("--config", str(sample), "--verbose", "X")
    assert result.exit_code == 0, result.output
    assert stdout_lines(result)[:3] == [
        "STARTD.X = for the startd: plain",
        f"  # at: {sample}, line {LINE['STARTD.X']}",
        # Read as the startd, STARTD.X's reference to X is a self-reference, replaced by X's
        # earlier value when the line is read (as HTCondor does), so the raw text has no $(X).
        "  # raw: for the startd: plain",
    ]


def test_verbose_template_origin(sample: Path) -> None:
    """A value set by a template points at the use line and names the template."""
    result = run_config("--config", str(sample), "-v", "SUSPEND")
    assert result.exit_code == 0, result.output
    at = stdout_lines(result)[1]
    assert (
        at.lower() == f"  # at: {sample}, line {LINE['USE_DESKTOP']} (use policy:desktop)".lower()
    )


def test_verbose_default_origin(sample: Path) -> None:
    """A built-in default is located at <Default>, with its raw text."""
    knob = next(k for k in KNOB_DEFAULTS if k.name == "NUM_CPUS")
    result = run_config("--config", str(sample), "-v", "NUM_CPUS")
    assert result.exit_code == 0, result.output
    assert stdout_lines(result)[1:3] == ["  # at: <Default>", f"  # raw: {knob.default}"]


def test_verbose_shows_the_default_a_file_overrides(tmp_path: Path) -> None:
    """When a file overrides a knob that has a built-in default, -v shows that default too."""
    knob = next(k for k in KNOB_DEFAULTS if k.name == "NUM_CPUS")
    config = write(tmp_path, "condor_config", "NUM_CPUS = 3\n")
    result = run_config("--config", str(config), "-v", "NUM_CPUS")
    assert result.exit_code == 0, result.output
    assert f"  # default: {knob.default}" in stdout_lines(result)


def test_verbose_detected_and_environment_origins(sample: Path) -> None:
    """Detected values are located at <Detected>, _CONDOR_ overrides at <Environment>."""
    result = run_config(
        "--config", str(sample), "-v", "DETECTED_CORES", "FROM_ENV", env={"_CONDOR_FROM_ENV": "42"}
    )
    assert result.exit_code == 0, result.output
    lines = stdout_lines(result)
    assert lines[1] == "  # at: <Detected>"
    assert lines[lines.index("FROM_ENV = 42") + 1] == "  # at: <Environment>"


def test_verbose_empty_value_still_shows_its_location(sample: Path) -> None:
    """-v on a knob set to nothing shows where it was emptied, and still reports it undefined."""
    result = run_config("--config", str(sample), "-v", "EMPTY")
    assert result.exit_code == 1
    assert stdout_lines(result)[:2] == ["EMPTY = ", f"  # at: {sample}, line {LINE['EMPTY']}"]
    assert "Not defined: EMPTY" in result.stderr


# -- --dump ---------------------------------------------------------------------------------

DUMP_CONFIG = """\
beta = 2
Alpha = 1
gamma = $(Alpha) + $(beta)
ALPHA_TWO = two
"""


def test_dump_lists_raw_values_sorted_without_regard_to_case(tmp_path: Path) -> None:
    """--dump prints NAME = raw value for every defined knob, sorted case-insensitively."""
    config = write(tmp_path, "condor_config", DUMP_CONFIG)
    result = run_config("--config", str(config), "--dump")
    assert result.exit_code == 0, result.output
    names = dumped_names(result)
    assert names == sorted(names, key=str.lower)
    lines = stdout_lines(result)
    assert lines[0].startswith("# Configuration from machine: ")
    mine = [
        line for line in lines if line.split(" = ")[0] in ("Alpha", "ALPHA_TWO", "beta", "gamma")
    ]
    assert mine == ["Alpha = 1", "ALPHA_TWO = two", "beta = 2", "gamma = $(Alpha) + $(beta)"]
    assert lines[-2:] == ["# Contributing configuration file(s):", f"#\t{config}"]


def test_dump_includes_detected_but_not_default_knobs(tmp_path: Path) -> None:
    """--dump shows what files, environment and detection define, not the default table."""
    config = write(tmp_path, "condor_config", DUMP_CONFIG)
    result = run_config("--config", str(config), "--dump", env={"_CONDOR_VIA_ENV": "yes"})
    assert result.exit_code == 0, result.output
    names = {name.upper() for name in dumped_names(result)}
    assert {"DETECTED_CORES", "VIA_ENV", "GAMMA"} <= names
    assert "NUM_CPUS" not in names


def test_dump_patterns_filter_by_substring(tmp_path: Path) -> None:
    """NAMEs given with --dump keep only the knobs whose names contain them, any case."""
    config = write(tmp_path, "condor_config", DUMP_CONFIG)
    result = run_config("--config", str(config), "--dump", "alpha")
    assert result.exit_code == 0, result.output
    assert "# Parameters with names that match alpha:" in stdout_lines(result)
    assert dumped_names(result) == ["Alpha", "ALPHA_TWO"]


def test_dump_expand_shows_expanded_values(tmp_path: Path) -> None:
    """--dump --expand prints expanded values instead of raw ones."""
    config = write(tmp_path, "condor_config", DUMP_CONFIG)
    result = run_config("--config", str(config), "--dump", "--expand", "gamma")
    assert result.exit_code == 0, result.output
    assert "gamma = 1 + 2" in stdout_lines(result)


def test_dump_verbose_adds_origin_and_the_other_form(tmp_path: Path) -> None:
    """--dump -v follows each knob with its location, and its expansion when that differs."""
    config = write(tmp_path, "condor_config", DUMP_CONFIG)
    result = run_config("--config", str(config), "--dump", "-v", "gamma", "beta")
    assert result.exit_code == 0, result.output
    lines = stdout_lines(result)
    start = lines.index("gamma = $(Alpha) + $(beta)")
    assert lines[start + 1 : start + 3] == [f"  # at: {config}, line 3", "  # expanded: 1 + 2"]
    start = lines.index("beta = 2")
    assert lines[start + 1] == f"  # at: {config}, line 1"
    assert not lines[start + 2 :] or not lines[start + 2].startswith("  # expanded")
    assert "# Contributing configuration file(s):" not in lines

    expanded = run_config("--config", str(config), "--dump", "-v", "--expand", "gamma")
    lines = stdout_lines(expanded)
    start = lines.index("gamma = 1 + 2")
    assert lines[start + 2] == "  # raw: $(Alpha) + $(beta)"


def test_dump_json(tmp_path: Path) -> None:
    """--dump --json maps every matching knob to its value, raw text and origin."""
    config = write(tmp_path, "condor_config", DUMP_CONFIG)
    result = run_config("--config", str(config), "--dump", "--json", "gamma", "beta")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "beta": {"value": "2", "raw": "2", "origin": origin(config, 1)},
        "gamma": {"value": "1 + 2", "raw": "$(Alpha) + $(beta)", "origin": origin(config, 3)},
    }


def origin(path: Path, line: int | None, template: str | None = None) -> dict[str, Any]:
    return {"source": str(path), "line": line, "template": template}


# -- subsystem and local name ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ([], "for the startd: plain"),
        (["--subsystem", "STARTD"], "for the startd: plain"),
        (["--subsystem", "negotiator"], "for the negotiator"),
        (["--subsystem", "SCHEDD"], "plain"),
        (["--local-name", "ep1"], "for ep1"),
        (["--subsystem", "NEGOTIATOR", "--local-name", "nobody"], "for the negotiator"),
    ],
    ids=["default-startd", "startd", "negotiator", "schedd-unprefixed", "local-name", "no-match"],
)
def test_subsystem_and_local_name_prefixes(sample: Path, options: list[str], expected: str) -> None:
    """X is read as the chosen daemon sees it: LOCALNAME.X, then SUBSYSTEM.X, then X."""
    result = run_config("--config", str(sample), *options, "X")
    assert result.exit_code == 0, result.output
    assert stdout_lines(result) == [expected]


def test_help_states_the_startd_default() -> None:
    """--help says the default subsystem is STARTD and documents the -v layout."""
    result = run_config("--help")
    assert result.exit_code == 0, result.output
    assert "default STARTD" in result.stdout
    assert "# at: <file>, line <n>" in result.stdout


# -- which files ----------------------------------------------------------------------------


def test_condor_config_variable_is_used_without_config(sample: Path) -> None:
    """Without --config the file CONDOR_CONFIG names is read."""
    result = run_config("MINUTE", env={"CONDOR_CONFIG": str(sample)})
    assert result.exit_code == 0, result.output
    assert result.stdout == "60\n"


def test_config_option_replaces_condor_config(sample: Path, tmp_path: Path) -> None:
    """--config FILE is read instead of the file CONDOR_CONFIG names."""
    other = write(tmp_path, "other_config", "MINUTE = 61\n")
    result = run_config("--config", str(other), "MINUTE", env={"CONDOR_CONFIG": str(sample)})
    assert result.exit_code == 0, result.output
    assert result.stdout == "61\n"


def test_config_option_repeats_in_order(sample: Path, tmp_path: Path) -> None:
    """Several --config files are read in the order given, later ones overriding."""
    later = write(tmp_path, "later", "MINUTE = 62\n")
    result = run_config("--config", str(sample), "--config", str(later), "MINUTE", "HOUR")
    assert result.exit_code == 0, result.output
    assert stdout_lines(result) == ["62", "62 * 60"]


def test_files_lists_every_file_read(tmp_path: Path) -> None:
    """--files prints the root file and the local files it pulls in, one per line."""
    local = write(tmp_path, "local", "B = 2\n")
    root = write(tmp_path, "condor_config", f"A = 1\nLOCAL_CONFIG_FILE = {local}\n")
    result = run_config("--config", str(root), "--files")
    assert result.exit_code == 0, result.output
    assert stdout_lines(result) == [str(root), str(local)]

    both = run_config("--config", str(root), "--files", "B")
    assert stdout_lines(both) == [str(root), str(local), "2"]


# -- errors ---------------------------------------------------------------------------------


def test_missing_config_file_is_an_error(tmp_path: Path) -> None:
    """A --config file that does not exist is reported by name with status 1, no traceback."""
    missing = tmp_path / "no_such_config"
    result = run_config("--config", str(missing), "A")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("ep config: ")
    assert str(missing) in result.stderr
    assert "Traceback" not in result.output


def test_missing_condor_config_file_is_an_error(tmp_path: Path) -> None:
    """A CONDOR_CONFIG naming no file is reported, naming the variable, with status 1."""
    result = run_config("A", env={"CONDOR_CONFIG": str(tmp_path / "nothing")})
    assert result.exit_code == 1
    assert result.stderr.startswith("ep config: ")
    assert "CONDOR_CONFIG" in result.stderr


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("A = 1\nthis line has no operator\n", 2),
        ("A = 1\nB = 2\nuse POLICY : NoSuchPolicy\n", 3),
        ("A = 1\nerror : stop here\n", 2),
    ],
    ids=["no-operator", "unknown-template", "error-statement"],
)
def test_malformed_file_error_names_file_and_line(tmp_path: Path, text: str, line: int) -> None:
    """A file HTCondor would refuse is reported as "ep config: FILE, line N: ..." with status 1."""
    config = write(tmp_path, "condor_config", text)
    result = run_config("--config", str(config), "A")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"ep config: {config}, line {line}: ")
    assert "Traceback" not in result.output


def test_expansion_error_names_file_and_line(tmp_path: Path) -> None:
    """A value that fails to expand is reported at its definition, and nothing else prints."""
    config = write(tmp_path, "condor_config", "A = 1\nBAD = $INT(not_a_number)\n")
    result = run_config("--config", str(config), "A", "BAD")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"ep config: {config}, line 2: BAD")

    dumped = run_config("--config", str(config), "--dump", "--expand")
    assert dumped.exit_code == 1
    assert dumped.stdout == ""
    assert dumped.stderr.startswith(f"ep config: {config}, line 2: BAD")


@pytest.mark.parametrize(
    "args",
    [[], ["--verbose"], ["--json", "--files"]],
    ids=["nothing-asked", "only-verbose", "json-with-files"],
)
def test_usage_errors_exit_2(sample: Path, args: list[str]) -> None:
    """Asking for nothing, or combining --json with --files, is a usage error (status 2)."""
    result = run_config("--config", str(sample), *args)
    assert result.exit_code == 2
    assert "Usage:" in result.stderr


# -- --json ---------------------------------------------------------------------------------


def test_json_lookup(sample: Path) -> None:
    """--json maps each NAME to its value, raw text and origin, and undefined ones to null."""
    result = run_config("--config", str(sample), "--json", "HOUR", "SUSPEND", "NOPE")
    assert result.exit_code == 1
    answer = json.loads(result.stdout)
    assert list(answer) == ["HOUR", "SUSPEND", "NOPE"]
    assert answer["HOUR"] == {
        "value": "60 * 60",
        "raw": "$(MINUTE) * 60",
        "origin": origin(sample, LINE["HOUR"]),
    }
    assert answer["SUSPEND"]["origin"]["line"] == LINE["USE_DESKTOP"]
    assert answer["SUSPEND"]["origin"]["template"].lower() == "policy:desktop"
    assert answer["NOPE"] is None
    assert result.stderr == "Not defined: NOPE\n"


# -- the installed script -------------------------------------------------------------------


def test_group_help_lists_config() -> None:
    """``ep --help`` lists the config command."""
    result = CliRunner().invoke(ep, ["--help"])
    assert result.exit_code == 0, result.output
    assert "config" in result.stdout


def test_console_script_runs_config(sample: Path) -> None:
    """The installed ``ep`` script prints a value and fails on an undefined name."""
    script = shutil.which("ep")
    if script is None:
        missing("the ep console script is not on PATH (pip install -e . not done?)")
    done = subprocess.run(
        [script, "config", "--config", str(sample), "HOUR", "NOPE"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == "60 * 60\n"
    assert done.stderr == "Not defined: NOPE\n"


# -- against HTCondor -----------------------------------------------------------------------


ORACLE_NAMES = [
    "MINUTE",
    "HOUR",
    "StartIdleTime",
    "MY_SCRATCH",
    "X",
    "GREETING",
    "LONG",
    "DEFINED_BRANCH",
    "CORES",
    "START",
    "SUSPEND",
    "PREEMPT",
    "NUM_SLOTS_TYPE_1",
    "SLOT_TYPE_1",
    "SLOT_TYPE_1_PARTITIONABLE",
    "DAEMON_LIST",
    "NUM_CPUS",
    "NO_SUCH_KNOB",
]


@pytest.mark.oracle
@pytest.mark.parametrize("subsystem", ["STARTD", "NEGOTIATOR"])
def test_values_match_htcondor(param_oracle: ParamOracle, sample: Path, subsystem: str) -> None:
    """``ep config NAME`` prints what htcondor2.param expands NAME to, as each subsystem."""
    answer = param_oracle.load(sample, ORACLE_NAMES, subsystem=subsystem)
    assert answer.error is None, answer.error
    for name in ORACLE_NAMES:
        result = run_config("--config", str(sample), "--subsystem", subsystem, name)
        ours = result.stdout.rstrip("\n") if result.exit_code == 0 else None
        assert ours == answer.values[name].text, f"{name} as {subsystem}: {result.output}"
