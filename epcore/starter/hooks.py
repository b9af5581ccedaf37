"""The starter's job hooks: PREPARE_JOB_BEFORE_TRANSFER, PREPARE_JOB, UPDATE_JOB_INFO, JOB_EXIT.

A hook is ``<Keyword>_HOOK_<NAME>``: an executable the starter runs as the job's user, with
the job ad (old ClassAd syntax) on stdin. The keyword comes from ``STARTER_JOB_HOOK_KEYWORD``,
else the job's ``HookKeyword``, else ``STARTER_DEFAULT_JOB_HOOK_KEYWORD``. The prepare hooks
print attributes to merge into the job ad, and ``HookStatusCode`` / ``HookStatusMessage`` decide
whether the job continues, is held (1-299) or goes back to Idle (300 and up). UPDATE_JOB_INFO
is advisory (not waited for, output ignored); JOB_EXIT gets ``exit``, ``remove``, ``hold`` or
``evict`` as its argument. Running a hook is :mod:`epcore.starter.hook_runner`'s job.
"""

from __future__ import annotations

import math
import os
import re
import signal
import stat
from collections.abc import Callable
from typing import Final, Literal

import attrs

from epcore.classad import ClassAd, Expr, format_old, parse_ad
from epcore.config import Config
from epcore.errors import ClassAdError, JobSetupError
from epcore.jobs.codes import HoldCode
from epcore.starter.hook_runner import HookError, HookResult, HookRunner, RunningHook

__all__ = [
    "HOOK_NAMES",
    "IDLE_STATUS_MINIMUM",
    "JOB_EXIT_ARGUMENTS",
    "JOB_STATES",
    "STATUS_CODE_ATTRIBUTE",
    "STATUS_MESSAGE_ATTRIBUTE",
    "HookError",
    "HookResult",
    "HookRunner",
    "JobExitInfo",
    "JobRuntimeInfo",
    "PrepareKind",
    "PrepareOutcome",
    "RunningHook",
    "hook_path",
    "job_exit_input",
    "prepare_job_input",
    "prepare_outcome",
    "starter_hook_keyword",
    "update_job_info_input",
]

#: The hooks the starter runs (the startd's FETCH_WORK, REPLY_FETCH and EVICT_CLAIM are not here).
HOOK_NAMES: Final = ("PREPARE_JOB_BEFORE_TRANSFER", "PREPARE_JOB", "UPDATE_JOB_INFO", "JOB_EXIT")
#: The one argument JOB_EXIT receives: how the job left the slot.
JOB_EXIT_ARGUMENTS: Final = ("exit", "remove", "hold", "evict")
#: The values of ``JobState`` given to UPDATE_JOB_INFO and JOB_EXIT.
JOB_STATES: Final = ("Running", "Suspended")
#: A prepare hook status of at least this sends the job back to Idle instead of holding it.
IDLE_STATUS_MINIMUM: Final = 300
#: Attributes a prepare hook prints to steer the starter; they are not job attributes.
STATUS_CODE_ATTRIBUTE: Final = "HookStatusCode"
STATUS_MESSAGE_ATTRIBUTE: Final = "HookStatusMessage"

PrepareKind = Literal["continue", "hold", "idle"]

_KEYWORD: Final = re.compile(r"[A-Za-z0-9_]+")
_OLD_LINE: Final = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_.]*\s*=")
_SHOWN_LINE: Final = 200


# -- choosing a hook --------------------------------------------------------------------------


def _configured_keyword(config: Config, knob: str) -> str | None:
    value = config.get(knob)
    if value is None or not value.strip():
        return None
    keyword = value.strip()
    if _KEYWORD.fullmatch(keyword) is None:
        raise HookError(f"{knob} = {keyword}: a hook keyword is letters, digits and _", knob)
    return keyword


def _defines_starter_hook(config: Config, keyword: str) -> bool:
    return any(config.get(f"{keyword}_HOOK_{name}") is not None for name in HOOK_NAMES)


def starter_hook_keyword(config: Config, job: ClassAd) -> str | None:
    """The keyword selecting the starter's hooks for ``job``, or None when it has none.

    ``STARTER_JOB_HOOK_KEYWORD`` forces one. Otherwise the job's ``HookKeyword`` is used when
    it is valid: a string naming at least one defined starter hook. Otherwise (invalid or
    missing) ``STARTER_DEFAULT_JOB_HOOK_KEYWORD`` applies.
    """
    forced = _configured_keyword(config, "STARTER_JOB_HOOK_KEYWORD")
    if forced is not None:
        return forced
    if "HookKeyword" in job:
        try:
            value = job.evaluate("HookKeyword")
        except RecursionError:
            value = None
        if isinstance(value, str):
            keyword = value.strip()
            if _KEYWORD.fullmatch(keyword) and _defines_starter_hook(config, keyword):
                return keyword
    return _configured_keyword(config, "STARTER_DEFAULT_JOB_HOOK_KEYWORD")


