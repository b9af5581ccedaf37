"""Parsing scenario TOML: defaults, the start time, job ads and the errors it reports."""

from __future__ import annotations

import pytest

from epcore.state.scenario import ScenarioError, job_ad, parse_scenario


def test_defaults_for_a_minimal_scenario() -> None:
    """No config, no machine, an event without a kind is an advance at the previous time."""
    scenario = parse_scenario("[[event]]\nat = 5\n[[event]]\n", "s.toml")
    assert scenario.config == "" and dict(scenario.machine) == {}
    assert [(e.index, e.at, e.kind) for e in scenario.events] == [
        (0, 5, "advance"),
        (1, 5, "advance"),
    ]
    assert scenario.start is None


@pytest.mark.parametrize(
    ("text", "epoch"),
    [
        ('start = "2026-11-23T09:00:00Z"\n', 1795424400.0),
        ("start = 2026-11-23T09:00:00Z\n", 1795424400.0),
        ('start = "2026-11-23T10:00:00+01:00"\n', 1795424400.0),
    ],
)
def test_start_sets_the_simulated_clock(text: str, epoch: float) -> None:
    """``start`` (a string or a TOML date-time) becomes epoch seconds, UTC unless zoned."""
    assert parse_scenario(text).start == epoch


def test_event_arguments_and_expectations_are_kept() -> None:
    """An event keeps its kind's arguments, expect and expect_attrs."""
    text = (
        "[[event]]\nat = 1\nvacate = { slot = 'slot1', fast = true }\n"
        "expect = { slot1 = 'Preempting/Killing' }\nexpect_attrs = { slot1 = { Cpus = 1 } }\n"
    )
    (event,) = parse_scenario(text).events
    assert (event.kind, dict(event.args)) == ("vacate", {"slot": "slot1", "fast": True})
    assert dict(event.expect) == {"slot1": "Preempting/Killing"}
    assert dict(event.expect_attrs) == {"slot1": {"Cpus": 1}}


def test_job_ad_from_a_table() -> None:
    """A TOML table becomes a job ClassAd with the same values."""
    ad = job_ad({"Owner": "jones", "RequestCpus": 2, "Interactive": True})
    assert ad.evaluate("Owner") == "jones" and ad.evaluate("RequestCpus") == 2
    assert ad.evaluate("Interactive") is True


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("[[event]]\nclaim = { slot = 'slot1', job = 3 }\n", "event 0, key 'claim'"),
        ("[[event]]\nmatch = { slot = 'slot1', job = {}, extra = 1 }\n", "unknown argument"),
        ("[[event]]\nexpect = { slot1 = 3 }\n", "event 0, key 'expect'"),
        ("[[event]]\nexpect_attrs = { slot1 = 3 }\n", "key 'expect_attrs'"),
        ("[[event]]\nat = 'soon'\n", "event 0, key 'at'"),
        ("[[event]]\nset = {}\nadvance = {}\n", "more than one event kind"),
        ("machine = 3\n", "key 'machine'"),
        ("event = 3\n", "key 'event'"),
        ("surprise = 1\n", "unknown top-level key"),
    ],
)
def test_malformed_scenarios_name_file_event_and_key(text: str, where: str) -> None:
    """Each malformed scenario raises ScenarioError naming the file and the place."""
    with pytest.raises(ScenarioError) as raised:
        parse_scenario(text, "bad.toml")
    assert str(raised.value).startswith("bad.toml: ") and where in str(raised.value)
