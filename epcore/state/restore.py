"""Claims a restarted startd takes back from the starters that outlived it (beyond HTCondor).

HTCondor kills every job when its startd goes away; epcore's starters keep running, and the
new startd puts their slots back as they were: Claimed/Busy with the same claim (ClaimId,
job ad, lease starting again), the job's start time kept. A claim on a partitionable slot
carves its dynamic slot again from the same job ad. This is not a move of the seeds'
diagram (the slot never left Claimed/Busy as far as the schedd can tell), so it is recorded
as a note, not a transition. A claim whose slot no longer exists or no longer fits (the
configuration changed across the restart) is reported as refused, so the daemon can stop
that job.
"""

from __future__ import annotations

import attrs

from epcore.classad import ClassAd
from epcore.slots.dynamic import NoFit, carve_in
from epcore.state.claims import Claim
from epcore.state.engine import Engine, job_id_of, short_name
from epcore.state.records import EngineState, initial_record
from epcore.state.states import BUSY
from epcore.state.work import Outcome, Work


@attrs.frozen(eq=False)
class SavedClaim:
    """What a startd writes down about a running job so that its successor can take it back."""

    slot_id: int
    partitionable: bool
    claim_id: str
    job: ClassAd
    rank: float
    made_at: float
    lease: int
    client_machine: str
    job_start: float
    run_time: float = 0.0
    suspend_time: float = 0.0


def restore_claim(engine: Engine, state: EngineState, saved: SavedClaim, now: float) -> Outcome:
    """``state`` with ``saved``'s slot Claimed/Busy again (``refused`` says why it could not
    be); ``claim_id`` of the outcome is the restored claim's, the slot's name is in its note."""
    w = Work(state, now, engine.ads)
    if saved.partitionable:
        parent = short_name(saved.slot_id, None)
        if parent not in w.slots:
            return Outcome(state, refused=f"there is no slot{saved.slot_id} any more")
        carved = carve_in(
            w.layout,
            saved.slot_id,
            saved.job,
            engine.config,
            inventory=engine.inventory,
            slot_ad=w.ad(parent),
        )
        if isinstance(carved, NoFit):
            return Outcome(state, refused=f"slot{saved.slot_id} cannot hold it: {carved.reason}")
        assert carved.layout is not None
        dslot = carved.dslot
        name = short_name(dslot.slot_id, dslot.sub_id)
        w.layout = carved.layout
        w.slots[name] = initial_record(name, dslot.slot_id, dslot.sub_id, "dynamic", now)
    else:
        name = short_name(saved.slot_id, None)
        record = w.slots.get(name)
        if record is None or record.claim is not None:
            return Outcome(state, refused=f"{name} is not free to take the claim back")
    claim = Claim(
        saved.claim_id,
        saved.job,
        saved.rank,
        saved.made_at,
        saved.lease,
        now,
        saved.client_machine,
        saved.run_time,
        saved.suspend_time,
    )
    w.update(
        name,
        place=BUSY,
        entered_state=saved.made_at,
        entered_activity=saved.job_start,
        claim=claim,
        job_start=saved.job_start,
        job_id=job_id_of(saved.job),
    )
    w.notes.append(f"{name}: claim taken back after a startd restart (job started earlier)")
    w.claims_made = max(w.claims_made, 1)
    return w.outcome(saved.claim_id)
