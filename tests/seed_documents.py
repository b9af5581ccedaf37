"""Where the tests over the seed documents find them: only where EPCORE_SEEDS_DIR says.

The seed documents (HTCondor manual pages the project reproduces) are not part of the project,
so their text never enters it: the tests that check the documents' own configuration examples
read them from the directory the environment names. ``.ci/run`` sets the variable to the seeds
beside the clone when they are there. Without it those tests skip with the reason; a variable
naming no directory is a missing component (a failure under ``CI=true``, see
:func:`epcore.testing.system.missing`). No other location is ever guessed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from epcore.testing.system import missing

SEEDS_VARIABLE = "EPCORE_SEEDS_DIR"

NOT_GIVEN = (
    f"{SEEDS_VARIABLE} is not set: the tests over the seed documents' own examples need the "
    "directory holding them (.ci/run sets it to the seeds beside the clone)"
)


def given_seeds_dir() -> Path | None:
    """The directory EPCORE_SEEDS_DIR names, or None when the variable is unset or empty."""
    value = os.environ.get(SEEDS_VARIABLE, "").strip()
    return Path(value) if value else None


def require_seeds_dir() -> Path:
    """The seeds' directory, or skip the calling test (fail it under CI when the variable
    names a directory that does not exist)."""
    path = given_seeds_dir()
    if path is None:
        pytest.skip(NOT_GIVEN)
    if not path.is_dir():
        missing(f"{SEEDS_VARIABLE}={path} is not a directory")
    return path


def seed_file(number: str) -> Path:
    """The seed document whose file name starts with ``number`` ("000"), or skip/fail as
    :func:`require_seeds_dir` does; a directory without that document is a failure."""
    directory = require_seeds_dir()
    found = sorted(directory.glob(f"{number}_*"))
    assert found, f"{SEEDS_VARIABLE}={directory} holds no seed document {number}_*"
    return found[0]


@pytest.fixture(scope="session")
def seeds_dir() -> Path:
    """The seed documents' directory (see :func:`require_seeds_dir`)."""
    return require_seeds_dir()
