"""The schedd's events of the policy engine: a match, a claim (carving a dynamic slot or
preempting the current claim), activation, keep-alives, the job's exit, the release of a claim
and the backfill client's exit."""

from __future__ import annotations

import attrs

from epcore.classad import ClassAd
from epcore.slots.dynamic import NoFit, carve_in
from epcore.state import rules, timers
from epcore.state.claims import Claim, lease_seconds, new_claim_id, public_part
from epcore.state.engine_base import EngineBase, EngineError, short_name
from epcore.state.policy import SlotPolicy, evaluate, is_true, knob_value, number, truth
from epcore.state.preemption import RETIRE_FOR_CLAIM, RETIRE_FOR_EVICTION, preempt
from epcore.state.records import ActionKind, EngineState, SlotRecord, initial_record
from epcore.state.states import (
    BACKFILL_BUSY,
    BACKFILL_IDLE,
    BACKFILL_KILLING,
    BENCHMARKING,
    BUSY,
    CLAIMED_IDLE,
    MATCHED,
    RETIRING,
    SUSPENDED,
    UNCLAIMED,
    State,
)
from epcore.state.work import Outcome, Work


class ClaimEvents(EngineBase):
    """What a schedd (and the job it runs) does to the slots, as :class:`EngineBase` events."""

    @staticmethod
    def _by_claim(w: Work, claim_id: str) -> SlotRecord:
        for record in w.slots.values():
            if record.claim is not None and record.claim.claim_id == claim_id:
                return record
        # Only the public part: an error is logged and sent back, the secret proves ownership.
        raise EngineError(f"no slot holds claim {public_part(claim_id)}")

    def _new_claim(
        self, w: Work, job: ClassAd, rank: float, policy: SlotPolicy, client: str
    ) -> Claim:
        w.claims_made += 1
        claim_id = new_claim_id(self.rng, self.address, int(w.now), w.claims_made)
        lease = lease_seconds(
            job, policy.number("ALIVE_INTERVAL"), policy.number("MAX_CLAIM_ALIVES_MISSED")
        )
        return Claim(claim_id, job, rank, w.now, lease, w.now, client or _submit_host(job))

    def match(self, state: EngineState, slot: str, job: ClassAd, now: float) -> Outcome:
        """The negotiator matched ``job`` to ``slot``: Unclaimed or Backfill -> Matched."""
        w = Work(state, now, self.ads)
        record = self._record(w, slot)
        if record.place in (UNCLAIMED, BENCHMARKING):
            w.move(record.name, MATCHED, 6, "the negotiator matched the slot")
        elif record.place == BACKFILL_KILLING and record.backfill_running:
            # Seed 000: "once the BOINC client exits, the machine will enter Matched/Idle".
            w.update(record.name, backfill_reason="match")
        elif record.place in (BACKFILL_IDLE, BACKFILL_KILLING):
            w.move(record.name, MATCHED, 32, "matched during backfill")
        elif record.place == BACKFILL_BUSY:
            w.move(record.name, BACKFILL_KILLING, 28, "matched during backfill")
            w.update(record.name, backfill_reason="match")
            w.act(ActionKind.EVICT_BACKFILL, record.name)
        else:
            return self._refuse(state, f"{record.name} is {record.place}: no match")
        return self._finish(w)

    def claim(
        self,
        state: EngineState,
        slot: str,
        job: ClassAd,
        now: float,
        *,
        client: str = "",
        by_priority: bool = False,
    ) -> Outcome:
        """A schedd on host ``client`` claims ``slot`` for ``job`` (refused when START is not
        TRUE for it). Without ``client`` the ClientMachine is the host part of the job's
        GlobalJobId, if it has one.

        On a partitionable slot this carves the dynamic slot; on a claimed slot it is a
        preempting claim, accepted when RANK prefers ``job`` to the current job, or when the
        negotiator preempted the current job for a user with a better priority
        (``by_priority``: seed 000, "a job with a higher user priority").
        """
        w = Work(state, now, self.ads)
        record = self._record(w, slot)
        name = record.name
        broken = self._broken(w, record)
        if broken is not None:
            return self._refuse(state, f"{name} refuses the claim: it is broken: {broken}")
        policy = self._policy_of(w, name)
        ad = w.ad(name)
        if w.shutting_down or not rules.drain_admits(w, policy, ad, job):
            return self._refuse(state, f"{name} refuses the claim: the startd is draining")
        if not is_true(policy.knob("START"), ad, job, now):
            return self._refuse(state, f"{name} refuses the claim: START is not TRUE for the job")
        rank = number(knob_value(policy.knob("RANK"), ad, job, now))
        if record.kind == "partitionable":
            return self._carve(w, record, job, rank, policy, client)
        place = record.place
        if place.state is State.CLAIMED:
            return self._preempting_claim(w, record, job, rank, policy, client, by_priority)
        claim = self._new_claim(w, job, rank, policy, client)
        if place in (UNCLAIMED, BENCHMARKING):
            w.move(name, CLAIMED_IDLE, 5, "a schedd claimed the slot", claim=claim)
        elif place == MATCHED:
            w.move(name, CLAIMED_IDLE, 9, "the schedd claimed the matched slot", claim=claim)
        elif place in (BACKFILL_IDLE, BACKFILL_KILLING) and not record.backfill_running:
            w.move(name, CLAIMED_IDLE, 31, "claimed during backfill", claim=claim)
        elif place in (BACKFILL_BUSY, BACKFILL_KILLING):
            if place == BACKFILL_BUSY:
                w.move(name, BACKFILL_KILLING, 28, "claimed during backfill")
                w.act(ActionKind.EVICT_BACKFILL, name)
            w.update(name, preempting=claim, backfill_reason="claim")
        else:
            return self._refuse(state, f"{name} is {place}: the claim is refused")
        return self._finish(w, claim.claim_id)

    def _carve(
        self,
        w: Work,
        record: SlotRecord,
        job: ClassAd,
        rank: float,
        policy: SlotPolicy,
        client: str,
    ) -> Outcome:
        if record.place not in (UNCLAIMED, BENCHMARKING):
            return self._refuse(w.freeze(), f"{record.name} is {record.place}: no claim")
        carved = carve_in(
            w.layout,
            record.slot_id,
            job,
            self.config,
            inventory=self.inventory,
            slot_ad=w.ad(record.name),
        )
        if isinstance(carved, NoFit):
            return self._refuse(w.freeze(), f"{record.name} refuses the claim: {carved.reason}")
        assert carved.layout is not None
        dslot = carved.dslot
        name = short_name(dslot.slot_id, dslot.sub_id)
        w.layout = carved.layout
        w.slots[name] = initial_record(name, dslot.slot_id, dslot.sub_id, "dynamic", w.now)
        w.update(name, place=UNCLAIMED)
        claim = self._new_claim(w, job, rank, policy, client)
        w.move(name, CLAIMED_IDLE, 5, f"a schedd claimed {name} from {record.name}", claim=claim)
        return self._finish(w, claim.claim_id)

    def _preempting_claim(
        self,
        w: Work,
        record: SlotRecord,
        job: ClassAd,
        rank: float,
        policy: SlotPolicy,
        client: str,
        by_priority: bool,
    ) -> Outcome:
        name = record.name
        current = record.claim.rank if record.claim is not None else 0.0
        if record.preempting is not None:
            return self._refuse(w.freeze(), f"{name} already has a preempting claim waiting")
        if rank <= current and not by_priority:
            why = f"{name} refuses the preempting claim: RANK {rank:g} is not above {current:g}"
            return self._refuse(w.freeze(), why)
        claim = self._new_claim(w, job, rank, policy, client)
        w.update(name, preempting=claim)
        if rank > current:
            cause = f"a preempting claim (RANK {rank:g} > {current:g})"
        else:
            cause = "a preempting claim for a user with a better priority"
        if record.place == CLAIMED_IDLE:
            preempt(w, name, 10, cause, policy)
        elif record.place == BUSY:
            w.move(name, RETIRING, 13, cause, retire_from=w.now, retire_reason=RETIRE_FOR_CLAIM)
        elif record.place == SUSPENDED and record.retire_from is None:
            # A suspended job that was not retiring retires for this claim (and may unretire).
            w.update(name, retire_from=w.now, retire_reason=RETIRE_FOR_CLAIM)
        # A slot already retiring for another reason keeps it: that retirement is not taken
        # back when this claim goes away.
        return self._finish(w, claim.claim_id)

    def activate(
        self, state: EngineState, claim_id: str, now: float, job: ClassAd | None = None
    ) -> Outcome:
        """The schedd starts a job on its claim: Claimed/Idle -> Busy; spawn the starter.

        ``job`` is the next job of a claim the schedd reuses (by default the job the claim was
        made for); the slot takes it only when its START is TRUE for it and the job's own
        Requirements accept the slot, as a startd checks a job at activation.
        """
        w = Work(state, now, self.ads)
        record = self._by_claim(w, claim_id)
        if record.place != CLAIMED_IDLE:
            return self._refuse(state, f"{record.name} is {record.place}: cannot activate")
        broken = self._broken(w, record)
        if broken is not None:
            return self._refuse(state, f"{record.name} is broken: {broken}")
        policy = self._policy_of(w, record.name)
        if timers.worklife_expired(record, policy, now):
            # Seed 000: after CLAIM_WORKLIFE a claim "will stop accepting additional jobs".
            return self._refuse(state, f"{record.name}: the claim has outlived CLAIM_WORKLIFE")
        if job is not None and record.claim is not None:
            refusal = self._refuses_next_job(w, record.name, policy, job)
            if refusal is not None:
                return self._refuse(state, refusal)
            rank = number(knob_value(policy.knob("RANK"), w.ad(record.name), job, now))
            w.update(record.name, claim=attrs.evolve(record.claim, job=job, rank=rank))
            record = self._record(w, record.name)
        job = record.claim.job if record.claim is not None else None
        job_id = job_id_of(job)
        deadline = w.drain.deadline if w.drain is not None else None
        w.move(
            record.name,
            BUSY,
            11,
            "the schedd activated the claim",
            job_start=now,
            preempt_deadline=deadline,
        )
        w.update(record.name, job_id=job_id, suspended_total=0.0)
        w.act(ActionKind.SPAWN_STARTER, record.name, claim_id)
        return self._finish(w)

    @staticmethod
    def _broken(w: Work, record: SlotRecord) -> str | None:
        """The reason slot ``record`` is broken, or None (a broken slot takes no claim nor
        job: HTCondor's Requirements is then the reason)."""
        slot = w.layout.find(record.slot_id, record.sub_id)
        return None if slot is None or slot.broken is None else slot.broken.reason

    def _refuses_next_job(self, w: Work, name: str, policy: SlotPolicy, job: ClassAd) -> str | None:
        """Why the slot ``name`` will not run ``job`` on its claim, or None when it will."""
        ad = w.ad(name)
        if not is_true(policy.knob("START"), ad, job, w.now):
            return f"{name} refuses the job: START is not TRUE for it"
        requirements = job.get("Requirements")
        accepts = requirements is None or evaluate(requirements, job, ad, w.now, policy.functions)
        if truth(accepts) is not True:
            return f"{name} refuses the job: its Requirements do not accept the slot"
        return None

    def alive(self, state: EngineState, claim_id: str, now: float) -> Outcome:
        """A keep-alive for ``claim_id``: its lease starts again."""
        w = Work(state, now, self.ads)
        record = self._by_claim(w, claim_id)
        assert record.claim is not None
        claim = record.claim
        w.update(record.name, claim=_renewed(claim, now))
        return self._finish(w)

    def job_exit(self, state: EngineState, claim_id: str, code: int, now: float) -> Outcome:
        """The job of ``claim_id`` exited (or was killed) with ``code``."""
        w = Work(state, now, self.ads)
        record = self._by_claim(w, claim_id)
        name = record.name
        if record.job_start is None:
            return self._refuse(state, f"{name} runs no job")
        claim = record.claim
        if claim is not None:
            suspended = record.suspended_seconds(now)
            claim = attrs.evolve(
                claim,
                run_time=claim.run_time + max(now - record.job_start - suspended, 0.0),
                suspend_time=claim.suspend_time + suspended,
            )
        if record.place == BUSY:
            cause = f"the job exited with status {code}"
            w.move(name, CLAIMED_IDLE, 12, cause, job_start=None, claim=claim)
        else:
            w.update(name, job_start=None, suspended_since=None, claim=claim)
            w.notes.append(f"{name}: the job exited with status {code}")
        return self._finish(w)

    def job_gone(self, state: EngineState, slot: str, now: float) -> Outcome:
        """The starter of ``slot`` is gone (a hard kill takes effect at once)."""
        w = Work(state, now, self.ads)
        record = self._record(w, slot)
        w.update(record.name, job_start=None, suspended_since=None)
        return self._finish(w)

    def release(
        self, state: EngineState, claim_id: str, now: float, *, removed: bool = False
    ) -> Outcome:
        """The schedd gives up ``claim_id``: its job (if any) is vacated without retirement;
        a preempting claim that is given up just goes away (the slot may unretire, 19).
        ``removed``: the job was removed (condor_rm), which its starter is told with the kill."""
        w = Work(state, now, self.ads)
        for waiting in list(w.slots.values()):
            if waiting.preempting is not None and waiting.preempting.claim_id == claim_id:
                w.update(waiting.name, preempting=None)
                return self._finish(w)
        record = self._by_claim(w, claim_id)
        name = record.name
        policy = self._policy_of(w, name)
        cause = "the schedd released the claim"
        if removed and record.job_start is not None:
            cause = "the schedd released the claim: its job was removed"
            w.update(name, removed=True)
        if record.place == CLAIMED_IDLE:
            preempt(w, name, 10, cause, policy)
        elif record.place == BUSY:
            w.move(
                name,
                RETIRING,
                13,
                cause,
                preempt_deadline=now,
                retire_reason=RETIRE_FOR_EVICTION,
            )
        elif record.place == SUSPENDED:
            w.update(name, preempt_deadline=now, retire_reason=RETIRE_FOR_EVICTION)
            preempt(w, name, 17, cause, policy)
        else:
            w.update(name, preempt_deadline=now, retire_reason=RETIRE_FOR_EVICTION)
        return self._finish(w)

    def backfill_exit(self, state: EngineState, slot: str, now: float) -> Outcome:
        """The backfill client of ``slot`` exited (by itself, or after an eviction)."""
        w = Work(state, now, self.ads)
        record = self._record(w, slot)
        w.update(record.name, backfill_running=False)
        if record.place == BACKFILL_BUSY:
            w.move(record.name, BACKFILL_IDLE, 27, "the backfill client exited by itself")
        return self._finish(w)


def job_id_of(job: ClassAd | None) -> str | None:
    """``ClusterId.ProcId`` of a job ad, None when it has neither."""
    if job is None:
        return None
    cluster, proc = job.evaluate("ClusterId"), job.evaluate("ProcId")
    if isinstance(cluster, int) and isinstance(proc, int):
        return f"{cluster}.{proc}"
    return None


def _submit_host(job: ClassAd) -> str:
    """The schedd's host from the job's GlobalJobId (``submit.example.org#152.3#1700000000``)."""
    global_id = job.evaluate("GlobalJobId")
    return global_id.split("#", 1)[0] if isinstance(global_id, str) else ""


def _renewed(claim: Claim, now: float) -> Claim:
    return attrs.evolve(claim, last_alive=now)
