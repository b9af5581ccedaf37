"""Submit-command values to job-attribute values: sizes with units, booleans, expressions,
arguments and environments in both of HTCondor's syntaxes.

Every function raises ValueError with the reason; the caller adds the file, line and command.
"""

from __future__ import annotations

import math
import re

from epcore.classad import Expr, parse_expr
from epcore.errors import ClassAdSyntaxError, JobSetupError
from epcore.jobs.syntax import (
    Environment,
    parse_args_v1,
    parse_args_v2,
    parse_env_v1,
    parse_env_v2,
    quote_args_v2,
    quote_env_v2,
)

_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*")
_UNIT_POWER = {"": None, "k": 1, "kb": 1, "m": 2, "mb": 2, "g": 3, "gb": 3, "t": 4, "tb": 4}
_TRUE = frozenset({"true", "yes", "t", "y", "1"})
_FALSE = frozenset({"false", "no", "f", "n", "0"})


def parse_bool(text: str) -> bool:
    """``true``/``yes``/``t``/``1`` and ``false``/``no``/``f``/``0``, in any case."""
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"{text!r} is not a boolean (true or false)")


def parse_expression(text: str) -> Expr:
    """A ClassAd expression, or ValueError saying why it is not one."""
    try:
        return parse_expr(text)
    except ClassAdSyntaxError as error:
        raise ValueError(f"{text!r} is not a ClassAd expression: {error.reason}") from error


def parse_size(text: str, unit_power: int) -> int | Expr:
    """A size with an optional unit, in units of 1024**unit_power bytes (MB: 2, KB: 1).

    A plain number is already in the command's unit. A value that is not a number with a unit
    is kept as a ClassAd expression, as condor_submit does (``request_memory = 2 * 1024``).
    """
    match = _SIZE.fullmatch(text)
    if match is None:
        return parse_expression(text)
    number, unit = float(match.group(1)), match.group(2).lower()
    if unit not in _UNIT_POWER:
        raise ValueError(f"{text!r} has an unknown unit {match.group(2)!r} (use K, M, G or T)")
    power = _UNIT_POWER[unit]
    scaled = number if power is None else number * 1024.0 ** (power - unit_power)
    return _checked(math.ceil(scaled), text)


def _checked(value: int, text: str) -> int:
    """``value`` if a ClassAd can hold it (signed 64 bits), else ValueError."""
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"{text!r} is too large")
    return value


def parse_integer(text: str) -> int | Expr:
    """An integer, or (when not a number) a ClassAd expression."""
    stripped = text.strip()
    if re.fullmatch(r"[+-]?[0-9]+", stripped):
        return _checked(int(stripped), text)
    return parse_expression(stripped)


def _strip_v2_quotes(text: str) -> str | None:
    """The inside of a ``"..."`` V2 value with ``""`` turned into ``"``; None when V1."""
    stripped = text.strip()
    if not stripped.startswith('"'):
        return None
    if len(stripped) < 2 or not stripped.endswith('"'):
        raise ValueError("a value that starts with a double quote must end with one")
    inner = stripped[1:-1]
    if '"' in inner.replace('""', ""):
        raise ValueError('a double quote inside a quoted value must be written as ""')
    return inner.replace('""', '"')


def arguments_to_v2(text: str) -> str:
    """The ``Arguments`` attribute condor_submit stores for an ``arguments`` command."""
    inner = _strip_v2_quotes(text)
    try:
        words = parse_args_v1(text) if inner is None else parse_args_v2(inner)
    except JobSetupError as error:
        raise ValueError(str(error)) from error
    return quote_args_v2(words)


def parse_environment(text: str) -> Environment:
    """The variables of an ``environment`` command in either syntax (V2 when quoted)."""
    inner = _strip_v2_quotes(text)
    try:
        return parse_env_v1(text) if inner is None else parse_env_v2(inner)
    except JobSetupError as error:
        raise ValueError(str(error)) from error


def environment_to_v2(environment: Environment) -> str:
    """The ``Environment`` attribute text for ``environment``."""
    try:
        return quote_env_v2(environment)
    except JobSetupError as error:
        raise ValueError(str(error)) from error


def concurrency_limits(text: str) -> str:
    """``ConcurrencyLimits``: lower-cased, split on commas and blanks, sorted, comma-joined."""
    limits = sorted(word for word in re.split(r"[\s,]+", text.lower()) if word)
    for limit in limits:
        name, _, amount = limit.partition(":")
        if not re.fullmatch(r"[a-z0-9_.]+", name):
            raise ValueError(f"{limit!r} is not a concurrency limit name")
        if amount:
            try:
                float(amount)
            except ValueError as error:
                raise ValueError(f"{limit!r}: {amount!r} is not a number") from error
    return ",".join(limits)
