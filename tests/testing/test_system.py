"""The real system fixtures keep parallel test processes apart (epcore.testing.system), checked
in pytest runs of their own."""

from __future__ import annotations

import contextlib
import fcntl
import re
import sys
from pathlib import Path

import pytest

from epcore.testing.system import TRACKING_GID_LOCKS

pytest_plugins = ["pytester"]

CONFTEST = """
pytest_plugins = ["epcore.testing.system"]
"""

PRINT_RANGE = """
def test_range(tracking_gids):
    print("RANGE", *tracking_gids)
"""

PRINT_TMP_PATH = """
def test_where(tmp_path):
    print("TMP", tmp_path)
"""


def _printed(run: pytest.RunResult, label: str) -> list[str]:
    found = re.search(rf"\b{label} (.+)$", run.stdout.str(), re.MULTILINE)
    assert found is not None, run.stdout.str()
    return found.group(1).split()


@pytest.mark.usefixtures("as_root")
def test_a_tracking_gid_range_held_by_another_process_is_not_handed_out(
    pytester: pytest.Pytester,
) -> None:
    """While another process holds the lock of the range a run would take, the next run takes
    another range."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_gids=PRINT_RANGE)
    first = _printed(pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider"), "RANGE")
    with (TRACKING_GID_LOCKS / f"epcore-tracking-gids-{first[0]}.lock").open("a") as held:
        # Held by another worker meanwhile does as well.
        with contextlib.suppress(BlockingIOError):
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        second = _printed(pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider"), "RANGE")
    assert second != first
    assert int(second[1]) - int(second[0]) == int(first[1]) - int(first[0]) == 7


def test_a_run_gets_a_base_temporary_directory_of_its_own(pytester: pytest.Pytester) -> None:
    """Without --basetemp a run's tmp_path is outside /tmp/pytest-of-<user> (which any starting
    session makes private again), and the directory is gone after the run passes."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_where=PRINT_TMP_PATH)
    # pytester gives its runs a --basetemp; this run goes through pytest's command line alone.
    run = pytester.run(
        sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider", "test_where.py"
    )
    assert run.ret == 0, run.stdout.str()
    (where,) = _printed(run, "TMP")
    assert "pytest-of-" not in where and Path(where).parent.name.startswith("epcore-tests-")
    assert not Path(where).parent.exists()
