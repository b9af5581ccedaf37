"""The pure policy engine of one startd: events in, a new state, transitions and actions out.

Each public method takes an :class:`EngineState` and ``now`` and returns an :class:`Outcome`;
nothing is performed and the clock is never read. Slot ads (for MY in policy expressions) come
from the injected :data:`~epcore.state.work.AdSource`, ClaimIds from the injected random source.
After every event the policy of every slot is evaluated until nothing moves
(:mod:`epcore.state.rules`), so an event's consequences (a job gone, so Preempting -> Owner) are
part of its outcome. :meth:`Engine.next_timer` says when the next timer (MATCH_TIMEOUT, claim
lease, CLAIM_WORKLIFE, retirement, vacate time, KILLING_TIMEOUT) fires; :meth:`Engine.poll` at
that time fires it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping

import attrs

from epcore.classad import ClassAd, Expr, parse_expr
from epcore.config import Config
from epcore.errors import ClassAdSyntaxError, EpError
from epcore.slots.dynamic import NoFit, carve_in
from epcore.slots.model import Slot, SlotLayout
from epcore.state import rules
from epcore.state.claims import Claim, lease_seconds, new_claim_id, public_part
from epcore.state.policy import (
    SlotPolicy,
    evaluate,
    is_true,
    knob_value,
    load_policy,
    number,
    published_expressions,
    truth,
)
from epcore.state.records import (
    ActionKind,
    Drain,
    EngineState,
    SlotRecord,
    VacateReason,
    initial_record,
)
from epcore.state.rules import (
    BACKFILL_BUSY,
    BACKFILL_IDLE,
    BACKFILL_KILLING,
    BENCHMARKING,
    BUSY,
    CLAIMED_IDLE,
    MATCHED,
    OWNER,
    RETIRING,
    SUSPENDED,
    UNCLAIMED,
)
from epcore.state.states import State
from epcore.state.work import AdSource, Outcome, Work
from epcore.types import MachineInventory

#: How many moves one slot may make in one evaluation before the engine stops (a loop guard).
MAX_MOVES = 20

DRAIN_KINDS = ("graceful", "quick", "fast")


class EngineError(EpError):
    """An event the engine cannot take (an unknown slot or claim, a bad drain request)."""


def short_name(slot_id: int, sub_id: int | None) -> str:
    """``slot1`` or ``slot1_2``."""
    return f"slot{slot_id}" if sub_id is None else f"slot{slot_id}_{sub_id}"


class Engine:
    """The policy of one startd: its configuration, per-slot policies, ads and random source."""

    def __init__(
        self,
        config: Config,
        ads: AdSource,
        rng: random.Random,
        *,
        inventory: MachineInventory | None = None,
        address: str = "<127.0.0.1:0>",
        benchmarks_reported: bool = False,
        backfill: bool = True,
    ) -> None:
        self.config = config
        #: False when no backfill system can run (seed 000: without a backfill manager
        #: START_BACKFILL is never evaluated), whatever ENABLE_BACKFILL says.
        self.backfill = backfill
        #: True when a daemon runs the benchmarks and reports their end
        #: (:meth:`benchmarks_finished`); False: they count as done at the next evaluation.
        self.benchmarks_reported = benchmarks_reported
        self._source = ads
        self.rng = rng
        self.inventory = inventory
        self.address = address
        self._policies: dict[tuple[int, int], SlotPolicy] = {}

    # -- setup ------------------------------------------------------------------------------

    def policy(self, slot_id: int, type_id: int = 0) -> SlotPolicy:
        """The (cached) policy of slot ``slot_id`` of type ``type_id``."""
        key = (slot_id, type_id)
        if key not in self._policies:
            policy = load_policy(self.config, slot_id, type_id or None)
            if not self.backfill:
                policy = attrs.evolve(policy, enable_backfill=False)
            self._policies[key] = policy
        return self._policies[key]

    def _policy_of(self, w: Work, name: str) -> SlotPolicy:
        record = w.slots[name]
        slot = w.layout.find(record.slot_id, record.sub_id)
        return self.policy(record.slot_id, slot.type_id if slot is not None else 0)

    def ads(self, state: EngineState, now: float) -> Mapping[str, ClassAd]:
        """The slot ads of ``state`` at ``now``, from the ad source."""
        return self._source(state, now)

    def published_attributes(self, slot: Slot) -> tuple[tuple[str, Expr], ...]:
        """The policy expressions a slot's ad carries (for the ads builder's
        ``policy_attributes``), so that PREEMPT may refer to SUSPEND and WANT_SUSPEND."""
        return published_expressions(self.policy(slot.slot_id, slot.type_id))

    def start(self, layout: SlotLayout, now: float) -> EngineState:
        """Every slot of ``layout`` in Owner/Idle, entered at ``now``."""
        records = tuple(
            initial_record(short_name(s.slot_id, s.sub_id), s.slot_id, s.sub_id, s.kind, now)
            for s in layout.slots
        )
        return EngineState(records, layout)

    def problems(self, state: EngineState) -> list[str]:
        """Every broken policy expression of the state's slots, once each."""
        seen: dict[str, None] = {}
        for slot in state.layout.slots:
            for problem in self.policy(slot.slot_id, slot.type_id).problems:
                seen.setdefault(str(problem), None)
        return list(seen)

    # -- evaluation -------------------------------------------------------------------------

    def _settle(self, w: Work) -> None:
        """Evaluate every slot until a whole pass moves none (a move of one slot can change
        another's policy: the last job of a draining machine leaving, say).

        Each pass builds the ads once and lets every slot take at most one step; a slot that
        moved sees its own new ad when it is evaluated again in the next pass. Building the
        ads per pass rather than per move keeps a pass linear in the number of slots.
        """
        for _ in range(MAX_MOVES):
            rules.end_drain_admissions(w)
            w.refresh()
            moved = False
            for name in list(w.slots):
                if name in w.slots and rules.step_slot(
                    w,
                    name,
                    self._policy_of(w, name),
                    benchmarks_reported=self.benchmarks_reported,
                ):
                    moved = True
            if not moved:
                return

    def _finish(self, w: Work, claim_id: str | None = None) -> Outcome:
        self._settle(w)
        return w.outcome(claim_id)

    def poll(self, state: EngineState, now: float) -> Outcome:
        """Evaluate every slot's policy at ``now`` (this is also how timers fire)."""
        return self._finish(Work(state, now, self.ads))

    def next_timer(self, state: EngineState, now: float) -> float | None:
        """When the next timer of any slot fires (None when no timer runs)."""
        soonest = math.inf
        for record in state.slots:
            slot = state.layout.find(record.slot_id, record.sub_id)
            policy = self.policy(record.slot_id, slot.type_id if slot is not None else 0)
            name = record.name

            def ad_of(name: str = name) -> ClassAd:
                return self.ads(state, now)[name]

            soonest = min(soonest, rules.next_deadline(record, policy, ad_of, now))
        if state.drain is not None and state.drain.start is not None and state.drain.deadline > now:
            soonest = min(soonest, state.drain.deadline)
        return None if soonest == math.inf else soonest

    def benchmarks_finished(self, state: EngineState, now: float) -> Outcome:
        """The benchmarks have run: LastBenchmark is ``now`` and every slot still in
        Unclaimed/Benchmarking returns to Idle (transition 4)."""
        w = Work(state, now, self.ads)
        w.last_benchmark = max(int(now), 1)
        for name, record in list(w.slots.items()):
            if record.place == BENCHMARKING:
                w.move(name, UNCLAIMED, 4, "the benchmarks finished")
        return self._finish(w)

    def set_attributes(self, state: EngineState, now: float) -> Outcome:
        """Machine attributes changed (the ad source already sees them): re-evaluate."""
        return self.poll(state, now)

    # -- helpers ----------------------------------------------------------------------------

    @staticmethod
    def _refuse(state: EngineState, why: str) -> Outcome:
        return Outcome(state, notes=(why,), refused=why)

    def _record(self, w: Work, slot: str) -> SlotRecord:
        record = w.slots.get(slot.split("@", 1)[0])
        if record is None:
            raise EngineError(f"there is no slot {slot}")
        return record

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

    # -- the schedd's events ----------------------------------------------------------------

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
            rules.preempt(w, name, 10, cause, policy)
        elif record.place == BUSY:
            w.move(
                name, RETIRING, 13, cause, retire_from=w.now, retire_reason=rules.RETIRE_FOR_CLAIM
            )
        elif record.place == SUSPENDED and record.retire_from is None:
            # A suspended job that was not retiring retires for this claim (and may unretire).
            w.update(name, retire_from=w.now, retire_reason=rules.RETIRE_FOR_CLAIM)
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
        policy = self._policy_of(w, record.name)
        if rules.worklife_expired(record, policy, now):
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

    def release(self, state: EngineState, claim_id: str, now: float) -> Outcome:
        """The schedd gives up ``claim_id``: its job (if any) is vacated without retirement;
        a preempting claim that is given up just goes away (the slot may unretire, 19)."""
        w = Work(state, now, self.ads)
        for waiting in list(w.slots.values()):
            if waiting.preempting is not None and waiting.preempting.claim_id == claim_id:
                w.update(waiting.name, preempting=None)
                return self._finish(w)
        record = self._by_claim(w, claim_id)
        name = record.name
        policy = self._policy_of(w, name)
        cause = "the schedd released the claim"
        if record.place == CLAIMED_IDLE:
            rules.preempt(w, name, 10, cause, policy)
        elif record.place == BUSY:
            w.move(
                name,
                RETIRING,
                13,
                cause,
                preempt_deadline=now,
                retire_reason=rules.RETIRE_FOR_EVICTION,
            )
        elif record.place == SUSPENDED:
            w.update(name, preempt_deadline=now, retire_reason=rules.RETIRE_FOR_EVICTION)
            rules.preempt(w, name, 17, cause, policy)
        else:
            w.update(name, preempt_deadline=now, retire_reason=rules.RETIRE_FOR_EVICTION)
        return self._finish(w)

    def backfill_exit(self, state: EngineState, slot: str, now: float) -> Outcome:
        """The backfill client of ``slot`` exited (by itself, or after an eviction)."""
        w = Work(state, now, self.ads)
        record = self._record(w, slot)
        w.update(record.name, backfill_running=False)
        if record.place == BACKFILL_BUSY:
            w.move(record.name, BACKFILL_IDLE, 27, "the backfill client exited by itself")
        return self._finish(w)

    # -- the administrator's events ---------------------------------------------------------

    def vacate(
        self,
        state: EngineState,
        slot: str,
        fast: bool,
        now: float,
        reason: VacateReason | None = None,
    ) -> Outcome:
        """condor_vacate: evict the slot's job (graceful, or ``fast``: hard kill at once);
        ``reason`` (hibernation's code 1016) goes to the job with the kill."""
        w = Work(state, now, self.ads)
        record = self._record(w, slot)
        if reason is not None and record.claim is not None:
            w.update(record.name, vacate_reason=reason)
        self._evict(w, record.name, fast, reason.reason if reason else "condor_vacate")
        return self._finish(w)

    def _evict(self, w: Work, name: str, fast: bool, cause: str, retire: bool = False) -> None:
        record = w.slots[name]
        policy = self._policy_of(w, name)
        deadline = None if retire else w.now
        if record.place == CLAIMED_IDLE:
            w.update(name, fast=fast, preempting=None)
            rules.preempt(w, name, 10, cause, policy)
        elif record.place in (BUSY, SUSPENDED, RETIRING):
            w.update(
                name,
                fast=fast,
                preempting=None,
                preempt_deadline=deadline,
                retire_reason=rules.RETIRE_FOR_EVICTION,
            )
            if record.place == BUSY:
                w.move(name, RETIRING, 13, cause, retire_from=w.now)
            elif record.place == SUSPENDED and not retire:
                rules.preempt(w, name, 17, cause, policy)
            elif record.place == SUSPENDED:
                w.update(name, retire_from=w.now)
        elif record.place == BACKFILL_BUSY:
            # Seed 000: after condor_vacate or a shutdown the slot returns to Owner (30) once
            # the backfill client exits.
            w.move(name, BACKFILL_KILLING, 28, cause, backfill_reason="evict")
            w.act(ActionKind.EVICT_BACKFILL, name)
        elif record.place == BACKFILL_KILLING:
            w.update(name, backfill_reason="evict", preempting=None)
        elif record.place == BACKFILL_IDLE:
            w.move(name, OWNER, 30, cause)
        elif record.place == MATCHED:
            w.move(name, OWNER, 8, cause)

    def drain(
        self,
        state: EngineState,
        how: str,
        now: float,
        *,
        check: str | None = None,
        start: str | None = None,
        finalize: bool = False,
        reason: str | None = None,
    ) -> Outcome:
        """condor_drain: graceful (retirement honoured), quick (vacate) or fast (kill).

        ``check`` must be TRUE for every slot or the drain is refused; a graceful drain
        evicts every running job when the longest retirement ends; ``start`` admits jobs
        (evaluated with TARGET = the job) on idle slots until then, or until the last job
        that was running when the drain began has left, when they are evicted too;
        ``finalize`` sends the slots back to Owner when draining is done (34) instead of
        leaving them Drained/Idle; ``reason`` is the DrainReason advertised meanwhile.
        """
        if how not in DRAIN_KINDS:
            raise EngineError(f"drain how = {how!r}: expected one of {', '.join(DRAIN_KINDS)}")
        w = Work(state, now, self.ads)
        if w.drain is not None:
            return self._refuse(state, "the startd is already draining")
        if check is not None:
            try:
                expr = parse_expr(check)
            except ClassAdSyntaxError as error:
                raise EngineError(f"drain check {check!r} does not parse: {error}") from error
            for name in w.slots:
                functions = self._policy_of(w, name).functions
                if evaluate(expr, w.ad(name), None, now, functions) is not True:
                    return self._refuse(state, f"drain refused: check is not TRUE for {name}")
        if start is not None:
            try:
                parse_expr(start)
            except ClassAdSyntaxError as error:
                raise EngineError(f"drain start {start!r} does not parse: {error}") from error
        w.drain = Drain(how, start, finalize, now, now, reason)
        for name in list(w.slots):
            if w.slots[name].place.state in (State.CLAIMED, State.BACKFILL, State.MATCHED):
                self._evict(w, name, how == "fast", f"draining ({how})", retire=how == "graceful")
        ends = [
            rules.retirement_end(r, self._policy_of(w, r.name), w.ad(r.name), now)
            for r in w.slots.values()
            if r.place.state is State.CLAIMED and r.job_start is not None
        ]
        deadline = max([now, *ends])
        w.drain = attrs.evolve(w.drain, deadline=deadline)
        if how == "graceful":
            # Seeds 002/004: "the eviction of jobs with shorter retirement time is delayed
            # until the job with the longest retirement time needs to be evicted".
            for record in list(w.slots.values()):
                if record.place.state is State.CLAIMED and record.job_start is not None:
                    w.update(record.name, preempt_deadline=deadline)
        return self._finish(w)

    def cancel_drain(self, state: EngineState, now: float) -> Outcome:
        """Stop draining: Drained slots return to Owner (35)."""
        w = Work(state, now, self.ads)
        if w.drain is None:
            return self._refuse(state, "the startd is not draining")
        w.drain = None
        for name, record in list(w.slots.items()):
            if record.place.state is State.DRAINED:
                w.move(name, OWNER, 35, "draining was cancelled")
        return self._finish(w)

    def shutdown(self, state: EngineState, fast: bool, now: float) -> Outcome:
        """condor_off: peaceful (running and suspended jobs run to the end, idle claims are
        released) or fast (every job is killed at once)."""
        w = Work(state, now, self.ads)
        w.shutting_down = True
        for name in list(w.slots):
            record = w.slots[name]
            if fast or record.place.state is not State.CLAIMED or record.place == CLAIMED_IDLE:
                self._evict(w, name, fast, "shutdown")
            elif record.place == BUSY:
                w.update(name, preempt_deadline=math.inf)
                w.move(
                    name,
                    RETIRING,
                    13,
                    "peaceful shutdown",
                    retire_from=now,
                    retire_reason=rules.RETIRE_FOR_EVICTION,
                )
            else:
                retire_from = record.retire_from if record.retire_from is not None else now
                w.update(
                    name,
                    preempt_deadline=math.inf,
                    retire_from=retire_from,
                    retire_reason=rules.RETIRE_FOR_EVICTION,
                )
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
