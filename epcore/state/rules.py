"""The startd's per-slot policy rules: what a slot does when its policy is evaluated at ``now``.

:func:`step_slot` looks at one slot in one State/Activity and makes at most one move; the engine
repeats it until nothing moves. The rules follow seed 000 ("State and Activity Transitions"):

- Owner -> Unclaimed (1) when IS_OWNER is not TRUE; back (2) when IS_OWNER is TRUE (the
  modern default IS_OWNER is FALSE; POLICY : Desktop sets ``START =?= FALSE``, which gives the
  seed's "START locally TRUE or UNDEFINED" rule and its KeyboardIdle = 34 examples).
- Unclaimed: benchmarks when RUNBENCHMARKS (3; 4 when they finished, setting LastBenchmark);
  Backfill (7) when ENABLE_BACKFILL and START_BACKFILL; Drained/Retiring (36, 37) while a
  drain is on.
- Matched -> Owner (8) when START is locally FALSE or MATCH_TIMEOUT runs out.
- Claimed/Idle -> Preempting (10) when START is FALSE for the claim's job, CLAIM_WORKLIFE has
  run out, or the claim lease expired.
- Claimed/Busy -> Suspended (14) when WANT_SUSPEND and SUSPEND; -> Retiring (13) on PREEMPT
  when WANT_SUSPEND is not TRUE. Suspended -> Busy (15) on CONTINUE, -> Retiring (16) on
  CONTINUE of a preempted claim or on PREEMPT with retirement left, -> Preempting (17) on
  PREEMPT with no retirement left. Retiring -> Preempting (18) when the job is gone or the
  retirement ends (MAXJOBRETIREMENTTIME, lowered by the job's MaxJobRetirementTime, counted
  from JobStart without the suspended time), -> Busy (19) when the preempting claim went away,
  -> Suspended (20) when WANT_SUSPEND and SUSPEND.
- Preempting/Vacating -> Killing (21) on KILL or when the vacate time runs out; Vacating and
  Killing -> Claimed/Idle for a waiting claim (23, 24) or Owner (22, 25) once the job is gone;
  Killing gives up waiting after KILLING_TIMEOUT (the starter is hard-killed).
- Backfill: the client runs (26) on entering Backfill and again while START_BACKFILL is TRUE;
  EVICT_BACKFILL kills it (28) and returns to Owner (30).
- While draining, idle slots go to Drained (36, 37) at once, or, when the drain has a
  ``start`` expression, once the jobs running at its start have used up their retirement
  (jobs admitted by ``start`` meanwhile are retired at that deadline).
- Drained/Retiring -> Drained/Idle (33) when no slot is claimed or preempting any more, and
  -> Owner (34) when the drain finalizes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs

from epcore.classad import ClassAd, parse_expr
from epcore.state.policy import SlotPolicy, evaluate, is_false, is_true, knob_value, number
from epcore.state.records import ActionKind, SlotRecord
from epcore.state.states import Activity, Place, State
from epcore.state.work import Work

S, A = State, Activity
OWNER = Place(S.OWNER, A.IDLE)
UNCLAIMED = Place(S.UNCLAIMED, A.IDLE)
BENCHMARKING = Place(S.UNCLAIMED, A.BENCHMARKING)
MATCHED = Place(S.MATCHED, A.IDLE)
CLAIMED_IDLE = Place(S.CLAIMED, A.IDLE)
BUSY = Place(S.CLAIMED, A.BUSY)
SUSPENDED = Place(S.CLAIMED, A.SUSPENDED)
RETIRING = Place(S.CLAIMED, A.RETIRING)
VACATING = Place(S.PREEMPTING, A.VACATING)
KILLING = Place(S.PREEMPTING, A.KILLING)
BACKFILL_IDLE = Place(S.BACKFILL, A.IDLE)
BACKFILL_BUSY = Place(S.BACKFILL, A.BUSY)
BACKFILL_KILLING = Place(S.BACKFILL, A.KILLING)
DRAINED_RETIRING = Place(S.DRAINED, A.RETIRING)
DRAINED_IDLE = Place(S.DRAINED, A.IDLE)

#: Why a claimed slot retires: for a preempting claim (the only retirement that can be taken
#: back, transition 19; seed 000: "If instead the retirement is due to owner activity (PREEMPT)
#: or the startd is being shut down, no unretirement is possible"), or for anything else.
RETIRE_FOR_CLAIM = "claim"
RETIRE_FOR_PREEMPT = "preempt"
RETIRE_FOR_EVICTION = "eviction"


def job_of(record: SlotRecord) -> ClassAd | None:
    """The job ad of the slot's claim, if any."""
    return record.claim.job if record.claim is not None else None


