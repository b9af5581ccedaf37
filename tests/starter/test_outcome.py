"""How a job ended (outcome.decide) and the attributes that report it (Ending.attributes)."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from epcore.classad import parse_ad
from epcore.jobs.codes import HoldCode, OutOfResourcesSubcode
from epcore.starter.outcome import (
    EVICTED,
    EXITED,
    HELD,
    HOOK_ARGUMENT,
    OUTCOMES,
    REQUEUED,
    Ending,
    decide,
    output_goes_back,
    vacates_instead,
)

KILL = int(signal.SIGKILL)
TERM = int(signal.SIGTERM)


def _decide(**changes: Any) -> Ending:
    seen: dict[str, Any] = {
        "exit_code": 0,
        "exit_signal": None,
        "stopped_by_startd": None,
        "memory_limit_hit": False,
        "global_oom": False,
        "memory_mb": 128,
        "peak_memory_mb": 100,
    }
    seen.update(changes)
    return decide(**seen)


@pytest.mark.parametrize(
    ("seen", "outcome", "code", "sig", "reason"),
    [
        ({"exit_code": 0}, EXITED, 0, None, "exited normally with status 0"),
        ({"exit_code": 3}, EXITED, 3, None, "exited normally with status 3"),
        ({"exit_code": 255}, EXITED, 255, None, "status 255"),
        ({"exit_code": None}, EXITED, 0, None, "status 0"),
        ({"exit_code": None, "exit_signal": TERM}, EXITED, None, TERM, "died on SIGTERM"),
        ({"exit_code": None, "exit_signal": KILL}, EXITED, None, KILL, "died on SIGKILL"),
        ({"exit_code": None, "exit_signal": 77}, EXITED, None, 77, "died on signal 77"),
        (
            {"exit_code": None, "exit_signal": KILL, "global_oom": True, "peak_memory_mb": 90},
            REQUEUED,
            None,
            KILL,
            "used 90 of the 128 megabytes",
        ),
        # The global OOM killer only explains a SIGKILL, not a job's own other signal.
        ({"exit_code": None, "exit_signal": TERM, "global_oom": True}, EXITED, None, TERM, "TERM"),
        ({"exit_code": 0, "global_oom": True}, EXITED, 0, None, "status 0"),
        (
            {"exit_code": None, "exit_signal": TERM, "stopped_by_startd": "vacate of slot1"},
            EVICTED,
            None,
            TERM,
            "evicted: vacate of slot1",
        ),
        ({"exit_code": 0, "stopped_by_startd": "shutdown"}, EVICTED, 0, None, "shutdown"),
        (
            {"exit_code": None, "exit_signal": KILL, "stopped_by_startd": "x", "global_oom": True},
            EVICTED,
            None,
            KILL,
            "evicted: x",
        ),
        (
            {"exit_code": None, "exit_signal": KILL, "memory_limit_hit": True},
            HELD,
            None,
            KILL,
            "over cgroup memory limit of 128 megabytes. Last measured usage: 100 megabytes.  Con",
        ),
        # Going over the slot's memory wins over everything else that was seen.
        (
            {
                "exit_code": None,
                "exit_signal": KILL,
                "memory_limit_hit": True,
                "stopped_by_startd": "vacate",
                "global_oom": True,
            },
            HELD,
            None,
            KILL,
            "request_memory",
        ),
    ],
    ids=[
        "exit-0",
        "exit-3",
        "exit-255",
        "no-status",
        "sigterm",
        "sigkill-no-oom",
        "unnamed-signal",
        "global-oom-requeued",
        "global-oom-other-signal",
        "global-oom-clean-exit",
        "evicted-by-signal",
        "evicted-after-exit",
        "evicted-beats-global-oom",
        "memory-limit-held",
        "memory-limit-beats-all",
    ],
)
def test_decide_branches(
    seen: dict[str, Any], outcome: str, code: int | None, sig: int | None, reason: str
) -> None:
    """Each combination of what was seen gives its outcome, exit code or signal and reason."""
    ending = _decide(**seen)
    assert ending.outcome == outcome
    assert ending.exit_code == code
    assert ending.exit_signal == sig
    assert reason in ending.reason
    assert ending.by_signal is (sig is not None)


def test_memory_limit_hold_has_code_34() -> None:
    """A job over its cgroup memory limit is held with HoldReasonCode 34, subcode 102 (Memory,
    as HTCondor 24.x and 25.x; 23.9 gave 0)."""
    ending = _decide(exit_code=None, exit_signal=KILL, memory_limit_hit=True, memory_mb=512)
    expected = (HoldCode.JOB_OUT_OF_RESOURCES, OutOfResourcesSubcode.MEMORY)
    assert (ending.hold_code, ending.hold_subcode) == expected == (34, 102)
    assert "512 megabytes" in ending.reason


@pytest.mark.parametrize(
    ("ending", "expected"),
    [
        (
            Ending(EXITED, "exited normally with status 2", 2, None),
            {"JobOutcome": "exited", "ExitCode": 2, "ExitBySignal": False},
        ),
        (
            Ending(EXITED, "died on SIGTERM", None, 15),
            {"JobOutcome": "exited", "ExitSignal": 15, "ExitBySignal": True},
        ),
        (
            Ending(HELD, "too big", None, 9, 34, 0),
            {
                "JobOutcome": "held",
                "ExitSignal": 9,
                "ExitBySignal": True,
                "HoldReason": "too big",
                "HoldReasonCode": 34,
                "HoldReasonSubCode": 0,
            },
        ),
        (
            Ending(HELD, "hook said so", 1, None, 47, 5),
            {"HoldReason": "hook said so", "HoldReasonCode": 47, "HoldReasonSubCode": 5},
        ),
        (Ending(EVICTED, "vacated", None, 15), {"JobOutcome": "evicted", "ExitSignal": 15}),
        (Ending(REQUEUED, "oom", None, 9), {"JobOutcome": "requeued", "ExitBySignal": True}),
        (
            Ending(REQUEUED, "test failed", None, None, 45, -1000),
            {"VacateReason": "test failed", "VacateReasonCode": 45, "VacateReasonSubCode": -1000},
        ),
    ],
    ids=["exit-code", "signal", "held-oom", "held-hook", "evicted", "requeued", "vacated"],
)
def test_ending_attributes(ending: Ending, expected: dict[str, object]) -> None:
    """Ending.attributes() carries HTCondor's names, with the hold ones only when held."""
    ad = ending.attributes()
    for name, value in expected.items():
        assert ad.evaluate(name) == value, name
    assert ad.evaluate("ExitReason") == ending.reason
    assert ("ExitCode" in ad) is (ending.exit_code is not None)
    assert ("ExitSignal" in ad) is (ending.exit_signal is not None)
    for name in ("HoldReason", "HoldReasonCode", "HoldReasonSubCode"):
        assert (name in ad) is (ending.outcome == HELD), name


