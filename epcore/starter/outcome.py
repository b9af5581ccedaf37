"""How a job ended, decided from what was seen (pure), and the attributes that say so.

The seeds' rules: a job that the kernel killed because it went over its slot's memory is held
with the out-of-resources code (34) and a reason; a job killed by the machine's global OOM
killer while under its request goes back to idle (evicted); a job the startd stopped (vacate,
preemption, shutdown) is evicted; a prepare hook may hold or requeue it; otherwise it exited,
normally or by a signal of its own.
"""

from __future__ import annotations

import signal

import attrs

from epcore.classad import ClassAd
from epcore.jobs.codes import HoldCode, OutOfResourcesSubcode

EXITED = "exited"
HELD = "held"
EVICTED = "evicted"
REQUEUED = "requeued"
OUTCOMES = (EXITED, HELD, EVICTED, REQUEUED)

#: The JOB_EXIT hook's argument for each outcome (seed 000: exit, remove, hold, evict).
HOOK_ARGUMENT = {EXITED: "exit", HELD: "hold", EVICTED: "evict", REQUEUED: "evict"}


@attrs.frozen
class Ending:
    """How the job ended: ``outcome`` is one of :data:`OUTCOMES`."""

    outcome: str
    reason: str
    exit_code: int | None = None
    exit_signal: int | None = None
    hold_code: int = 0
    hold_subcode: int = 0
    #: The reason the startd gave with an eviction's code (``hold_code``), e.g. hibernation.
    vacate_reason: str | None = None

    @property
    def by_signal(self) -> bool:
        return self.exit_signal is not None

    def attributes(self) -> ClassAd:
        """ExitCode / ExitBySignal / ExitSignal / ExitReason, and the hold attributes when held."""
        ad = ClassAd()
        ad["JobOutcome"] = self.outcome
        ad["ExitReason"] = self.reason
        ad["ExitBySignal"] = self.by_signal
        if self.exit_code is not None:
            ad["ExitCode"] = self.exit_code
        if self.exit_signal is not None:
            ad["ExitSignal"] = self.exit_signal
        if self.outcome == HELD:
            ad["HoldReason"] = self.reason
            ad["HoldReasonCode"] = int(self.hold_code)
            ad["HoldReasonSubCode"] = int(self.hold_subcode)
        elif self.outcome == EVICTED and self.vacate_reason is not None:
            ad["VacateReason"] = self.vacate_reason
            ad["VacateReasonCode"] = int(self.hold_code)
            ad["VacateReasonSubCode"] = int(self.hold_subcode)
        elif self.outcome == REQUEUED and self.hold_code:
            # A starter error HTCondor's shadow turns into a vacate keeps its codes there.
            ad["VacateReason"] = self.reason
            ad["VacateReasonCode"] = int(self.hold_code)
            ad["VacateReasonSubCode"] = int(self.hold_subcode)
        return ad


def output_goes_back(job: ClassAd, ending: Ending) -> bool:
    """True when the job's output goes back after ``ending``: after it exited, and after an
    eviction too when it asks for ``when_to_transfer_output = ON_EXIT_OR_EVICT`` (a VM job
    with vm_checkpoint: its saved guest and disks are what it runs on from next time)."""
    if ending.outcome == EXITED:
        return True
    when = job.evaluate("WhenToTransferOutput")
    on_evict = isinstance(when, str) and when.upper() == "ON_EXIT_OR_EVICT"
    return ending.outcome == EVICTED and on_evict


def vacates_instead(code: int, subcode: int) -> bool:
    """True when a starter error with hold ``code`` and ``subcode`` sends the job back to idle
    instead of holding it: HTCondor's shadow vacates for codes of 1000 and up and for
    subcodes of -1000 and below (the apptainer pre-job test fails with 45 and -1000)."""
    return code >= 1000 or subcode <= -1000


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def decide(
    *,
    exit_code: int | None,
    exit_signal: int | None,
    stopped_by_startd: str | None,
    vacate_code: tuple[int, int] | None = None,
    memory_limit_hit: bool,
    global_oom: bool,
    memory_mb: int,
    peak_memory_mb: int,
) -> Ending:
    """The ending of a job whose first process exited with ``exit_code`` or ``exit_signal``.

    ``stopped_by_startd`` is why the startd stopped it (None when it did not), ``memory_limit_hit``
    whether its cgroup's OOM killer fired, ``global_oom`` whether the machine's OOM killer
    fired while it ran; ``vacate_code`` the code and subcode the startd gave with its stop
    (then ``stopped_by_startd`` is the reason HTCondor records with them).
    """
    if memory_limit_hit:
        reason = (
            f"Job has gone over cgroup memory limit of {memory_mb} megabytes. "
            # HTCondor 25.x's words (two spaces before "Consider" included); its "last
            # measured usage" is a poll of the cgroup, epcore's the cgroup's own peak.
            f"Last measured usage: {peak_memory_mb} megabytes.  "
            "Consider resubmitting with a higher request_memory."
        )
        memory = int(OutOfResourcesSubcode.MEMORY)
        return Ending(HELD, reason, exit_code, exit_signal, HoldCode.JOB_OUT_OF_RESOURCES, memory)
    if stopped_by_startd is not None:
        reason = f"The job was evicted: {stopped_by_startd}"
        if vacate_code is None:
            return Ending(EVICTED, reason, exit_code, exit_signal)
        code, subcode = vacate_code
        return Ending(EVICTED, reason, exit_code, exit_signal, code, subcode, stopped_by_startd)
    if exit_signal == signal.SIGKILL and global_oom:
        reason = (
            "The machine ran out of memory and the kernel killed the job while it used "
            f"{peak_memory_mb} of the {memory_mb} megabytes it requested; it goes back to idle."
        )
        return Ending(REQUEUED, reason, exit_code, exit_signal)
    if exit_signal is not None:
        return Ending(EXITED, f"died on {_signal_name(exit_signal)}", None, exit_signal)
    code = 0 if exit_code is None else exit_code
    return Ending(EXITED, f"exited normally with status {code}", code, None)
