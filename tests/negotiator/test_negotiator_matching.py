"""Matchmaking within a cycle: candidate sorting, preemption, partitionable slots (seed 004)."""

from __future__ import annotations

import pytest
from negotiator_helpers import (
    DOMAIN,
    NOW,
    ChooserName,
    config,
    count_by_submitter,
    cycle,
    job,
    jobs_of,
    matched,
    slot,
)

from epcore.classad import ClassAd, parse_expr
from epcore.errors import PoolError
from epcore.interfaces import SubmitterJobs
from epcore.negotiator import Accountant

ALICE, BOB = f"alice@{DOMAIN}", f"bob@{DOMAIN}"
CHOOSERS = pytest.mark.parametrize("chooser", ["indexed", "plain"])

_SORTING = "NEGOTIATOR_PRE_JOB_RANK = MY.PreRank\nNEGOTIATOR_POST_JOB_RANK = MY.PostRank\n"


@CHOOSERS
def test_seed_sorting_example_gives_slot5_slot3_slot2(chooser: ChooserName) -> None:
    """Seed 004's table: sorted by PRE_JOB_RANK, job Rank, POST_JOB_RANK -> slot5, slot3, slot2."""
    values = {1: (100, 1, 10), 2: (100, 2, 20), 3: (100, 2, 30), 4: (0, 1, 40), 5: (200, 1, 50)}
    slots = [
        slot(n, extra={"PreRank": pre, "JobRankValue": rank, "PostRank": post})
        for n, (pre, rank, post) in values.items()
    ]
    submitter = jobs_of("alice", 3, rank="TARGET.JobRankValue")
    result = cycle(config(_SORTING), slots, [submitter], chooser=chooser)
    assert [m.slot_name for m in result.matches] == ["slot5@m1", "slot3@m1", "slot2@m1"]
    assert {m.reason for m in result.matches} == {"no_preemption"}


@CHOOSERS
def test_job_rank_orders_slots_when_negotiator_ranks_are_unset(chooser: ChooserName) -> None:
    """Without PRE/POST job ranks the job's own Rank picks the slot."""
    cfg = config("NEGOTIATOR_PRE_JOB_RANK =\nNEGOTIATOR_POST_JOB_RANK =")
    slots = [slot(n, memory=1024 * n) for n in (1, 3, 2)]
    result = cycle(cfg, slots, [jobs_of("alice", 1, rank="TARGET.Memory")], chooser=chooser)
    assert matched(result) == {"1.0": "slot3@m1"}


@CHOOSERS
def test_requirements_of_both_sides_must_hold(chooser: ChooserName) -> None:
    """A slot is a candidate only when its Requirements and the job's are both true."""
    slots = [slot(1, requirements='TARGET.Owner == "bob"'), slot(2, memory=100), slot(3)]
    result = cycle(config(), slots, [jobs_of("alice", 3)], chooser=chooser)
    assert matched(result) == {"1.0": "slot3@m1"}
    assert result.rejections["1.1"] == "no match found"


@CHOOSERS
def test_claimed_idle_slots_are_skipped(chooser: ChooserName) -> None:
    """A Claimed slot that is not running a job is never a candidate."""
    idle = slot(1, running=BOB)
    idle["Activity"] = "Idle"
    result = cycle(config(), [idle], [jobs_of("alice", 1)], chooser=chooser)
    assert result.matches == ()


@CHOOSERS
def test_rank_preemption(chooser: ChooserName) -> None:
    """A slot whose RANK prefers the new job over the running one is a Rank candidate."""
    busy = slot(1, running=BOB, rank='TARGET.Owner == "alice"')
    result = cycle(config(), [busy], [jobs_of("alice", 1)], chooser=chooser)
    (match,) = result.matches
    assert (match.reason, match.preempts) == ("rank", ("slot1@m1",))
    assert result.accountant.record(BOB).resources_used == 0


def _priorities(cfg_text: str) -> tuple[Accountant, str]:
    cfg = config(cfg_text)
    accountant = Accountant.empty(cfg).set_priority(BOB, 50.0, 0).set_priority(ALICE, 1.0, 0)
    return accountant, cfg_text


