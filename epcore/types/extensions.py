"""The startd extended in Python: fetch-work sources (``ep_fetch_work_sources``), cron jobs
(``ep_cron_jobs``) and ClassAd functions (``ep_classad_functions``), in place of HTCondor's
job hook programs, cron scripts and function libraries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import attrs

if TYPE_CHECKING:
    from epcore.classad import ClassAd
    from epcore.classad.calls import FunctionCall


class FetchWorkSource(Protocol):
    """A source of jobs the startd pulls, like the fetch-work job hooks but in Python.

    ``name`` is a hook keyword: the slots whose ``SLOT<N>_JOB_HOOK_KEYWORD`` (else
    ``STARTD_JOB_HOOK_KEYWORD``) is that name (any case) ask this source instead of running
    ``<name>_HOOK_FETCH_WORK``, ``_REPLY_FETCH`` and ``_EVICT_CLAIM`` (see
    :mod:`epcore.startd.fetch_work`). The methods are called from the startd's loop: ``fetch``
    should answer at once. What they raise is logged and the startd goes on; each gets its own
    copies of the ads.
    """

    name: str

    def fetch(self, slot_ad: ClassAd) -> ClassAd | None:
        """A job ad for the slot described by ``slot_ad``, or None when there is no work (the
        slot's idle fetched claim, if it has one, is then evicted)."""
        ...

    def reply(self, accepted: bool, job_ad: ClassAd, slot_ad: ClassAd) -> None:
        """Whether the startd accepted ``job_ad`` (which now carries ``HookKeyword``); the
        reason is in the StartLog (advisory)."""
        ...

    def evict_claim(self, job_ad: ClassAd, slot_ad: ClassAd) -> None:
        """The claim of ``job_ad`` (its last job) is being evicted: no more work, a vacate,
        a preemption or a lost claim (advisory)."""
        ...


@attrs.frozen
class PythonCronJob:
    """A startd cron job written in Python: ``run`` returns the ads to merge, like a cron script's
    output; ``mode`` and ``period`` follow STARTD_CRON_<NAME>_MODE / _PERIOD.

    Each ad may carry SlotMergeConstraint, SlotName, SlotTypeId or SlotId to choose its slots,
    as a script's ads do; a run's ads replace all those of the job's previous run and, with
    ``publish`` (the default), are sent to the collector at once; without it they go with the
    next update (as a script's ``- update:false``). STARTD_CRON_<NAME>_PREFIX, _SLOTS and
    _PERIOD apply when configured. ``run`` is called in a thread of its own, so one that hangs
    holds up only itself; the startd forks starters meanwhile, so a run should not take locks
    a forked child could need (connections, imports)."""

    name: str
    run: Callable[[], Sequence[ClassAd]]
    mode: str = "Periodic"
    period: float = 300.0
    publish: bool = True


@attrs.frozen
class ClassAdFunction:
    """An extra ClassAd function: ``name`` as written in expressions, ``impl`` called with the
    evaluation's call record (see epcore.classad.calls.FunctionCall)."""

    name: str
    impl: Callable[[FunctionCall], object]
