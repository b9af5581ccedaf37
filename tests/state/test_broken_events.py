"""Broken slots in the policy engine: marked, refused, held and mended (HTCondor's
SlotBrokenCode, SlotBrokenReason and BrokenSlot<res>)."""

from __future__ import annotations

from epcore.classad import parse_ad
from epcore.slots.broken import BrokenCode, breaks, broken_by_exit
from epcore.slots.layout import plan_slots
from epcore.state.engine import Engine
from epcore.state.records import EngineState
from epcore.state.scenario import Scenario
from epcore.state.simulator import Simulation

JOB = parse_ad(
    '[Owner = "jones"; ClusterId = 7; ProcId = 1; RequestCpus = 1; RequestMemory = 128;'
    " RequestDisk = 1024]"
)
REASON = "Could not clean up Logical Volume"
PARTITIONABLE = "NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\n"


def _setup(config: str = "") -> tuple[Simulation, Engine, EngineState]:
    text = "NUM_CPUS = 4\nMEMORY = 1000\nRUNBENCHMARKS = False\n" + config
    sim = Simulation(Scenario("test", text, {}, ()), 0)
    state = sim.engine.start(plan_slots(sim.config, sim.inventory), 0)
    return sim, sim.engine, sim.engine.poll(state, 0).state


def test_a_starter_exit_status_in_the_broken_range_maps_to_htcondors_code_and_reason() -> None:
    """Exit 15 is an unclean logical volume (5), 16 a hung process (6), 17 a locked cgroup
    (7); other statuses break nothing."""
    assert broken_by_exit(15) == (BrokenCode.UNCLEAN_LOGICAL_VOLUME, REASON)
    assert broken_by_exit(16) == (6, "Could not terminate all job processes")
    assert broken_by_exit(17) == (7, "Could not cleanup CGroup for slot")
    assert broken_by_exit(0) is None and broken_by_exit(4) is None


def test_a_broken_static_slot_advertises_why_matches_nothing_and_mends() -> None:
    """A broken static slot advertises SlotBrokenCode/Reason, no Cpus nor Memory and the
    reason as Requirements, refuses claims; mended, it is whole and takes a claim again."""
    sim, engine, state = _setup("NUM_SLOTS = 1\n")
    state = engine.break_slot(state, "slot1", 5, REASON, 1, 5).state
    ad = sim.ads(state, 5)["slot1"]
    assert ad.evaluate("SlotBrokenCode") == 5
    assert ad.evaluate("SlotBrokenReason") == REASON
    assert ad.evaluate("Requirements") == REASON
    assert ad.evaluate("Cpus") == 0 and ad.evaluate("Memory") == 0
    refused = engine.claim(state, "slot1", JOB, 6)
    assert refused.refused is not None and "broken" in refused.refused
    state = engine.mend(state, 1, 7).state
    ad = sim.ads(state, 7)["slot1"]
    assert ad.lookup("SlotBrokenCode") is None
    assert ad.evaluate("Cpus") == 4 and ad.evaluate("Requirements") is True
    assert engine.claim(state, "slot1", JOB, 8).claim_id is not None


def test_a_second_break_keeps_the_first_reason() -> None:
    """A slot broken twice shows its first break, as HTCondor's."""
    _sim, engine, state = _setup("NUM_SLOTS = 1\n")
    state = engine.break_slot(state, "slot1", 5, REASON, 1, 5).state
    state = engine.break_slot(state, "slot1", 4, "Could not clean up after job", 2, 6).state
    assert [(b.code, b.reason, b.refid) for b in breaks(state.layout)] == [(5, REASON, 1)]


def test_a_broken_dynamic_slot_refuses_the_next_job_and_its_parent_holds_its_resources() -> None:
    """A broken dynamic slot takes no next job on its claim; when its claim ends it is deleted
    but its partitionable slot keeps its resources (BrokenSlot<res>, totals less them) until
    the break is mended, then offers them again."""
    sim, engine, state = _setup(PARTITIONABLE)
    claimed = engine.claim(state, "slot1", JOB, 10)
    assert claimed.claim_id is not None
    claim_id, state = claimed.claim_id, claimed.state
    state = engine.activate(state, claim_id, 11).state
    state = engine.break_slot(state, "slot1_1", 5, REASON, 3, 12).state
    state = engine.job_exit(state, claim_id, 0, 13).state
    refused = engine.activate(state, claim_id, 14)
    assert refused.refused is not None and REASON in refused.refused
    state = engine.release(state, claim_id, 15).state
    state = engine.poll(state, 16).state
    ads = sim.ads(state, 16)
    assert "slot1_1" not in ads and state.slot("slot1_1") is None
    pslot = ads["slot1"]
    total_disk = state.layout.slots[0].total.disk_kb
    assert pslot.evaluate("Cpus") == 3 and pslot.evaluate("Memory") == 872
    assert pslot.evaluate("BrokenSlotCpus") == 1
    assert pslot.evaluate("BrokenSlotMemory") == 128
    held_disk = pslot.evaluate("BrokenSlotDisk")
    assert isinstance(held_disk, int) and 0 < held_disk < total_disk
    assert pslot.evaluate("Disk") == total_disk - held_disk
    assert pslot.evaluate("TotalSlotDisk") == total_disk - held_disk
    assert pslot.evaluate("TotalSlotCpus") == 3 and pslot.evaluate("TotalSlotMemory") == 872
    state = engine.mend(state, 3, 17).state
    pslot = sim.ads(state, 17)["slot1"]
    assert pslot.evaluate("Cpus") == 4 and pslot.evaluate("Memory") == 1000
    assert pslot.lookup("BrokenSlotDisk") is None and pslot.evaluate("TotalSlotCpus") == 4
    assert pslot.evaluate("Disk") == total_disk
    assert breaks(state.layout) == []


def test_mending_an_unknown_break_changes_nothing() -> None:
    """A clean-up whose break no slot knows (mended already) leaves the slots as they are."""
    _sim, engine, state = _setup(PARTITIONABLE)
    assert engine.mend(state, 99, 5).state.layout == state.layout
