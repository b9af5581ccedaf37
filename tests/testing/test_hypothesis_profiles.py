"""The hypothesis profiles' example counts (epcore.testing.hypothesis_profiles)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from epcore.testing.hypothesis_profiles import (
    CI_EXAMPLES,
    CI_FULL_EXAMPLES,
    DEV_EXAMPLES,
    PROFILE_VARIABLE,
    RECHECK_DIVISOR,
    RECHECK_PROFILE,
    full_examples,
    load_profiles,
)


@pytest.fixture
def restored_profile() -> Iterator[None]:
    """The profile the run loaded, loaded again after the test."""
    name = settings.get_current_profile_name()
    yield
    settings.load_profile(name)


@pytest.mark.usefixtures("restored_profile")
def test_ci_runs_fewer_examples_per_test_but_the_full_count_for_the_scaled_suites() -> None:
    """Under "ci" a test runs CI_EXAMPLES examples, and the ClassAd suites scale 1,000 (the
    factors in test_fuzz add up to 20: the 20,000 examples the acceptance criteria ask for)."""
    settings.load_profile("ci")
    assert settings().max_examples == CI_EXAMPLES < CI_FULL_EXAMPLES
    assert full_examples() == CI_FULL_EXAMPLES == 1000
    assert settings().derandomize


@pytest.mark.usefixtures("restored_profile")
def test_dev_scales_its_own_count() -> None:
    """Under "dev" a test and the scaled suites alike run DEV_EXAMPLES examples."""
    settings.load_profile("dev")
    assert settings().max_examples == DEV_EXAMPLES
    assert full_examples() == DEV_EXAMPLES


@pytest.mark.usefixtures("restored_profile")
def test_the_recheck_profile_is_ci_with_a_third_of_the_examples() -> None:
    """ "ci-recheck" is reproducible as "ci" and runs a third of its examples, scaled suites too."""
    settings.load_profile(RECHECK_PROFILE)
    assert RECHECK_DIVISOR == 3
    assert settings().max_examples == CI_EXAMPLES // 3
    assert full_examples() == CI_FULL_EXAMPLES // 3
    assert settings().derandomize
    assert settings().database is None


@pytest.mark.usefixtures("restored_profile")
def test_the_variable_names_the_profile_over_ci_and_refuses_an_unknown_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """EPCORE_HYPOTHESIS_PROFILE wins over CI=true; an unknown name is a usage error naming it."""
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv(PROFILE_VARIABLE, RECHECK_PROFILE)
    load_profiles()
    assert settings.get_current_profile_name() == RECHECK_PROFILE
    monkeypatch.setenv(PROFILE_VARIABLE, "fast")
    with pytest.raises(pytest.UsageError, match="EPCORE_HYPOTHESIS_PROFILE='fast'"):
        load_profiles()
