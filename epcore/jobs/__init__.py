"""The job description, pure: nothing here reads a file or a clock.

:mod:`epcore.jobs.codes` names HTCondor's hold and vacate reason codes;
:mod:`epcore.jobs.syntax` reads and writes the argument, environment and signal texts of a job
ad; :mod:`epcore.jobs.command` turns a job ad into what the starter executes.
"""

from __future__ import annotations

from epcore.jobs.codes import HoldCode, VacateCode

__all__ = ["HoldCode", "VacateCode"]