def hook_path(config: Config, keyword: str, hook_name: str) -> str | None:
    """The executable of ``<keyword>_HOOK_<hook_name>``, or None when the knob is not set.

    Raises HookError naming the knob when the value is not an absolute path to a regular,
    executable file, or when the file is world-writable (anyone could replace what the
    starter runs).
    """
    if hook_name not in HOOK_NAMES:
        raise HookError(f"{hook_name!r} is not a starter hook; one of {', '.join(HOOK_NAMES)}")
    knob = f"{keyword}_HOOK_{hook_name}"
    value = config.get(knob)
    if value is None or not value.strip():
        return None
    path = value.strip()
    if not os.path.isabs(path):
        raise HookError(f"{knob} = {path}: not an absolute path", knob)
    try:
        info = os.stat(path)
    except OSError as exc:
        raise HookError(f"{knob} = {path}: cannot use it: {exc.strerror}", knob) from exc
    if not stat.S_ISREG(info.st_mode):
        raise HookError(f"{knob} = {path}: not a regular file", knob)
    if info.st_mode & stat.S_IWOTH:
        raise HookError(f"{knob} = {path}: world-writable; refusing to run it", knob)
    if not info.st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH):
        raise HookError(f"{knob} = {path}: not executable", knob)
    return path


# -- what the prepare hooks decide ------------------------------------------------------------


@attrs.frozen
class PrepareOutcome:
    """What a prepare hook decided: continue, hold or idle, with the attributes it printed."""

    kind: PrepareKind
    updates: tuple[tuple[str, Expr], ...]
    status: int
    message: str

    def merged_into(self, job: ClassAd) -> ClassAd:
        """A copy of ``job`` with the hook's attributes inserted or replaced."""
        merged = job.copy()
        for name, expr in self.updates:
            merged[name] = expr
        return merged

    def hold_error(self) -> JobSetupError:
        """The error that puts the job on hold for this outcome (HookPrepareJobFailure)."""
        return JobSetupError(self.message, HoldCode.HOOK_PREPARE_JOB_FAILURE, self.status)


def _hold(status: int, message: str) -> PrepareOutcome:
    # The status must read as a hold (never 0, never in the Idle range) for the subcode.
    held = 1 if status == 0 or status >= IDLE_STATUS_MINIMUM else status
    return PrepareOutcome(kind="hold", updates=(), status=held, message=message)


