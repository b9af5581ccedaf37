"""Tests of the machine run in pytest-xdist groups (tests/parallel_groups.py), checked in pytest
runs of their own."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parent

#: Stand-ins for the real fixtures, which the grouping knows by name only.
CONFTEST = f"""
import sys

import pytest

sys.path.insert(0, {str(TESTS)!r})
pytest_plugins = ["parallel_groups"]


@pytest.fixture
def as_root():
    return None


@pytest.fixture
def docker_client():
    return None


@pytest.fixture
def busybox_image(docker_client):
    return "busybox"
"""

#: One module per directory: each directory's root tests form one group.
MODULE = """
import pytest


def test_plain():
    pass


def test_as_root(as_root):
    pass


@pytest.mark.system
def test_marked_system():
    pass


def test_docker_through_another_fixture(busybox_image):
    pass


@pytest.mark.venv
def test_venv():
    pass


@pytest.mark.xdist_group("chosen")
def test_own_group(as_root):
    pass
"""

MARKERS = (
    "[pytest]\nmarkers =\n    system: root\n    venv: venvs\n    docker: dockerd\n"
    "addopts = -p no:cacheprovider\n"
)

EXPECTED = {
    "test_plain": None,
    "test_as_root": "system:{directory}",
    "test_marked_system": "system:{directory}",
    "test_docker_through_another_fixture": "docker",
    "test_venv": "venv",
    "test_own_group": "chosen",
}


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """Two directories holding the same module, the stand-in fixtures and the grouping."""
    pytester.makeconftest(CONFTEST)
    pytester.makeini(MARKERS)
    for directory in ("first", "second"):
        (pytester.path / directory).mkdir()
        (pytester.path / directory / f"test_in_{directory}.py").write_text(MODULE)
    return pytester


def test_each_test_of_the_machine_runs_in_its_group_on_one_worker(suite: pytest.Pytester) -> None:
    """Under pytest-xdist, root tests are grouped by directory, docker tests (even through
    another fixture) and venv tests in one group each, a chosen group stays, a plain test has
    none (xdist names each grouped test with its group for its scheduler), and every test of a
    group runs on the same worker of the three."""
    run = suite.runpytest_subprocess("-n", "3", "--dist", "loadgroup", "-v")
    run.assert_outcomes(passed=12)
    groups = {}
    workers: defaultdict[str, set[str]] = defaultdict(set)
    for line in run.stdout.lines:
        match = re.search(r"\[(gw\d+)\].* PASSED (\S+)::(test_\w+)(?:@(\S+))?", line)
        if match:
            worker, module, test, group = match.groups()
            groups[(module, test)] = group
            if group is not None:
                workers[group].add(worker)
    for directory in ("first", "second"):
        module = f"{directory}/test_in_{directory}.py"
        for test, group in EXPECTED.items():
            expected = None if group is None else group.format(directory=directory)
            assert groups[(module, test)] == expected, (module, test)
    assert set(workers) == {"system:first", "system:second", "docker", "venv", "chosen"}
    assert all(len(used) == 1 for used in workers.values()), dict(workers)


def test_without_xdist_nothing_is_grouped(suite: pytest.Pytester) -> None:
    """A run without pytest-xdist adds no xdist_group marker: only the test that chose one
    carries it."""
    suite.makepyfile(
        test_probe="""
def test_only_the_chosen_group(request):
    grouped = [
        item.name for item in request.session.items if item.get_closest_marker("xdist_group")
    ]
    assert grouped == ["test_own_group", "test_own_group"]
"""
    )
    run = suite.runpytest_inprocess(
        "-p", "no:xdist", "-W", "ignore::pytest.PytestUnknownMarkWarning"
    )
    run.assert_outcomes(passed=13)
