"""render_analysis, and analyze_job on generated jobs and pools (hypothesis) and against
classad2's own evaluation (oracle)."""

from __future__ import annotations

import functools

import attrs
import classad2
import pytest
from analysis_pool import NOW, STANDARD, UNCLAIMED, claimed_by, job, pool
from hypothesis import given
from hypothesis import strategies as st

from epcore.analysis.analysis import analyze_job, render_analysis
from epcore.classad import ClassAd, EvalContext, format_old, symmetric_match
from epcore.slots.slot_status import SlotStatus

NOT_ALICE = 'START = TARGET.Owner != "alice"'

EXPECTED_MEMORY_REPORT = """\
The Requirements expression for job 7.0 is

    (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) \
&& (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus)

The Requirements expression for job 7.0 reduces to these conditions:

         Slots      Slots
Step    Matched  Ruled out  Condition
-----  --------  ---------  ---------
[0]           4          0  TARGET.Arch == "X86_64"
[1]           4          0  TARGET.OpSys == "LINUX"
[2]           4          0  TARGET.Disk >= RequestDisk
[3]           2          2  TARGET.Memory >= RequestMemory
                            (slot1@ep.example.org: TARGET.Memory is 1024, RequestMemory is 3000)
[4]           4          0  TARGET.Cpus >= RequestCpus

7.0:  Run analysis summary.  Of 4 slots,
      2 are rejected by your job's requirements
      0 reject your job because of their own requirements
      0 match and are already running your jobs
      0 match but are serving other users
      0 match but are partitionable slots with too little left
      0 match but are not available (not Unclaimed)
      2 are able to run your job
"""


def test_report_of_a_job_some_slots_can_run() -> None:
    """The report shows the Requirements, each condition with the slots it matches and rules
    out (with the values on the first slot it rules out), and the summary; no suggestion."""
    analysis = analyze_job(job(STANDARD, RequestMemory=3000), pool(), now=NOW)
    assert render_analysis(analysis) == EXPECTED_MEMORY_REPORT


@pytest.mark.parametrize(
    ("config", "attributes", "expected_lines"),
    [
        (
            NOT_ALICE,
            {},
            [
                "      4 reject your job because of their own requirements",
                "Slots whose own requirements reject the job:",
                '    slot1@ep.example.org: Start clause TARGET.Owner != "alice" is FALSE '
                '(TARGET.Owner is "alice")',
                "Suggestion: The slots that the job's Requirements accept refuse the job "
                'themselves: their condition TARGET.Owner != "alice" is not TRUE for this job '
                "on 4 of them; change the job so that it satisfies that condition.",
            ],
        ),
        (
            "",
            {"RequestMemory": 10**6},
            [
                "      4 are rejected by your job's requirements",
                "Suggestion: No slot satisfies the job's Requirements: the condition "
                "TARGET.Memory >= RequestMemory rules out the most slots (4 of 4); change it, "
                "or the job attributes it uses, so that more slots satisfy it.",
            ],
        ),
        (
            "",
            {"ClusterId": "x"},
            ["The Requirements expression for job ?.0 is"],
        ),
    ],
)
def test_report_lines(
    config: str, attributes: dict[str, object], expected_lines: list[str]
) -> None:
    """The report carries the summary counts, the refusing slots and the suggestion."""
    analysis = analyze_job(job(STANDARD, **attributes), pool(config), now=NOW)
    lines = render_analysis(analysis).splitlines()
    for expected in expected_lines:
        assert expected in lines


def test_report_of_a_job_without_requirements() -> None:
    """A job without Requirements prints them as undefined and has no conditions table."""
    text = render_analysis(analyze_job(job(), pool(), now=NOW))
    assert "    undefined" in text.splitlines()
    assert "Step" not in text


def test_report_counts_the_refusing_slots_it_does_not_name() -> None:
    """When more slots refuse than are named, the report says how many others do."""
    analysis = analyze_job(job(STANDARD), pool(NOT_ALICE, (1024,) * 7), now=NOW)
    assert "    ... and 2 other slots" in render_analysis(analysis).splitlines()


def test_report_splits_others_by_priority_when_given() -> None:
    """With a submitter priority, the slots serving others are split by their users' priority."""
    slots = pool(statuses={"slot1": claimed_by("bob@x"), "slot2": claimed_by("carol@x")})
    slots[0]["RemoteUserPrio"] = 1.0
    slots[1]["RemoteUserPrio"] = 100.0
    analysis = analyze_job(job(STANDARD), slots, now=NOW, submitter_prio=5.0)
    lines = render_analysis(analysis).splitlines()
    assert "      1 match but are serving users with a better priority in the pool" in lines
    assert "      1 match but are serving other users (with a worse priority)" in lines


# -- generated jobs and pools ------------------------------------------------------------------

