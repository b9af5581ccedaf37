"""Views of slot ads as condor_status prints them: -l, -af and JSON, and -constraint.

Pure functions over finished ads; ``ep status`` (epcore.cli.status_cmd) gathers the ads. The
default table is the pool's, :func:`epcore.views.tables.render_slots`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from epcore.classad import (
    ClassAd,
    EvalContext,
    Value,
    format_old,
    parse_expr,
    to_json,
)


def select(ads: Sequence[ClassAd], constraint: str | None, now: float) -> list[ClassAd]:
    """The ads for which ``constraint`` evaluates to True (all of them without one).

    Raises ClassAdSyntaxError when the constraint does not parse.
    """
    if constraint is None:
        return list(ads)
    expr = parse_expr(constraint)
    context = EvalContext(now=now)
    return [ad for ad in ads if expr.evaluate(ad, context=context) is True]


def literal_text(value: Value) -> str:
    """A value as condor_status prints it: strings bare, everything else in old syntax."""
    if isinstance(value, str):
        return value
    return format_old(ClassAd({"v": value}))[len("v = ") : -1]


def format_long(ads: Sequence[ClassAd]) -> str:
    """condor_status -l: every attribute in old ClassAd syntax, sorted by name, one blank line
    after each ad."""
    chunks = []
    for ad in ads:
        ordered = ClassAd()
        for name in sorted(ad, key=str.lower):
            ordered[name] = ad[name]
        chunks.append(format_old(ordered) + "\n")
    return "".join(chunks)


def format_autoformat(ads: Sequence[ClassAd], expressions: Sequence[str], now: float) -> str:
    """condor_status -af: each expression's value against each ad, separated by spaces, one
    line per ad; strings unquoted, other values in old syntax, ``undefined`` when missing.

    Raises ClassAdSyntaxError when an expression does not parse.
    """
    parsed = [parse_expr(text) for text in expressions]
    context = EvalContext(now=now)
    lines = [
        " ".join(literal_text(expr.evaluate(ad, context=context)) for expr in parsed) for ad in ads
    ]
    return "".join(line + "\n" for line in lines)


def format_json(ads: Sequence[ClassAd]) -> str:
    """The ads as a JSON list (condor_status -json): literals as JSON values, expressions as
    ``"/Expr(...)/"`` strings, as classad2's printJson writes them."""
    documents = [json.loads(to_json(ad)) for ad in ads]
    return json.dumps(documents, indent=2, ensure_ascii=False) + "\n"
