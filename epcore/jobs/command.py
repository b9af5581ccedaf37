"""What to run for a job: its command, arguments, environment and files, read from its ClassAd.

Pure interpretation, no I/O: :func:`job_command` turns a job ad into a :class:`JobCommand`, and
:func:`job_environment` adds the variables the starter gives every job.

The argument and environment texts follow HTCondor's two syntaxes as they appear *in the job
ad* (after condor_submit removed its own outer double quotes and turned ``""`` into ``"``):

* V1 (``Args``, ``Env``): arguments are separated by white space and cannot be quoted;
  environment entries are ``NAME=value`` separated by ``;`` (or by the job's ``EnvDelim``).
* V2 (``Arguments``, ``Environment``): white space separates words; single quotes group text,
  and two single quotes inside quotes stand for one literal quote; double quotes are ordinary
  characters. An environment word is ``NAME=value`` with the same quoting. V2 wins when both
  attributes are present.
"""

from __future__ import annotations

import posixpath
import signal
from collections.abc import Iterable, Sequence

import attrs

from epcore.classad import UNDEFINED, ClassAd
from epcore.errors import JobSetupError
from epcore.jobs.codes import HoldCode

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

# isspace() in C, which HTCondor's tokenizers use.
_WHITESPACE = " \t\n\r\v\f"
_QUOTE = "'"
_V1_ENV_DELIMITER = ";"
_SCRATCH_ALIASES = ("TMPDIR", "TMP", "TEMP")


class JobSpecError(JobSetupError):
    """A job ad whose command, arguments, environment, files or signal cannot be used.

    The message names the attribute; ``hold_code`` says which part failed (6 executable or
    arguments, 7 output, 8 input, 14 Iwd).
    """

    def __init__(
        self,
        message: str,
        hold_code: int = HoldCode.FAILED_TO_CREATE_PROCESS,
        hold_subcode: int = 0,
    ) -> None:
        super().__init__(message, hold_code, hold_subcode)


Environment = tuple[tuple[str, str], ...]


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


# ---------------------------------------------------------------------------------- arguments


def _split_v2(text: str, attribute: str) -> list[str]:
    """Split V2 text into words, honouring single-quote grouping."""
    words: list[str] = []
    current: list[str] = []
    in_word = False
    index = 0
    while index < len(text):
        char = text[index]
        if char == _QUOTE:
            in_word = True
            start = index
            index += 1
            while True:
                if index >= len(text):
                    raise JobSpecError(
                        f"job ad attribute {attribute}: unterminated quote at column {start + 1}"
                    )
                if text[index] == _QUOTE:
                    if text.startswith(_QUOTE * 2, index):
                        current.append(_QUOTE)
                        index += 2
                        continue
                    index += 1
                    break
                current.append(text[index])
                index += 1
            continue
        if char in _WHITESPACE:
            if in_word:
                words.append("".join(current))
                current = []
                in_word = False
        else:
            in_word = True
            current.append(char)
        index += 1
    if in_word:
        words.append("".join(current))
    return words


def parse_args_v1(text: str, attribute: str = "Args") -> tuple[str, ...]:
    """Split V1 arguments: white-space separated words, no quoting of any kind."""
    del attribute  # every text is valid V1; kept for a signature like the other parsers
    return tuple(text.translate({ord(c): " " for c in _WHITESPACE}).split())


def parse_args_v2(text: str, attribute: str = "Arguments") -> tuple[str, ...]:
    """Split V2 arguments; an unterminated single quote is a :class:`JobSpecError`."""
    return tuple(_split_v2(text, attribute))


def _quote_word_v2(word: str) -> str:
    if word and not any(c in _WHITESPACE or c == _QUOTE for c in word):
        return word
    return _QUOTE + word.replace(_QUOTE, _QUOTE * 2) + _QUOTE


def quote_args_v2(arguments: Iterable[str]) -> str:
    """The V2 text that :func:`parse_args_v2` reads back as ``arguments``."""
    return " ".join(_quote_word_v2(word) for word in arguments)


# -------------------------------------------------------------------------------- environment


def _env_entry(entry: str, attribute: str) -> tuple[str, str]:
    name, equals, value = entry.partition("=")
    if not equals:
        raise JobSpecError(f"job ad attribute {attribute}: {entry!r} has no '=' after the name")
    if not name:
        raise JobSpecError(f"job ad attribute {attribute}: {entry!r} has an empty variable name")
    return name, value


def _unique(pairs: Iterable[tuple[str, str]]) -> Environment:
    """Later settings of a name replace earlier ones, keeping the first position."""
    merged: dict[str, str] = {}
    for name, value in pairs:
        merged[name] = value
    return tuple(merged.items())


def parse_env_v1(
    text: str, attribute: str = "Env", delimiter: str = _V1_ENV_DELIMITER
) -> Environment:
    """Read V1 ``NAME=value`` entries separated by ``delimiter``; empty entries are skipped."""
    entries = (entry for entry in text.split(delimiter) if entry)
    return _unique(_env_entry(entry, attribute) for entry in entries)


def parse_env_v2(text: str, attribute: str = "Environment") -> Environment:
    """Read V2 white-space separated ``NAME=value`` words with single-quote grouping."""
    return _unique(_env_entry(word, attribute) for word in _split_v2(text, attribute))


def quote_env_v2(environment: Iterable[tuple[str, str]]) -> str:
    """The V2 text that :func:`parse_env_v2` reads back as ``environment``.

    Names must be non-empty and hold no ``=``, white space or single quote, since such a
    name could not be read back as itself.
    """
    words = []
    for name, value in environment:
        if not name or any(c in _WHITESPACE or c in "='" for c in name):
            raise JobSpecError(f"environment variable name {name!r} cannot be written in V2")
        words.append(f"{name}={_quote_word_v2(value) if value else ''}")
    return " ".join(words)


# ------------------------------------------------------------------------------------ signals


def signal_number(value: object, attribute: str = "KillSig") -> int:
    """A signal number from a name (``"SIGQUIT"``, ``"quit"``), a numeric text or a number."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise JobSpecError(f"job ad attribute {attribute}: {value!r} is not a signal")
    number: int
    if isinstance(value, int):
        number = value
    elif value.strip().isdigit():
        number = int(value.strip())
    else:
        name = value.strip().upper()
        if not name.startswith("SIG"):
            name = "SIG" + name
        try:
            number = int(signal.Signals[name])
        except KeyError:
            raise JobSpecError(
                f"job ad attribute {attribute}: unknown signal name {value!r}"
            ) from None
    if number not in {int(s) for s in signal.valid_signals()}:
        raise JobSpecError(f"job ad attribute {attribute}: {value!r} is not a valid signal")
    return number


# ------------------------------------------------------------------------------------ job ad


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
    delimiter = _string(job, "EnvDelim", HoldCode.FAILED_TO_CREATE_PROCESS) or _V1_ENV_DELIMITER
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
    return _unique([*defaults, *command.environment, *condor])
