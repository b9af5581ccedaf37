"""Every built-in ClassAd function: libclassad's core set and HTCondor's compat layer.

Each implementation is a callable ``impl(call) -> Value`` (see
:mod:`epcore.classad.calls`); :func:`builtin_functions` gathers them by lower-case name.
"""

from __future__ import annotations

from epcore.classad.calls import FunctionImpl, FunctionTable
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

__all__ = ["builtin_functions"]


def builtin_functions() -> FunctionTable:
    """A new table of every built-in function, keyed by lower-case name."""
    table: dict[str, FunctionImpl] = {}
    for module in _MODULES:
        for name, impl in module.functions().items():
            assert name not in table, f"built-in function {name} defined twice"
            table[name] = impl
    return table
