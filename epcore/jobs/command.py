"""What to run for a job: its command, arguments, environment and files, read from its ClassAd.

Pure interpretation, no I/O: :func:`job_command` turns a job ad into a :class:`JobCommand`, and
:func:`job_environment` adds the variables the starter gives every job. The argument and
environment texts are read by :mod:`epcore.jobs.syntax`.
"""

from __future__ import annotations

import posixpath
import signal
from collections.abc import Sequence

import attrs

from epcore.classad import UNDEFINED, ClassAd
from epcore.jobs.codes import HoldCode
from epcore.jobs.syntax import (
    V1_ENV_DELIMITER,
    Environment,
    JobSpecError,
    parse_args_v1,
    parse_args_v2,
    parse_env_v1,
    parse_env_v2,
    signal_number,
    unique_environment,
)

VANILLA_UNIVERSE = 5

#: HTCondor's default STARTER_NUM_THREADS_ENV_VARS: each is set to the slot's CPU count.
DEFAULT_THREAD_VARS: tuple[str, ...] = (
    "CUBACORES",
    "GOMAXPROCS",
    "JULIA_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "OMP_NUM_THREADS",
    "OMP_THREAD_LIMIT",
    "OPENBLAS_NUM_THREADS",
    "PYTHON_CPU_COUNT",
    "ROOT_MAX_THREADS",
    "TF_LOOP_PARALLEL_ITERATIONS",
    "TF_NUM_THREADS",
)

#: The variables naming the scratch directory, as the starter sets them.
_SCRATCH_ALIASES = ("TMPDIR", "TMP", "TEMP")


@attrs.frozen
class JobCommand:
    """Everything the starter needs to exec a job, with every path made absolute."""

    executable: str
    arguments: tuple[str, ...]
    environment: Environment
    iwd: str
    stdin: str
    stdout: str
    stderr: str
    kill_signal: int
    universe: int


def _string(job: ClassAd, attribute: str, hold_code: int) -> str | None:
    """The attribute's string value, None when absent or undefined, an error for other types."""
    if attribute not in job:
        return None
    value = job.evaluate(attribute)
    if isinstance(value, str):
        return value
    if value is UNDEFINED:
        return None
    raise JobSpecError(f"job ad attribute {attribute}: expected a string, got {value!r}", hold_code)


def _integer(job: ClassAd, attribute: str, default: int) -> int:
    if attribute not in job:
        return default
    value = job.evaluate(attribute)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if value is UNDEFINED:
        return default
    raise JobSpecError(f"job ad attribute {attribute}: expected an integer, got {value!r}")


def _under(iwd: str, path: str) -> str:
    return path if posixpath.isabs(path) else posixpath.join(iwd, path)


def _stream(job: ClassAd, attribute: str, iwd: str, hold_code: int) -> str:
    path = _string(job, attribute, hold_code)
    return _under(iwd, path) if path else "/dev/null"


def _arguments(job: ClassAd) -> tuple[str, ...]:
    v2 = _string(job, "Arguments", HoldCode.FAILED_TO_CREATE_PROCESS)
    if v2 is not None:
        return parse_args_v2(v2, "Arguments")
    v1 = _string(job, "Args", HoldCode.FAILED_TO_CREATE_PROCESS)
    return parse_args_v1(v1, "Args") if v1 is not None else ()


def _environment(job: ClassAd) -> Environment:
    v2 = _string(job, "Environment", HoldCode.FAILED_TO_CREATE_PROCESS)
    if v2 is not None:
        return parse_env_v2(v2, "Environment")
    v1 = _string(job, "Env", HoldCode.FAILED_TO_CREATE_PROCESS)
    if v1 is None:
        return ()
    delimiter = _string(job, "EnvDelim", HoldCode.FAILED_TO_CREATE_PROCESS) or V1_ENV_DELIMITER
    return parse_env_v1(v1, "Env", delimiter[0])


def job_command(job: ClassAd, scratch_dir: str) -> JobCommand:
    """Interpret ``job`` (a fetched or matched job ad) for a sandbox at ``scratch_dir``.

    Relative ``Cmd``, ``In``, ``Out`` and ``Err`` are taken under ``Iwd``, and a relative
    ``Iwd`` under the sandbox; missing streams are ``/dev/null``.
    """
    iwd = _string(job, "Iwd", HoldCode.IWD_ERROR) or scratch_dir
    iwd = _under(scratch_dir, iwd)
    cmd = _string(job, "Cmd", HoldCode.FAILED_TO_CREATE_PROCESS)
    if not cmd:
        raise JobSpecError("job ad attribute Cmd: missing or empty, nothing to execute")
    kill_signal = int(signal.SIGTERM)
    if "KillSig" in job:
        value = job.evaluate("KillSig")
        if value is not UNDEFINED:
            kill_signal = signal_number(value, "KillSig")
    return JobCommand(
        executable=_under(iwd, cmd),
        arguments=_arguments(job),
        environment=_environment(job),
        iwd=iwd,
        stdin=_stream(job, "In", iwd, HoldCode.UNABLE_TO_OPEN_INPUT),
        stdout=_stream(job, "Out", iwd, HoldCode.UNABLE_TO_OPEN_OUTPUT),
        stderr=_stream(job, "Err", iwd, HoldCode.UNABLE_TO_OPEN_OUTPUT),
        kill_signal=kill_signal,
        universe=_integer(job, "JobUniverse", VANILLA_UNIVERSE),
    )


def job_environment(
    command: JobCommand,
    *,
    scratch_dir: str,
    slot_name: str,
    job_ad_path: str,
    machine_ad_path: str,
    cpus: float,
    thread_vars: Sequence[str] = DEFAULT_THREAD_VARS,
) -> Environment:
    """The job's full environment: starter defaults, then the job's own, then ``_CONDOR_*``.

    Precedence: the thread variables (each of ``thread_vars`` set to the slot's CPU count, at
    least 1) and ``TMPDIR``/``TMP``/``TEMP`` (the scratch directory) are defaults the job's
    environment may override, as HTCondor lets a job choose its own thread count; the
    ``_CONDOR_*`` variables describe the slot and sandbox and always win over the job's.
    """
    threads = str(max(1, int(cpus)))
    defaults = [(name, threads) for name in thread_vars]
    defaults += [(name, scratch_dir) for name in _SCRATCH_ALIASES]
    condor = [
        ("_CONDOR_SCRATCH_DIR", scratch_dir),
        ("_CONDOR_SLOT", slot_name),
        ("_CONDOR_JOB_AD", job_ad_path),
        ("_CONDOR_MACHINE_AD", machine_ad_path),
        ("_CONDOR_JOB_IWD", command.iwd),
    ]
    return unique_environment([*defaults, *command.environment, *condor])
