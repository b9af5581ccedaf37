"""The schedd's keep-alives (ALIVE) of its running claims, on each claim's lease clock.

HTCondor's schedd sends ALIVE to the startd of every claim every alive interval, and keeps
that interval below a third of the shortest JobLeaseDuration in its queue (schedd.cpp:
"so that even if we miss two keep alives in a row, the startd won't kill the claim").
Here each claim has its own interval, min(ALIVE_INTERVAL, JobLeaseDuration / 3), read once
when the claim starts running, so a job with a short lease does not make every other claim
chatty. HTCondor floors the lease's third at 10 s; here the floor is 1 s, as the pool's
tests give jobs leases of a few seconds (the startd's claim lease is JobLeaseDuration, else
6 x ALIVE_INTERVAL, so either interval keeps it).

The schedd's loop wakes for the next one due (:meth:`KeepAlives.next_due`, in the schedd
service's timeout), whatever else happens: a quiet schedd still keeps its claims.
"""

from __future__ import annotations

import contextlib
import heapq
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError
from epcore.interfaces import Locator, StartdLink

if TYPE_CHECKING:
    from epcore.schedd.claims import RunningJob

#: The shortest interval between two keep-alives of a claim, in seconds.
SHORTEST: Final = 1.0


def alive_every(config: Config, job: ClassAd) -> float:
    """Seconds between two keep-alives of ``job``'s claim (module docstring)."""
    every = config.get_float("ALIVE_INTERVAL", 300.0)
    lease = job.evaluate("JobLeaseDuration")
    if isinstance(lease, int | float) and not isinstance(lease, bool) and lease > 0:
        every = min(every, lease / 3)
    return max(every, SHORTEST)


class KeepAlives:
    """When each running claim's next ALIVE is due (module docstring)."""

    def __init__(self) -> None:
        #: (due, claim id), the soonest first; an entry whose due is not the claim's in
        #: ``_due`` (the claim ended, or started again with a new job) is skipped.
        self._heap: list[tuple[float, str]] = []
        self._due: dict[str, float] = {}
        self._every: dict[str, float] = {}

    def add(self, claim_id: str, every: float, due: float) -> None:
        """``claim_id`` runs a job whose keep-alives go every ``every`` s, the first at
        ``due``."""
        self._every[claim_id] = every
        self._due[claim_id] = due
        heapq.heappush(self._heap, (due, claim_id))

    def next_due(self) -> float | None:
        """When the soonest keep-alive is due (None: no claim runs)."""
        while self._heap and self._due.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)  # stale: the claim ended or was added again
        return self._heap[0][0] if self._heap else None

    def send(
        self, running: Mapping[str, RunningJob], startds: Locator[StartdLink], now: float
    ) -> int:
        """ALIVE to the startd of every running claim whose keep-alive is due; how many."""
        sent = 0
        while self._heap and self._heap[0][0] <= now:
            due, claim_id = heapq.heappop(self._heap)
            if self._due.get(claim_id) != due:
                continue
            job = running.get(claim_id)
            if job is None:
                del self._due[claim_id]
                self._every.pop(claim_id, None)
                continue
            # A claim that ended between two turns: its result comes separately.
            with contextlib.suppress(EpError):
                startds.link(job.startd).alive(claim_id)
            sent += 1
            self.add(claim_id, self._every[claim_id], now + self._every[claim_id])
        return sent
