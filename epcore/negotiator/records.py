"""The values a negotiation cycle takes and returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

import attrs

from epcore.classad import ClassAd

if TYPE_CHECKING:
    from epcore.negotiator.accountant import Accountant

#: Why a slot is a candidate for a job, best first (seed 004's "reason for claim").
Reason = Literal["no_preemption", "rank", "priority"]

REASON_ORDER: Mapping[str, int] = {"no_preemption": 2, "rank": 1, "priority": 0}


@attrs.frozen
class SubmitterJobs:
    """One accounting principal's idle jobs, in the schedd's order (JobPrio descending, then
    QDate, ClusterId and ProcId)."""

    submitter: str
    jobs: tuple[ClassAd, ...]


@attrs.frozen
class Match:
    """A job matched to a slot in one cycle; the daemon claims the slot.

    ``preempts`` names the slots whose running jobs this match evicts: the slot itself for
    rank or priority preemption of a static or dynamic slot, the dynamic slots for preemption
    through a partitionable slot, nothing otherwise. ``slot`` is the slot ad as matched (for a
    partitionable slot, with the resources it had at that point of the cycle, or with the
    preempted dynamic slots' resources returned); ``weight`` is what the match counts against
    the submitter's share (the slot's SlotWeight, or what a consumption policy takes).
    """

    submitter: str
    job_id: str
    job: ClassAd
    slot_name: str
    slot: ClassAd
    reason: Reason
    preempts: tuple[str, ...] = ()
    weight: float = 1.0


@attrs.frozen
class CycleStats:
    """Counts of one cycle: jobs considered (asked for a slot), autoclusters among the idle
    jobs, and spins of the pie after the floor round."""

    submitters: int = 0
    jobs_considered: int = 0
    matches: int = 0
    preemptions: int = 0
    rejections: int = 0
    autoclusters: int = 0
    spins: int = 0


@attrs.frozen
class Cycle:
    """What one negotiation cycle decided.

    ``pie`` is each submitter's first slice of the pool's slot weight (after its ceiling);
    ``rejections`` says, per job id, why a job that was considered got no slot; ``failures``
    names the jobs the cycle could not handle at all (an exception while keying or matching
    them), with the error: they and their autoclusters were skipped, the rest negotiated.
    """

    matches: tuple[Match, ...]
    accountant: Accountant
    pie: Mapping[str, float]
    rejections: Mapping[str, str]
    stats: CycleStats
    failures: Mapping[str, str] = attrs.field(factory=dict)
