"""Plugin ClassAd functions in the startd's policy: START, RANK and the other knobs, a job's
Requirements on its claim, a drain's start, fetched work, ``ep simulate`` and ``ep explain``.

The configuration carries the plugins' functions (its eval_context); isLucky (tests/
lucky_functions.py) is unknown to plain evaluation, so every result here that follows it
shows the function table reached that evaluation."""

from __future__ import annotations

from lucky_functions import lucky_config, lucky_context

from epcore.classad import parse_ad, parse_expr
from epcore.config import Config
from epcore.slots.layout import plan_slots
from epcore.state.engine import Engine
from epcore.state.explain import explain_job
from epcore.state.fetch_work import SlotSituation, decide
from epcore.state.policy import is_true, knob_value, load_policy
from epcore.state.records import EngineState
from epcore.state.scenario import Event, Scenario
from epcore.state.simulator import Simulation, simulate

LUCKY_JOB = parse_ad('[Owner = "jones"; ClusterId = 7; ProcId = 0; N = 14]')
UNLUCKY_JOB = parse_ad('[Owner = "jones"; ClusterId = 7; ProcId = 1; N = 3]')
SLOT = parse_ad('[Name = "slot1@ep"; SlotID = 1; State = "Unclaimed"; Activity = "Idle"]')


def _engine(config: str) -> tuple[Engine, EngineState]:
    text = "NUM_SLOTS = 1\nRUNBENCHMARKS = False\n" + config
    sim = Simulation(Scenario("test", text, {}, ()), 0, lucky_context())
    state = sim.engine.start(plan_slots(sim.config, sim.inventory), 0)
    return sim.engine, sim.engine.poll(state, 0).state


def test_policy_knobs_call_plugin_functions() -> None:
    """START and RANK loaded from a configuration with a plugin's functions call them."""
    policy = load_policy(lucky_config("START = isLucky(TARGET.N)\nRANK = isLucky(7) * 10\n"), 1)
    assert is_true(policy.knob("START"), SLOT, LUCKY_JOB, 0.0)
    assert not is_true(policy.knob("START"), SLOT, UNLUCKY_JOB, 0.0)
    assert knob_value(policy.knob("RANK"), SLOT, None, 0.0) == 10
    plain = load_policy(Config.from_text("START = isLucky(TARGET.N)\n"), 1)
    assert not is_true(plain.knob("START"), SLOT, LUCKY_JOB, 0.0)


def test_the_engine_claims_only_for_jobs_start_accepts_through_the_function() -> None:
    """A claim for the lucky job is taken with the RANK the function gives; the unlucky job's
    claim is refused because START is not TRUE."""
    engine, state = _engine("START = isLucky(TARGET.N)\nRANK = TARGET.N * isLucky(TARGET.N)\n")
    refused = engine.claim(state, "slot1", UNLUCKY_JOB, 5)
    assert refused.refused is not None and "START" in refused.refused
    claimed = engine.claim(state, "slot1", LUCKY_JOB, 5)
    assert claimed.claim_id is not None
    record = claimed.state.slot("slot1")
    assert record is not None and record.claim is not None and record.claim.rank == 14


def test_a_claims_next_job_is_judged_with_the_function() -> None:
    """On an existing claim the next job's own Requirements calls the plugin's function."""
    engine, state = _engine("")
    claimed = engine.claim(state, "slot1", LUCKY_JOB, 5)
    assert claimed.claim_id is not None
    picky = parse_ad('[Owner = "jones"; ClusterId = 8; ProcId = 0; Requirements = isLucky(3)]')
    outcome = engine.activate(claimed.state, claimed.claim_id, 6, picky)
    assert outcome.refused is not None and "Requirements" in outcome.refused


def test_a_drain_start_expression_calls_the_function() -> None:
    """While a drain waits for a retiring job, its start expression calls the plugin's
    function to admit jobs on the other slot."""
    engine, state = _engine("NUM_SLOTS = 2\nMAXJOBRETIREMENTTIME = 100\n")
    claimed = engine.claim(state, "slot1", LUCKY_JOB, 5)
    assert claimed.claim_id is not None
    running = engine.activate(claimed.state, claimed.claim_id, 6).state
    draining = engine.drain(running, "graceful", 10, start="isLucky(TARGET.N)").state
    refused = engine.claim(draining, "slot2", UNLUCKY_JOB, 11).refused
    assert refused is not None and "draining" in refused
    assert engine.claim(draining, "slot2", LUCKY_JOB, 11).claim_id is not None


def test_fetched_work_is_decided_with_the_functions() -> None:
    """decide() evaluates START and RANK with the functions it is given."""
    situation = SlotSituation("slot1", "Unclaimed", "Idle", "static")
    start, rank = parse_expr("isLucky(TARGET.N)"), parse_expr("TARGET.N")
    functions = lucky_context().functions
    lucky = decide(
        situation, LUCKY_JOB, start=start, rank=rank, slot_ad=SLOT, now=0.0, functions=functions
    )
    unlucky = decide(
        situation, UNLUCKY_JOB, start=start, rank=rank, slot_ad=SLOT, now=0.0, functions=functions
    )
    assert (lucky.kind, lucky.rank, unlucky.kind) == ("claim", 14.0, "reject")


def test_simulate_evaluates_with_the_given_context() -> None:
    """ep simulate's scenarios reach the plugin functions of the context they are run with."""
    events = (
        Event(
            0,
            1.0,
            "claim",
            {"slot": "slot1", "job": {"Owner": "jones", "N": 3}},
            {"slot1": "Unclaimed/Idle"},
        ),
        Event(
            1,
            2.0,
            "claim",
            {"slot": "slot1", "job": {"Owner": "jones", "N": 14}},
            {"slot1": "Claimed/Idle"},
        ),
    )
    scenario = Scenario("lucky", "NUM_SLOTS = 1\nSTART = isLucky(TARGET.N)\n", {}, events)
    assert simulate(scenario, 0, lucky_context()).failures == ()
    assert simulate(scenario, 0).failures != ()


def test_explain_shows_the_functions_verdict() -> None:
    """ep explain's job explanation evaluates START with the plugin's function."""
    config = lucky_config("START = isLucky(TARGET.N)\n")
    slot = parse_ad(
        '[Name = "slot1@ep"; SlotID = 1; Start = isLucky(TARGET.N); Requirements = START]'
    )
    lucky, unlucky = LUCKY_JOB.copy(), UNLUCKY_JOB.copy()
    for job in (lucky, unlucky):
        job["Requirements"] = True
    assert explain_job(config, slot, lucky, now=0.0).would_start
    explained = explain_job(config, slot, unlucky, now=0.0)
    assert not explained.would_start and explained.start.value is False
