"""The values the policy engine works on and returns: slot records, transitions and actions.

Everything here is frozen. The engine never changes a record; each event returns a new
:class:`EngineState`, the :class:`TransitionRecord` of every move it made and the
:class:`Action` records the daemon must carry out (the engine itself performs nothing).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping

import attrs

from epcore.slots.model import SlotLayout
from epcore.slots.slot_status import (
    ClaimInfo,
    DrainingTotals,
    PreemptingClaim,
    RunningJob,
    SlotStatus,
)
from epcore.state.claims import Claim
from epcore.state.states import Activity, Place, State


@attrs.frozen
class TransitionRecord:
    """One move of one slot: when, which slot, from and to, the edge and what caused it."""

    time: float
    slot: str
    old: Place
    new: Place
    number: int
    letter: str | None
    cause: str

    def __str__(self) -> str:
        letter = f" {self.letter}" if self.letter else ""
        return f"{self.slot}: {self.old} -> {self.new} [{self.number}{letter}] {self.cause}"


class ActionKind(enum.StrEnum):
    """What an action asks of the daemon; the values are the words logs and notes print."""

    #: Start the starter for the slot's claim.
    SPAWN_STARTER = "spawn_starter"
    #: Vacate the job: the starter sends it its soft-kill signal.
    SOFT_KILL = "soft_kill"
    #: Kill the job now.
    HARD_KILL = "hard_kill"
    SUSPEND = "suspend"
    CONTINUE = "continue"
    START_BACKFILL = "start_backfill"
    EVICT_BACKFILL = "evict_backfill"
    #: Remove a dynamic slot (its ad leaves the collector).
    DELETE_SLOT = "delete_slot"
    #: KILLING_TIMEOUT ran out: seed 000, SIGKILL "to all of the condor_starter's children,
    #: and then to the condor_starter itself".
    KILL_STARTER = "kill_starter"
    #: Run the benchmarks (the slot is in Owner/Benchmarking).
    RUN_BENCHMARKS = "run_benchmarks"


@attrs.frozen
class VacateReason:
    """Why the startd ends a claim, as the job's VacateReason, VacateReasonCode and
    VacateReasonSubCode record it (HTCondor's startd hands these to the starter, whose
    shadow writes them into the job ad)."""

    reason: str
    code: int
    subcode: int = 0


@attrs.frozen
class Action:
    """Something the daemon must do for a slot."""

    kind: ActionKind
    slot: str
    claim_id: str | None = None


@attrs.frozen
class SlotRecord:
    """Everything the engine knows about one slot.

    ``job_start`` is when the current job started (None: no job runs); ``suspended_total`` the
    seconds that job has spent suspended before ``suspended_since``; ``retire_from`` when the
    job entered retirement; ``preempt_deadline`` overrides the retirement end (vacate, lease
    loss); ``vacate_started`` / ``kill_started`` when the job was soft- or hard-killed, and
    ``vacate_allowed`` the vacating time it was given then.
    ``totals`` are the Total<State><Activity>Time accumulators of the activities left so far.
    ``preempting`` is the claim waiting for the slot (after Preempting the slot goes to it,
    else to Owner); ``retire_reason`` says why the slot retires: ``"claim"`` when that claim
    caused the retirement (which then ends if the claim goes away, 19), else ``"preempt"`` or
    ``"eviction"`` (vacate, release, drain, shutdown), which nothing takes back.
    ``vacate_reason`` is the reason and code an eviction gave (hibernation), carried to the
    starter with the kill and cleared when the job has left; ``removed`` says the same of a
    release because the job was removed (the starter then keeps nothing of it).
    ``backfill_reason`` says why the backfill client is being killed: ``"evict"``
    (EVICT_BACKFILL: to Owner, 30), ``"match"`` (to Matched, 32), anything else (back to
    Backfill/Idle, 29, or to the waiting claim, 31).
    """

    name: str
    slot_id: int
    sub_id: int | None
    kind: str
    place: Place
    entered_state: float
    entered_activity: float
    claim: Claim | None = None
    preempting: Claim | None = None
    job_start: float | None = None
    job_id: str | None = None
    suspended_total: float = 0.0
    suspended_since: float | None = None
    retire_from: float | None = None
    retire_reason: str | None = None
    preempt_deadline: float | None = None
    vacate_started: float | None = None
    vacate_allowed: float | None = None
    kill_started: float | None = None
    fast: bool = False
    backfill_running: bool = False
    backfill_reason: str | None = None
    vacate_reason: VacateReason | None = None
    removed: bool = False
    totals: Mapping[str, float] = attrs.field(factory=dict)

    def suspended_seconds(self, now: float) -> float:
        """Seconds the current job has spent suspended, the current suspension to ``now``."""
        total = self.suspended_total
        if self.suspended_since is not None:
            total += now - self.suspended_since
        return total

    def status(self, accepting: bool = True) -> SlotStatus:
        """The :class:`SlotStatus` the ad builder takes for this slot (``accepting`` False
        while the startd drains or shuts down: Requirements = False)."""
        claim = self.claim
        job = None
        if self.job_start is not None:
            job = RunningJob(
                self.job_id or "1.0", self.job_start, self.suspended_total, self.suspended_since
            )
        info = None
        if claim is not None:
            info = ClaimInfo(
                remote_user=claim.user,
                remote_owner=claim.owner,
                client_machine=claim.client_machine,
                run_time=claim.run_time,
                suspend_time=claim.suspend_time,
                accounting_group=claim.text("AccountingGroup"),
                concurrency_limits=claim.text("ConcurrencyLimits"),
            )
        preempting = None
        if self.preempting is not None:
            p = self.preempting
            preempting = PreemptingClaim(p.owner, p.user, p.rank)
        state_name, activity_name = self.place.names
        return SlotStatus(
            state=state_name,
            activity=activity_name,
            entered_state=self.entered_state,
            entered_activity=self.entered_activity,
            current_rank=claim.rank if claim is not None else 0.0,
            claim=info,
            job=job,
            preempting=preempting,
            accepting=accepting,
            time_totals=tuple(self.totals.items()),
        )


@attrs.frozen
class Drain:
    """A drain in progress: how, the START of jobs allowed meanwhile, finalize when done.

    ``deadline`` is when the jobs running at the start of a graceful drain have used up their
    retirement; jobs admitted by ``start`` may run until then, and idle slots stay claimable
    until then.
    """

    how: str
    start: str | None = None
    finalize: bool = False
    since: float = 0.0
    deadline: float = 0.0
    #: DrainReason the slots advertise meanwhile (condor_defrag finds its own drains by it).
    reason: str | None = None


@attrs.frozen
class EngineState:
    """One startd's slots, its layout, the drain and shutdown in progress, LastBenchmark.

    ``draining_unclaimed`` and ``draining_badput`` are TotalMachineDrainingUnclaimedTime and
    TotalMachineDrainingBadput: core-seconds of slots without a job while draining, and
    core-seconds of job run time thrown away by draining evictions; ``accounted_at`` is when
    the unclaimed time was last added up.
    """

    slots: tuple[SlotRecord, ...]
    layout: SlotLayout
    drain: Drain | None = None
    shutting_down: bool = False
    last_benchmark: int = 0
    claims_made: int = 0
    draining_unclaimed: float = 0.0
    draining_badput: float = 0.0
    accounted_at: float = 0.0

    def slot(self, name: str) -> SlotRecord | None:
        """The record of slot ``name`` (``slot1``, ``slot1_2``), or None."""
        for record in self.slots:
            if record.name == name:
                return record
        return None

    def idle_cpus(self) -> float:
        """Cpus of every slot running no job (a partitionable slot: what it has left)."""
        cpus = 0.0
        for record in self.slots:
            slot = self.layout.find(record.slot_id, record.sub_id)
            if slot is not None and record.job_start is None:
                cpus += float(slot.resources.cpus)
        return cpus

    def unclaimed_core_seconds(self, now: float) -> float:
        """TotalMachineDrainingUnclaimedTime at ``now``."""
        total = self.draining_unclaimed
        if self.drain is not None:
            total += (now - self.accounted_at) * self.idle_cpus()
        return total

    @property
    def accepting(self) -> bool:
        """Whether the slots take new jobs: not while draining or shutting down."""
        return self.drain is None and not self.shutting_down

    def statuses(self) -> dict[str, SlotStatus]:
        """Every slot's :class:`SlotStatus`, by short name, for the ads builder."""
        return {record.name: record.status(self.accepting) for record in self.slots}

    def draining_totals(self, now: float) -> DrainingTotals:
        """The machine's draining figures at ``now`` (:class:`DrainingTotals`).

        The expected figures count the jobs running now: a quick drain ends now and throws
        away their run time so far; a graceful one ends when the last of them has retired
        (its deadline once set, else its own MaxJobRetirementTime; the startd's
        MAXJOBRETIREMENTTIME needs the slot ad and is left out) and throws away their run
        time up to then.
        """
        graceful_end = now
        graceful_badput = quick_badput = 0.0
        for record in self.slots:
            if record.job_start is None:
                continue
            slot = self.layout.find(record.slot_id, record.sub_id)
            cpus = float(slot.resources.cpus) if slot is not None else 1.0
            end = record.preempt_deadline
            if end is None:
                job = record.claim.job if record.claim is not None else None
                own = job.evaluate("MaxJobRetirementTime") if job is not None else None
                retire = own if isinstance(own, int | float) and not isinstance(own, bool) else 0
                end = record.job_start + max(float(retire), 0.0)
            if not math.isfinite(end):
                end = now  # a peaceful shutdown's endless retirement: no drain is to come
            end = max(end, now)
            graceful_end = max(graceful_end, end)
            graceful_badput += cpus * (end - record.job_start)
            quick_badput += cpus * (now - record.job_start)
        return DrainingTotals(
            self.unclaimed_core_seconds(now),
            self.draining_badput,
            draining=self.drain is not None,
            reason=self.drain.reason if self.drain is not None else None,
            graceful_completion=graceful_end,
            graceful_badput=graceful_badput,
            quick_completion=now,
            quick_badput=quick_badput,
        )