def retirement_end(record: SlotRecord, policy: SlotPolicy, ad: ClassAd, now: float) -> float:
    """When the running job's retirement ends (suspended time does not count)."""
    if record.preempt_deadline is not None:
        return record.preempt_deadline
    if record.job_start is None:
        return now
    job = job_of(record)
    allowed = number(knob_value(policy.knob("MAXJOBRETIREMENTTIME"), ad, job, now))
    own = _job_number(job, "MaxJobRetirementTime")
    if own is not None:
        allowed = min(allowed, own)
    return record.job_start + max(allowed, 0.0) + record.suspended_seconds(now)


def _job_number(job: ClassAd | None, name: str) -> float | None:
    """A numeric attribute of the job ad (booleans are not numbers here), or None."""
    if job is None:
        return None
    value = job.evaluate(name)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _job_vacate_time(job: ClassAd | None) -> float | None:
    own = _job_number(job, "JobMaxVacateTime")
    return None if own is None else max(own, 0.0)


def _machine_vacate_time(policy: SlotPolicy, ad: ClassAd, job: ClassAd | None, now: float) -> float:
    return max(number(knob_value(policy.knob("MachineMaxVacateTime"), ad, job, now), 600.0), 0.0)


def vacate_time(record: SlotRecord, policy: SlotPolicy, ad: ClassAd, now: float) -> float:
    """Seconds a job being preempted at ``now`` gets to vacate (seed 000, MachineMaxVacateTime):
    MachineMaxVacateTime; the job's JobMaxVacateTime when it is smaller; when it is larger,
    retirement time the job has left is turned into vacating time, up to JobMaxVacateTime."""
    job = job_of(record)
    machine = _machine_vacate_time(policy, ad, job, now)
    own = _job_vacate_time(job)
    if own is None:
        return machine
    if own <= machine:
        return own
    remaining = 0.0
    if record.job_start is not None:
        remaining = max(retirement_end(record, policy, ad, now) - now, 0.0)
    return min(own, max(machine, remaining))


def soft_kill_time(record: SlotRecord, policy: SlotPolicy, ad: ClassAd, now: float) -> float:
    """When a retiring job is soft-killed: as many seconds before the end of its retirement as
    it will get to vacate, "so that the hard-killing of the job will not happen until the end
    of the retirement time" (seed 000, MAXJOBRETIREMENTTIME)."""
    job = job_of(record)
    own = _job_vacate_time(job)
    lead = _machine_vacate_time(policy, ad, job, now) if own is None else own
    return retirement_end(record, policy, ad, now) - lead


def preempt(w: Work, name: str, number_: int, cause: str, policy: SlotPolicy) -> None:
    """Move a claimed slot to Preempting: Vacating (soft kill) unless the eviction is fast or
    WANT_VACATE is not TRUE, else Killing (hard kill)."""
    record = w.slots[name]
    job = job_of(record)
    vacate = not record.fast and is_true(policy.knob("WANT_VACATE", job), w.ad(name), job, w.now)
    # The vacating time is fixed when the job is soft-killed, from the retirement left then.
    allowed = vacate_time(record, policy, w.ad(name), w.now)
    running = record.job_start is not None
    if running and w.drain is not None and record.job_start is not None:
        w.draining_badput += w.cpus(name) * (w.now - record.job_start)
    if vacate:
        w.move(
            name,
            VACATING,
            number_,
            cause,
            vacate_started=w.now,
            vacate_allowed=allowed,
            suspended_since=None,
        )
        if running:
            w.act(ActionKind.SOFT_KILL, name, record.claim.claim_id if record.claim else None)
    else:
        w.move(name, KILLING, number_, cause, kill_started=w.now, suspended_since=None)
        if running:
            w.act(ActionKind.HARD_KILL, name, record.claim.claim_id if record.claim else None)


