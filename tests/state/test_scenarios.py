"""The policy scenarios of tests/scenarios, run through ``ep simulate``, and what they cover."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from epcore.cli.main import ep
from epcore.state.states import TRANSITIONS

SCENARIOS = sorted((Path(__file__).parent.parent / "scenarios").glob("*.toml"))


def _simulate(*args: str) -> Result:
    return CliRunner().invoke(ep, ["simulate", *args])


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_meets_its_expectations(path: Path) -> None:
    """Every scenario runs and meets every expect and expect_attrs it states."""
    result = _simulate(str(path))
    assert result.exit_code == 0, result.output + result.stderr


def test_every_transition_is_exercised() -> None:
    """Every letter and number of the transition table occurs in some scenario's output."""
    numbers: set[int] = set()
    letters: set[str] = set()
    for path in SCENARIOS:
        result = _simulate("--json", str(path))
        for record in json.loads(result.stdout):
            numbers.add(record["number"])
            if record["letter"]:
                letters.add(record["letter"])
    missing_numbers = sorted({e.number for e in TRANSITIONS} - numbers)
    missing_letters = sorted({e.letter for e in TRANSITIONS if e.letter} - letters)
    assert (missing_numbers, missing_letters) == ([], [])


def test_broken_expressions_are_reported_once_with_file_and_line() -> None:
    """The seeds' broken MachineBusy and WANT_SUSPEND are each reported once, with the line."""
    path = str(Path(__file__).parent.parent / "scenarios" / "broken_expressions.toml")
    result = _simulate(path)
    assert result.exit_code == 0
    preempt = [line for line in result.stderr.splitlines() if "PREEMPT =" in line]
    want = [line for line in result.stderr.splitlines() if "WANT_SUSPEND =" in line]
    assert len(preempt) == 1 and f"{path}, line 9:" in preempt[0]
    assert "PREEMPT = False instead" in preempt[0]
    assert len(want) == 1 and f"{path}, line 12:" in want[0]


def test_text_output_names_time_slot_places_and_cause() -> None:
    """A transition line shows the time, slot, old -> new and the cause."""
    result = _simulate(str(SCENARIOS[0].parent / "matched.toml"))
    wanted = ["120", "slot1", "Matched/Idle", "->", "Owner/Idle", "[8", "F]", "MATCH_TIMEOUT"]
    assert any(line.split()[:8] == wanted for line in result.stdout.splitlines())


def test_failed_expectation_exits_non_zero(tmp_path: Path) -> None:
    """An expect that is not met is reported and gives exit status 1."""
    path = tmp_path / "fail.toml"
    path.write_text('[[event]]\nat = 0\nexpect = { slot1 = "Claimed/Busy" }\n')
    result = _simulate(str(path))
    assert result.exit_code == 1
    assert "expected 'Claimed/Busy'" in result.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[event]]\nat = 0\nclaim = { job = {} }\n", "event 0, key 'claim': missing 'slot'"),
        ("[[event]]\nat = 5\n[[event]]\nat = 1\n", "event 1, key 'at'"),
        ("[[event]]\nat = 0\nexplode = {}\n", "event 0, key 'explode': unknown key"),
        ("[[event]]\nat = 0\nactivate = { id = 'x' }\n", "event 0, key 'activate'"),
        ("config = 3\n", "key 'config'"),
        ("start = 'yesterday'\n", "start"),
        ("not toml [\n", "not valid TOML"),
    ],
)
def test_malformed_scenario_names_file_and_place(tmp_path: Path, text: str, message: str) -> None:
    """A malformed scenario exits with status 2 and names the file and the event and key."""
    path = tmp_path / "bad.toml"
    path.write_text(text)
    result = _simulate(str(path))
    assert result.exit_code == 2
    assert str(path) in result.stderr and message in result.stderr


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    """A scenario file that does not exist is an error naming it."""
    result = _simulate(str(tmp_path / "none.toml"))
    assert result.exit_code == 2 and "none.toml" in result.stderr
