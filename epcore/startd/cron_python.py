"""Startd cron jobs written in Python (a plugin's ``ep_cron_jobs``), run in threads.

A :class:`PythonCronRun` calls the job's ``run`` in a daemon thread of its own, so a job that
hangs holds up only itself (a thread cannot be killed; it is simply not started again while
it runs). Its ads become cron output ads: the first is the job's main (untagged) ad, the
others are tagged by their position, and each may carry the targeting attributes of
:mod:`epcore.slots.cron_merge`.
"""

from __future__ import annotations

import threading

from epcore.classad import ClassAd, Expr
from epcore.config import Config
from epcore.config.config import split_list
from epcore.slots.cron_config import MODES, STARTD_CRON, CronJobSpec, knob_name, parse_period
from epcore.slots.cron_output import CronOutputAd
from epcore.types import PythonCronJob

#: What a Python cron job's spec names as its executable (it has none).
PYTHON_EXECUTABLE = "<python>"


def python_spec(job: PythonCronJob, config: Config) -> CronJobSpec:
    """The spec of a plugin's Python cron job: its mode and period, unless
    STARTD_CRON_<NAME>_PERIOD is configured, and the configured PREFIX and SLOTS."""
    period_text = config.get(knob_name(STARTD_CRON, job.name, "PERIOD"))
    period = parse_period(period_text) if period_text else None
    slots = tuple(
        int(item)
        for item in split_list(config.get(knob_name(STARTD_CRON, job.name, "SLOTS")))
        if item.isdigit()
    )
    return CronJobSpec(
        family=STARTD_CRON,
        name=job.name,
        executable=PYTHON_EXECUTABLE,
        prefix=(config.get(knob_name(STARTD_CRON, job.name, "PREFIX")) or "").strip(),
        mode=MODES.get(job.mode.lower(), "Periodic"),
        period=period if period is not None else job.period,
        job_load=0.0,
        slots=slots,
    )


def output_ads(ads: list[ClassAd]) -> list[CronOutputAd]:
    """A Python job's ads as cron output ads (the first untagged, the others by position)."""
    found = []
    for index, ad in enumerate(ads):
        attributes: list[tuple[str, Expr]] = []
        for name in ad:
            expr = ad.lookup(name)
            if expr is not None:
                attributes.append((name, expr))
        found.append(CronOutputAd(str(index) if index else "", tuple(attributes)))
    return found


class PythonCronRun:
    """One call of a Python cron job's ``run``, in a thread of its own."""

    def __init__(self, job: PythonCronJob) -> None:
        self.job = job
        self._result: list[object] = []
        self._thread = threading.Thread(target=self._work, name=f"cron-{job.name}", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        try:
            self._result.append(list(self.job.run()))
        except Exception as error:  # a plugin's failure is its job's, not the startd's
            self._result.append(error)

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def outcome(self) -> list[CronOutputAd] | str:
        """The ads the call returned, or why there are none (the call failed or returned
        something else than ClassAds)."""
        result = self._result[0] if self._result else None
        if isinstance(result, Exception):
            return f"failed: {type(result).__name__}: {result}"
        if isinstance(result, list) and all(isinstance(ad, ClassAd) for ad in result):
            return output_ads(result)
        return f"returned {result!r}, not ClassAds"