def _parse_output(stdout: str, hook_name: str) -> ClassAd:
    """The ad a hook printed, in old syntax; HookError names the first line that is not."""
    ad = ClassAd()
    for number, line in enumerate(stdout.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        shown = stripped if len(stripped) <= _SHOWN_LINE else stripped[:_SHOWN_LINE] + "..."
        where = f"{hook_name} hook output line {number} ({shown!r})"
        if _OLD_LINE.match(line) is None:
            raise HookError(f"{where} is not 'Name = Expression'")
        try:
            ad.update(parse_ad(line))
        except (ClassAdError, ValueError, RecursionError) as exc:
            raise HookError(f"{where} does not parse: {exc}") from exc
    return ad


def _status_code(ad: ClassAd) -> int | None:
    if STATUS_CODE_ATTRIBUTE not in ad:
        return None
    try:
        value = ad.evaluate(STATUS_CODE_ATTRIBUTE)
    except RecursionError:
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return None


def _status_message(ad: ClassAd) -> str:
    if STATUS_MESSAGE_ATTRIBUTE not in ad:
        return ""
    try:
        value = ad.evaluate(STATUS_MESSAGE_ATTRIBUTE)
    except RecursionError:
        return ""
    return value if isinstance(value, str) else ""


def prepare_outcome(result: HookResult, hook_name: str) -> PrepareOutcome:
    """Decide the job's fate from how a PREPARE_JOB(_BEFORE_TRANSFER) hook ended.

    A hook killed by a signal (or for its time limit) holds the job, whatever it printed.
    Otherwise its stdout is old-syntax ClassAd lines; a non-negative ``HookStatusCode``
    replaces the exit status: 0 continues, 1-299 holds, 300 and up sends the job back to Idle.
    ``HookStatusMessage`` is the message (the hold reason). Output that does not parse holds
    the job with a message naming the line. Never raises.
    """
    if result.signal is not None or result.timed_out:
        killer = result.signal if result.signal is not None else signal.SIGKILL
        return _hold(int(killer), f"{hook_name} hook {result.describe()}")
    if result.exit_code is None:
        return _hold(1, f"{hook_name} hook {result.describe()}")
    try:
        printed = _parse_output(result.stdout, hook_name)
    except HookError as exc:
        return _hold(result.exit_code, f"{exc.reason}; the hook {result.describe()}")
    status = result.exit_code
    code = _status_code(printed)
    if code is not None and code >= 0:
        status = code
    message = _status_message(printed)
    updates = tuple(
        (name, expr)
        for name, expr in printed.items()
        if name.lower() not in (STATUS_CODE_ATTRIBUTE.lower(), STATUS_MESSAGE_ATTRIBUTE.lower())
    )
    kind: PrepareKind
    if status == 0:
        kind = "continue"
    elif status >= IDLE_STATUS_MINIMUM:
        kind = "idle"
    else:
        kind = "hold"
    if kind != "continue" and not message:
        if code is not None and code >= 0:
            message = f"{hook_name} hook reported {STATUS_CODE_ATTRIBUTE} {code}"
        else:
            message = f"{hook_name} hook {result.describe()}"
    return PrepareOutcome(kind=kind, updates=updates, status=status, message=message)


# -- what the hooks are given -----------------------------------------------------------------


def _one_of(choices: tuple[str, ...], attribute: str) -> Callable[[object, object, str], None]:
    def check(_instance: object, _field: object, value: str) -> None:
        if value not in choices:
            raise HookError(f"{attribute} {value!r} is not one of {', '.join(choices)}")

    return check


@attrs.frozen
class JobRuntimeInfo:
    """The job's state as UPDATE_JOB_INFO and JOB_EXIT see it (CPU in seconds, image in KB)."""

    state: str = attrs.field(validator=_one_of(JOB_STATES, "JobState"))
    pid: int
    num_pids: int
    start_date: int
    sys_cpu: float
    user_cpu: float
    image_size_kb: int


@attrs.frozen
class JobExitInfo:
    """How the job ended: ``how`` is JOB_EXIT's argument; ``exit_code`` is set for a normal
    exit and ``exit_signal`` for death by a signal, never both."""

    how: str = attrs.field(validator=_one_of(JOB_EXIT_ARGUMENTS, "JOB_EXIT argument"))
    reason: str
    exit_code: int | None
    exit_signal: int | None
    duration: float

    def __attrs_post_init__(self) -> None:
        if (self.exit_code is None) == (self.exit_signal is None):
            raise HookError(
                "a job exit has exactly one of an exit code and a signal, "
                f"not code {self.exit_code} and signal {self.exit_signal}"
            )

    @property
    def by_signal(self) -> bool:
        """Whether a signal ended the job (``ExitBySignal``)."""
        return self.exit_signal is not None


def _with_runtime(job: ClassAd, info: JobRuntimeInfo) -> ClassAd:
    ad = job.copy()
    ad["JobState"] = info.state
    ad["JobPid"] = info.pid
    ad["NumPids"] = info.num_pids
    ad["JobStartDate"] = info.start_date
    ad["RemoteSysCpu"] = float(info.sys_cpu)
    ad["RemoteUserCpu"] = float(info.user_cpu)
    ad["ImageSize"] = info.image_size_kb
    return ad


def prepare_job_input(job: ClassAd) -> str:
    """The stdin of the prepare hooks: the job ad in old syntax."""
    return format_old(job)


def update_job_info_input(job: ClassAd, info: JobRuntimeInfo) -> str:
    """The stdin of UPDATE_JOB_INFO: the job ad plus the job's current state."""
    return format_old(_with_runtime(job, info))


def job_exit_input(job: ClassAd, info: JobRuntimeInfo, exit: JobExitInfo) -> str:
    """The stdin of JOB_EXIT (run with the single argument ``exit.how``): the job ad, the
    UPDATE_JOB_INFO attributes, and how the job ended."""
    ad = _with_runtime(job, info)
    ad["ExitReason"] = exit.reason
    ad["ExitBySignal"] = exit.by_signal
    if exit.exit_signal is not None:
        ad["ExitSignal"] = exit.exit_signal
    if exit.exit_code is not None:
        ad["ExitCode"] = exit.exit_code
    ad["JobDuration"] = float(exit.duration)
    return format_old(ad)
