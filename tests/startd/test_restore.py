"""A restarted startd taking back the claims of starters that outlived its predecessor."""

from __future__ import annotations

import subprocess

import pytest

from epcore.classad import parse_ad
from epcore.runtime import persist
from epcore.slots.layout import plan_slots
from epcore.state.engine import Engine
from epcore.state.records import EngineState
from epcore.state.restore import SavedClaim, restore_claim
from epcore.state.scenario import Scenario
from epcore.state.simulator import Simulation

PARTITIONABLE = (
    "NUM_SLOTS = 1\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\n"
)
STATIC = "NUM_SLOTS = 2\n"
JOB = parse_ad(
    '[ Owner = "alice"; ClusterId = 12; ProcId = 3; RequestCpus = 1; RequestMemory = 512;'
    " RequestDisk = 1024 ]"
)


def _engine(config: str, cpus: int = 4, memory: int = 8192) -> tuple[Engine, EngineState]:
    scenario = Scenario(
        "restore", "RUNBENCHMARKS = False\n" + config, {"cpus": cpus, "memory": memory}, ()
    )
    sim = Simulation(scenario, 0)
    state = sim.engine.start(plan_slots(sim.config, sim.inventory), 0)
    return sim.engine, sim.engine.poll(state, 0).state


def _saved(slot_id: int = 1, partitionable: bool = True, **changes: object) -> SavedClaim:
    fields: dict[str, object] = {
        "slot_id": slot_id,
        "partitionable": partitionable,
        "claim_id": "<unix:/old>#100#1#cafe",
        "job": JOB,
        "rank": 2.5,
        "made_at": 900.0,
        "lease": 1200,
        "client_machine": "submit.example",
        "job_start": 950.0,
        "run_time": 3.0,
        "suspend_time": 1.0,
    }
    fields.update(changes)
    return SavedClaim(**fields)  # type: ignore[arg-type]


def _busy(state: EngineState) -> dict[str, str]:
    return {r.name: str(r.place) for r in state.slots if str(r.place) != "Unclaimed/Idle"}


def test_partitionable_claim_comes_back_busy() -> None:
    """A saved claim on a partitionable slot carves its dynamic slot again, Claimed/Busy, with
    the same ClaimId, job ad and JobStart; the lease starts again now."""
    engine, state = _engine(PARTITIONABLE)
    outcome = restore_claim(engine, state, _saved(), 1000.0)
    assert outcome.refused is None
    assert outcome.claim_id == "<unix:/old>#100#1#cafe"
    assert _busy(outcome.state) == {"slot1_1": "Claimed/Busy"}
    record = outcome.state.slot("slot1_1")
    assert record is not None and record.claim is not None
    assert record.claim.claim_id == "<unix:/old>#100#1#cafe"
    assert record.claim.job == JOB
    assert (record.claim.rank, record.claim.made_at, record.claim.lease) == (2.5, 900.0, 1200)
    assert record.claim.client_machine == "submit.example"
    assert (record.claim.run_time, record.claim.suspend_time) == (3.0, 1.0)
    assert (record.job_start, record.entered_activity) == (950.0, 950.0)
    assert record.job_id == "12.3"
    assert record.kind == "dynamic"
    # Seen from the schedd nothing moved: a note, no transition.
    assert outcome.transitions == ()
    assert any("slot1_1" in note and "taken back" in note for note in outcome.notes)
    assert state.slot("slot1_1") is None  # the given state is not changed


def test_dynamic_slot_takes_its_resources_from_the_parent() -> None:
    """The restored dynamic slot holds the job's request and the parent keeps the rest."""
    engine, state = _engine(PARTITIONABLE, cpus=4, memory=8192)
    outcome = restore_claim(engine, state, _saved(), 1000.0)
    layout = outcome.state.layout
    child = layout.find(1, 1)
    parent = layout.find(1, None)
    assert child is not None and parent is not None
    assert float(child.resources.cpus) == 1
    assert float(parent.resources.cpus) == 3


