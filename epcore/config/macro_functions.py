"""The values of ``$(NAME)`` and of the special macro functions.

``$ENV(VAR[:default])``, ``$INT(name[,fmt])``, ``$REAL(name[,fmt])``, ``$STRING(name[,fmt])``,
``$EVAL(expr)``, ``$CHOICE(index, list | a, b, ...)``, ``$SUBSTR(name, start[, length])``,
``$RANDOM_CHOICE(a, b, ... | list)``, ``$RANDOM_INTEGER(min, max[, step])``, ``$BASENAME()``,
``$DIRNAME()`` and the path functions ``$F[pnxdqabfwu](name)``. Arguments that name a knob are
replaced by its value (and expanded) first, as HTCondor does. A function that cannot produce a
value raises ConfigError; the caller adds which knob was being expanded.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping

import attrs

from epcore.classad import ERROR, UNDEFINED, EvalContext, Value, parse_expr
from epcore.classad.unparse import format_literal
from epcore.config.macros import FILENAME, NORMAL, MacroRef
from epcore.errors import ClassAdSyntaxError, ConfigError


@attrs.frozen
class FunctionScope:
    """What a macro function may consult: knob lookup, expansion, environment, randomness."""

    lookup: Callable[[str], str | None]
    expand: Callable[[str], str]  # expands references but keeps $(DOLLAR)
    expand_all: Callable[[str], str]  # expands references, $(DOLLAR) included
    environ: Mapping[str, str]
    rng: random.Random
    eval_context: EvalContext


def _nth_item(items: str, index: int) -> str | None:
    parts = items.split(",")
    return parts[index].strip() if index < len(parts) else None


def _count_items(items: str) -> int:
    # HTCondor counts separators plus one, and one more when the list starts with a comma.
    return items.count(",") + 1 + (1 if items.startswith(",") else 0)


def _lookup_and_expand(scope: FunctionScope, args: str, index: int) -> str | None:
    item = _nth_item(args, index)
    if item is None:
        return None
    value = scope.lookup(item)
    return scope.expand(item if value is None else value)


def _evaluate(scope: FunctionScope, text: str) -> Value | None:
    try:
        expr = parse_expr(text)
    except ClassAdSyntaxError:
        return None
    return expr.evaluate(context=scope.eval_context)


def to_integer(scope: FunctionScope, text: str) -> int | None:
    """HTCondor's reading of text as an integer: a C integer, else an expression's value."""
    match = re.fullmatch(r"\s*([+-]?\d+)\s*", text)
    if match:
        return int(match.group(1))
    value = _evaluate(scope, text)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        # C's conversion of a double that no 64-bit integer holds (or of NaN) gives the
        # smallest 64-bit integer on the machines HTCondor runs on.
        return int(value) if value == value and abs(value) < 2**63 else -(2**63)
    return None


def to_real(scope: FunctionScope, text: str) -> float | None:
    """HTCondor's reading of text as a real: a C number, else an expression's value."""
    try:
        return float(text.strip()) if text.strip() else None
    except ValueError:
        pass
    value = _evaluate(scope, text)
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    return None


_FORMAT = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d*))?(hh|h|ll|l|L|q|j|z|t)?([a-zA-Z%])")
_INT_CONVERSIONS = "dioxXuc"
_REAL_CONVERSIONS = "eEfFgGaA"


def c_format(fmt: str, value: int | float | str, kind: str) -> str | None:
    """Format ``value`` with the C printf format ``fmt``; None when ``fmt`` does not suit ``kind``.

    ``kind`` is "int", "real" or "string": the one conversion in ``fmt`` must be of that kind.
    """
    pieces: list[str] = []
    pos = 0
    used = False
    for match in _FORMAT.finditer(fmt):
        pieces.append(fmt[pos : match.start()])
        pos = match.end()
        flags, width, precision, _length, conversion = match.groups()
        if conversion == "%":
            pieces.append("%")
            continue
        if used:
            return None
        used = True
        allowed = {"int": _INT_CONVERSIONS, "real": _REAL_CONVERSIONS, "string": "s"}[kind]
        if conversion not in allowed:
            return None
        spec = "%" + flags + width + ("." + precision if precision is not None else "")
        if conversion == "u":
            conversion = "d"
        if conversion in "aA":
            text = float(value).hex()
            pieces.append(text.upper() if conversion == "A" else text)
            continue
        pieces.append((spec + conversion) % value)
    pieces.append(fmt[pos:])
    return "".join(pieces) if used else None


def _format_real(value: float) -> str:
    # C's %.16G: up to 16 significant digits, no trailing zeros.
    return f"{value:.16G}"


def _choice(scope: FunctionScope, body: str) -> str:
    parts = body.split(",", 1)
    if len(parts) < 2:
        raise ConfigError("$CHOICE() error: no list")
    items = parts[1]
    index_text = _lookup_and_expand(scope, body, 0) or ""
    index = to_integer(scope, index_text)
    if index is None or index < 0 or index >= 2**31 - 1:
        raise ConfigError(f"$CHOICE() error: '{index_text}' is invalid index")
    if _count_items(items) == 1:
        list_name = items.strip()
        if not list_name:
            raise ConfigError("$CHOICE() error: no list")
        value = scope.lookup(list_name)
        if value is None:
            raise ConfigError(f"$CHOICE() error: no list named {list_name}")
        items = scope.expand(value) if "$" in value else value
    item = _nth_item(items, index)
    if item is None:
        raise ConfigError(f"$CHOICE() error: index {index} is out of range")
    return item


def _random_choice(scope: FunctionScope, body: str) -> str:
    items: str | None = body
    if "," not in body:
        if not body:
            raise ConfigError("$RANDOM_CHOICE() error: no list")
        items = _lookup_and_expand(scope, body, 0)
    assert items is not None
    count = _count_items(items)
    return _nth_item(items, scope.rng.randrange(count)) or ""


def _random_integer(scope: FunctionScope, body: str) -> str:
    bounds: list[int] = []
    for index, what in enumerate(("min", "max", "step")):
        item = _nth_item(body, index)
        match = re.match(r"\s*[+-]?\d+", item or "")
        if item is None or match is None:
            if index == 2 and item is None:
                bounds.append(1)
                continue
            raise ConfigError(f"$RANDOM_INTEGER() error: invalid {what}")
        bounds.append(int(match.group(0)))
    low, high, step = bounds
    if step < 1:
        raise ConfigError("$RANDOM_INTEGER() error: invalid step")
    if low > high:
        raise ConfigError("$RANDOM_INTEGER() error: min > max")
    choices = (step + high - low) // step
    return str(low + scope.rng.randrange(choices) * step)


def _substr(scope: FunctionScope, body: str) -> str:
    # Unlike the other functions, $SUBSTR of a name with no value is empty, not the name.
    name = _nth_item(body, 0) or ""
    raw = scope.lookup(name)
    text = scope.expand_all(raw) if raw else ""
    if not text:
        return ""
    start_text = _lookup_and_expand(scope, body, 1) or ""
    length_text = _lookup_and_expand(scope, body, 2)
    start = to_integer(scope, start_text)
    if start is None:
        raise ConfigError(f"$SUBSTR() error: {start_text} is invalid start")
    length = len(text)
    if length_text is not None:
        parsed = to_integer(scope, length_text)
        if parsed is None:
            raise ConfigError(f"$SUBSTR() error: {length_text} is invalid length")
        length = parsed
    size = len(text)
    start = size + start if start < 0 else start
    start = min(max(start, 0), size)
    rest = size - start
    length = rest + length if length < 0 else length
    length = min(max(length, 0), rest)
    return text[start : start + length]


def _number(scope: FunctionScope, ref: MacroRef, body: str) -> str:
    is_int = ref.function == "INT"
    name = ref.function
    fmt = body.split(",", 1)[1] if "," in body else None
    value_text = _lookup_and_expand(scope, body, 0) or ""
    if is_int:
        number: int | float | None = to_integer(scope, value_text)
        if number is None:
            raise ConfigError(f"$INT() error: {value_text} does not evaluate to an integer")
    else:
        number = to_real(scope, value_text)
        if number is None:
            raise ConfigError(f"$REAL() error: {value_text} does not evaluate to a real")
    if fmt is None:
        return str(number) if is_int else _format_real(float(number))
    out = c_format(fmt, number, "int" if is_int else "real")
    if out is None:
        raise ConfigError(f"${name}() error: '{fmt}' is not a valid format specifier")
    if not is_int and "." not in out:
        out += ".0"
    return out


def _string(scope: FunctionScope, body: str) -> str:
    fmt = body.split(",", 1)[1] if "," in body else None
    text = _lookup_and_expand(scope, body, 0) or ""
    value = _evaluate(scope, text)
    if isinstance(value, str):
        text = value
    if fmt is None:
        return text
    out = c_format(fmt, text, "string")
    if out is None:
        raise ConfigError(f"$STRING() error: '{fmt}' is not a valid format specifier")
    return out


def _eval(scope: FunctionScope, body: str) -> str:
    looked_up = scope.lookup(body)
    text = scope.expand(body if looked_up is None else looked_up)
    value = _evaluate(scope, text)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if value is UNDEFINED:
        return "undefined"
    if value is ERROR:
        return "error"
    return format_literal(value)


def evaluate_reference(scope: FunctionScope, ref: MacroRef, text: str) -> str:
    """The text that replaces ``ref`` (a reference inside ``text``)."""
    body = ref.body_text(text)
    function = ref.function
    value: str | None
    if function == NORMAL:
        value = scope.lookup(ref.name(text))
    elif function == "ENV":
        value = scope.environ.get(ref.name(text))
        if value is None and ref.default is None:
            value = "UNDEFINED"
    elif function in (FILENAME, "BASENAME", "DIRNAME"):
        from epcore.config.paths import path_function

        # The argument names a knob; when no knob has that name it is the path itself.
        raw = scope.lookup(body)
        if raw is None:
            raw = body
        elif "$" in raw:
            raw = scope.expand(raw)
        value = path_function(ref.prefix, function, raw)
    else:
        handlers: dict[str, Callable[[FunctionScope, str], str]] = {
            "CHOICE": _choice,
            "RANDOM_CHOICE": _random_choice,
            "RANDOM_INTEGER": _random_integer,
            "SUBSTR": _substr,
            "STRING": _string,
            "EVAL": _eval,
        }
        if function in ("INT", "REAL"):
            return _number(scope, ref, body)
        return handlers[function](scope, body)
    if not value:
        default = ref.default_text(text)
        return default if default is not None else ""
    return value
