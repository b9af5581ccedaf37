"""Startd cron and benchmark jobs as the configuration describes them (seed 000).

``STARTD_CRON_JOBLIST`` names the cron jobs and ``BENCHMARKS_JOBLIST`` the benchmarks; each
job ``<name>`` of a list ``<FAMILY>_JOBLIST`` is configured by ``<FAMILY>_<NAME>_<KNOB>``:

- EXECUTABLE (required), ARGS (V1 words, or V2 in double quotes), ENV (V1 ``A=1;B=2``, or V2
  in double quotes), CWD;
- PREFIX, prepended to the names of the attributes the job publishes;
- MODE: Periodic (run every PERIOD), WaitForExit (run again PERIOD after it exits), OneShot
  (run once at start-up), OnDemand (run when asked: the benchmarks); default Periodic for cron
  jobs and OnDemand for benchmarks;
- PERIOD: seconds, or a number with an ``s``, ``m`` or ``h`` suffix (``15s``, ``10m``);
- RECONFIG (a running WaitForExit job gets SIGHUP on reconfig), RECONFIG_RERUN (a OneShot job
  runs again on reconfig), KILL (a job still running when it is next due is killed);
- JOB_LOAD, the load the job counts for against ``<FAMILY>_MAX_JOB_LOAD``;
- SLOTS, the slot numbers its attributes go to (default all).

Malformed knobs are :class:`CronConfigError` naming the knob and where it was set; a job with
an error is left out and the error reported (:class:`CronPlan`). Pure: reads a Config only.
"""

from __future__ import annotations

import math
import re

import attrs

from epcore.config import Config
from epcore.config.config import split_list
from epcore.errors import ConfigError, JobSetupError
from epcore.jobs.syntax import parse_args_v1, parse_args_v2, parse_env_v1, parse_env_v2

#: Families of jobs the startd runs.
STARTD_CRON = "STARTD_CRON"
BENCHMARKS = "BENCHMARKS"

#: The modes, by lower-case name, with their spelling.
MODES = {
    "periodic": "Periodic",
    "waitforexit": "WaitForExit",
    "oneshot": "OneShot",
    "ondemand": "OnDemand",
}

_PERIOD = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([smhSMH]?)\s*\Z")
_UNIT_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
_JOB_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

#: The default job load of a cron job (HTCondor's) and of a benchmark.
DEFAULT_JOB_LOAD = {STARTD_CRON: 0.01, BENCHMARKS: 1.0}
#: What <FAMILY>_MAX_JOB_LOAD is when nothing sets it.
DEFAULT_MAX_JOB_LOAD = {STARTD_CRON: 0.1, BENCHMARKS: 1.0}


class CronConfigError(ConfigError):
    """A cron or benchmark job knob that cannot be used; names the knob."""

    def __init__(
        self, message: str, knob: str, source: str | None = None, line: int | None = None
    ) -> None:
        self.knob = knob
        super().__init__(message, source, line)


@attrs.frozen
class CronJobSpec:
    """One configured job of a family (STARTD_CRON or BENCHMARKS)."""

    family: str
    name: str
    executable: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    prefix: str = ""
    mode: str = "Periodic"
    period: float = 0.0
    reconfig: bool = False
    reconfig_rerun: bool = False
    kill: bool = False
    job_load: float = 0.01
    slots: tuple[int, ...] = ()

    @property
    def key(self) -> str:
        """``FAMILY_NAME``: what its knobs start with, and its identity among all jobs."""
        return f"{self.family}_{self.name.upper()}"


@attrs.frozen
class CronPlan:
    """The jobs of one family that can run, the errors of those that cannot, and the family's
    MAX_JOB_LOAD."""

    jobs: tuple[CronJobSpec, ...]
    errors: tuple[CronConfigError, ...]
    max_job_load: float


def knob_name(family: str, job: str, suffix: str) -> str:
    """``STARTD_CRON_FOO_PERIOD`` for job ``foo``'s PERIOD."""
    return f"{family}_{job.upper()}_{suffix}"


def _error(config: Config, knob: str, message: str) -> CronConfigError:
    origin = config.origin(knob)
    return CronConfigError(
        f"{knob}: {message}",
        knob,
        origin.source if origin is not None else None,
        origin.line if origin is not None else None,
    )


def parse_period(text: str) -> float | None:
    """Seconds of a PERIOD (``30``, ``15s``, ``10m``, ``1h``), or None when it is not one."""
    found = _PERIOD.match(text)
    if found is None:
        return None
    return float(found.group(1)) * _UNIT_SECONDS[found.group(2).lower()]


def _split_words(text: str, knob: str) -> tuple[str, ...]:
    stripped = text.strip()
    if stripped.startswith('"') and stripped.endswith('"') and len(stripped) >= 2:
        return parse_args_v2(stripped[1:-1], knob)
    return parse_args_v1(stripped, knob)