@CHOOSERS
@pytest.mark.parametrize(
    ("requirements", "preempts"),
    [
        ("True", True),
        ("False", False),
        ("SubmitterUserPrio < RemoteUserPrio", True),
        ("SubmitterUserPrio > RemoteUserPrio", False),
        ("RemoteUserResourcesInUse >= 1 && SubmitterUserResourcesInUse == 0", True),
        ('SubmitterGroup == "<none>" && RemoteGroup == "<none>"', True),
        ("RemoteUserPrio =?= UNDEFINED", False),
        ("", False),
        ("TARGET.RequestMemory < 100", False),
    ],
)
def test_priority_preemption_follows_preemption_requirements(
    chooser: ChooserName, requirements: str, preempts: bool
) -> None:
    """A better-EUP submitter preempts only when PREEMPTION_REQUIREMENTS (with the ephemeral
    Submitter*/Remote* attributes) is true."""
    text = f"PREEMPTION_REQUIREMENTS = {requirements}"
    accountant, _ = _priorities(text)
    slots = [slot(1, running=BOB)]
    accountant = accountant.update_usage(slots, 0)
    result = cycle(config(text), slots, [jobs_of("alice", 1)], accountant, chooser=chooser)
    if preempts:
        (match,) = result.matches
        assert (match.reason, match.preempts) == ("priority", ("slot1@m1",))
    else:
        assert result.matches == ()


@CHOOSERS
@pytest.mark.parametrize(
    ("neighbour", "cross", "preempts"),
    [(BOB, "True", True), (ALICE, "True", False), (None, "True", False), (BOB, "False", False)],
)
def test_preemption_requirements_see_other_slots_remote_user_prio(
    chooser: ChooserName, neighbour: str | None, cross: str, preempts: bool
) -> None:
    """With NEGOTIATOR_CROSS_SLOT_PRIOS, Slot<N>_RemoteUserPrio gives the priority of the user
    on slot N of the same machine."""
    text = (
        f"NEGOTIATOR_CROSS_SLOT_PRIOS = {cross}\n"
        "PREEMPTION_REQUIREMENTS = slot2_RemoteUserPrio > 10000"
    )
    cfg = config(text)
    accountant = Accountant.empty(cfg).set_priority(BOB, 50.0, 0)
    slots = [slot(1, running=BOB), slot(2, running=neighbour), slot(3, machine="m2", running=BOB)]
    slots[1]["Requirements"] = False
    slots[2]["Requirements"] = False
    result = cycle(cfg, slots, [jobs_of("alice", 1)], accountant, chooser=chooser)
    assert [m.slot_name for m in result.matches] == (["slot1@m1"] if preempts else [])


@CHOOSERS
def test_priority_preemption_needs_a_better_eup(chooser: ChooserName) -> None:
    """A submitter whose EUP is not better than the running user's does not preempt."""
    cfg = config("PREEMPTION_REQUIREMENTS = True")
    accountant = Accountant.empty(cfg).set_priority(BOB, 1.0, 0).set_priority(ALICE, 50.0, 0)
    result = cycle(cfg, [slot(1, running=BOB)], [jobs_of("alice", 1)], accountant, chooser=chooser)
    assert result.matches == ()


@CHOOSERS
def test_priority_preemption_refused_when_slot_rank_is_worse(chooser: ChooserName) -> None:
    """Priority preemption needs the slot's RANK for the new job to be no worse."""
    cfg = config("PREEMPTION_REQUIREMENTS = True")
    accountant = Accountant.empty(cfg).set_priority(BOB, 50.0, 0)
    busy = slot(1, running=BOB, rank='TARGET.Owner == "bob"', extra={"CurrentRank": 1.0})
    result = cycle(cfg, [busy], [jobs_of("alice", 1)], accountant, chooser=chooser)
    assert result.matches == ()


@CHOOSERS
@pytest.mark.parametrize("setting", ["NEGOTIATOR_CONSIDER_PREEMPTION = False", ""])
def test_consider_preemption_off_ignores_claimed_slots(chooser: ChooserName, setting: str) -> None:
    """NEGOTIATOR_CONSIDER_PREEMPTION = False turns off rank and priority preemption."""
    cfg = config(f"PREEMPTION_REQUIREMENTS = True\n{setting}")
    accountant = Accountant.empty(cfg).set_priority(BOB, 50.0, 0)
    slots = [slot(1, running=BOB), slot(2, running=BOB, rank='TARGET.Owner == "alice"')]
    result = cycle(cfg, slots, [jobs_of("alice", 2)], accountant, chooser=chooser)
    assert len(result.matches) == (0 if setting else 2)


