"""What the policy engine knows about a slot, handed to the ad builder: state, claim, job.

The ad builder is pure and stateless; everything that changes as the startd runs (the State and
Activity and when they were entered, the claim, the running job, the load the job makes) comes
in as a :class:`SlotStatus`. The policy engine (issue 5) produces these; until then every slot
has the default record: the Owner state and Idle activity a startd starts in.
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
    """The claim a slot is under: who holds it and how long it has run or been suspended."""

    remote_user: str
    remote_owner: str
    client_machine: str
    total_run_time: int = 0
    total_suspend_time: int = 0


@attrs.frozen
class RunningJob:
    """The job running on a slot: its id (``"152.3"``), start time and run/suspend totals."""

    job_id: str
    started_at: float
    total_run_time: int = 0
    total_suspend_time: int = 0


@attrs.frozen
class PreemptingClaim:
    """A claim waiting for the slot while the current one is preempted."""

    owner: str
    user: str
    rank: float


@attrs.frozen
class SlotStatus:
    """The policy engine's view of one slot at one moment.

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


#: The status of a slot the policy engine has said nothing about: how a startd starts.
INITIAL_STATUS = SlotStatus()


@attrs.frozen
class Benchmarks:
    """Results of the startd's benchmarks; None until they have run (LastBenchmark 0)."""

    mips: int | None = None
    kflops: int | None = None
    last_run: int = 0