def test_every_outcome_has_a_hook_argument() -> None:
    """The JOB_EXIT hook gets exit, hold or evict for each outcome (requeued is an eviction)."""
    assert set(HOOK_ARGUMENT) == set(OUTCOMES)
    assert HOOK_ARGUMENT == {
        "exited": "exit",
        "held": "hold",
        "evicted": "evict",
        "requeued": "evict",
    }


@pytest.mark.parametrize(
    ("code", "subcode", "vacates"),
    [(45, -1000, True), (45, 0, False), (1021, 0, True), (6, 2, False), (999, -999, False)],
)
def test_vacate_codes_requeue_instead_of_holding(code: int, subcode: int, vacates: bool) -> None:
    """A starter error of code 1000 and up or subcode -1000 and below requeues the job, as
    HTCondor's shadow does (shouldVacateJobBasedOnCodes); any other holds it."""
    assert vacates_instead(code, subcode) is vacates


def test_an_eviction_with_a_code_records_the_vacate_reason() -> None:
    """A stop the startd gave a code (hibernation, 1016) reports VacateReason and its codes."""
    ending = _decide(exit_signal=KILL, stopped_by_startd="Startd hibernated", vacate_code=(1016, 0))
    ad = ending.attributes()
    assert ending.outcome == "evicted"
    assert ad.evaluate("VacateReason") == "Startd hibernated"
    assert ad.evaluate("VacateReasonCode") == 1016
    assert ad.evaluate("VacateReasonSubCode") == 0
    assert _decide(stopped_by_startd="vacate").attributes().lookup("VacateReasonCode") is None


@pytest.mark.parametrize(
    ("when", "outcome", "goes"),
    [
        ("ON_EXIT", EXITED, True),
        ("ON_EXIT", EVICTED, False),
        ("ON_EXIT_OR_EVICT", EVICTED, True),
        ("on_exit_or_evict", EVICTED, True),
        ("ON_EXIT_OR_EVICT", HELD, False),
        ("ON_EXIT_OR_EVICT", REQUEUED, False),
    ],
)
def test_output_goes_back_after_an_exit_and_after_an_eviction_that_asks_for_it(
    when: str, outcome: str, goes: bool
) -> None:
    """Output goes back after an exit, and after an eviction only with ON_EXIT_OR_EVICT."""
    job = parse_ad(f'[ WhenToTransferOutput = "{when}" ]')
    assert output_goes_back(job, Ending(outcome, "why")) is goes


def test_the_memory_hold_s_attributes_carry_plain_integer_codes() -> None:
    """The memory hold's ad gets HoldReasonCode 34 and HoldReasonSubCode 102 as integers (an
    enum member in a ClassAd is refused, and the starter would end without a result)."""
    ending = _decide(exit_code=None, exit_signal=KILL, memory_limit_hit=True, memory_mb=512)
    ad = ending.attributes()
    assert ad.evaluate("HoldReasonCode") == 34
    assert ad.evaluate("HoldReasonSubCode") == 102
    assert type(ad.evaluate("HoldReasonSubCode")) is int