def test_two_claims_on_one_partitionable_slot() -> None:
    """Several saved claims on one partitionable slot come back as several dynamic slots."""
    engine, state = _engine(PARTITIONABLE)
    first = restore_claim(engine, state, _saved(claim_id="a"), 1000.0)
    second = restore_claim(engine, first.state, _saved(claim_id="b"), 1000.0)
    assert second.refused is None
    assert sorted(_busy(second.state).values()) == ["Claimed/Busy"] * 2


def test_static_claim_comes_back_busy() -> None:
    """A saved claim on a static slot puts that slot back Claimed/Busy with its claim."""
    engine, state = _engine(STATIC)
    outcome = restore_claim(engine, state, _saved(2, partitionable=False), 1000.0)
    assert outcome.refused is None
    assert _busy(outcome.state) == {"slot2": "Claimed/Busy"}
    record = outcome.state.slot("slot2")
    assert record is not None and record.claim is not None
    assert record.claim.claim_id == "<unix:/old>#100#1#cafe"
    assert record.job_start == 950.0


@pytest.mark.parametrize(
    ("config", "saved", "reason"),
    [
        (PARTITIONABLE, _saved(2), "there is no slot2 any more"),
        (STATIC, _saved(5, partitionable=False), "slot5 is not free"),
        (
            PARTITIONABLE,
            _saved(job=parse_ad("[ RequestCpus = 64; RequestMemory = 1; RequestDisk = 1 ]")),
            "slot1 cannot hold it",
        ),
        (
            PARTITIONABLE,
            _saved(job=parse_ad("[ RequestCpus = 1; RequestMemory = 999999; RequestDisk = 1 ]")),
            "slot1 cannot hold it",
        ),
    ],
    ids=["partitionable-gone", "static-gone", "too-many-cpus", "too-much-memory"],
)
def test_claim_that_no_longer_fits_is_refused(config: str, saved: SavedClaim, reason: str) -> None:
    """A claim whose slot is gone or cannot hold its job is refused with a reason, state kept."""
    engine, state = _engine(config)
    outcome = restore_claim(engine, state, saved, 1000.0)
    assert outcome.refused is not None and reason in outcome.refused
    assert outcome.state is state


def test_static_slot_already_claimed_is_refused() -> None:
    """A second saved claim for the same static slot is refused."""
    engine, state = _engine(STATIC)
    first = restore_claim(engine, state, _saved(1, partitionable=False, claim_id="a"), 1000.0)
    second = restore_claim(engine, first.state, _saved(1, False, claim_id="b"), 1000.0)
    assert second.refused is not None and "slot1 is not free" in second.refused
    record = second.state.slot("slot1")
    assert record is not None and record.claim is not None and record.claim.claim_id == "a"


def test_restored_claim_can_finish() -> None:
    """A restored claim is a normal claim: its job's exit moves the slot on."""
    engine, state = _engine(STATIC)
    restored = restore_claim(engine, state, _saved(1, False), 1000.0)
    finished = engine.job_exit(restored.state, "<unix:/old>#100#1#cafe", 0, 1010.0)
    record = finished.state.slot("slot1")
    assert record is not None and record.job_start is None
    assert [str(t.old) for t in finished.transitions][:1] == ["Claimed/Busy"]


@pytest.mark.system
def test_restart_does_not_kill_an_unrelated_process(startd_factory) -> None:
    """A saved claim whose starter PID now belongs to some other process does not get that
    process killed by the restarted startd."""
    startd = startd_factory(cpus=1, memory=512, start=False)
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        spool = startd.directory / "spool"
        spool.mkdir()
        line = persist.saved_claim_ad(_saved(7, partitionable=False), bystander.pid)
        persist.write_ad_lines(str(spool / "startd_claims"), [line])
        startd.start()
        startd.wait_for(lambda: "is gone; its job is lost" in startd.log(), 20, "the refusal")
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait(10)
