"""The argument, environment and signal texts of a job ad: reading them and writing them back.

The texts follow HTCondor's two syntaxes as they appear *in the job ad* (after condor_submit
removed its own outer double quotes and turned ``""`` into ``"``):

* V1 (``Args``, ``Env``): arguments are separated by white space and cannot be quoted;
  environment entries are ``NAME=value`` separated by ``;`` (or by the job's ``EnvDelim``).
* V2 (``Arguments``, ``Environment``): white space separates words; single quotes group text,
  and two single quotes inside quotes stand for one literal quote; double quotes are ordinary
  characters. An environment word is ``NAME=value`` with the same quoting. V2 wins when both
  attributes are present.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable

from epcore.errors import JobSetupError
from epcore.jobs.codes import HoldCode

# isspace() in C, which HTCondor's tokenizers use.
_WHITESPACE = " \t\n\r\v\f"
_QUOTE = "'"
#: What separates V1 environment entries when the job ad gives no ``EnvDelim``.
V1_ENV_DELIMITER = ";"


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


def unique_environment(pairs: Iterable[tuple[str, str]]) -> Environment:
    """Later settings of a name replace earlier ones, keeping the first position."""
    merged: dict[str, str] = {}
    for name, value in pairs:
        merged[name] = value
    return tuple(merged.items())


def parse_env_v1(
    text: str, attribute: str = "Env", delimiter: str = V1_ENV_DELIMITER
) -> Environment:
    """Read V1 ``NAME=value`` entries separated by ``delimiter``; empty entries are skipped."""
    entries = (entry for entry in text.split(delimiter) if entry)
    return unique_environment(_env_entry(entry, attribute) for entry in entries)


def parse_env_v2(text: str, attribute: str = "Environment") -> Environment:
    """Read V2 white-space separated ``NAME=value`` words with single-quote grouping."""
    return unique_environment(_env_entry(word, attribute) for word in _split_v2(text, attribute))


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
