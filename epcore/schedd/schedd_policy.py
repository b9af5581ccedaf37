"""The schedd's passes over its queue for the periodic job policy (:mod:`epcore.schedd.periodic`
decides; this carries it out).

A pass starts every PERIODIC_EXPR_INTERVAL seconds (stretched by PERIODIC_EXPR_TIMESLICE and
MAX_PERIODIC_EXPR_INTERVAL) and goes over the jobs that are idle, running, suspended or held,
a few milliseconds of them per turn of the loop, so that a long queue never holds up the
pool's other work. A job that is being stopped (held or removed while its claim goes back)
is left alone until it has stopped, as HTCondor's schedd leaves a job whose shadow is still
alive. A job whose evaluation fails is logged and skipped: it never stops the pass.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Protocol

from epcore.config import Config
from epcore.errors import EpError
from epcore.schedd.jobqueue import JobId, JobQueue, JobStatus
from epcore.schedd.periodic import (
    PeriodicAction,
    PeriodicKind,
    PeriodicTiming,
    SystemPolicies,
    periodic_action,
)

#: Seconds of evaluation per turn of the loop before the pass yields to the pool's other work.
TURN_BUDGET = 0.02

#: The statuses the periodic policy applies to.
ACTIVE_STATUSES = (JobStatus.IDLE, JobStatus.RUNNING, JobStatus.SUSPENDED, JobStatus.HELD)


class PolicySchedd(Protocol):
    """What the passes need of the schedd."""

    config: Config
    queue: JobQueue

    def busy_jobs(self) -> set[JobId]: ...

    def hold(
        self, job_id: JobId, reason: str, now: float, code: int = 1, subcode: int = 0
    ) -> None: ...

    def release(self, job_id: JobId, reason: str, now: float) -> None: ...

    def remove(self, job_id: JobId, reason: str, now: float) -> None: ...

    def running_slot(self, job_id: JobId) -> str | None: ...

    def vacate_slot(self, slot: str) -> None: ...


class PeriodicPolicy:
    """The passes of one schedd (module docstring); ``monotonic`` measures their cost."""

    def __init__(
        self,
        config: Config,
        log: logging.Logger,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = log
        self.monotonic = monotonic
        self.config = config
        self.policies = SystemPolicies()
        self.timing = PeriodicTiming()
        self.reconfig(config)
        self.remaining: list[JobId] = []
        self.next_pass = 0.0
        self.pass_started = 0.0
        self.spent = 0.0
        self.passes = 0

    def reconfig(self, config: Config) -> None:
        """Read the SYSTEM_PERIODIC_* expressions and the pass timing from ``config``."""
        self.config = config
        self.policies = SystemPolicies.from_config(config)
        self.timing = PeriodicTiming.from_config(config)
        for problem in self.policies.problems:
            self.log.error("%s", problem)

    def wait(self, now: float) -> float:
        """Seconds until the passes want the loop's attention (0 during a pass)."""
        if self.remaining:
            return 0.0
        if not self.timing.enabled:
            return math.inf
        return max(self.next_pass - now, 0.0)

    def run(self, schedd: PolicySchedd, now: float) -> None:
        """Start a pass when one is due, and go on with the current pass for one turn."""
        if schedd.config is not self.config:
            self.reconfig(schedd.config)
        if not self.timing.enabled:
            self.remaining = []
            return
        if not self.remaining:
            if now < self.next_pass:
                return
            self.remaining = schedd.queue.job_ids(statuses=ACTIVE_STATUSES)
            self.remaining.reverse()  # taken from the end: in queue order
            self.pass_started = now
            self.spent = 0.0
        started = self.monotonic()
        busy = schedd.busy_jobs()
        while self.remaining and self.monotonic() - started < TURN_BUDGET:
            job_id = self.remaining.pop()
            try:
                self._evaluate(schedd, job_id, busy, now)
            except Exception:  # one job's expressions must never stop the pass or the pool
                self.log.exception("job %s: its periodic expressions failed", job_id)
        self.spent += self.monotonic() - started
        if not self.remaining:
            self.passes += 1
            self.next_pass = self.timing.next_start(self.pass_started, self.spent)

    def _evaluate(self, schedd: PolicySchedd, job_id: JobId, busy: set[JobId], now: float) -> None:
        if job_id not in schedd.queue:
            return
        job = schedd.queue.get(job_id)
        status_value = job.evaluate("JobStatus")
        if not isinstance(status_value, int) or status_value not in JobStatus._value2member_map_:
            return
        status = JobStatus(status_value)
        if status is JobStatus.HELD and job_id in busy:
            return  # still being stopped
        action = periodic_action(job, status, self.policies, self.config, now=now)
        if action is None:
            return
        self.log.info("job %s: %s: %s", job_id, action.kind.name.lower(), action.reason)
        try:
            with schedd.queue.batch():
                self._apply(schedd, job_id, action, now)
        except EpError as error:
            self.log.warning("job %s: the periodic %s failed: %s", job_id, action.kind, error)

    @staticmethod
    def _apply(schedd: PolicySchedd, job_id: JobId, action: PeriodicAction, now: float) -> None:
        if action.kind is PeriodicKind.HOLD:
            schedd.hold(job_id, action.reason, now, action.code, action.subcode)
        elif action.kind is PeriodicKind.RELEASE:
            schedd.release(job_id, action.reason, now)
        elif action.kind is PeriodicKind.REMOVE:
            schedd.remove(job_id, action.reason, now)
        else:
            slot = schedd.running_slot(job_id)
            if slot is None:
                return  # taken back after a restart, its slot not known yet
            values = {
                "VacateReason": action.reason,
                "VacateReasonCode": action.code,
                "VacateReasonSubCode": action.subcode,
            }
            schedd.queue.set_attributes(job_id, values, now)
            schedd.vacate_slot(slot)
