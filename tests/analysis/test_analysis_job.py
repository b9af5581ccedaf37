"""analyze_job: how a pool of real slot ads divides for one job, clause by clause."""

from __future__ import annotations

import pytest
from analysis_pool import NOW, STANDARD, claimed_by, job, partitionable_pool, pool

from epcore.analysis.analysis import NAMED_REFUSALS, JobAnalysis, analyze_job
from epcore.classad import ClassAd, parse_ad
from epcore.state.explain import conjuncts, expression_text

#: START that refuses alice's jobs and admits everyone else's.
NOT_ALICE = 'START = TARGET.Owner != "alice" && TARGET.RequestCpus <= 1'


def groups(analysis: JobAnalysis) -> tuple[int, ...]:
    """The six disjoint groups of the summary, in order."""
    return (
        analysis.rejected_by_job,
        analysis.rejected_by_slots,
        analysis.running_yours + analysis.serving_others,
        analysis.leftover_too_small,
        analysis.not_available,
        analysis.available,
    )


@pytest.mark.parametrize(
    ("memory", "expected_groups", "memory_ruled_out"),
    [
        (512, (0, 0, 0, 0, 0, 4), 0),
        (2048, (1, 0, 0, 0, 0, 3), 1),
        (3000, (2, 0, 0, 0, 0, 2), 2),
        (8192, (3, 0, 0, 0, 0, 1), 3),
        (100_000, (4, 0, 0, 0, 0, 0), 4),
    ],
)
def test_memory_clause_rules_out_the_small_slots(
    memory: int, expected_groups: tuple[int, ...], memory_ruled_out: int
) -> None:
    """With slots of 1, 2, 4 and 8 GB, the memory clause alone rules out those too small and
    every other clause of the standard Requirements rules out none."""
    analysis = analyze_job(job(STANDARD, RequestMemory=memory), pool(), now=NOW)
    assert analysis.slots == 4
    assert groups(analysis) == expected_groups
    by_text = {clause.text: clause.ruled_out for clause in analysis.clauses}
    assert by_text == {
        'TARGET.Arch == "X86_64"': 0,
        'TARGET.OpSys == "LINUX"': 0,
        "TARGET.Disk >= RequestDisk": 0,
        "TARGET.Memory >= RequestMemory": memory_ruled_out,
        "TARGET.Cpus >= RequestCpus": 0,
    }
    assert analysis.match_job_requirements == 4 - memory_ruled_out
    assert (analysis.advice is None) == (memory_ruled_out < 4)


def test_job_no_slot_can_hold_is_told_which_clause_to_change() -> None:
    """A job asking more memory than any slot has: every slot is rejected by the job, the
    memory clause's evidence shows the values, and the advice names that clause."""
    analysis = analyze_job(job(STANDARD, RequestMemory=100_000), pool(), now=NOW)
    memory = analysis.clauses[3]
    assert memory.evidence == (
        "slot1@ep.example.org: TARGET.Memory is 1024, RequestMemory is 100000"
    )
    assert analysis.advice is not None
    assert "TARGET.Memory >= RequestMemory" in analysis.advice
    assert "(4 of 4)" in analysis.advice


@pytest.mark.parametrize(
    ("requirements", "ruled_out"),
    [
        ('TARGET.Memory >= 2048 && TARGET.Name != "slot4@ep.example.org"', (1, 1)),
        ("(TARGET.Memory >= 4096) && (TARGET.Memory <= 4096)", (2, 1)),
        ('TARGET.Memory > 1024 && (TARGET.Arch == "INTEL" || TARGET.Memory > 4096)', (1, 3)),
        ("TARGET.NoSuchThing > 1 && true", (4, 0)),
    ],
)
def test_each_clause_is_counted_on_its_own(requirements: str, ruled_out: tuple[int, ...]) -> None:
    """Every top-level && clause counts the slots it rules out alone (UNDEFINED rules out),
    whatever the other clauses say; parentheses around a clause do not count."""
    analysis = analyze_job(job(requirements), pool(), now=NOW)
    assert tuple(clause.ruled_out for clause in analysis.clauses) == ruled_out
    assert all(clause.matched + clause.ruled_out == 4 for clause in analysis.clauses)
    assert not any(clause.text.startswith("(") for clause in analysis.clauses)