def _environment(text: str, knob: str) -> tuple[tuple[str, str], ...]:
    stripped = text.strip()
    if stripped.startswith('"') and stripped.endswith('"') and len(stripped) >= 2:
        return tuple(parse_env_v2(stripped[1:-1], knob))
    return tuple(parse_env_v1(stripped, knob))


def _float(config: Config, knob: str, default: float) -> float:
    text = config.get(knob)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError as error:
        raise _error(config, knob, f"{text!r} is not a number") from error
    if not math.isfinite(value) or value < 0:
        raise _error(config, knob, f"{text!r} is not a load of zero or more")
    return value


def _bool(config: Config, knob: str, default: bool) -> bool:
    text = config.get(knob)
    if text is None:
        return default
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "t"):
        return True
    if lowered in ("false", "0", "no", "f"):
        return False
    raise _error(config, knob, f"{text!r} is not true or false")


def _slots(config: Config, knob: str) -> tuple[int, ...]:
    numbers: list[int] = []
    for item in split_list(config.get(knob)):
        if not item.isdigit() or int(item) < 1:
            raise _error(config, knob, f"{item!r} is not a slot number")
        numbers.append(int(item))
    return tuple(numbers)


def read_cron_job(config: Config, family: str, name: str) -> CronJobSpec:
    """Job ``name`` of ``family`` from its knobs; CronConfigError names the bad knob."""

    def knob(suffix: str) -> str:
        return knob_name(family, name, suffix)

    if not _JOB_NAME.match(name):
        raise _error(config, f"{family}_JOBLIST", f"{name!r} is not a job name")
    executable = config.get(knob("EXECUTABLE"))
    if executable is None or not executable.strip():
        raise _error(config, knob("EXECUTABLE"), f"job {name} has no executable")
    mode_text = config.get(knob("MODE"))
    default_mode = "OnDemand" if family == BENCHMARKS else "Periodic"
    mode = default_mode if mode_text is None else MODES.get(mode_text.strip().lower())
    if mode is None:
        raise _error(
            config, knob("MODE"), f"{mode_text!r} is not one of {', '.join(MODES.values())}"
        )
    period_text = config.get(knob("PERIOD"))
    period = 0.0
    if period_text is not None:
        parsed = parse_period(period_text)
        if parsed is None:
            raise _error(
                config, knob("PERIOD"), f"{period_text!r} is not seconds or a number with s, m or h"
            )
        period = parsed
    if mode == "Periodic" and period <= 0:
        raise _error(config, knob("PERIOD"), f"the Periodic job {name} needs a period above 0")
    args_text = config.get(knob("ARGS"))
    env_text = config.get(knob("ENV"))
    try:
        args = _split_words(args_text, knob("ARGS")) if args_text else ()
    except JobSetupError as error:
        raise _error(config, knob("ARGS"), error.reason) from error
    try:
        env = _environment(env_text, knob("ENV")) if env_text else ()
    except JobSetupError as error:
        raise _error(config, knob("ENV"), error.reason) from error
    cwd = config.get(knob("CWD"))
    return CronJobSpec(
        family=family,
        name=name,
        executable=executable.strip(),
        args=args,
        env=env,
        cwd=cwd.strip() if cwd else None,
        prefix=(config.get(knob("PREFIX")) or "").strip(),
        mode=mode,
        period=period,
        reconfig=_bool(config, knob("RECONFIG"), False),
        reconfig_rerun=_bool(config, knob("RECONFIG_RERUN"), False),
        kill=_bool(config, knob("KILL"), False),
        job_load=_float(config, knob("JOB_LOAD"), DEFAULT_JOB_LOAD[family]),
        slots=_slots(config, knob("SLOTS")),
    )


def read_cron_plan(config: Config, family: str = STARTD_CRON) -> CronPlan:
    """Every job of ``<family>_JOBLIST`` (a name listed twice counts once), the errors of
    those left out, and ``<family>_MAX_JOB_LOAD``."""
    jobs: list[CronJobSpec] = []
    errors: list[CronConfigError] = []
    seen: set[str] = set()
    for name in split_list(config.get(f"{family}_JOBLIST")):
        if name.lower() in seen:
            continue
        seen.add(name.lower())
        try:
            jobs.append(read_cron_job(config, family, name))
        except CronConfigError as error:
            errors.append(error)
    max_load = DEFAULT_MAX_JOB_LOAD[family]
    try:
        max_load = _float(config, f"{family}_MAX_JOB_LOAD", max_load)
    except CronConfigError as error:
        errors.append(error)
    return CronPlan(tuple(jobs), tuple(errors), max_load)
