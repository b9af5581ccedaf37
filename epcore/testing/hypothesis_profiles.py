"""Hypothesis profiles for every test suite of the project, and a count of the examples each
test ran: a pytest plugin module, loaded through ``pytest_plugins`` by tests/conftest.py and by
each plugin's tests/conftest.py (pytest registers it once however many ask).

Profiles: "ci" (chosen when CI=true) is reproducible (derandomize) and runs
:data:`CI_EXAMPLES` examples per test; "dev" runs :data:`DEV_EXAMPLES` for a quick local loop;
"ci-recheck" is "ci" with a third of the examples, for CI's second pass over the ClassAd and
configuration suites. ``EPCORE_HYPOTHESIS_PROFILE`` names one over CI's choice.
The suites whose acceptance criteria ask for example counts (the ClassAd differential suite, at
least 5,000 generated expressions, and the ClassAd fuzz suite, at least 20,000 examples, under
CI) scale :func:`full_examples` instead (``scaled`` in tests/classad/strategies.py): 1,000 under
"ci", the dev count under "dev". Other tests run fewer under CI: their properties (round trips of
a format, parsers that raise only their own error) are found out within a few hundred examples,
and a thousand for each of some eighty tests took a third of CI's time.

Every hypothesis test's peak memory is measured too: Linux's peak resident set size of the test
process (VmHWM) is reset when the test starts and read when it ends. The run prints the figures,
and a test that peaks at :data:`MEMORY_LIMIT_MB` or more fails: generated input must stay small
enough that a fuzz test cannot take the machine's memory (one once peaked at 21 GB).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Generator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, is_hypothesis_test, settings

#: Base number of examples per hypothesis test under each profile.
CI_EXAMPLES = 300
DEV_EXAMPLES = 100
#: The count the suites with acceptance counts scale under the "ci" profile (full_examples).
CI_FULL_EXAMPLES = 1000
#: The environment variable that names a profile, over CI's choice.
PROFILE_VARIABLE = "EPCORE_HYPOTHESIS_PROFILE"
#: CI's second pass over the ClassAd and configuration suites (with the mypyc build in place,
#: .ci/run): reproducible as "ci", with a third of its examples. That pass checks that the
#: compiled parser gives the pure one's answers; for the smaller count hypothesis draws a
#: different (still derandomized) set of examples, not a part of the first pass's. The example
#: counts the acceptance criteria ask for are the first pass's.
RECHECK_PROFILE = "ci-recheck"
RECHECK_DIVISOR = 3

_SUPPRESSED = [
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.filter_too_much,
    # The only function-scoped fixture used with @given is the example counter, which is meant
    # to be shared by all examples of one test.
    HealthCheck.function_scoped_fixture,
]

_COUNTS = pytest.StashKey[Counter[str]]()

#: Peak resident memory, in MiB, at or above which a hypothesis test fails.
MEMORY_LIMIT_MB = 1024
#: The user property under which a test's report carries its peak memory in MiB (reports travel
#: from pytest-xdist workers to the controller with their user properties).
PEAK_PROPERTY = "peak_rss_mb"
#: How many of the largest peaks the end of the run lists.
SHOWN_PEAKS = 10

_CLEAR_REFS = Path("/proc/self/clear_refs")
_STATUS = Path("/proc/self/status")
_HIGH_WATER = re.compile(r"^VmHWM:\s+(\d+)\s+kB$", re.MULTILINE)


def reset_peak_memory() -> bool:
    """Make the process's peak resident set size its current one; False where Linux's
    /proc/self/clear_refs is not there to do it."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def peak_memory_mb() -> float:
    """The process's peak resident set size since the last reset, in MiB."""
    found = _HIGH_WATER.search(_STATUS.read_text())
    assert found is not None, f"no VmHWM line in {_STATUS}"
    return int(found.group(1)) / 1024


def full_examples() -> int:
    """The example count that suites with acceptance counts scale under the active profile."""
    profile = settings.get_current_profile_name()
    if profile == "ci":
        return CI_FULL_EXAMPLES
    if profile == RECHECK_PROFILE:
        return CI_FULL_EXAMPLES // RECHECK_DIVISOR
    return DEV_EXAMPLES


