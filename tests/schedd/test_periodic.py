"""The periodic job policy's decision (epcore.schedd.periodic): which expression fires, in
which order, with which reason and codes, and the SYSTEM_PERIODIC_* lists read from the
configuration; data-driven, with HTCondor's classad2 as the oracle for what fires."""

from __future__ import annotations

import pytest

from epcore.classad import parse_ad, parse_expr
from epcore.config import Config
from epcore.schedd.jobqueue import JobStatus
from epcore.schedd.periodic import (
    PeriodicAction,
    PeriodicKind,
    PeriodicTiming,
    SystemPolicies,
    periodic_action,
)

IDLE, RUNNING, HELD = JobStatus.IDLE, JobStatus.RUNNING, JobStatus.HELD
HOLD, RELEASE, REMOVE, VACATE = (
    PeriodicKind.HOLD,
    PeriodicKind.RELEASE,
    PeriodicKind.REMOVE,
    PeriodicKind.VACATE,
)
#: What condor_submit stores by default.
DEFAULTS = "PeriodicHold = false; PeriodicRelease = false; PeriodicRemove = false; "
NOW = 1_700_000_000


def _decide(job: str, status: JobStatus, config: str = "") -> PeriodicAction | None:
    settings = Config.from_text(config, subsystem="SCHEDD")
    ad = parse_ad(f"[ {DEFAULTS}{job} ]")
    return periodic_action(ad, status, SystemPolicies.from_config(settings), settings, now=NOW)


def _job_text(attribute: str, expr: str) -> str:
    return f"The job attribute {attribute} expression '{expr}' evaluated to TRUE"


def _system_text(knob: str, expr: str) -> str:
    return f"The system macro {knob} expression '{expr}' evaluated to TRUE"