@CHOOSERS
@pytest.mark.parametrize(
    ("early", "retirement", "expected"),
    [
        ("False", {"RetirementTimeRemaining": 600}, 0),
        ("True", {"RetirementTimeRemaining": 600}, 1),
        ("False", {"RetirementTimeRemaining": 0}, 1),
        ("False", {"MaxJobRetirementTime": 3600, "JobStart": int(NOW) - 60}, 0),
        ("False", {"MaxJobRetirementTime": 3600, "JobStart": int(NOW) - 7200}, 1),
        ("True", {"MaxJobRetirementTime": 3600, "JobStart": int(NOW) - 60}, 1),
        ("False", {"MaxJobRetirementTime": 0, "JobStart": int(NOW)}, 1),
    ],
)
def test_early_preemption_respects_retirement(
    chooser: ChooserName, early: str, retirement: dict[str, object], expected: int
) -> None:
    """A slot still in its retirement time is preempted only with CONSIDER_EARLY_PREEMPTION."""
    cfg = config(f"NEGOTIATOR_CONSIDER_EARLY_PREEMPTION = {early}")
    busy = slot(1, running=BOB, rank='TARGET.Owner == "alice"', extra=retirement)
    result = cycle(cfg, [busy], [jobs_of("alice", 1)], chooser=chooser)
    assert len(result.matches) == expected


@CHOOSERS
def test_unclaimed_slot_beats_preemption_on_ties(chooser: ChooserName) -> None:
    """With equal ranks, No Preemption sorts before Rank and Priority."""
    cfg = config("NEGOTIATOR_PRE_JOB_RANK =\nNEGOTIATOR_POST_JOB_RANK =")
    slots = [slot(1, running=BOB, rank='TARGET.Owner == "alice"'), slot(2)]
    result = cycle(cfg, slots, [jobs_of("alice", 1)], chooser=chooser)
    assert matched(result) == {"1.0": "slot2@m1"}


def _pslot(cpus: int, memory: int, *, policy: bool, dslots: int = 0) -> ClassAd:
    extra: dict[str, object] = {"PartitionableSlot": True, "SlotType": "Partitionable"}
    pslot = slot(1, machine="big", cpus=cpus, memory=memory, extra=extra)
    if policy:
        pslot["ConsumptionCpus"] = parse_expr("quantize(target.RequestCpus, {1})")
        pslot["ConsumptionMemory"] = parse_expr("quantize(target.RequestMemory, {128})")
    return pslot


def _dslot(sub: int, user: str, cpus: int, memory: int) -> ClassAd:
    extra = {"DynamicSlot": True, "SlotType": "Dynamic", "SlotID": 1}
    ad = slot(1, machine="big", cpus=cpus, memory=memory, running=user, extra=extra)
    ad["Name"] = f"slot1_{sub}@big"
    return ad


@CHOOSERS
@pytest.mark.parametrize(("policy", "expected"), [(True, 3), (False, 1)])
def test_pslot_matches_many_jobs_only_under_a_consumption_policy(
    chooser: ChooserName, policy: bool, expected: int
) -> None:
    """A partitionable slot with a consumption policy takes several jobs in one cycle, its
    resources reduced by each; without one it is matched once."""
    pslot = _pslot(4, 3500, policy=policy)
    result = cycle(config(), [pslot], [jobs_of("alice", 5, memory=1000)], chooser=chooser)
    assert len(result.matches) == expected
    if policy:
        cpus = [m.slot.evaluate("Cpus") for m in result.matches]
        memory = [m.slot.evaluate("Memory") for m in result.matches]
        assert (cpus, memory) == ([4, 3, 2], [3500, 2476, 1452])
        assert result.rejections["1.3"] == "no match found"


