"""Retirement, unretirement, vacating time, claim worklife and backfill rules, from seed 000."""

from __future__ import annotations

import random

from epcore.classad import parse_ad
from epcore.slots.layout import plan_slots
from epcore.state.engine import Engine
from epcore.state.records import EngineState
from epcore.state.scenario import Scenario
from epcore.state.simulator import Simulation
from epcore.state.work import Outcome

JOB = parse_ad('[Owner = "jones"; ClusterId = 7; ProcId = 1]')
BETTER = parse_ad('[Owner = "miles"; ClusterId = 8; ProcId = 0; Better = true]')
SWITCHES = (
    "NUM_SLOTS = 1\nRUNBENCHMARKS = False\nRANK = TARGET.Better =?= True\n"
    "WANT_SUSPEND = Stop =?= True\nSUSPEND = Stop =?= True\nCONTINUE = Stop =!= True\n"
    "PREEMPT = Preempt =?= True\n"
)


def _sim(config: str = "") -> tuple[Simulation, Engine, EngineState]:
    sim = Simulation(Scenario("test", SWITCHES + config, {}, ()))
    engine = sim.engine
    state = engine.poll(engine.start(plan_slots(sim.config, sim.inventory), 0), 0).state
    return sim, engine, state


def _busy(config: str = "") -> tuple[Simulation, Engine, EngineState, str]:
    sim, engine, state = _sim(config)
    claimed = engine.claim(state, "slot1", JOB, 0)
    assert claimed.claim_id is not None
    state = engine.activate(claimed.state, claimed.claim_id, 0).state
    return sim, engine, state, claimed.claim_id


def _place(state: EngineState) -> str:
    record = state.slot("slot1")
    assert record is not None
    return str(record.place)


def _numbers(*outcomes: Outcome) -> list[int]:
    return [t.number for outcome in outcomes for t in outcome.transitions]


def test_a_retiring_job_is_soft_killed_its_vacating_time_before_retirement_ends() -> None:
    """Transition 18 comes MachineMaxVacateTime before the end, so the hard kill is at the end."""
    sim, engine, state, _ = _busy("MAXJOBRETIREMENTTIME = 1000\nMachineMaxVacateTime = 100\n")
    sim.values["Preempt"] = (True, 0)
    state = engine.poll(state, 10).state
    assert _place(state) == "Claimed/Retiring"
    assert engine.next_timer(state, 10) == 900
    vacating = engine.poll(state, 900)
    assert _numbers(vacating) == [18] and _place(vacating.state) == "Preempting/Vacating"
    assert engine.next_timer(vacating.state, 900) == 1000


def test_preempt_while_suspended_retires_rather_than_evicts() -> None:
    """PREEMPT on a suspended job is transition 16 (Retiring), whatever retirement is left."""
    sim, engine, state, _ = _busy("MAXJOBRETIREMENTTIME = 300\nMachineMaxVacateTime = 10\n")
    sim.values["Stop"] = (True, 0)
    state = engine.poll(state, 10).state
    assert _place(state) == "Claimed/Suspended"
    sim.values["Preempt"] = (True, 0)
    sim.values["Stop"] = (False, 0)
    outcome = engine.poll(state, 400)
    assert _numbers(outcome)[0] == 16
    # 390 s were suspended: the retirement now ends at 300 + 390, soft kill 10 s earlier.
    assert _place(outcome.state) == "Claimed/Retiring"
    assert engine.next_timer(outcome.state, 400) == 680


def test_a_release_during_suspension_evicts_the_job() -> None:
    """The schedd releasing a suspended claim sends the slot to Preempting (17)."""
    sim, engine, state, claim_id = _busy()
    sim.values["Stop"] = (True, 0)
    state = engine.poll(state, 10).state
    released = engine.release(state, claim_id, 20)
    assert _numbers(released)[0] == 17


def test_a_drained_preempting_claim_does_not_unretire_the_slot() -> None:
    """A slot retiring for a preempting claim, then drained, never goes back to Busy (19)."""
    _, engine, state, _ = _busy("MAXJOBRETIREMENTTIME = 1000\nMachineMaxVacateTime = 10\n")
    preempting = engine.claim(state, "slot1", BETTER, 10)
    assert preempting.claim_id is not None and _place(preempting.state) == "Claimed/Retiring"
    drained = engine.drain(preempting.state, "graceful", 20)
    later = engine.poll(drained.state, 30)
    assert 19 not in _numbers(drained, later)
    assert _place(later.state) == "Claimed/Retiring"


def test_retirement_for_preempt_is_not_taken_back_when_a_claim_goes_away() -> None:
    """A preempting claim on a slot retiring for PREEMPT, once released, does not unretire it."""
    sim, engine, state, _ = _busy("MAXJOBRETIREMENTTIME = 1000\nMachineMaxVacateTime = 10\n")
    sim.values["Preempt"] = (True, 0)
    state = engine.poll(state, 10).state
    sim.values["Preempt"] = (False, 0)
    preempting = engine.claim(state, "slot1", BETTER, 20)
    assert preempting.claim_id is not None
    released = engine.release(preempting.state, preempting.claim_id, 30)
    assert 19 not in _numbers(released) and _place(released.state) == "Claimed/Retiring"


