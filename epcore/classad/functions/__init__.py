"""Every built-in ClassAd function: libclassad's core set and HTCondor's compat layer.

Each implementation is a callable ``impl(call) -> Value`` (see
:mod:`epcore.classad.calls`); :func:`builtin_functions` gathers them by lower-case name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from epcore.classad.calls import FunctionCall, FunctionImpl, FunctionTable
from epcore.classad.functions import (
    conversions,
    environment,
    evaluation,
    lists,
    maths,
    predicates,
    regex,
    stringlists,
    strings,
    times,
    users,
    versions,
)
from epcore.classad.values import ERROR, Value, is_value
from epcore.errors import ClassAdError

_MODULES = (
    conversions,
    environment,
    evaluation,
    lists,
    maths,
    predicates,
    regex,
    stringlists,
    strings,
    times,
    users,
    versions,
)

__all__ = ["builtin_functions", "function_table"]


def builtin_functions() -> FunctionTable:
    """A new table of every built-in function, keyed by lower-case name."""
    table: dict[str, FunctionImpl] = {}
    for module in _MODULES:
        for name, impl in module.functions().items():
            assert name not in table, f"built-in function {name} defined twice"
            table[name] = impl
    return table


def function_table(
    extra: Mapping[str, Callable[[FunctionCall], object]], report: Callable[[str], None]
) -> FunctionTable:
    """The built-in functions and the ``extra`` ones (by name as written), keyed by lower-case
    name; an extra name that is a built-in one is a ClassAdError (a plugin cannot change what
    ``strcat`` means to every policy expression).

    An extra function comes from outside the language (a plugin): when it raises, or answers
    something that is not a ClassAd value, the call is ERROR and ``report`` is told why,
    since evaluation must never raise.
    """
    table = dict(builtin_functions())
    for name, impl in extra.items():
        key = name.lower()
        if key in table:
            raise ClassAdError(f"ClassAd function {name} is already defined")
        table[key] = _guarded(name, impl, report)
    return table


def _guarded(
    name: str, impl: Callable[[FunctionCall], object], report: Callable[[str], None]
) -> FunctionImpl:
    """``impl`` with what it raises, or answers that is no ClassAd value, made ERROR."""

    def call(invocation: FunctionCall) -> Value:
        try:
            result = impl(invocation)
        except Exception as exc:
            report(f"ClassAd function {name} failed: {type(exc).__name__}: {exc}")
            return ERROR
        if not is_value(result):
            report(f"ClassAd function {name} answered {result!r}, which is no ClassAd value")
            return ERROR
        return result

    return call
