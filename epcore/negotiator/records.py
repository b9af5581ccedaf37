"""The values a negotiation cycle takes and returns (what crosses to the schedd, :class:`Match`
and :class:`SubmitterJobs`, is defined with the interfaces)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from epcore.interfaces.records import Match

if TYPE_CHECKING:
    from epcore.negotiator.accountant import Accountant
    from epcore.negotiator.groups import GroupShare


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
    With accounting groups, ``groups`` is each group's share in the last allocation round and
    ``group_usage`` each group's slot weight in use after the cycle; ``limits`` is each
    concurrency limit's count after the cycle and its maximum.
    """

    matches: tuple[Match, ...]
    accountant: Accountant
    pie: Mapping[str, float]
    rejections: Mapping[str, str]
    stats: CycleStats
    failures: Mapping[str, str] = attrs.field(factory=dict)
    groups: tuple[GroupShare, ...] = ()
    group_usage: Mapping[str, float] = attrs.field(factory=dict)
    limits: Mapping[str, tuple[float, float]] = attrs.field(factory=dict)