def test_a_preempting_claim_that_goes_away_unretires_the_slot() -> None:
    """Retiring only for a preempting claim, the slot returns to Busy when it leaves (19)."""
    _, engine, state, _ = _busy("MAXJOBRETIREMENTTIME = 1000\n")
    preempting = engine.claim(state, "slot1", BETTER, 10)
    assert preempting.claim_id is not None
    released = engine.release(preempting.state, preempting.claim_id, 20)
    assert _numbers(released) == [19] and _place(released.state) == "Claimed/Busy"


def test_a_negative_claim_worklife_never_expires() -> None:
    """CLAIM_WORKLIFE = -1 (the seeds' "infinite") keeps an idle claim."""
    _, engine, state = _sim("CLAIM_WORKLIFE = -1\n")
    claimed = engine.claim(state, "slot1", JOB, 0)
    assert claimed.claim_id is not None
    for now in (100, 10_000):
        state = engine.alive(claimed.state, claimed.claim_id, now).state
        assert _place(state) == "Claimed/Idle"


def test_an_expired_claim_accepts_no_further_job() -> None:
    """After CLAIM_WORKLIFE a claim stops accepting jobs: activation is refused."""
    _, engine, state = _sim("CLAIM_WORKLIFE = 100\n")
    claimed = engine.claim(state, "slot1", JOB, 0)
    assert claimed.claim_id is not None
    refused = engine.activate(claimed.state, claimed.claim_id, 150)
    assert refused.refused is not None and "CLAIM_WORKLIFE" in refused.refused


def test_killing_timeout_asks_for_the_starter_to_be_killed() -> None:
    """When KILLING_TIMEOUT runs out the daemon is asked to kill the starter itself."""
    _, engine, state, _ = _busy("WANT_VACATE = False\nKILLING_TIMEOUT = 30\n")
    killing = engine.vacate(state, "slot1", False, 100).state
    later = engine.poll(killing, 130)
    assert "kill_starter" in [action.kind for action in later.actions]


BACKFILL = "ENABLE_BACKFILL = True\nSTART_BACKFILL = True\nEVICT_BACKFILL = False\n"


def test_a_match_waits_for_the_backfill_client_to_exit() -> None:
    """A match during Backfill/Killing moves to Matched (32) only once the client is gone."""
    _, engine, state = _sim(BACKFILL)
    assert _place(state) == "Backfill/Busy"
    killing = engine.vacate(state, "slot1", False, 5).state
    matched = engine.match(killing, "slot1", JOB, 6)
    assert _place(matched.state) == "Backfill/Killing"
    gone = engine.backfill_exit(matched.state, "slot1", 7)
    assert _numbers(gone)[:2] == [29, 32] and _place(gone.state) == "Matched/Idle"


def test_vacating_a_backfill_slot_returns_it_to_owner() -> None:
    """condor_vacate kills the backfill client; once it exits the slot goes to Owner (29, 30)."""
    _, engine, state = _sim(BACKFILL)
    killing = engine.vacate(state, "slot1", False, 5)
    assert _numbers(killing) == [28]
    gone = engine.backfill_exit(killing.state, "slot1", 6)
    assert _numbers(gone)[:2] == [29, 30]


def test_a_partitionable_slot_stays_unclaimed_for_its_claims_instead_of_backfilling() -> None:
    """With backfill on, a partitionable slot stays Unclaimed (a claim carves its dynamic
    slots only from there), and a claim carves one."""
    _, engine, state = _sim(
        BACKFILL + "NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\n"
    )
    assert _place(state) == "Unclaimed/Idle"
    state = engine.poll(state, 10).state
    assert _place(state) == "Unclaimed/Idle"
    sized = parse_ad(
        '[Owner = "jones"; ClusterId = 7; ProcId = 1; RequestCpus = 1; RequestMemory = 64;'
        " RequestDisk = 1024]"
    )
    claimed = engine.claim(state, "slot1", sized, 11)
    assert claimed.claim_id is not None, claimed.refused


def test_backfill_is_off_when_the_daemon_has_no_backfill_system() -> None:
    """An engine built with backfill=False never enters Backfill, whatever ENABLE_BACKFILL."""
    sim, _, _ = _sim(BACKFILL)
    engine = Engine(sim.config, sim.engine.ads, random.Random(1), backfill=False)
    state = engine.poll(engine.start(plan_slots(sim.config, sim.inventory), 0), 0).state
    assert _place(state) == "Unclaimed/Idle"


def test_a_graceful_drain_evicts_every_job_when_the_longest_retirement_ends() -> None:
    """A job with a shorter retirement is not evicted before the longest one must be."""
    _, engine, state = _sim(
        "NUM_SLOTS = 2\nMAXJOBRETIREMENTTIME = 1000\nMachineMaxVacateTime = 10\n"
    )
    short_job = parse_ad('[Owner = "jones"; ClusterId = 9; ProcId = 0; MaxJobRetirementTime = 100]')
    for slot, job in (("slot1", short_job), ("slot2", JOB)):
        claimed = engine.claim(state, slot, job, 0)
        assert claimed.claim_id is not None
        state = engine.activate(claimed.state, claimed.claim_id, 0).state
    state = engine.drain(state, "graceful", 10).state
    assert engine.next_timer(state, 10) == 990
    assert _place(engine.poll(state, 500).state) == "Claimed/Retiring"
    evicted = engine.poll(state, 990)
    assert sorted(t.slot for t in evicted.transitions if t.number == 18) == ["slot1", "slot2"]