def initial_record(
    name: str, slot_id: int, sub_id: int | None, kind: str, now: float
) -> SlotRecord:
    """A slot as a startd starts it: Owner/Idle, entered ``now``."""
    return SlotRecord(name, slot_id, sub_id, kind, Place(State.OWNER, Activity.IDLE), now, now)


class StatusMemo:
    """Hands the ads builder the same :class:`SlotStatus` object for a slot as long as its
    record is the same object, so that the builder can tell at a glance which slots moved.

    Records are frozen and the engine replaces a record only when the slot changes, so the
    record's identity is a complete test; the memo keeps the record to hold its identity.
    """

    def __init__(self) -> None:
        self._known: dict[str, tuple[SlotRecord, bool, SlotStatus]] = {}

    def statuses(self, state: EngineState) -> dict[str, SlotStatus]:
        """Every slot's status, by short name (what :meth:`EngineState.statuses` gives)."""
        accepting = state.accepting
        known: dict[str, tuple[SlotRecord, bool, SlotStatus]] = {}
        result: dict[str, SlotStatus] = {}
        for record in state.slots:
            found = self._known.get(record.name)
            if found is None or found[0] is not record or found[1] != accepting:
                found = (record, accepting, record.status(accepting))
            known[record.name] = found
            result[record.name] = found[2]
        self._known = known
        return result
