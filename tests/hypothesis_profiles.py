"""Hypothesis profiles for every test suite of the project, and a count of the examples each
test ran: a pytest plugin module, loaded through ``pytest_plugins`` by tests/conftest.py and by
each plugin's tests/conftest.py (pytest registers it once however many ask).

Profiles: "ci" (chosen when CI=true) is reproducible (derandomize) and runs the full example
counts the acceptance criteria ask for; "dev" runs a tenth of them for a quick local loop. A test
that wants more or fewer examples than the profile's base count scales it with
``settings(max_examples=settings().max_examples * factor)`` (see tests/classad/strategies.py).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, settings

#: Base number of examples per hypothesis test under each profile.
CI_EXAMPLES = 1000
DEV_EXAMPLES = 100

_SUPPRESSED = [
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.filter_too_much,
    # The only function-scoped fixture used with @given is the example counter, which is meant
    # to be shared by all examples of one test.
    HealthCheck.function_scoped_fixture,
]

_COUNTS = pytest.StashKey[Counter[str]]()


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
        "dev", max_examples=DEV_EXAMPLES, deadline=None, suppress_health_check=_SUPPRESSED
    )
    settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")


def pytest_configure(config: pytest.Config) -> None:
    """Load the hypothesis profile and start the example count."""
    load_profiles()
    config.stash[_COUNTS] = Counter()


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
