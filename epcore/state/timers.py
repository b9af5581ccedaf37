"""A slot's clocks: when a retiring job's time is up, how long a job may vacate, when a claim
has outlived CLAIM_WORKLIFE, and the next moment any of a slot's timers fires.

The policy rules (:mod:`epcore.state.rules`) ask these at every evaluation and the events
(:mod:`epcore.state.admin_events`, :mod:`epcore.state.claim_events`) when they set a deadline;
the engine asks :func:`next_deadline` so that its daemon sleeps until then. Pure: time
arrives as ``now``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from epcore.classad import ClassAd
from epcore.state.policy import SlotPolicy, knob_value, number
from epcore.state.records import SlotRecord
from epcore.state.states import BUSY, CLAIMED_IDLE, KILLING, MATCHED, RETIRING, SUSPENDED, VACATING
from epcore.state.states import State as S


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


def fixed_vacate_time(record: SlotRecord, policy: SlotPolicy, ad: ClassAd, now: float) -> float:
    """The vacating time fixed when the job was soft-killed."""
    if record.vacate_allowed is not None:
        return record.vacate_allowed
    return vacate_time(record, policy, ad, now)


def soft_kill_time(record: SlotRecord, policy: SlotPolicy, ad: ClassAd, now: float) -> float:
    """When a retiring job is soft-killed: as many seconds before the end of its retirement as
    it will get to vacate, "so that the hard-killing of the job will not happen until the end
    of the retirement time" (seed 000, MAXJOBRETIREMENTTIME)."""
    job = job_of(record)
    own = _job_vacate_time(job)
    lead = _machine_vacate_time(policy, ad, job, now) if own is None else own
    return retirement_end(record, policy, ad, now) - lead


def lease_expired(record: SlotRecord, now: float) -> bool:
    """Whether the slot's claim lease has run out."""
    return record.claim is not None and now >= record.claim.lease_ends()


def worklife_expired(record: SlotRecord, policy: SlotPolicy, now: float) -> bool:
    """Whether the claim has outlived CLAIM_WORKLIFE (a negative value: it never does)."""
    worklife = policy.number("CLAIM_WORKLIFE")
    return record.claim is not None and worklife >= 0 and now >= record.claim.made_at + worklife


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
        times.append(record.vacate_started + fixed_vacate_time(record, policy, ad_of(), now))
    if place == KILLING and record.kill_started is not None:
        times.append(record.kill_started + policy.number("KILLING_TIMEOUT"))
    return min(times)