CASES = [
    # (what it shows, job attributes, status, configuration, expected action)
    ("the defaults fire nothing", "", IDLE, "", None),
    (
        "periodic_hold holds with code 3 and HTCondor's text",
        "PeriodicHold = NumJobStarts >= 0; NumJobStarts = 1",
        IDLE,
        "",
        PeriodicAction(HOLD, _job_text("PeriodicHold", "NumJobStarts >= 0"), 3, 0),
    ),
    (
        "periodic_hold_reason and _subcode give the hold's text and subcode",
        'PeriodicHold = true; PeriodicHoldReason = strcat("too ", "long"); '
        "PeriodicHoldSubCode = 40 + 2",
        RUNNING,
        "",
        PeriodicAction(HOLD, "too long", 3, 42),
    ),
    (
        "an empty reason falls back to the expression's text",
        'PeriodicHold = true; PeriodicHoldReason = ""',
        IDLE,
        "",
        PeriodicAction(HOLD, _job_text("PeriodicHold", "true"), 3, 0),
    ),
    ("UNDEFINED does not fire", "PeriodicHold = NoSuchAttribute > 3", IDLE, "", None),
    ("ERROR does not fire", 'PeriodicHold = "a" + 1', IDLE, "", None),
    ("a string does not fire", 'PeriodicHold = "true"', IDLE, "", None),
    ("zero does not fire", "PeriodicHold = 0.0", IDLE, "", None),
    (
        "a non-zero number fires",
        "PeriodicHold = 2",
        IDLE,
        "",
        PeriodicAction(HOLD, _job_text("PeriodicHold", "2"), 3, 0),
    ),
    ("a held job is not held again", "PeriodicHold = true", HELD, "", None),
    (
        "periodic_release puts a held job back",
        "PeriodicRelease = true; HoldReasonCode = 3; NumHolds = 1",
        HELD,
        "",
        PeriodicAction(RELEASE, _job_text("PeriodicRelease", "true")),
    ),
    (
        "a user's hold (code 1) is never released by policy",
        "PeriodicRelease = true; HoldReasonCode = 1",
        HELD,
        "",
        None,
    ),
    (
        "SYSTEM_MAX_RELEASES stops releases after that many holds",
        "PeriodicRelease = true; HoldReasonCode = 3; NumHolds = 2",
        HELD,
        "SYSTEM_MAX_RELEASES = 2",
        None,
    ),
    (
        "a release is allowed below SYSTEM_MAX_RELEASES",
        "PeriodicRelease = true; HoldReasonCode = 3; NumHolds = 1",
        HELD,
        "SYSTEM_MAX_RELEASES = 2",
        PeriodicAction(RELEASE, _job_text("PeriodicRelease", "true")),
    ),
    ("periodic_release does nothing to an idle job", "PeriodicRelease = true", IDLE, "", None),
    (
        "periodic_remove removes a job in any active status",
        "PeriodicRemove = true; HoldReasonCode = 1",
        HELD,
        "",
        PeriodicAction(REMOVE, _job_text("PeriodicRemove", "true")),
    ),
    (
        "a hold is considered before a removal",
        "PeriodicHold = true; PeriodicRemove = true",
        IDLE,
        "",
        PeriodicAction(HOLD, _job_text("PeriodicHold", "true"), 3, 0),
    ),
    (
        "a release is considered before a removal",
        "PeriodicRelease = true; PeriodicRemove = true; HoldReasonCode = 3",
        HELD,
        "",
        PeriodicAction(RELEASE, _job_text("PeriodicRelease", "true")),
    ),
    (
        "periodic_vacate evicts a running job first, with VacateReasonCode 1000",
        "PeriodicVacate = true; PeriodicHold = true",
        RUNNING,
        "",
        PeriodicAction(VACATE, _job_text("PeriodicVacate", "true"), 1000, 0),
    ),
    ("periodic_vacate does nothing to an idle job", "PeriodicVacate = true", IDLE, "", None),
    (
        "time() is the pass's now",
        f"PeriodicRemove = time() - QDate > 100; QDate = {NOW - 101}",
        IDLE,
        "",
        PeriodicAction(REMOVE, _job_text("PeriodicRemove", "time() - QDate > 100")),
    ),
    (
        "the evaluation stays below the threshold until now passes it",
        f"PeriodicRemove = time() - QDate > 100; QDate = {NOW - 100}",
        IDLE,
        "",
        None,
    ),
    (
        "removed and completed jobs are left alone",
        "PeriodicRemove = true",
        JobStatus.REMOVED,
        "",
        None,
    ),
    (
        "SYSTEM_PERIODIC_HOLD holds with code 26 and HTCondor's text",
        "MemoryUsage = 300; RequestMemory = 128",
        RUNNING,
        "SYSTEM_PERIODIC_HOLD = MemoryUsage > RequestMemory",
        PeriodicAction(
            HOLD, _system_text("SYSTEM_PERIODIC_HOLD", "MemoryUsage > RequestMemory"), 26, 0
        ),
    ),
    (
        "SYSTEM_PERIODIC_HOLD_REASON and _SUBCODE are expressions over the job",
        "MemoryUsage = 300",
        IDLE,
        "SYSTEM_PERIODIC_HOLD = MemoryUsage > 100\n"
        'SYSTEM_PERIODIC_HOLD_REASON = strcat("used ", MemoryUsage, " MB")\n'
        "SYSTEM_PERIODIC_HOLD_SUBCODE = 7",
        PeriodicAction(HOLD, "used 300 MB", 26, 7),
    ),
    (
        "the job's own expression fires before the system's",
        "PeriodicHold = true",
        IDLE,
        "SYSTEM_PERIODIC_HOLD = true",
        PeriodicAction(HOLD, _job_text("PeriodicHold", "true"), 3, 0),
    ),
    (
        "named system expressions come before the unnamed one, each with its reason",
        "JobStatus = 1",
        IDLE,
        "SYSTEM_PERIODIC_HOLD_NAMES = Mem Disk\n"
        "SYSTEM_PERIODIC_HOLD = true\n"
        "SYSTEM_PERIODIC_HOLD_Mem = false\n"
        "SYSTEM_PERIODIC_HOLD_Disk = JobStatus == 1\n"
        'SYSTEM_PERIODIC_HOLD_Disk_REASON = "disk"\n'
        "SYSTEM_PERIODIC_HOLD_Disk_SUBCODE = 5\n"
        'SYSTEM_PERIODIC_HOLD_REASON = "unnamed"',
        PeriodicAction(HOLD, "disk", 26, 5),
    ),
    (
        "a named expression's text is in the default reason under the unnamed knob",
        "JobStatus = 1",
        IDLE,
        "SYSTEM_PERIODIC_REMOVE_NAMES = old\nSYSTEM_PERIODIC_REMOVE_old = JobStatus == 1",
        PeriodicAction(REMOVE, _system_text("SYSTEM_PERIODIC_REMOVE", "JobStatus == 1")),
    ),
    (
        "SYSTEM_PERIODIC_RELEASE releases a held job",
        "HoldReasonCode = 26",
        HELD,
        "SYSTEM_PERIODIC_RELEASE = HoldReasonCode == 26",
        PeriodicAction(RELEASE, _system_text("SYSTEM_PERIODIC_RELEASE", "HoldReasonCode == 26")),
    ),
    (
        "SYSTEM_PERIODIC_VACATE evicts with VacateReasonCode 1001",
        "",
        RUNNING,
        "SYSTEM_PERIODIC_VACATE = true",
        PeriodicAction(VACATE, _system_text("SYSTEM_PERIODIC_VACATE", "true"), 1001, 0),
    ),
    (
        "SYSTEM_PERIODIC_REMOVE removes after the job's own expressions",
        "PeriodicRelease = false",
        HELD,
        "SYSTEM_PERIODIC_REMOVE = true",
        PeriodicAction(REMOVE, _system_text("SYSTEM_PERIODIC_REMOVE", "true")),
    ),
]