def drain_closed(w: Work) -> bool:
    """Whether a drain is on and no longer admits jobs (no ``start``, or its deadline passed)."""
    drain = w.drain
    return drain is not None and (drain.start is None or w.now >= drain.deadline)


def end_drain_admissions(w: Work) -> None:
    """Once the last job that was running when a drain with a ``start`` expression began has
    left, the drain stops admitting jobs and evicts the ones it admitted (seed 004: "when the
    last retiring job finishes, the others are evicted" with no retirement)."""
    drain = w.drain
    if drain is None or drain.start is None or w.now >= drain.deadline:
        return
    running = [r for r in w.slots.values() if r.job_start is not None]
    if any(r.job_start is not None and r.job_start <= drain.since for r in running):
        return
    w.drain = attrs.evolve(drain, deadline=w.now)
    for record in running:
        w.update(record.name, preempt_deadline=w.now)


def drain_admits(w: Work, policy: SlotPolicy, ad: ClassAd, job: ClassAd) -> bool:
    """Whether the drain in progress lets ``job`` start on the slot of ``policy``: its
    ``start`` is TRUE for the job."""
    drain = w.drain
    if drain is None:
        return True
    if drain_closed(w) or drain.start is None:
        return False
    return evaluate(parse_expr(drain.start), ad, job, w.now, policy.functions) is True


def _lease_expired(record: SlotRecord, now: float) -> bool:
    return record.claim is not None and now >= record.claim.lease_ends()


def _owner_side(w: Work, name: str, policy: SlotPolicy, benchmarks_reported: bool) -> bool:
    record, ad, now = w.slots[name], w.ad(name), w.now
    place = record.place
    owner = is_true(policy.knob("IS_OWNER"), ad, None, now)
    if place == OWNER:
        if drain_closed(w):
            w.move(name, DRAINED_RETIRING, 36, "draining started")
            return True
        if not owner:
            w.move(name, UNCLAIMED, 1, "IS_OWNER is not TRUE")
            return True
        return False
    if drain_closed(w):
        w.move(name, DRAINED_RETIRING, 37, "draining started")
        return True
    if owner:
        w.move(name, OWNER, 2, "IS_OWNER is TRUE")
        return True
    if place == BENCHMARKING:
        if benchmarks_reported:
            return False  # until the daemon reports the end (Engine.benchmarks_finished)
        w.last_benchmark = max(int(now), 1)
        w.move(name, UNCLAIMED, 4, "the benchmarks finished")
        return True
    if is_true(policy.knob("RUNBENCHMARKS"), ad, None, now):
        w.move(name, BENCHMARKING, 3, "RUNBENCHMARKS is TRUE")
        if benchmarks_reported:
            w.act(ActionKind.RUN_BENCHMARKS, name)
        return True
    # A partitionable slot stays Unclaimed: a claim carves its dynamic slots only from there,
    # so backfill on it would keep every job away.
    if (
        policy.enable_backfill
        and record.kind != "partitionable"
        and is_true(policy.knob("START_BACKFILL"), ad, None, now)
    ):
        w.move(name, BACKFILL_IDLE, 7, "ENABLE_BACKFILL and START_BACKFILL are TRUE")
        return True
    return False


