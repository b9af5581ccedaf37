"""Job environment and argument strings.

``envV1ToV2``, ``mergeEnvironment``, ``argsToList`` and ``listToArgs`` convert between
the syntaxes HTCondor uses for a job's environment and arguments.

HTCondor knows two syntaxes. V1 arguments are split at whitespace with no quoting;
V1 environments are ``NAME=value`` entries separated by ``;`` (or ``|`` when the string
starts with one). V2 (both kinds) separates items with whitespace and quotes with
single quotes, a doubled ``''`` inside quotes standing for one quote character.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from epcore.classad.functions._support import arity_ok, low32
from epcore.classad.values import ERROR, UNDEFINED, Value

if TYPE_CHECKING:
    from epcore.classad.calls import FunctionCall, FunctionImpl

_WHITESPACE: Final = " \t\n\r"
_NEEDS_QUOTES: Final = _WHITESPACE + "'"
# Stands for an entry kept verbatim without "=value": an unexpanded $$() macro.
_NO_VALUE: Final = None


class _BadSyntax(Exception):
    """The string is not valid in the syntax it is read with."""


def split_v2(text: str) -> list[str]:
    """Split V2 raw syntax into items; raises _BadSyntax on an unterminated quote."""
    items: list[str] = []
    current: list[str] = []
    started = False
    quoted = False
    i = 0
    while i < len(text):
        char = text[i]
        if quoted:
            if char == "'":
                if text[i + 1 : i + 2] == "'":
                    current.append("'")
                    i += 2
                    continue
                quoted = False
            else:
                current.append(char)
        elif char == "'":
            quoted = started = True
        elif char in _WHITESPACE:
            if started:
                items.append("".join(current))
                current, started = [], False
        else:
            current.append(char)
            started = True
        i += 1
    if quoted:
        raise _BadSyntax("unterminated quote")
    if started:
        items.append("".join(current))
    return items


def join_v2(items: list[str]) -> str:
    """Join items in V2 raw syntax, quoting each run of whitespace and quote characters."""
    out: list[str] = []
    for item in items:
        if not item:
            out.append("''")
            continue
        pieces: list[str] = []
        i = 0
        while i < len(item):
            if item[i] in _NEEDS_QUOTES:
                end = i
                while end < len(item) and item[end] in _NEEDS_QUOTES:
                    end += 1
                pieces.append("'" + item[i:end].replace("'", "''") + "'")
                i = end
            else:
                pieces.append(item[i])
                i += 1
        out.append("".join(pieces))
    return " ".join(out)


class _Environment:
    """An environment being merged, printed in V2 syntax sorted by name (byte order)."""

    def __init__(self) -> None:
        self.entries: dict[str, str | None] = {}

    def set_entry(self, entry: str) -> None:
        name, sep, value = entry.partition("=")
        if not sep:
            if "$$" in entry:
                self.entries[entry] = _NO_VALUE
                return
            raise _BadSyntax(f"missing '=' in {entry!r}")
        if not name:
            raise _BadSyntax(f"missing variable name in {entry!r}")
        self.entries[name] = value

    def merge_v1(self, text: str) -> None:
        delimiter = "|" if text.startswith("|") else ";"
        for line in text.replace("\n", delimiter).split(delimiter):
            entry = line.lstrip(_WHITESPACE)
            if entry:
                self.set_entry(entry)

    def merge_v2(self, text: str) -> None:
        for entry in split_v2(text):
            self.set_entry(entry)

    def v2(self) -> str:
        names = sorted(self.entries, key=lambda n: n.encode("utf-8", "surrogateescape"))
        items = [n if self.entries[n] is _NO_VALUE else f"{n}={self.entries[n]}" for n in names]
        return join_v2(items)


def env_v1_to_v2(call: FunctionCall) -> Value:
    """``envV1ToV2(env)``: a V1 environment string rewritten in V2 syntax."""
    if not arity_ok(call, 1):
        return ERROR
    value = call.value(0)
    if value is UNDEFINED:
        return UNDEFINED
    if type(value) is not str:
        return ERROR
    assert isinstance(value, str)
    environment = _Environment()
    try:
        environment.merge_v1(value)
    except _BadSyntax:
        return ERROR
    return environment.v2()


def merge_environment(call: FunctionCall) -> Value:
    """``mergeEnvironment(env, ...)``: V2 environments merged left to right; UNDEFINED skipped."""
    environment = _Environment()
    for value in call.values():
        if value is UNDEFINED:
            continue
        if type(value) is not str:
            return ERROR
        assert isinstance(value, str)
        try:
            environment.merge_v2(value)
        except _BadSyntax:
            return ERROR
    return environment.v2()


def _version(call: FunctionCall) -> int | None:
    """The optional syntax version argument (1 or 2, default 2), or None when invalid."""
    if len(call.args) < 2:
        return 2
    version = call.value(1)
    if type(version) is not int:
        return None
    assert isinstance(version, int)
    narrowed = low32(version)
    return narrowed if narrowed in (1, 2) else None


def args_to_list(call: FunctionCall) -> Value:
    """``argsToList(args[, version])``: an argument string split into a list of strings."""
    if not arity_ok(call, 1, 2):
        return ERROR
    version = _version(call)
    if version is None:
        return ERROR
    text = call.value(0)
    if type(text) is not str:
        return ERROR
    assert isinstance(text, str)
    if version == 1:
        return [item for item in _split_whitespace(text) if item]
    try:
        return list[Value](split_v2(text))
    except _BadSyntax:
        return ERROR


def _split_whitespace(text: str) -> list[str]:
    for char in _WHITESPACE[1:]:
        text = text.replace(char, " ")
    return text.split(" ")


def list_to_args(call: FunctionCall) -> Value:
    """``listToArgs(list[, version])``: a list of strings joined into an argument string."""
    if not arity_ok(call, 1, 2):
        return ERROR
    version = _version(call)
    if version is None:
        return ERROR
    items = call.value(0)
    if type(items) is not list:
        return ERROR
    assert isinstance(items, list)
    texts: list[str] = []
    for item in items:
        if type(item) is not str:
            return ERROR
        assert isinstance(item, str)
        texts.append(item)
    if version == 1:
        if any(char in _WHITESPACE for text in texts for char in text):
            return ERROR
        return " ".join(texts)
    return join_v2(texts)


def functions() -> dict[str, FunctionImpl]:
    """The functions of this module by lower-case name."""
    return {
        "envv1tov2": env_v1_to_v2,
        "mergeenvironment": merge_environment,
        "argstolist": args_to_list,
        "listtoargs": list_to_args,
    }
