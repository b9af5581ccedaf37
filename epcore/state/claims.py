"""Claims: who holds a slot, the job they run on it, the lease that keeps the claim alive.

A ClaimId is unguessable: 128 random bits from an injected random source (the daemon passes
``random.SystemRandom()``, tests and the simulator a seeded ``random.Random``), wrapped in the
``<address>#<startd time>#<sequence>#...`` shape HTCondor uses.
"""

from __future__ import annotations

import random

import attrs

from epcore.classad import ClassAd

#: Bits of randomness in a ClaimId.
CLAIM_ID_BITS = 128


def new_claim_id(rng: random.Random, address: str, startd_time: int, sequence: int) -> str:
    """A fresh, unguessable ClaimId for a claim made at ``startd_time``."""
    secret = f"{rng.getrandbits(CLAIM_ID_BITS):032x}"
    return f"{address}#{startd_time}#{sequence}#{secret}"


def public_part(claim_id: str) -> str:
    """The part of a ClaimId that may be shown (logged, put in an error): all but the secret
    after the last ``#``, which alone proves the claim is held."""
    return claim_id.rsplit("#", 1)[0]


@attrs.frozen(eq=False)
class Claim:
    """A claim on a slot: its id, the job ad it was made for, RANK of that job, and its lease.

    ``lease`` is the number of seconds the claim lives without a keep-alive: the job's
    JobLeaseDuration, else ALIVE_INTERVAL x MAX_CLAIM_ALIVES_MISSED. ``last_alive`` is the time
    of the claim or of the last keep-alive. ``client_machine`` is the host of the schedd that
    holds the claim. ``run_time`` and ``suspend_time`` are the seconds the jobs that already
    finished on this claim ran and were suspended (TotalClaimRunTime and
    TotalClaimSuspendTime add the running job's).
    """

    claim_id: str
    job: ClassAd
    rank: float
    made_at: float
    lease: int
    last_alive: float
    client_machine: str = ""
    run_time: float = 0.0
    suspend_time: float = 0.0

    @property
    def user(self) -> str:
        """The job's User (``owner@domain``), else its Owner, else ``unknown``."""
        for name in ("User", "Owner"):
            value = self.job.evaluate(name)
            if isinstance(value, str):
                return value
        return "unknown"

    def text(self, name: str) -> str | None:
        """The job's attribute ``name`` when it is a non-empty string (an expression that does
        not evaluate to one, such as concurrency_limits_expr without its slot, is None)."""
        value = self.job.evaluate(name)
        return value if isinstance(value, str) and value else None

    @property
    def owner(self) -> str:
        """The job's Owner, else the user part of its User."""
        value = self.job.evaluate("Owner")
        return value if isinstance(value, str) else self.user.split("@", 1)[0]

    def lease_ends(self) -> float:
        """When the claim expires unless a keep-alive comes."""
        return self.last_alive + self.lease


def lease_seconds(job: ClassAd, alive_interval: int, max_missed: int) -> int:
    """The claim lease for ``job``: JobLeaseDuration when it sets one, else the startd's."""
    duration = job.evaluate("JobLeaseDuration")
    if isinstance(duration, int) and not isinstance(duration, bool) and duration > 0:
        return duration
    return alive_interval * max_missed
