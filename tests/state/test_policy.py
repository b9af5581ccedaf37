"""Policy expressions read from the configuration: per-slot, vanilla variants, broken ones."""

from __future__ import annotations

import pytest

from epcore.classad import UNDEFINED, parse_ad, parse_expr
from epcore.config import Config
from epcore.state.policy import (
    SAFE_VALUES,
    SlotPolicy,
    evaluate,
    is_false,
    is_true,
    load_policy,
    number,
    truth,
)


def _policy(text: str, slot_id: int = 1, slot_type: int | None = None) -> SlotPolicy:
    return load_policy(Config.from_text(text, source="policy.conf"), slot_id, slot_type)


def test_defaults_are_read_once() -> None:
    """Without configuration every knob has HTCondor's default (RANK from the code, 0)."""
    policy = _policy("")
    assert policy.knob("START").text == "True"
    assert policy.knob("RANK").text == "0"
    assert policy.knob("MAXJOBRETIREMENTTIME").text == "0"
    assert policy.number("MATCH_TIMEOUT") == 120
    assert policy.number("KILLING_TIMEOUT") == 30
    assert policy.problems == ()


def test_per_slot_knobs_win_over_type_and_plain() -> None:
    """SLOT<N>_START beats SLOT_TYPE_<T>_START, which beats START."""
    text = "START = 1 == 1\nSLOT_TYPE_2_START = 2 == 2\nSLOT3_START = 3 == 3\n"
    assert _policy(text, 1).knob("START").text == "1 == 1"
    assert _policy(text, 1, 2).knob("START").text == "2 == 2"
    assert _policy(text, 3, 2).knob("START").text == "3 == 3"


@pytest.mark.parametrize(
    ("universe", "expected"), [(5, "KeyboardIdle < 10"), (7, "KeyboardIdle < 60")]
)
def test_vanilla_variant_is_used_for_vanilla_jobs(universe: int, expected: str) -> None:
    """SUSPEND_VANILLA applies to JobUniverse 5 only; other jobs use SUSPEND."""
    policy = _policy("SUSPEND = KeyboardIdle < 60\nSUSPEND_VANILLA = KeyboardIdle < 10\n")
    job = parse_ad(f"[JobUniverse = {universe}]")
    assert policy.knob("SUSPEND", job).text == expected


def test_vanilla_falls_back_to_plain_knob() -> None:
    """Without PREEMPT_VANILLA a vanilla job uses PREEMPT."""
    policy = _policy("PREEMPT = True\n")
    assert policy.knob("PREEMPT", parse_ad("[JobUniverse = 5]")).text == "True"


@pytest.mark.parametrize(
    ("text", "knob", "reason", "line"),
    [
        (
            "MachineBusy = (LoadAvg > 1 || KeyboardIdle < 60\nPREEMPT = $(MachineBusy)\n",
            "PREEMPT",
            "not a ClassAd expression",
            2,
        ),
        (
            "WANT_SUSPEND = ( $(JustCpu) || $(Nothing) )\n",
            "WANT_SUSPEND",
            "not a ClassAd expression",
            1,
        ),
        ("X =\nSUSPEND = $(Undefined)\n", "SUSPEND", "expands to nothing", 2),
        ("START = KeyboardIdle >\n", "START", "not a ClassAd expression", 1),
    ],
)
def test_broken_knob_is_reported_with_origin(text: str, knob: str, reason: str, line: int) -> None:
    """A broken knob gives one problem naming knob, file and line, and the safe value."""
    policy = _policy(text)
    assert len(policy.problems) == 1
    problem = policy.problems[0]
    assert (problem.knob, problem.source, problem.line) == (knob, "policy.conf", line)
    assert reason in problem.reason
    assert policy.knob(knob).broken
    assert problem.replacement == SAFE_VALUES[knob]
    assert f"policy.conf, line {line}: {knob} =" in str(problem)


@pytest.mark.parametrize(
    ("knob", "safe"),
    [
        ("START", False),
        ("PREEMPT", False),
        ("KILL", False),
        ("SUSPEND", False),
        ("WANT_SUSPEND", False),
        ("IS_OWNER", False),
        ("CONTINUE", True),
        ("WANT_VACATE", True),
    ],
)
def test_safe_rule_for_broken_booleans(knob: str, safe: bool) -> None:
    """A broken START/PREEMPT/KILL/SUSPEND counts as FALSE; CONTINUE and WANT_VACATE as TRUE."""
    policy = _policy(f"{knob} = (((\n")
    assert is_true(policy.knob(knob), None, None, 0) is safe


def test_evaluate_uses_my_slot_and_target_job() -> None:
    """MY is the slot ad and TARGET the job ad, as the startd evaluates policy."""
    slot = parse_ad("[SlotID = 1; Memory = 100]")
    job = parse_ad('[RequestMemory = 50; Owner = "jones"]')
    expr = parse_expr('MY.Memory > TARGET.RequestMemory && Owner == "jones"')
    assert evaluate(expr, slot, job, 0) is True
    assert evaluate(expr, slot, None, 0) is UNDEFINED


def test_local_evaluation_distinguishes_false_from_undefined() -> None:
    """The seed's KeyboardIdle = 34 examples: && gives FALSE, || gives UNDEFINED locally."""
    policy_and = _policy('START = KeyboardIdle > 15 * 60 && Owner == "coltrane"\n')
    policy_or = _policy('START = KeyboardIdle > 15 * 60 || Owner == "coltrane"\n')
    slot = parse_ad("[KeyboardIdle = 34]")
    assert is_false(policy_and.knob("START"), slot, None, 0)
    assert not is_false(policy_or.knob("START"), slot, None, 0)
    assert not is_true(policy_or.knob("START"), slot, None, 0)


@pytest.mark.parametrize(
    ("value", "expected"), [(True, True), (False, False), (2, True), (0.0, False), ("x", None)]
)
def test_truth_reads_numbers_as_booleans(value: object, expected: bool | None) -> None:
    """Policy truth: booleans as they are, numbers non-zero, anything else undecided."""
    assert truth(value) is expected


def test_number_defaults_for_non_numbers() -> None:
    """RANK and time values that are not numbers take the default."""
    assert number(True) == 1.0
    assert number(UNDEFINED, 7.0) == 7.0
