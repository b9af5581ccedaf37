"""The job description, pure: nothing here reads a file or a clock.

:mod:`epcore.jobs.codes` names HTCondor's hold and vacate reason codes.
"""

from __future__ import annotations

from epcore.jobs.codes import HoldCode, VacateCode

__all__ = ["HoldCode", "VacateCode"]