def _claimed(w: Work, name: str, policy: SlotPolicy) -> bool:
    record, ad, now = w.slots[name], w.ad(name), w.now
    job = job_of(record)
    place = record.place
    if place == CLAIMED_IDLE:
        if _lease_expired(record, now):
            w.update(name, fast=True)
            preempt(w, name, 10, "the claim lease expired", policy)
        elif is_false(policy.knob("START"), ad, job, now):
            # Seed 000 says "locally evaluates to FALSE"; START is evaluated against the claim's
            # job, as the startd does, because read literally the seed's own interactive-job
            # policy (SLOT1_START needs TARGET.InteractiveJob) would evict every claim it took.
            preempt(w, name, 10, "START is FALSE for the claim's job", policy)
        elif worklife_expired(record, policy, now):
            preempt(w, name, 10, "CLAIM_WORKLIFE expired", policy)
        else:
            return False
        return True
    want_suspend = is_true(policy.knob("WANT_SUSPEND", job), ad, job, now)
    suspend = want_suspend and is_true(policy.knob("SUSPEND", job), ad, job, now)
    if place == BUSY:
        if _lease_expired(record, now):
            w.move(name, RETIRING, 13, "the claim lease expired", preempt_deadline=now, fast=True)
        elif record.preempt_deadline is not None and now >= record.preempt_deadline:
            w.move(
                name,
                RETIRING,
                13,
                "the drain deadline passed",
                retire_from=now,
                retire_reason=RETIRE_FOR_EVICTION,
            )
        elif suspend:
            w.move(name, SUSPENDED, 14, "WANT_SUSPEND and SUSPEND are TRUE", suspended_since=now)
            w.act(ActionKind.SUSPEND, name)
            w.just_suspended.add(name)
        elif not want_suspend and is_true(policy.knob("PREEMPT", job), ad, job, now):
            w.move(
                name,
                RETIRING,
                13,
                "PREEMPT is TRUE",
                retire_from=now,
                retire_reason=RETIRE_FOR_PREEMPT,
            )
        else:
            return False
        return True
    if place == SUSPENDED:
        return _suspended(w, name, policy, ad, job)
    if place == RETIRING:
        if record.job_start is None:
            preempt(w, name, 18, "the job finished while retiring", policy)
        elif now >= soft_kill_time(record, policy, ad, now):
            preempt(w, name, 18, "the retirement time ran out", policy)
        elif record.preempting is None and record.retire_reason == RETIRE_FOR_CLAIM:
            w.move(name, BUSY, 19, "the preempting claim went away", retire_from=None)
            w.update(name, retire_reason=None)
        elif suspend:
            w.move(name, SUSPENDED, 20, "WANT_SUSPEND and SUSPEND are TRUE", suspended_since=now)
            w.act(ActionKind.SUSPEND, name)
            w.just_suspended.add(name)
        else:
            return False
        return True
    return False


def _suspended(w: Work, name: str, policy: SlotPolicy, ad: ClassAd, job: ClassAd | None) -> bool:
    record, now = w.slots[name], w.now
    resumed = record.suspended_seconds(now)
    retiring = record.retire_from is not None or record.preempting is not None
    if record.job_start is None:
        preempt(w, name, 17, "the job exited while suspended", policy)
    elif _lease_expired(record, now):
        w.update(name, fast=True)
        preempt(w, name, 17, "the claim lease expired", policy)
    elif retiring and now >= soft_kill_time(record, policy, ad, now):
        # Seed 000, transition 17: the retirement time expires during a suspended retirement
        # (only when it was lowered meanwhile, or a deadline was set: a release, a drain).
        preempt(w, name, 17, "the retirement time ran out while suspended", policy)
    elif not retiring and is_true(policy.knob("PREEMPT", job), ad, job, now):
        # Seed 000: "If the PREEMPT expression is TRUE, the machine will enter the
        # Claimed/Retiring activity (transition 16)"; time suspended does not count against
        # the retirement, which then decides when the job is vacated (18).
        w.move(name, RETIRING, 16, "PREEMPT is TRUE", suspended_since=None)
        w.update(name, suspended_total=resumed, retire_from=now, retire_reason=RETIRE_FOR_PREEMPT)
        w.act(ActionKind.CONTINUE, name)
    elif name not in w.just_suspended and is_true(policy.knob("CONTINUE", job), ad, job, now):
        target, number_ = (RETIRING, 16) if retiring else (BUSY, 15)
        cause = "CONTINUE is TRUE" + (" on a preempted claim" if retiring else "")
        w.move(name, target, number_, cause, suspended_since=None, suspended_total=resumed)
        w.act(ActionKind.CONTINUE, name)
    else:
        return False
    return True


