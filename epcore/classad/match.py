"""Matchmaking between two ads, as the negotiator and the startd do it."""

from __future__ import annotations

from epcore.classad.calls import EvalContext
from epcore.classad.classad import ClassAd
from epcore.classad.values import Value


def _accepts(ad: ClassAd, other: ClassAd, context: EvalContext | None) -> bool:
    # An ad without Requirements matches nothing: the match reads LEFT.Requirements,
    # which never falls back to the other ad the way an unscoped name would.
    if "Requirements" not in ad:
        return False
    result: Value = ad.evaluate("Requirements", target=other, context=context)
    kind = type(result)
    if kind is bool:
        return bool(result)
    if kind is int or kind is float:
        return result != 0
    return False


def symmetric_match(a: ClassAd, b: ClassAd, *, context: EvalContext | None = None) -> bool:
    """Whether each ad's Requirements is true against the other (UNDEFINED and ERROR are false)."""
    return _accepts(a, b, context) and _accepts(b, a, context)


def rank(a: ClassAd, b: ClassAd, *, context: EvalContext | None = None) -> float:
    """``a``'s Rank evaluated against ``b`` as a real; 0.0 when it is not a number."""
    if "Rank" not in a:
        return 0.0
    result: Value = a.evaluate("Rank", target=b, context=context)
    kind = type(result)
    if kind is bool or kind is int or kind is float:
        return float(result)  # type: ignore[arg-type]
    return 0.0
