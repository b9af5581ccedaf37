"""The results of jobs that ran on startds in other processes, as EP_JOB_RESULT brings them
(:mod:`epcore.links.results` sends them; the handler is in :mod:`epcore.schedd.cedar`).

A result is applied once: only while its claim (the whole id, secret included) still runs
that job here; a result applied before is acknowledged again and not applied (the startd
re-sends what it saw no answer to); any other is refused, and the startd drops it: the
claim's job went back to idle when its lease ran out, or the claim is not this schedd's.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from epcore.classad import ClassAd
from epcore.schedd.schedd import Schedd

#: How many applied results are remembered (by claim id and job id) to acknowledge a
#: re-sent one; far more than the results a startd can hold unanswered.
REMEMBERED: Final = 10_000


class ResultReceiver:
    """The schedd's side of EP_JOB_RESULT (module docstring); ``apply`` takes a result the
    way the in-process startds hand it (the schedd service's ``job_result``)."""

    def __init__(
        self,
        schedd: Schedd,
        apply: Callable[[ClassAd, float], None],
        log: logging.Logger,
    ) -> None:
        self.schedd = schedd
        self.apply = apply
        self.log = log
        self._applied: OrderedDict[tuple[str, str], None] = OrderedDict()

    def receive(self, claim_id: str, result: ClassAd, now: float) -> tuple[bool, str]:
        """Apply ``result`` of ``claim_id``'s job if it is due: (acknowledged, why)."""
        job_id = f"{result.evaluate('ClusterId')}.{result.evaluate('ProcId')}"
        key = (claim_id, job_id)
        if key in self._applied:
            return True, "already applied"
        running = self.schedd.running.get(claim_id)
        if running is None or str(running.job_id) != job_id:
            return False, f"no claim of this schedd runs job {job_id}"
        # The claim id the result names decides which running job ends: the one proven.
        result = result.copy()
        result["ClaimId"] = claim_id
        # Remembered first: a result whose handling failed half-way (the claim already
        # forgotten) is not taken again when the startd re-sends it.
        self._applied[key] = None
        while len(self._applied) > REMEMBERED:
            self._applied.popitem(last=False)
        self.apply(result, now)
        return True, "applied"