@CHOOSERS
def test_pslot_preemption_takes_dynamic_slots(chooser: ChooserName) -> None:
    """With ALLOW_PSLOT_PREEMPTION a job that fits only if dynamic slots go preempts them."""
    cfg = config("ALLOW_PSLOT_PREEMPTION = True\nPREEMPTION_REQUIREMENTS = True")
    accountant = Accountant.empty(cfg).set_priority(BOB, 50.0, 0)
    slots = [
        _pslot(1, 1024, policy=False),
        _dslot(1, BOB, 1, 1024),
        _dslot(2, BOB, 2, 2048),
    ]
    submitter = jobs_of("alice", 1, cpus=2, memory=2000)
    result = cycle(cfg, slots, [submitter], accountant, chooser=chooser)
    (match,) = result.matches
    # PREEMPTION_RANK ties (one user), so the first dynamic slot goes first, and it is enough.
    assert (match.slot_name, match.reason, match.preempts) == (
        "slot1@big",
        "priority",
        ("slot1_1@big",),
    )
    assert (match.slot.evaluate("Cpus"), match.slot.evaluate("Memory")) == (2, 2048)
    off_cfg = config("PREEMPTION_REQUIREMENTS = True")
    off = cycle(off_cfg, slots, [submitter], accountant, chooser=chooser)
    assert [(m.slot_name, m.preempts) for m in off.matches] == [("slot1_2@big", ("slot1_2@big",))]


@CHOOSERS
@pytest.mark.parametrize("early", ["False", "True"])
def test_pslot_preemption_rules(chooser: ChooserName, early: str) -> None:
    """Under pslot preemption dynamic slots are preempted only through their parent, lowest
    CurrentRank first, and never while in retirement (whatever early preemption says)."""
    text = "ALLOW_PSLOT_PREEMPTION = True\nPREEMPTION_REQUIREMENTS = True\n"
    cfg = config(text + f"NEGOTIATOR_CONSIDER_EARLY_PREEMPTION = {early}")
    accountant = Accountant.empty(cfg).set_priority(BOB, 50.0, 0)
    retiring = _dslot(1, BOB, 1, 1024)
    retiring["RetirementTimeRemaining"] = 300
    high, low = _dslot(2, BOB, 1, 1024), _dslot(3, BOB, 1, 1024)
    high["CurrentRank"], low["CurrentRank"] = -1.0, -5.0
    slots = [_pslot(0, 0, policy=False), retiring, high, low]
    result = cycle(cfg, slots, [jobs_of("alice", 1, memory=1000)], accountant, chooser=chooser)
    assert [(m.slot_name, m.preempts) for m in result.matches] == [("slot1@big", ("slot1_3@big",))]
    two = cycle(cfg, slots, [jobs_of("alice", 1, cpus=2, memory=2000)], accountant)
    assert [m.preempts for m in two.matches] == [("slot1_3@big", "slot1_2@big")]
    three = cycle(cfg, slots, [jobs_of("alice", 1, cpus=3, memory=3000)], accountant)
    assert three.matches == ()


@CHOOSERS
@pytest.mark.parametrize(("all_jobs", "expected"), [("False", 1), ("True", 3)])
def test_autocluster_skipping(chooser: ChooserName, all_jobs: str, expected: int) -> None:
    """After one job of an autocluster fails, the rest of it is skipped unless
    NEGOTIATE_ALL_JOBS_IN_CLUSTER (SIGNIFICANT_ATTRIBUTES = Owner: all four jobs are one)."""
    cfg = config(f"NEGOTIATE_ALL_JOBS_IN_CLUSTER = {all_jobs}\nSIGNIFICANT_ATTRIBUTES = Owner")
    jobs = (job(1, 0), job(1, 1, memory=99999), job(1, 2), job(2, 0, owner="alice", cpus=1))
    slots = [slot(1), slot(2), slot(3)]
    result = cycle(cfg, slots, [SubmitterJobs(ALICE, jobs)], chooser=chooser)
    assert len(result.matches) == expected
    assert result.rejections["1.1"] == "no match found"
    skipped = {ident for ident, why in result.rejections.items() if why.startswith("not consid")}
    assert skipped == ({"1.2", "2.0"} if expected == 1 else set())


@CHOOSERS
def test_default_autoclusters_separate_different_requests(chooser: ChooserName) -> None:
    """Without SIGNIFICANT_ATTRIBUTES, jobs asking for different memory are different
    autoclusters, so one failing does not skip the other."""
    jobs = (job(1, 0, memory=99999), job(1, 1), job(1, 2, memory=99999), job(1, 3))
    result = cycle(config(), [slot(1), slot(2)], [SubmitterJobs(ALICE, jobs)], chooser=chooser)
    assert set(matched(result)) == {"1.1", "1.3"}
    assert result.rejections["1.2"].startswith("not considered")
    assert result.stats.autoclusters == 2


