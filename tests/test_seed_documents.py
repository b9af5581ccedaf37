"""The seed documents are found only where EPCORE_SEEDS_DIR says (tests/seed_documents.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from seed_documents import NOT_GIVEN, SEEDS_VARIABLE, require_seeds_dir, seed_file


def test_without_the_variable_the_seed_tests_skip_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An unset EPCORE_SEEDS_DIR skips, saying which variable to set, even under CI."""
    monkeypatch.delenv(SEEDS_VARIABLE, raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.skip.Exception, match=SEEDS_VARIABLE) as skipped:
        require_seeds_dir()
    assert skipped.value.msg == NOT_GIVEN


def test_an_empty_variable_counts_as_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """EPCORE_SEEDS_DIR set to blanks skips like an unset one (no path is made of it)."""
    monkeypatch.setenv(SEEDS_VARIABLE, "  ")
    with pytest.raises(pytest.skip.Exception, match=SEEDS_VARIABLE):
        require_seeds_dir()


def test_a_missing_directory_fails_under_ci(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A variable naming no directory fails under CI=true, naming the variable and the path."""
    monkeypatch.setenv(SEEDS_VARIABLE, str(tmp_path / "absent"))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=f"{SEEDS_VARIABLE}=.*absent"):
        require_seeds_dir()


def test_a_missing_directory_skips_outside_ci(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Outside CI the same mistake skips with the path in the reason."""
    monkeypatch.setenv(SEEDS_VARIABLE, str(tmp_path / "absent"))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="absent is not a directory"):
        require_seeds_dir()


def test_a_seed_is_found_by_its_number(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """seed_file("002") is the document of the given directory whose name starts 002_."""
    for name in ("000_a.rst", "002_b.txt", "README.md"):
        (tmp_path / name).write_text(name)
    monkeypatch.setenv(SEEDS_VARIABLE, str(tmp_path))
    assert seed_file("002") == tmp_path / "002_b.txt"


def test_a_directory_without_the_seed_is_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A seeds directory lacking the asked document fails the test, naming what is missing."""
    monkeypatch.setenv(SEEDS_VARIABLE, str(tmp_path))
    with pytest.raises(AssertionError, match="no seed document 003_"):
        seed_file("003")
