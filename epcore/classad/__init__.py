"""The ClassAd language: parsing, evaluation, matching and the text formats.

>>> from epcore.classad import parse_ad, parse_expr
>>> machine = parse_ad('[ Cpus = 4; Memory = 8192; Start = TARGET.RequestCpus <= Cpus ]')
>>> job = parse_ad('[ RequestCpus = 2 ]')
>>> machine.evaluate("Start", target=job)
True
>>> parse_expr("KeyboardIdle > 15 * 60").evaluate(machine)
UNDEFINED
"""

from __future__ import annotations

from epcore.classad.calls import EvalContext, FunctionCall, FunctionTable
from epcore.classad.classad import ClassAd, Expr, SharedBindings
from epcore.classad.formats import format_old, from_json, parse_ad, parse_ads, parse_expr, to_json
from epcore.classad.match import rank, symmetric_match
from epcore.classad.values import ERROR, UNDEFINED, AbsTime, RelTime, Value
from epcore.errors import ClassAdSyntaxError

__all__ = [
    "ERROR",
    "UNDEFINED",
    "AbsTime",
    "ClassAd",
    "ClassAdSyntaxError",
    "EvalContext",
    "Expr",
    "FunctionCall",
    "FunctionTable",
    "RelTime",
    "SharedBindings",
    "Value",
    "format_old",
    "from_json",
    "parse_ad",
    "parse_ads",
    "parse_expr",
    "rank",
    "symmetric_match",
    "to_json",
]
