"""How the slot model reads its knobs: strict numbers, errors that point at the knob's line,
and the knobs whose names carry a number or a resource name (``NUM_SLOTS_TYPE_<N>``).

HTCondor's daemons read a bad number as 0 or as the default and carry on; a slot layout built
on such a value is wrong in ways that are hard to trace, so here a value that is not a number
is a :class:`~epcore.errors.SlotConfigError` that names the knob, its file and its line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from epcore.classad import parse_expr
from epcore.config import Config
from epcore.errors import ClassAdSyntaxError, SlotConfigError

_INTEGER = re.compile(r"\s*[+-]?\d+\s*")
_REAL = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*")
_DEFAULT_SOURCE = "<Default>"


def knob_error(config: Config, knob: str, message: str, *fallbacks: str) -> SlotConfigError:
    """A SlotConfigError about ``knob``, located where the configuration set it (or, when it
    is not set, where the first of ``fallbacks`` that is set was).

    ``message`` should already name the knob (and any others involved): the location is a
    help for finding the line, the message must make sense without it.
    """
    for name in (knob, *fallbacks):
        origin = config.origin(name)
        if origin is not None and origin.source != _DEFAULT_SOURCE:
            # A template's knob is located at the ``use`` line that brought it in.
            return SlotConfigError(message, origin.source, origin.line)
    return SlotConfigError(message)


def is_configured(config: Config, knob: str) -> bool:
    """True when a file, the environment or detection gives ``knob`` a non-empty value (the
    default table does not count)."""
    origin = config.origin(knob)
    return origin is not None and origin.source != _DEFAULT_SOURCE and config.get(knob) is not None


def read_number(config: Config, knob: str) -> float | None:
    """``knob`` as a number (a literal, or a ClassAd expression such as ``$(DETECTED_CORES)*2``
    after macro expansion); None when unset; a SlotConfigError when it is not a number."""
    text = config.get(knob)
    if text is None:
        return None
    if _INTEGER.fullmatch(text):
        return int(text)
    if _REAL.fullmatch(text):
        return float(text)
    try:
        value = parse_expr(text).evaluate(context=config.eval_context)
    except ClassAdSyntaxError:
        value = None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise knob_error(config, knob, f"{knob}: {text.strip()!r} is not a number")
    return value


def read_int(config: Config, knob: str, *, minimum: int | None = None) -> int | None:
    """``knob`` as a whole number (see :func:`read_number`), at least ``minimum`` when given."""
    value = read_number(config, knob)
    if value is None:
        return None
    if value != int(value):
        raise knob_error(config, knob, f"{knob}: {config.get(knob)!r} is not a whole number")
    if minimum is not None and value < minimum:
        raise knob_error(config, knob, f"{knob}: {int(value)} is less than {minimum}")
    return int(value)


def matching_knobs(config: Config, pattern: re.Pattern[str]) -> Iterator[tuple[str, re.Match[str]]]:
    """The knobs the configuration defines whose names match ``pattern`` in full, each once.

    A name prefixed with this daemon's subsystem or local name (``STARTD.MACHINE_RESOURCE_X``)
    counts as the bare name, as the daemon would see it; other prefixes belong to other daemons.
    Yields the bare name (as spelled) and the match.
    """
    prefixes = {config.subsystem.lower()}
    if config.local_name:
        prefixes.add(config.local_name.lower())
    seen: set[str] = set()
    for name in config.names():
        head, dot, tail = name.rpartition(".")
        if dot and head.lower() not in prefixes:
            continue
        bare = tail if dot else name
        match = pattern.fullmatch(bare)
        if match is None or bare.lower() in seen:
            continue
        seen.add(bare.lower())
        yield bare, match


def format_amount(value: float) -> str:
    """A number as a message shows it: no trailing ``.0``, at most a few decimals."""
    if value == int(value):
        return str(int(value))
    return f"{value:.4g}"