def load_profiles() -> None:
    """Register both hypothesis profiles and load the one the environment asks for."""
    settings.register_profile(
        "ci",
        max_examples=CI_EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        print_blob=True,
        suppress_health_check=_SUPPRESSED,
    )
    settings.register_profile(
        RECHECK_PROFILE,
        settings.get_profile("ci"),
        max_examples=CI_EXAMPLES // RECHECK_DIVISOR,
    )
    settings.register_profile(
        "dev", max_examples=DEV_EXAMPLES, deadline=None, suppress_health_check=_SUPPRESSED
    )
    asked = os.environ.get(PROFILE_VARIABLE)
    if asked is not None:
        if asked not in (RECHECK_PROFILE, "ci", "dev"):
            raise pytest.UsageError(
                f"{PROFILE_VARIABLE}={asked!r}: no such hypothesis profile "
                f"(ci, dev or {RECHECK_PROFILE})"
            )
        settings.load_profile(asked)
        return
    settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")


def pytest_configure(config: pytest.Config) -> None:
    """Load the hypothesis profile and start the example count."""
    load_profiles()
    config.stash[_COUNTS] = Counter()
    config.pluginmanager.register(PeakMemoryReport(), "epcore-hypothesis-peak-memory")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Measure a hypothesis test's peak memory; fail it at MEMORY_LIMIT_MB or more."""
    measured = isinstance(item, pytest.Function) and is_hypothesis_test(item.obj)
    if not measured or not reset_peak_memory():
        if measured and os.environ.get("CI") == "true":
            pytest.fail(f"cannot measure the test's peak memory: {_CLEAR_REFS} is not writable")
        return (yield)
    outcome = yield
    peak = peak_memory_mb()
    item.user_properties.append((PEAK_PROPERTY, peak))
    if peak >= MEMORY_LIMIT_MB:
        pytest.fail(
            f"the test's process peaked at {peak:.0f} MiB of resident memory, over the "
            f"{MEMORY_LIMIT_MB} MiB a hypothesis test may take "
            "(see epcore.testing.hypothesis_profiles)",
            pytrace=False,
        )
    return outcome


class PeakMemoryReport:
    """Collects the peak memory each test's report carries (from this process or from an xdist
    worker) and prints the figures at the end of the run."""

    def __init__(self) -> None:
        self.peaks: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Note the peak memory of a test's call phase."""
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == PEAK_PROPERTY and isinstance(value, float):
                self.peaks[report.nodeid] = value

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """Print the largest peaks, and how many tests were measured."""
        if not self.peaks:
            return
        profile = settings.get_current_profile_name()
        terminalreporter.section(f"hypothesis tests' peak memory (profile {profile})")
        ranked = sorted(self.peaks.items(), key=lambda pair: -pair[1])
        for nodeid, peak in ranked[:SHOWN_PEAKS]:
            terminalreporter.write_line(f"{peak:>8.0f} MiB  {nodeid}")
        terminalreporter.write_line(
            f"{ranked[0][1]:>8.0f} MiB  at most, over {len(ranked)} tests "
            f"(limit {MEMORY_LIMIT_MB} MiB)"
        )


@pytest.fixture
def example_counter(request: pytest.FixtureRequest) -> Callable[[], None]:
    """A callable that a hypothesis test calls once per example, for the end-of-run count."""
    counts = request.config.stash[_COUNTS]
    nodeid = request.node.nodeid

    def tick() -> None:
        counts[nodeid] += 1

    return tick


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print how many hypothesis examples each counting test ran."""
    counts = terminalreporter.config.stash.get(_COUNTS, Counter())
    if not counts:
        return
    profile = settings.get_current_profile_name()
    terminalreporter.section(f"hypothesis examples run (profile {profile})")
    for nodeid, count in sorted(counts.items()):
        terminalreporter.write_line(f"{count:>8}  {nodeid}")
    terminalreporter.write_line(f"{sum(counts.values()):>8}  in total")
