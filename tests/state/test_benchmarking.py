"""The Benchmarking activity when a daemon runs the benchmarks (transitions 3 and 4): the slot
asks for them once, stays in Benchmarking until the daemon reports their end, and only then
returns to Idle with LastBenchmark set; the simulator's benchmarks end at once."""

from __future__ import annotations

import random

from epcore.classad import parse_ad
from epcore.slots.layout import plan_slots
from epcore.state.engine import Engine
from epcore.state.records import EngineState
from epcore.state.scenario import Scenario
from epcore.state.simulator import Simulation

CONFIG = "NUM_SLOTS = 2\nRUNBENCHMARKS = LastBenchmark == 0\nIS_OWNER = False\n"


def _engines() -> tuple[Engine, Engine, EngineState]:
    sim = Simulation(Scenario("bench", CONFIG, {}, ()), 0)
    reported = Engine(
        sim.config,
        sim.engine.ads,
        random.Random(0),
        inventory=sim.inventory,
        benchmarks_reported=True,
    )
    return sim.engine, reported, reported.start(plan_slots(sim.config, sim.inventory), 0)


def _places(state: EngineState) -> dict[str, str]:
    return {record.name: str(record.place) for record in state.slots}


def test_reported_benchmarks_keep_the_slot_benchmarking_until_finished() -> None:
    """Each slot enters Benchmarking and asks for the benchmarks; polls leave it there; the
    reported end moves every slot back to Idle along transition 4 and sets LastBenchmark."""
    _, engine, state = _engines()
    outcome = engine.poll(state, 10)
    assert set(_places(outcome.state).values()) == {"Unclaimed/Benchmarking"}
    assert [a.kind for a in outcome.actions] == ["run_benchmarks", "run_benchmarks"]
    later = engine.poll(outcome.state, 50)
    assert set(_places(later.state).values()) == {"Unclaimed/Benchmarking"}
    assert later.actions == () and later.state.last_benchmark == 0
    done = engine.benchmarks_finished(later.state, 60)
    assert set(_places(done.state).values()) == {"Unclaimed/Idle"}
    assert done.state.last_benchmark == 60
    assert {t.number for t in done.transitions} == {4}
    # RUNBENCHMARKS (LastBenchmark == 0) is now false: no new round.
    assert engine.poll(done.state, 70).actions == ()


def test_simulated_benchmarks_finish_at_the_next_evaluation() -> None:
    """Without a daemon (the policy simulator) the benchmarks count as done at once."""
    engine, _, state = _engines()
    outcome = engine.poll(state, 10)
    assert set(_places(outcome.state).values()) == {"Unclaimed/Idle"}
    assert outcome.state.last_benchmark == 10
    assert all(a.kind != "run_benchmarks" for a in outcome.actions)


def test_a_slot_claimed_while_benchmarking_keeps_its_claim_when_they_end() -> None:
    """Only the slots still in Benchmarking return to Idle when the benchmarks end."""
    _, engine, state = _engines()
    state = engine.poll(state, 10).state
    claimed = engine.claim(state, "slot1", parse_ad('[Owner = "a"; ClusterId = 1]'), 20)
    assert claimed.refused is None
    done = engine.benchmarks_finished(claimed.state, 30)
    assert _places(done.state) == {"slot1": "Claimed/Idle", "slot2": "Unclaimed/Idle"}