def worklife_expired(record: SlotRecord, policy: SlotPolicy, now: float) -> bool:
    """Whether the claim has outlived CLAIM_WORKLIFE (a negative value: it never does)."""
    worklife = policy.number("CLAIM_WORKLIFE")
    return record.claim is not None and worklife >= 0 and now >= record.claim.made_at + worklife


def after_preempting(w: Work, name: str) -> None:
    """The job is gone: to Claimed/Idle for a waiting claim (23, 24), else to Owner (22, 25);
    a dynamic slot whose claim ended is deleted."""
    record = w.slots[name]
    vacating = record.place == VACATING
    clear: dict[str, object] = {
        "job_start": None,
        "job_id": None,
        "vacate_started": None,
        "vacate_allowed": None,
        "kill_started": None,
        "preempt_deadline": None,
        "retire_from": None,
        "fast": False,
        "suspended_total": 0.0,
        "vacate_reason": None,
        "removed": False,
    }
    if record.preempting is not None and not w.shutting_down:
        number_ = 23 if vacating else 24
        w.move(
            name,
            CLAIMED_IDLE,
            number_,
            "the job left; the preempting claim takes the slot",
            claim=record.preempting,
            preempting=None,
            retire_reason=None,
            **clear,
        )
        return
    number_ = 22 if vacating else 25
    w.move(name, OWNER, number_, "the job left; the claim ended", claim=None, **clear)
    w.update(name, preempting=None, retire_reason=None)
    if record.kind == "dynamic":
        w.act(ActionKind.DELETE_SLOT, name)
        w.release_dynamic(name)


def _preempting(w: Work, name: str, policy: SlotPolicy) -> bool:
    record, ad, now = w.slots[name], w.ad(name), w.now
    job = job_of(record)
    if record.job_start is None:
        after_preempting(w, name)
        return True
    if record.place == VACATING:
        assert record.vacate_started is not None
        if is_true(policy.knob("KILL", job), ad, job, now):
            w.move(name, KILLING, 21, "KILL is TRUE", kill_started=now)
        elif now >= record.vacate_started + _allowed(record, policy, ad, now):
            w.move(name, KILLING, 21, "the vacate time ran out", kill_started=now)
        else:
            return False
        w.act(ActionKind.HARD_KILL, name)
        return True
    assert record.kill_started is not None
    if now >= record.kill_started + policy.number("KILLING_TIMEOUT"):
        w.notes.append(f"{name}: KILLING_TIMEOUT expired; the starter is killed")
        w.act(ActionKind.KILL_STARTER, name, record.claim.claim_id if record.claim else None)
        w.update(name, job_start=None)
        after_preempting(w, name)
        return True
    return False


def _allowed(record: SlotRecord, policy: SlotPolicy, ad: ClassAd, now: float) -> float:
    """The vacating time fixed when the job was soft-killed."""
    if record.vacate_allowed is not None:
        return record.vacate_allowed
    return vacate_time(record, policy, ad, now)


def _backfill(w: Work, name: str, policy: SlotPolicy) -> bool:
    record, ad, now = w.slots[name], w.ad(name), w.now
    evict = is_true(policy.knob("EVICT_BACKFILL"), ad, None, now)
    if record.place == BACKFILL_KILLING:
        if record.backfill_running:
            return False
        # Seed 000: once the client is gone the slot enters Backfill/Idle (29), and from
        # there moves on at once according to what had the client killed.
        w.move(name, BACKFILL_IDLE, 29, "the backfill client is gone")
        return True
    if record.place == BACKFILL_IDLE and _leave_backfill(w, name):
        return True
    if evict and record.place == BACKFILL_IDLE:
        w.move(name, OWNER, 30, "EVICT_BACKFILL is TRUE")
    elif evict:
        w.move(name, BACKFILL_KILLING, 28, "EVICT_BACKFILL is TRUE", backfill_reason="evict")
        w.act(ActionKind.EVICT_BACKFILL, name)
    elif (
        record.place == BACKFILL_IDLE
        and w.drain is None
        and not w.shutting_down
        and (record.entered_state == now or is_true(policy.knob("START_BACKFILL"), ad, None, now))
    ):
        w.move(name, BACKFILL_BUSY, 26, "the backfill client runs", backfill_running=True)
        w.act(ActionKind.START_BACKFILL, name)
    else:
        return False
    return True