CLAUSES = (
    "TARGET.Memory >= RequestMemory",
    "TARGET.Cpus >= RequestCpus",
    'TARGET.Arch == "X86_64"',
    'TARGET.OpSys == "WINDOWS"',
    "TARGET.Memory > 2048",
    "TARGET.Nope =?= undefined",
    "TARGET.Nope > 3",
    "(TARGET.Memory <= 4096 || TARGET.Disk > 10)",
    "RequestMemory / 0 > 1",
)
STATES = (
    UNCLAIMED,
    claimed_by("alice@submit.example.org"),
    claimed_by("bob@submit.example.org"),
    SlotStatus("Owner", "Idle"),
)


@functools.cache
def _cached_pool(start: str, states: tuple[int, ...]) -> list[ClassAd]:
    """The pool with this START and these states (by index in STATES); the analysis only
    reads the ads, so examples can share them."""
    return pool(start, statuses={f"slot{n}": STATES[i] for n, i in enumerate(states, start=1)})


@given(
    clauses=st.lists(st.sampled_from(CLAUSES), min_size=1, max_size=5),
    memory=st.integers(0, 10_000),
    cpus=st.sampled_from([0, 1, 2, 1.5, "one"]),
    owner=st.sampled_from(["alice", "bob"]),
    states=st.lists(st.sampled_from(range(len(STATES))), min_size=4, max_size=4),
    start=st.sampled_from(["", NOT_ALICE, "START = false", "START = TARGET.RequestCpus < 2"]),
)
def test_groups_partition_the_pool_and_agree_with_the_match(
    clauses: list[str],
    memory: int,
    cpus: object,
    owner: str,
    states: list[int],
    start: str,
) -> None:
    """For any job and pool the groups add up to the slots, a clause's counts add up to the
    slots, and the slots able to run the job are exactly the Unclaimed ones that match both
    ways; the report renders."""
    slots = _cached_pool(start, tuple(states))
    ad = job(" && ".join(clauses), RequestMemory=memory, RequestCpus=cpus, Owner=owner)
    analysis = analyze_job(ad, slots, now=NOW, submitter_prio=1.0)
    total = (
        analysis.rejected_by_job
        + analysis.rejected_by_slots
        + analysis.running_yours
        + analysis.serving_others
        + analysis.leftover_too_small
        + analysis.not_available
        + analysis.available
    )
    assert total == len(slots)
    assert all(c.matched + c.ruled_out == len(slots) for c in analysis.clauses)
    context = EvalContext(now=NOW)
    willing = [
        slot
        for slot in slots
        if symmetric_match(ad, slot, context=context)
        and slot.evaluate("Start", target=ad, context=context) is True
        and slot.evaluate("State") == "Unclaimed"
    ]
    assert analysis.available == len(willing)
    assert (analysis.advice is None) == (analysis.available > 0)
    assert render_analysis(analysis).endswith("\n")


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\0")),
    st.lists(st.integers(-1000, 1000), max_size=3),
)
NAMES = st.sampled_from(
    ["ClusterId", "ProcId", "Requirements", "RequestCpus", "RequestMemory", "Owner", "User"]
)


@given(attributes=st.dictionaries(NAMES, VALUES, max_size=7))
def test_any_job_ad_is_analysed_and_rendered(attributes: dict[str, object]) -> None:
    """A job ad with any values in the attributes the analysis reads never makes it raise."""
    ad = ClassAd(attributes)
    analysis = analyze_job(ad, pool(statuses={"slot2": claimed_by("x@y")}), now=NOW)
    assert render_analysis(analysis).startswith("The Requirements expression for job ")


# -- oracle --------------------------------------------------------------------------------------


@pytest.mark.oracle
@pytest.mark.parametrize("memory", [512, 2048, 5000])
def test_clause_counts_agree_with_classad2(memory: int) -> None:
    """Each clause's matched count is the number of slots on which classad2 evaluates it to
    true with the job as MY and the slot as TARGET; the whole agrees with classad2's match."""
    requirements = STANDARD + ' && (TARGET.Memory > 1500 || TARGET.Name == "slot1@ep.example.org")'
    ad = job(requirements, RequestMemory=memory)
    slots = pool()
    analysis = analyze_job(ad, slots, now=NOW)
    theirs_job = classad2.parseOne(format_old(ad))
    theirs_slots = [classad2.parseOne(format_old(slot)) for slot in slots]
    for clause in analysis.clauses:
        expr = classad2.ExprTree(clause.text)
        matched = sum(1 for slot in theirs_slots if expr.eval(theirs_job, slot) is True)
        assert clause.matched == matched, clause.text
    # classad2's a.matches(b) reads b's Requirements with a as the target.
    assert analysis.match_job_requirements == sum(
        1 for slot in theirs_slots if slot.matches(theirs_job)
    )


def test_negotiators_reason_is_reported() -> None:
    """When the negotiator says why its last cycle left the job waiting (a group's quota, a
    concurrency limit), the analysis prints that reason; without one it prints nothing of it."""
    analysis = analyze_job(job(STANDARD), pool(), now=NOW)
    assert "last negotiation cycle" not in render_analysis(analysis)
    waiting = attrs.evolve(analysis, negotiator="concurrency limit matlab reached")
    assert (
        "The last negotiation cycle did not match the job: concurrency limit matlab reached"
        in render_analysis(waiting)
    )