@pytest.mark.parametrize(
    ("job", "status", "config", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_the_first_expression_that_fires_decides(
    job: str, status: JobStatus, config: str, expected: PeriodicAction | None
) -> None:
    """Each case gets the action HTCondor's periodic policy takes, with its reason and codes."""
    assert _decide(job, status, config) == expected


def test_a_system_expression_that_does_not_parse_is_left_out_and_named() -> None:
    """A bad SYSTEM_PERIODIC_REMOVE is reported with its knob, file and line; the others
    still apply."""
    config = Config.from_text(
        "SYSTEM_PERIODIC_HOLD = true\nSYSTEM_PERIODIC_REMOVE = (JobStatus ==\n",
        subsystem="SCHEDD",
    )
    policies = SystemPolicies.from_config(config)
    assert policies.removes == ()
    assert [p.knob for p in policies.holds] == ["SYSTEM_PERIODIC_HOLD"]
    [problem] = policies.problems
    assert problem.startswith("SYSTEM_PERIODIC_REMOVE (<string>, line 2): ignored")


def test_literally_false_system_expressions_are_left_out() -> None:
    """A SYSTEM_PERIODIC_* that is the constant false or 0 costs nothing per job."""
    config = Config.from_text(
        "SYSTEM_PERIODIC_HOLD = false\nSYSTEM_PERIODIC_REMOVE = 0\nSYSTEM_PERIODIC_RELEASE = 1",
        subsystem="SCHEDD",
    )
    policies = SystemPolicies.from_config(config)
    assert policies.holds == () and policies.removes == ()
    assert [p.text for p in policies.releases] == ["1"]


@pytest.mark.parametrize(
    ("spent", "expected"),
    [(0.0, 60.0), (0.5, 60.0), (1.0, 100.0), (20.0, 1200.0)],
)
def test_a_costly_pass_stretches_the_interval_up_to_the_maximum(
    spent: float, expected: float
) -> None:
    """The next pass waits PERIODIC_EXPR_INTERVAL, or the pass's cost over
    PERIODIC_EXPR_TIMESLICE, at most MAX_PERIODIC_EXPR_INTERVAL."""
    timing = PeriodicTiming.from_config(Config.from_text("", subsystem="SCHEDD"))
    assert timing.next_start(1000.0, spent) == 1000.0 + expected


def test_an_interval_of_zero_turns_the_policy_off() -> None:
    """PERIODIC_EXPR_INTERVAL = 0 disables the passes, as in HTCondor."""
    config = Config.from_text("PERIODIC_EXPR_INTERVAL = 0", subsystem="SCHEDD")
    assert not PeriodicTiming.from_config(config).enabled


ORACLE_EXPRESSIONS = [
    "true",
    "false",
    "1",
    "0",
    "-1",
    "0.5",
    "0.0",
    '"yes"',
    "undefined",
    "error",
    "undefined || true",
    "undefined && false",
    "MemoryUsage > RequestMemory",
    "MemoryUsage > Missing",
    "NumJobStarts >= 1 && JobStatus == 2",
    "isUndefined(Missing)",
    '"a" == "A"',
    '"a" =?= "A"',
    "ifThenElse(MemoryUsage > 100, 2, 0)",
    "1 / 0",
    "int(3.7) == 3",
    "real(1) == 1",
    "{1, 2}",
    "[ a = 1 ]",
]


@pytest.mark.parametrize("text", ORACLE_EXPRESSIONS)
def test_what_fires_agrees_with_classad2(text: str) -> None:
    """An expression fires exactly when HTCondor's evaluator gives true or a non-zero number
    for it in the job ad (UserPolicy reads the value with IsNumber)."""
    classad2 = pytest.importorskip("classad2")
    job_text = "[ MemoryUsage = 300; RequestMemory = 128; NumJobStarts = 1; JobStatus = 2 ]"
    theirs = classad2.ClassAd(job_text)
    theirs["PeriodicHold"] = classad2.ExprTree(text)
    value = theirs.eval("PeriodicHold")
    expected = (isinstance(value, bool) and value) or (type(value) in (int, float) and value != 0)
    ours = parse_ad(job_text)
    ours["PeriodicHold"] = parse_expr(text)
    settings = Config.from_text("", subsystem="SCHEDD")
    action = periodic_action(ours, RUNNING, SystemPolicies.from_config(settings), settings, now=NOW)
    assert (action is not None) == expected