def _leave_backfill(w: Work, name: str) -> bool:
    """Backfill/Idle after the client was killed: to Owner after an eviction (30), to the
    match (32) or the claim (31) that had it killed."""
    record = w.slots[name]
    reason = record.backfill_reason
    if reason == "evict":
        w.move(name, OWNER, 30, "the backfill client was evicted", backfill_reason=None)
    elif reason == "match":
        w.move(name, MATCHED, 32, "matched during backfill", backfill_reason=None)
    elif record.preempting is not None:
        w.move(name, CLAIMED_IDLE, 31, "claimed during backfill", claim=record.preempting)
        w.update(name, preempting=None, backfill_reason=None)
    elif reason is not None:
        w.update(name, backfill_reason=None)  # the claim went away meanwhile
        return False
    else:
        return False
    return True


def _drained(w: Work, name: str) -> bool:
    record = w.slots[name]
    busy = any(r.place.state in (S.CLAIMED, S.PREEMPTING) for r in w.slots.values())
    if busy or w.drain is None:
        return False
    if w.drain.finalize:
        w.drain = None
        for other in list(w.slots.values()):
            if other.place.state is S.DRAINED:
                w.move(other.name, OWNER, 34, "draining was finalized")
        return True
    if record.place == DRAINED_RETIRING:
        w.move(name, DRAINED_IDLE, 33, "every slot is drained")
        return True
    return False


def step_slot(w: Work, name: str, policy: SlotPolicy, *, benchmarks_reported: bool = False) -> bool:
    """Evaluate slot ``name``'s policy once; True when it moved.

    ``benchmarks_reported``: a slot entering Benchmarking asks for the benchmarks to be run
    (the ``run_benchmarks`` action) and stays there until they are reported finished;
    otherwise the benchmarks count as done at the next evaluation (the policy simulator).
    """
    state = w.slots[name].place.state
    if state in (S.OWNER, S.UNCLAIMED):
        return _owner_side(w, name, policy, benchmarks_reported)
    if state is S.MATCHED:
        record, ad = w.slots[name], w.ad(name)
        if is_false(policy.knob("START"), ad, None, w.now):
            w.move(name, OWNER, 8, "START is locally FALSE")
        elif w.now >= record.entered_state + policy.number("MATCH_TIMEOUT"):
            w.move(name, OWNER, 8, "MATCH_TIMEOUT expired")
        else:
            return False
        return True
    if state is S.CLAIMED:
        return _claimed(w, name, policy)
    if state is S.PREEMPTING:
        return _preempting(w, name, policy)
    if state is S.BACKFILL:
        return _backfill(w, name, policy)
    return _drained(w, name)


def next_deadline(
    record: SlotRecord, policy: SlotPolicy, ad_of: Callable[[], ClassAd], now: float
) -> float:
    """The next time a timer of this slot fires (inf when none is running). ``ad_of`` gives
    the slot's ad, which only the retirement and vacating timers read (building every
    slot's ad to find out that no timer runs was most of a daemon loop's turn)."""
    times = [math.inf]
    place = record.place
    if place == MATCHED:
        times.append(record.entered_state + policy.number("MATCH_TIMEOUT"))
    if record.claim is not None and place.state is S.CLAIMED:
        times.append(record.claim.lease_ends())
        worklife = policy.number("CLAIM_WORKLIFE")
        if place == CLAIMED_IDLE and worklife >= 0:
            times.append(record.claim.made_at + worklife)
    if place == BUSY and record.preempt_deadline is not None:
        times.append(record.preempt_deadline)
    retiring_suspended = place == SUSPENDED and (
        record.retire_from is not None or record.preempting is not None
    )
    if place == RETIRING or retiring_suspended:
        times.append(soft_kill_time(record, policy, ad_of(), now))
    if place == VACATING and record.vacate_started is not None:
        times.append(record.vacate_started + _allowed(record, policy, ad_of(), now))
    if place == KILLING and record.kill_started is not None:
        times.append(record.kill_started + policy.number("KILLING_TIMEOUT"))
    return min(times)