def test_clauses_that_each_pass_somewhere_but_never_together_get_their_own_advice() -> None:
    """When every clause holds on some slot but no slot satisfies them all, the advice says so
    and still names the clause that rules out the most."""
    analysis = analyze_job(job("TARGET.Memory <= 1024 && TARGET.Memory >= 8192"), pool(), now=NOW)
    assert [clause.ruled_out for clause in analysis.clauses] == [3, 3]
    assert analysis.rejected_by_job == 4
    assert analysis.advice is not None
    assert "at once" in analysis.advice
    assert "TARGET.Memory <= 1024 rules out the most slots (3 of 4)" in analysis.advice


def test_every_slots_start_refuses_the_job() -> None:
    """With a START that refuses alice, every slot refuses her job on its own side; the
    report names the slots and the START clause that is false, with its values."""
    analysis = analyze_job(job(STANDARD), pool(NOT_ALICE), now=NOW)
    assert groups(analysis) == (0, 4, 0, 0, 0, 0)
    assert [refusal.slot for refusal in analysis.refusals] == [
        f"slot{n}@ep.example.org" for n in range(1, 5)
    ]
    first = analysis.refusals[0]
    assert (first.attribute.upper(), first.clause, first.value) == (
        "START",
        'TARGET.Owner != "alice"',
        "FALSE",
    )
    assert first.evidence == 'TARGET.Owner is "alice"'
    assert analysis.slot_clauses[0].text == 'TARGET.Owner != "alice"'
    assert analysis.slot_clauses[0].ruled_out == 4
    assert analysis.advice is not None
    assert 'TARGET.Owner != "alice"' in analysis.advice


def test_start_that_admits_the_job_lets_it_run() -> None:
    """The same START admits bob's job: all four slots are able to run it."""
    analysis = analyze_job(job(STANDARD, Owner="bob"), pool(NOT_ALICE), now=NOW)
    assert analysis.available == 4
    assert analysis.refusals == ()


def test_refusals_name_a_few_slots_and_count_all() -> None:
    """Only the first few refusing slots are named; the count covers every one."""
    memories = (1024,) * (NAMED_REFUSALS + 2)
    analysis = analyze_job(job(STANDARD), pool(NOT_ALICE, memories), now=NOW)
    assert analysis.rejected_by_slots == NAMED_REFUSALS + 2
    assert len(analysis.refusals) == NAMED_REFUSALS


def test_second_start_clause_is_named_when_the_first_holds() -> None:
    """The refusal names the first clause of START that is not TRUE for the job."""
    analysis = analyze_job(job("true", Owner="bob", RequestCpus=1.5), pool(NOT_ALICE), now=NOW)
    assert analysis.refusals[0].clause == "TARGET.RequestCpus <= 1"
    assert analysis.refusals[0].evidence == "TARGET.RequestCpus is 1.5"


@pytest.mark.parametrize(
    ("submitter_prio", "better", "worse"),
    [(None, 0, 0), (10.0, 1, 1), (0.5, 1, 1), (0.4, 0, 2), (1000.0, 2, 0)],
)
def test_claimed_slots_split_by_whose_jobs_they_run(
    submitter_prio: float | None, better: int, worse: int
) -> None:
    """Slots claimed by the job's own user count as running your jobs; those claimed by others
    as serving other users, split by RemoteUserPrio against the submitter's priority."""
    statuses = {
        "slot1": claimed_by("alice@submit.example.org"),
        "slot2": claimed_by("bob@submit.example.org"),
        "slot3": claimed_by("carol@submit.example.org"),
    }
    slots = pool(statuses=statuses)
    slots[1]["RemoteUserPrio"] = 0.5
    slots[2]["RemoteUserPrio"] = 50.0
    analysis = analyze_job(job(STANDARD), slots, now=NOW, submitter_prio=submitter_prio)
    assert (analysis.running_yours, analysis.serving_others, analysis.available) == (1, 2, 1)
    assert (analysis.serving_better_priority, analysis.serving_worse_priority) == (better, worse)


def test_slot_in_owner_state_is_not_available() -> None:
    """A slot that matches but is not Unclaimed (Owner, say) is counted as not available, and
    the advice says every matching slot is busy."""
    slots = pool(statuses={f"slot{n}": claimed_by("bob@x") for n in (1, 2, 3)})
    slots[3]["State"] = "Owner"
    analysis = analyze_job(job(STANDARD), slots, now=NOW)
    assert (analysis.serving_others, analysis.not_available, analysis.available) == (3, 1, 0)
    assert analysis.advice is not None
    assert analysis.advice.startswith("Every slot that matches is busy")


