"""Plugin ClassAd functions in the schedd's policies: a job's periodic expressions and the
SYSTEM_PERIODIC_* ones are evaluated with the configuration's function table."""

from __future__ import annotations

from lucky_functions import lucky_config

from epcore.classad import parse_ad
from epcore.schedd.jobqueue import JobStatus
from epcore.schedd.periodic import PeriodicKind, SystemPolicies, periodic_action

DEFAULTS = "PeriodicHold = false; PeriodicRelease = false; PeriodicRemove = false"
NOW = 1_700_000_000


def _action(job: str, config: str = "") -> PeriodicKind | None:
    settings = lucky_config(config)
    ad = parse_ad(f"[ {DEFAULTS}; {job} ]")
    policies = SystemPolicies.from_config(settings)
    found = periodic_action(ad, JobStatus.IDLE, policies, settings, now=NOW)
    return None if found is None else found.kind


def test_a_jobs_periodic_hold_calls_the_plugin_function() -> None:
    """PeriodicHold = isLucky(N) holds the job when N is lucky, not otherwise."""
    assert _action("N = 14; PeriodicHold = isLucky(N)") is PeriodicKind.HOLD
    assert _action("N = 3; PeriodicHold = isLucky(N)") is None


def test_a_system_periodic_remove_calls_the_plugin_function() -> None:
    """SYSTEM_PERIODIC_REMOVE calling the plugin's function removes the jobs it picks."""
    config = "SYSTEM_PERIODIC_REMOVE = isLucky(N)\n"
    assert _action("N = 21", config) is PeriodicKind.REMOVE
    assert _action("N = 20", config) is None