@pytest.mark.parametrize(
    "knob",
    [
        "NEGOTIATOR_PRE_JOB_RANK",
        "NEGOTIATOR_POST_JOB_RANK",
        "PREEMPTION_REQUIREMENTS",
        "PREEMPTION_RANK",
        "NEGOTIATOR_SLOT_CONSTRAINT",
        "NEGOTIATOR_JOB_CONSTRAINT",
    ],
)
def test_unparsable_expression_knob_is_a_pool_error(knob: str) -> None:
    """A negotiator expression knob that is not a ClassAd expression is named in a PoolError."""
    with pytest.raises(PoolError, match=knob):
        cycle(config(f"{knob} = (1 +"), [slot(1)], [jobs_of("alice", 1)])


@CHOOSERS
@pytest.mark.parametrize(
    ("slot_change", "job_change"),
    [("Requirements", None), (None, "Requirements"), ("Name", None), (None, "ClusterId")],
)
def test_ads_missing_attributes(
    chooser: ChooserName, slot_change: str | None, job_change: str | None
) -> None:
    """An ad without Requirements never matches; missing names and ids do not break a cycle."""
    ad, queued = slot(1), job(1)
    if slot_change:
        del ad[slot_change]
    if job_change:
        del queued[job_change]
    result = cycle(config(), [ad], [SubmitterJobs(ALICE, (queued,))], chooser=chooser)
    if "Requirements" in (slot_change, job_change):
        assert result.matches == ()
        assert list(result.rejections.values()) == ["no match found"]
    else:
        (match,) = result.matches
        assert match.slot_name == ("slot #0" if slot_change else "slot1@m1")
        assert match.job_id == ("UNDEFINED.0" if job_change else "1.0")


@CHOOSERS
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {"1.0": "slot1@m1", "1.1": "slot2@m1"}),
        ("NEGOTIATOR_SLOT_CONSTRAINT = SlotID != 1", {"1.0": "slot2@m1"}),
        ("NEGOTIATOR_JOB_CONSTRAINT = ProcId == 1", {"1.1": "slot1@m1"}),
        ("NEGOTIATOR_SLOT_CONSTRAINT = undefined", {}),
    ],
)
def test_negotiator_constraints_hide_slots_and_jobs(
    chooser: ChooserName, text: str, expected: dict[str, str]
) -> None:
    """Slots and jobs that do not satisfy NEGOTIATOR_SLOT/JOB_CONSTRAINT take no part."""
    result = cycle(config(text), [slot(1), slot(2)], [jobs_of("alice", 2)], chooser=chooser)
    assert matched(result) == expected


def test_no_slots_or_no_jobs() -> None:
    """A cycle with nothing to match returns no matches and no slices for absent users."""
    assert cycle(config(), [], [jobs_of("alice", 2)]).matches == ()
    empty = cycle(config(), [slot(1)], [SubmitterJobs(ALICE, ())])
    assert (empty.matches, dict(empty.pie)) == ((), {})
    assert count_by_submitter(empty) == {}


def test_cycle_is_pure() -> None:
    """A cycle changes none of its inputs and gives the same result when run again."""
    cfg = config("PREEMPTION_REQUIREMENTS = True\nALLOW_PSLOT_PREEMPTION = True")
    accountant = Accountant.empty(cfg).set_priority(BOB, 50.0, 0)
    slots = [
        _pslot(4, 4096, policy=True),
        _pslot(1, 1024, policy=False),
        _dslot(1, BOB, 1, 1024),
        slot(2, running=BOB),
        slot(3),
    ]
    queues = [jobs_of("alice", 4, memory=900), jobs_of("bob", 2, cluster=2)]
    before = ([str(ad) for ad in slots], [str(j) for q in queues for j in q.jobs])
    first = cycle(cfg, slots, queues, accountant)
    after = ([str(ad) for ad in slots], [str(j) for q in queues for j in q.jobs])
    assert before == after
    second = cycle(cfg, slots, queues, accountant)
    assert [(m.job_id, m.slot_name, m.reason, m.preempts) for m in first.matches] == [
        (m.job_id, m.slot_name, m.reason, m.preempts) for m in second.matches
    ]
    assert first.matches and first.accountant == second.accountant