@pytest.mark.parametrize(
    ("cpus", "memory", "expected_groups"),
    [
        (1, 1024, (0, 0, 0, 0, 0, 1)),
        (2, 1024, (0, 0, 0, 1, 0, 0)),
        (1, 6000, (0, 0, 0, 1, 0, 0)),
        (8, 1024, (1, 0, 0, 0, 0, 0)),
        (1, 9000, (1, 0, 0, 0, 0, 0)),
    ],
)
def test_partitionable_leftover_too_small_is_told_apart_from_too_small_a_machine(
    cpus: int, memory: int, expected_groups: tuple[int, ...]
) -> None:
    """A partitionable slot of 4 CPUs / 8 GB with 1 CPU / 4 GB left: a job that fits the
    whole but not the leftover waits for the leftover; one bigger than the whole is
    rejected by its own Requirements."""
    slots = partitionable_pool(1, 4096)
    analysis = analyze_job(job(STANDARD, RequestCpus=cpus, RequestMemory=memory), slots, now=NOW)
    assert groups(analysis) == expected_groups


def test_job_without_requirements_matches_nothing() -> None:
    """A job ad without Requirements is rejected by its own side on every slot, and told so."""
    analysis = analyze_job(job(), pool(), now=NOW)
    assert analysis.requirements is None
    assert analysis.clauses == ()
    assert analysis.rejected_by_job == 4
    assert analysis.advice == (
        "The job has no Requirements expression, so it matches no slot; give it one."
    )


def test_empty_pool() -> None:
    """No slots: every count is 0 and the advice says the pool has none."""
    analysis = analyze_job(job(STANDARD), [], now=NOW)
    assert analysis.slots == 0
    assert all(clause.matched == clause.ruled_out == 0 for clause in analysis.clauses)
    assert analysis.advice is not None
    assert analysis.advice.startswith("The pool has no slots")


@pytest.mark.parametrize(
    ("requirements", "accepted"),
    [
        ('"yes"', 0),
        ("1/0 == 1", 0),
        ("undefined", 0),
        ("error", 0),
        ("{1, 2}", 0),
        ("[a = 1]", 0),
        ("TARGET.Memory", 4),
        ("TARGET.Memory - 1024", 3),
        ("0.0", 0),
    ],
)
def test_requirements_that_are_not_booleans(requirements: str, accepted: int) -> None:
    """Requirements that evaluate to a string, ERROR, UNDEFINED, a list or an ad accept no
    slot, a number accepts when it is not 0 (as the match reads them), without raising."""
    analysis = analyze_job(job(requirements), pool(), now=NOW)
    assert analysis.match_job_requirements == accepted
    assert analysis.rejected_by_job == 4 - accepted
    assert sum(groups(analysis)) == 4


def test_odd_slot_ads_are_analysed_without_raising() -> None:
    """Slots without Name, Requirements or State, or with wrongly typed ones, still land in
    exactly one group, named [???] when they have no name."""
    odd = [
        ClassAd(),
        parse_ad('[ Requirements = true; State = 7; Memory = "lots" ]'),
        parse_ad('[ Requirements = MY.Loop; Loop = MY.Loop; Name = "loop" ]'),
        parse_ad('[ Requirements = Start; Start = Start; Name = "self" ]'),
        parse_ad('[ Requirements = true; PartitionableSlot = true; TotalSlotCpus = "x" ]'),
    ]
    analysis = analyze_job(job("true"), odd, now=NOW)
    assert sum(groups(analysis)) == len(odd)
    assert analysis.refusals[0].slot == "[???]"
    assert analysis.refusals[0].clause == "Requirements"
    assert analysis.job_id == "7.0"


def test_job_id_with_missing_parts() -> None:
    """A job ad without ClusterId or ProcId (or with wrongly typed ones) shows ? for them."""
    ad = job(STANDARD)
    del ad["ProcId"]
    ad["ClusterId"] = "12"
    assert analyze_job(ad, pool(), now=NOW).job_id == "?.?"


@pytest.mark.parametrize(
    ("text", "clauses"),
    [
        ("a && b && c", ["a", "b", "c"]),
        ("(a && b) && (c || d)", ["a", "b", "c || d"]),
        ("((a && b))", ["a", "b"]),
        ("((a && b)) && (c)", ["a", "b", "c"]),
        ("a || b && c", ["a || b && c"]),
        ("x =?= undefined && y =!= 2.5", ["x =?= undefined", "y =!= 2.5"]),
        ("true", ["true"]),
    ],
)
def test_clauses_are_the_top_level_conjuncts_as_written(text: str, clauses: list[str]) -> None:
    """A Requirements expression splits at its top-level && only (parentheses around the
    whole or a group of && do not hide them); each clause reads as its author wrote it."""
    node = parse_ad(f"[ r = {text} ]")["r"].node
    assert [expression_text(clause) for clause in conjuncts(node)] == clauses
