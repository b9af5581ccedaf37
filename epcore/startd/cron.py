"""Startd cron: the STARTD_CRON jobs, the plugins' Python cron jobs and the benchmarks.

:class:`StartdCron` shares the startd's loop (it is a
:class:`~epcore.startd.loop.LoopCompanion`): every job runs as a real process in its own
session, its stdout and stderr are non-blocking pipes registered in the loop's selector, and
nothing here ever waits for a job, so a job that hangs never holds up the startd.

- OneShot jobs run once at start-up (and again on reconfig with RECONFIG_RERUN), Periodic
  jobs every PERIOD from their start, WaitForExit jobs again PERIOD after they exit (and their
  output is taken each time a ``-`` line ends an ad, as they keep running), OnDemand jobs
  when asked (the benchmarks, when the policy moves a slot to Benchmarking).
- A job due while its previous run still runs is killed when KILL is true (SIGTERM to its
  process group, SIGKILL after :data:`~epcore.startd.cron_process.KILL_GRACE` seconds) and
  started again once it is gone; otherwise a Periodic job skips that turn and another job
  runs again once its run has ended.
- The plugins' Python cron jobs run in threads (:mod:`epcore.startd.cron_python`).
- Jobs of a family start only while the JOB_LOADs of its running jobs stay within
  ``<FAMILY>_MAX_JOB_LOAD`` (one job always may run).
- Output is read by :func:`~epcore.slots.cron_output.parse_cron_output`; output that does
  not parse is logged and changes nothing. A job that exits non-zero has its stdout and
  stderr logged when STARTD_CRON_LOG_NON_ZERO_EXIT is true.
- On reconfig, running jobs with RECONFIG (WaitForExit ones, typically) get SIGHUP.

The job ads are merged into the slot ads by :mod:`epcore.slots.cron_merge`; the benchmark
results go into the weighted averages of :mod:`epcore.slots.benchmark_average`.
"""

from __future__ import annotations

import logging
import os
import selectors
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Protocol

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError
from epcore.plugins import Plugins
from epcore.slots.benchmark_average import BenchmarkRecord
from epcore.slots.cron_config import BENCHMARKS, STARTD_CRON, CronJobSpec, read_cron_plan
from epcore.slots.cron_merge import CronAd, CronLayers, cron_ad, merge_cron_ads, merge_target
from epcore.slots.cron_output import CronOutput, CronOutputAd, CronOutputError, parse_cron_output
from epcore.startd.cron_process import KILL_GRACE, CronProcess
from epcore.startd.cron_python import PythonCronRun, python_spec
from epcore.types import PythonCronJob

if TYPE_CHECKING:
    from epcore.state.records import EngineState

#: Seconds before a WaitForExit job whose program could not be started is tried again.
RETRY_DELAY: Final = 30.0


class CronStartd(Protocol):
    """What the cron needs of the startd it serves."""

    config: Config
    plugins: Plugins
    log: logging.Logger

    def clock(self) -> float: ...

    def attributes_changed(self, now: float, publish: bool) -> None:
        """Cron attributes changed: build the ads again, evaluate the policy, maybe publish."""
        ...

    def benchmarks_finished(self, now: float) -> None:
        """The benchmark jobs have all ended."""
        ...


@attrs.define
class _Job:
    """A configured job, its run (a process, or a thread for a Python job), when it is next
    due, and the ads it published (by tag)."""

    spec: CronJobSpec
    due: float | None = None
    run: CronProcess | None = None
    ads: dict[str, CronOutputAd] = attrs.field(factory=dict)
    python: PythonCronJob | None = None
    call: PythonCronRun | None = None

    @property
    def running(self) -> bool:
        return self.run is not None or self.call is not None


def _number(ad: CronOutputAd, name: str) -> float | None:
    for attribute, expr in ad.attributes:
        if attribute.lower() == name.lower():
            value = expr.evaluate()
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
    return None


