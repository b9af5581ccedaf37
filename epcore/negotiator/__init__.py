"""The negotiator and its accountant: user priorities, fair share and matchmaking (seed 004).

Everything here is pure: the configuration, the accountant, the slot ads, the submitters'
idle jobs and ``now`` go in; a :class:`Cycle` comes out.
"""

from __future__ import annotations

from epcore.interfaces import Match, SubmitterJobs
from epcore.negotiator.accountant import Accountant, SubmitterRecord
from epcore.negotiator.cycle import negotiate
from epcore.negotiator.records import Cycle, CycleStats

__all__ = [
    "Accountant",
    "Cycle",
    "CycleStats",
    "Match",
    "SubmitterJobs",
    "SubmitterRecord",
    "negotiate",
]
