"""What the policy engine knows about a slot, handed to the ad builder: state, claim, job.

The ad builder does no accounting of its own; everything that changes as the startd runs (the
State and Activity and when they were entered, the time totals, the claim, the running job, the
load the job makes) comes in as a :class:`SlotStatus`, which the policy engine produces
(:meth:`epcore.state.records.SlotRecord.status`). A slot the engine says nothing about has the
default record: the Owner state and Idle activity a startd starts in.
"""

from __future__ import annotations

import attrs

#: The states of a slot, in the order HTCondor numbers them (the order in which owner load and
#: keyboard activity are handed out: Owner slots first).
STATES = ("Owner", "Unclaimed", "Matched", "Claimed", "Preempting", "Backfill", "Drained")

#: The activities of a slot.
ACTIVITIES = ("Idle", "Busy", "Suspended", "Retiring", "Vacating", "Killing", "Benchmarking")


@attrs.frozen
class ClaimInfo:
    """The claim a slot is under: who holds it, and the seconds the jobs that already finished
    on it ran and were suspended (TotalClaimRunTime and TotalClaimSuspendTime add the running
    job's at the time of the ad)."""

    remote_user: str
    remote_owner: str
    client_machine: str
    run_time: float = 0.0
    suspend_time: float = 0.0
    #: The job's AccountingGroup and ConcurrencyLimits (None: it has none), which the
    #: negotiator reads back from the slot ad to count group usage and concurrency limits.
    accounting_group: str | None = None
    concurrency_limits: str | None = None


@attrs.frozen
class RunningJob:
    """The job running on a slot: its id (``"152.3"``), its start time, the seconds it spent
    suspended before ``suspended_since``, and when its current suspension began (None: it is
    not suspended). Its run time at ``now`` is the time since the start less the suspensions."""

    job_id: str
    started_at: float
    suspended_time: float = 0.0
    suspended_since: float | None = None

    def suspended_at(self, now: float) -> float:
        """Seconds the job has spent suspended by ``now``."""
        if self.suspended_since is None:
            return self.suspended_time
        return self.suspended_time + max(now - self.suspended_since, 0.0)

    def run_time_at(self, now: float) -> float:
        """Seconds the job has run (not suspended) by ``now``."""
        return max(now - self.started_at - self.suspended_at(now), 0.0)


@attrs.frozen
class PreemptingClaim:
    """A claim waiting for the slot while the current one is preempted."""

    owner: str
    user: str
    rank: float


@attrs.frozen
class SlotStatus:
    """The policy engine's view of one slot: the same record until the slot changes (the ad
    builder works out the times at ``now`` from it).

    ``entered_state`` and ``entered_activity`` are epoch seconds (None: when the startd
    started). ``condor_load_avg`` is the load of the slot's own processes (its job or the
    benchmarks). ``accepting`` is False while the startd is draining or shutting down, which
    makes the slot advertise ``Requirements = False``.
    """

    state: str = attrs.field(default="Owner", validator=attrs.validators.in_(STATES))
    activity: str = attrs.field(default="Idle", validator=attrs.validators.in_(ACTIVITIES))
    entered_state: float | None = None
    entered_activity: float | None = None
    current_rank: float = 0.0
    condor_load_avg: float = 0.0
    claim: ClaimInfo | None = None
    job: RunningJob | None = None
    preempting: PreemptingClaim | None = None
    accepting: bool = True
    time_totals: tuple[tuple[str, float], ...] = ()


#: The status of a slot the policy engine has said nothing about: how a startd starts.
INITIAL_STATUS = SlotStatus()


@attrs.frozen
class Benchmarks:
    """Results of the startd's benchmarks; None until they have run (LastBenchmark 0)."""

    mips: int | None = None
    kflops: int | None = None
    last_run: int = 0


@attrs.frozen
class DrainingTotals:
    """TotalMachineDrainingUnclaimedTime and TotalMachineDrainingBadput: core-seconds left
    unused while draining, and core-seconds of job run time draining threw away; whether the
    machine drains (Draining) and why (DrainReason); and what a drain would cost now
    (ExpectedMachine{Graceful,Quick}Draining{Completion,Badput}: when it would be done,
    core-seconds of job run time it would throw away), which condor_defrag ranks and checks
    machines by."""

    unclaimed_time: float = 0.0
    badput: float = 0.0
    draining: bool = False
    reason: str | None = None
    graceful_completion: float = 0.0
    graceful_badput: float = 0.0
    quick_completion: float = 0.0
    quick_badput: float = 0.0
