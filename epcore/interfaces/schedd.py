"""What the other roles ask of a schedd: the negotiator's jobs and matches, the startd's
job results."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from epcore.classad import ClassAd
from epcore.interfaces.records import Match, Significance, SubmitterJobs


class JobResults(Protocol):
    """Where a startd sends the end of each job (the schedd that claimed its slot)."""

    def job_result(self, result: ClassAd, now: float) -> None:
        """A job's end, as the startd recorded it."""
        ...


class JobSource(Protocol):
    """A schedd as its negotiator sees it, once per cycle."""

    def wants_negotiation(self) -> bool:
        """Whether jobs were submitted, released or given back since the last cycle."""
        ...

    def cycle_started(self) -> None:
        """A cycle begins: what :meth:`wants_negotiation` said has been heard."""
        ...

    def reserved_slots(self) -> set[str]:
        """Slots (full names) held back for a pending claim: not for this cycle."""
        ...

    def negotiable_jobs(
        self, slots: Sequence[ClassAd], significance: Significance, now: float
    ) -> list[SubmitterJobs]:
        """The idle jobs to offer for ``slots``, each submitter's in the schedd's order."""
        ...

    def take_matches(self, matches: Sequence[Match], now: float) -> None:
        """Claim the slots of this cycle's matches and start their jobs."""
        ...
