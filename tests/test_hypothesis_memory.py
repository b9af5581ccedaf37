"""Every hypothesis test's peak memory is measured, printed, and held under a limit
(epcore.testing.hypothesis_profiles), in a pytest run of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parent

#: A limit the probe tests can cross cheaply, and an allocation well over it.
LIMIT_MB = 300
OVER_LIMIT_BYTES = 400 * 1024 * 1024

PROBES = f"""
from hypothesis import given, settings, strategies as st


@settings(max_examples=3)
@given(st.integers())
def test_small(number):
    assert number == number


@settings(max_examples=2)
@given(st.integers())
def test_large(number):
    block = b"x" * {OVER_LIMIT_BYTES}
    assert len(block) == {OVER_LIMIT_BYTES}


def test_large_without_hypothesis():
    block = b"x" * {OVER_LIMIT_BYTES}
    assert len(block) == {OVER_LIMIT_BYTES}
"""


def test_peaks_are_measured_printed_and_limited(pytester: pytest.Pytester) -> None:
    """In a child pytest with the limit lowered to LIMIT_MB, the hypothesis test allocating
    past it fails with its peak, the small one and the plain test pass, and the run ends with
    the hypothesis tests' peaks, largest first, and their maximum."""
    pytester.makeconftest(
        'pytest_plugins = ["epcore.testing.hypothesis_profiles"]\n\n\n'
        "def pytest_configure(config):\n"
        "    from epcore.testing import hypothesis_profiles\n\n"
        f"    hypothesis_profiles.MEMORY_LIMIT_MB = {LIMIT_MB}\n"
    )
    pytester.makepyfile(test_probes=PROBES)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    run.assert_outcomes(passed=2, failed=1)
    run.stdout.fnmatch_lines(
        [
            "*_ test_large _*",
            f"the test's process peaked at * MiB of resident memory, over the {LIMIT_MB} MiB*",
            "*hypothesis tests' peak memory*",
            "* MiB  test_probes.py::test_large",
            "* MiB  test_probes.py::test_small",
            f"* MiB  at most, over 2 tests (limit {LIMIT_MB} MiB)",
        ]
    )
