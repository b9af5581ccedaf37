"""The records that cross between the negotiator and the schedd."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

from epcore.classad import ClassAd, Expr

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
class Significance:
    """What a negotiation cycle reads besides the ads' own expressions: the negotiator's
    expressions (ranks, preemption) and the attribute names it reads from every slot. A
    schedd tells jobs apart only by what these, the slots' and the jobs' expressions name
    (HTCondor's significant attributes)."""

    expressions: tuple[Expr, ...]
    always_read: tuple[str, ...]


@attrs.frozen
class Match:
    """A job matched to a slot in one cycle; the schedd claims the slot.

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