class StartdCron:
    """The startd's cron jobs and benchmarks (see the module docstring)."""

    def __init__(
        self,
        startd: CronStartd,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.startd = startd
        self.monotonic = monotonic
        self.environ = dict(os.environ if environ is None else environ)
        self.selector: selectors.BaseSelector | None = None
        self.jobs: dict[str, _Job] = {}
        self.max_load: dict[str, float] = {}
        self.layers = CronLayers()
        self.benchmarks = BenchmarkRecord()
        self.generation = 0
        self._merged: tuple[int, object] | None = None
        self._benchmarks_wanted = False
        self._round: dict[str, CronOutputAd | None] | None = None
        self._pending: set[str] = set()
        self._configure(startd.config, first=True)

    def python_busy(self) -> bool:
        """Whether a Python cron job's thread is running now."""
        return any(job.call is not None and not job.call.done for job in self.jobs.values())

    # -- configuration ------------------------------------------------------------------------

    def _plans(self, config: Config) -> list[CronJobSpec]:
        specs: list[CronJobSpec] = []
        for family in (STARTD_CRON, BENCHMARKS):
            plan = read_cron_plan(config, family)
            for error in plan.errors:
                self.startd.log.error("cron: %s; the job is not run", error)
            self.max_load[family] = plan.max_job_load
            specs.extend(plan.jobs)
        return specs

    def _configure(self, config: Config, *, first: bool) -> None:
        now = self.monotonic()
        wanted: dict[str, tuple[CronJobSpec, PythonCronJob | None]] = {
            spec.key: (spec, None) for spec in self._plans(config)
        }
        try:
            python_jobs = self.startd.plugins.cron_jobs(config)
        except EpError as error:
            self.startd.log.error("cron: the plugins' cron jobs cannot be had: %s", error)
            python_jobs = []
        for offered in python_jobs:
            spec = python_spec(offered, config)
            wanted.setdefault(spec.key, (spec, offered))
        for key in [key for key in self.jobs if key not in wanted]:
            gone = self.jobs.pop(key)
            if gone.run is not None:
                gone.run.abandon(self.selector)
            if gone.ads:
                self.generation += 1
        for key, (spec, python) in wanted.items():
            job = self.jobs.get(key)
            if job is None:
                job = self.jobs[key] = _Job(spec, python=python)
                job.due = now if spec.mode != "OnDemand" else None
                continue
            if job.spec.prefix != spec.prefix or job.spec.slots != spec.slots:
                self.generation += 1
            old_mode = job.spec.mode
            job.spec, job.python = spec, python
            if first:
                continue
            if spec.mode != old_mode:
                job.due = now if spec.mode != "OnDemand" else None
            elif spec.mode == "OneShot" and spec.reconfig_rerun:
                job.due = now
            if spec.reconfig and job.run is not None:
                # The job is expected to read its configuration again (a WaitForExit job
                # usually: the others are seldom running at that moment).
                self.startd.log.info("cron: %s: reconfig: sending SIGHUP", spec.name)
                job.run.signal(signal.SIGHUP)

    def reconfig(self, config: Config) -> None:
        """Take a new configuration: new and changed jobs, RECONFIG and RECONFIG_RERUN."""
        self._configure(config, first=False)

    # -- the loop companion -------------------------------------------------------------------

    def open(self, selector: selectors.BaseSelector) -> None:
        """Share the loop's selector; jobs due at start-up start at the next tick."""
        self.selector = selector

    def ready(self, fileobj: object) -> None:
        """A job's pipe has data (or reached its end)."""
        for job in self.jobs.values():
            run = job.run
            pipe = run.owns(fileobj) if run is not None else None
            if run is None or pipe is None:
                continue
            run.read(pipe, self.selector)
            if job.spec.mode == "WaitForExit" and pipe is run.process.stdout:
                # A WaitForExit job publishes whenever a '-' line ends an ad.
                text = run.finished_ads_text()
                if text:
                    self._use_output(job, text)
            return

    def timeout(self) -> float:
        """Seconds until the next job is due or a kill escalates."""
        now = self.monotonic()
        soonest = 3600.0
        for job in self.jobs.values():
            if job.run is not None and job.run.killed_at is not None:
                soonest = min(soonest, job.run.killed_at + KILL_GRACE - now)
            elif job.due is not None and not job.running:
                if job.due <= now and not self._load_allows(job):
                    continue  # waits for a running job, whose end wakes the loop
                soonest = min(soonest, job.due - now)
        if self._benchmarks_wanted or any(job.call is not None for job in self.jobs.values()):
            soonest = min(soonest, 0.2)  # a thread's end wakes nothing: look again soon
        return max(soonest, 0.0)

    def tick(self) -> None:
        """Notice ended jobs, kill overdue ones, start the due ones the load allows."""
        now = self.monotonic()
        for job in list(self.jobs.values()):
            if job.run is not None:
                self._check(job, job.run, now)
            if job.call is not None and job.call.done:
                self._python_done(job, job.call, now)
        if self._benchmarks_wanted and self._round is None:
            self._start_round(now)
        for job in sorted(self.jobs.values(), key=lambda j: j.due if j.due is not None else 0.0):
            if job.due is None or job.due > now:
                continue
            if job.running:
                self._overdue(job, now)
            elif self._load_allows(job):
                self._start(job, now)
        self._finish_round()

    def close(self) -> None:
        """Kill every running job (the startd is going away)."""
        for job in self.jobs.values():
            if job.run is not None:
                job.run.abandon(self.selector)
                job.run = None

    # -- requests -------------------------------------------------------------------------------

    def request_benchmarks(self) -> None:
        """Run the benchmark jobs (at the next tick, unless a round is already running)."""
        self._benchmarks_wanted = True

    def run_now(self, name: str) -> None:
        """Make the STARTD_CRON job ``name`` due now (an OnDemand job runs only so)."""
        job = self.jobs.get(f"{STARTD_CRON}_{name.upper()}")
        if job is None:
            raise EpError(f"there is no startd cron job {name}")
        job.due = self.monotonic()

    # -- running jobs -------------------------------------------------------------------------

    def _load_allows(self, job: _Job) -> bool:
        family = job.spec.family
        running = [
            other.spec.job_load
            for other in self.jobs.values()
            if other.spec.family == family and other.run is not None
        ]
        if not running:
            return True
        return sum(running) + job.spec.job_load <= self.max_load.get(family, 1.0) + 1e-9

    def _environment(self, spec: CronJobSpec) -> dict[str, str]:
        """The job's environment: the startd's, <FAMILY>_CONFIG_VAL (the condor_config_val
        program the job may ask for configuration) under the knob's own name and, for a job
        with a PREFIX, as ``<PREFIX>CONFIG_VAL`` too (as HTCondor passes it), then ENV."""
        env = dict(self.environ)
        knob = f"{spec.family}_CONFIG_VAL"
        config_val = self.startd.config.get(knob)
        if config_val:
            env[knob] = config_val
            if spec.prefix:
                env[f"{spec.prefix}CONFIG_VAL"] = config_val
        env.update(spec.env)
        return env

    def _start(self, job: _Job, now: float) -> None:
        spec = job.spec
        job.due = now + spec.period if spec.mode == "Periodic" else None
        if job.python is not None:
            job.call = PythonCronRun(job.python)
            return
        try:
            job.run = CronProcess.start(spec, self._environment(spec), now, self.selector, self)
        except OSError as error:
            self.startd.log.error("cron: %s: cannot run %s: %s", spec.name, spec.executable, error)
            self._ended(job, None, now, failed=True)
            return
        self.startd.log.info(
            "cron: %s: started %s (pid %d)", spec.name, spec.executable, job.run.pid
        )

    def _check(self, job: _Job, run: CronProcess, now: float) -> None:
        run.escalate(now)
        if not run.exited():
            return
        code = run.reap(self.selector)
        job.run = None
        if run.killed_at is not None:
            self.startd.log.warning("cron: %s: killed (it ran past its next start)", job.spec.name)
            self._ended(job, None, now)
            return
        self._finished(job, run, code, now)

    def _overdue(self, job: _Job, now: float) -> None:
        """``job`` is due again while its last run still runs: killed under KILL; otherwise
        a Periodic job skips this turn and any other runs again once the run has ended."""
        run = job.run
        if job.spec.kill and run is not None:
            if run.killed_at is None:
                self.startd.log.warning(
                    "cron: %s: still running when due again; killing it (KILL is true)",
                    job.spec.name,
                )
                run.terminate(now)
            return
        if job.spec.mode == "Periodic":
            self.startd.log.warning(
                "cron: %s: still running when due again; not started", job.spec.name
            )
            job.due = now + job.spec.period

    def _finished(self, job: _Job, run: CronProcess, code: int, now: float) -> None:
        spec = job.spec
        stdout = run.rest_of_stdout()
        if code != 0:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
            self.startd.log.warning("cron: %s %s", spec.name, how)
            if self.startd.config.get_bool(f"{STARTD_CRON}_LOG_NON_ZERO_EXIT", False):
                stderr = run.stderr.decode("utf-8", "replace")
                for label, text in (("stdout", stdout), ("stderr", stderr)):
                    for line in text.splitlines():
                        self.startd.log.warning("cron: %s %s: %s", spec.name, label, line)
        self._ended(job, self._use_output(job, stdout), now)

    def _ended(
        self, job: _Job, output: CronOutput | None, now: float, *, failed: bool = False
    ) -> None:
        spec = job.spec
        if spec.mode == "WaitForExit":
            # Restarted PERIOD after it exits; never in a busy loop, and a program that
            # cannot be started is tried again only after a while.
            job.due = now + max(spec.period, RETRY_DELAY if failed else 1.0)
        if self._round is not None and spec.key in self._pending:
            self._pending.discard(spec.key)
            self._round[spec.key] = output.ads[-1] if output is not None and output.ads else None

    # -- output -----------------------------------------------------------------------------

    def _use_output(self, job: _Job, text: str) -> CronOutput | None:
        """Parse ``text`` and, for a cron job, keep its ads; None when it does not parse."""
        try:
            output = parse_cron_output(text, job.spec.name)
            # A SlotId that is no integer is an error of this output, found before merging.
            for ad in output.ads:
                merge_target(ad.attributes, job.spec.name)
        except CronOutputError as error:
            self.startd.log.error("cron: %s; the output is ignored", error)
            return None
        if job.spec.family == STARTD_CRON:
            self._keep(job, output.ads, output.update, replace=False)
        return output

    def _keep(
        self, job: _Job, ads: Sequence[CronOutputAd], update: bool | None, *, replace: bool
    ) -> None:
        """Keep ``ads`` (by tag; ``replace``: instead of all earlier ones) and tell the startd
        when that changed anything or ``update`` (else STARTD_CRON_AUTOPUBLISH) asks for it."""
        before = dict(job.ads)
        if replace:
            job.ads.clear()
        for ad in ads:
            job.ads[ad.tag] = ad
        changed = job.ads != before
        if changed:
            self.generation += 1
        publish = update if update is not None else self._autopublish(changed)
        if changed or publish:
            self.startd.attributes_changed(self.startd.clock(), publish)

    def _autopublish(self, changed: bool) -> bool:
        """STARTD_CRON_AUTOPUBLISH: Never (default), Always or If_Changed."""
        value = (self.startd.config.get(f"{STARTD_CRON}_AUTOPUBLISH") or "never").strip().lower()
        return value == "always" or (value in ("if_changed", "ifchanged") and changed)

    def records(self) -> list[CronAd]:
        """Every kept ad of every cron job, ready to merge, in job order."""
        return [
            cron_ad(job.spec.name, ad, prefix=job.spec.prefix, slots=job.spec.slots)
            for job in self.jobs.values()
            for ad in job.ads.values()
        ]

    def remerge(self, slot_ads: Mapping[str, ClassAd], state: EngineState, now: float) -> bool:
        """Work out which slot gets which cron attributes for ``state``'s ads; True when that
        changed (the ads must then be built again)."""
        merged = self._merged
        if merged is not None and merged[0] == self.generation and merged[1] is state:
            return False
        self._merged = (self.generation, state)
        records = self.records()
        if not records and not self.layers.by_slot:
            return False
        layers = merge_cron_ads(records, slot_ads, now, self.startd.config.eval_context)
        if layers == self.layers:
            return False
        self.layers = layers
        return True

    # -- Python cron jobs ---------------------------------------------------------------------

    def _python_done(self, job: _Job, call: PythonCronRun, now: float) -> None:
        job.call = None
        outcome = call.outcome()
        if isinstance(outcome, str):
            self.startd.log.error("cron: %s %s", job.spec.name, outcome)
        else:
            try:
                for ad in outcome:
                    merge_target(ad.attributes, job.spec.name)
            except CronOutputError as error:
                self.startd.log.error("cron: %s; its ads are ignored", error)
            else:
                publish = job.python is None or job.python.publish
                self._keep(job, outcome, True if publish else None, replace=True)
        self._ended(job, None, now)

    # -- benchmarks -----------------------------------------------------------------------------

    def _start_round(self, now: float) -> None:
        self._benchmarks_wanted = False
        self._round = {}
        for job in self.jobs.values():
            if job.spec.family == BENCHMARKS:
                self._round[job.spec.key] = None
                self._pending.add(job.spec.key)
                job.due = now
        self.startd.log.info("benchmarks: running %s", ", ".join(self._round) or "none")

    def _finish_round(self) -> None:
        if self._round is None:
            return
        # A benchmark job removed by a reconfig while the round ran counts as ended.
        self._pending &= set(self.jobs)
        if self._pending:
            return
        outputs = [ad for ad in self._round.values() if ad is not None]
        mips = next((v for v in (_number(ad, "Mips") for ad in outputs) if v is not None), None)
        kflops = next((v for v in (_number(ad, "KFlops") for ad in outputs) if v is not None), None)
        self._round = None
        self.benchmarks = self.benchmarks.add(mips, kflops)
        self.startd.log.info("benchmarks: Mips %s, KFlops %s", mips, kflops)
        self.startd.benchmarks_finished(self.startd.clock())
