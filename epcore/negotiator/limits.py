"""Concurrency limits (seed 004, "Concurrency Limits"): pool-wide counts of the jobs that say
they use a named resource, and whether one more job fits (pure).

A job's ``ConcurrencyLimits`` is ``name[:increment], ...``; names are case-insensitive, made of
letters, digits and ``_`` with at most one ``.`` (``set.member``). An increment that is not a
positive number counts as 1; fractions are allowed. The limit of ``L`` is ``L_LIMIT``, else
``CONCURRENCY_LIMIT_DEFAULT_<set>`` for ``set.member`` names, else CONCURRENCY_LIMIT_DEFAULT
(HTCondor's table default, 2308032, is in effect no limit). Counts are rebuilt every cycle
from the slot ads (ConcurrencyLimits of running jobs, PreemptingConcurrencyLimits of claims
waiting to preempt) plus the limits of matches the slot ads do not show yet, and raised at
each match of the cycle.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

import attrs

from epcore.classad import ClassAd
from epcore.config import Config

DEFAULT_LIMIT = 2308032.0
_PART = r"[A-Za-z_][A-Za-z0-9_]*"
_NAME = re.compile(rf"{_PART}(?:\.{_PART})?")


@functools.lru_cache(maxsize=4096)  # a cycle checks the same few strings for every job
def parse_limits(text: str) -> tuple[tuple[str, float], ...]:
    """The (lower-cased name, increment) pairs of a ConcurrencyLimits string; tokens that are
    not limit names are left out, as the negotiator cannot count them."""
    found: dict[str, float] = {}
    for token in re.split(r"[\s,]+", text):
        if not token:
            continue
        name, _, amount = token.partition(":")
        if not _NAME.fullmatch(name):
            continue
        try:
            increment = float(amount) if amount else 1.0
        except ValueError:
            increment = 1.0
        if not increment > 0:
            increment = 1.0
        found[name.lower()] = found.get(name.lower(), 0.0) + increment
    return tuple(found.items())


def job_limits(job: ClassAd, slot: ClassAd | None = None) -> str | None:
    """The job's ConcurrencyLimits as a string, evaluated against ``slot`` when it is an
    expression (concurrency_limits_expr); None when the job has none."""
    if "ConcurrencyLimits" not in job:
        return None
    value = job.evaluate("ConcurrencyLimits", slot)
    return value if isinstance(value, str) and value.strip() else None


@attrs.frozen
class LimitPolicy:
    """The configured maxima: named ``<NAME>_LIMIT`` values are looked up as needed."""

    config: Config

    def maximum(self, name: str) -> float:
        """The most ``name`` may count across the pool."""
        own = self.config.get(f"{name}_LIMIT")
        if own is not None:
            return _number(own, DEFAULT_LIMIT)
        head, dot, _ = name.rpartition(".")
        if dot:
            prefix = self.config.get(f"CONCURRENCY_LIMIT_DEFAULT_{head}")
            if prefix is not None:
                return _number(prefix, DEFAULT_LIMIT)
        return self.config.get_float("CONCURRENCY_LIMIT_DEFAULT", DEFAULT_LIMIT)


def _number(text: str, default: float) -> float:
    try:
        return float(text)
    except ValueError:
        return default


def count_limits(slots: Iterable[ClassAd], pending: Iterable[str] = ()) -> dict[str, float]:
    """The cycle's starting counts: each slot's ConcurrencyLimits and
    PreemptingConcurrencyLimits, and ``pending``, the limits of matches no slot ad shows yet."""
    counts: dict[str, float] = {}
    texts: list[str] = list(pending)
    for slot in slots:
        for attribute in ("ConcurrencyLimits", "PreemptingConcurrencyLimits"):
            if attribute in slot:
                value = slot.evaluate(attribute)
                if isinstance(value, str):
                    texts.append(value)
    for text in texts:
        for name, increment in parse_limits(text):
            counts[name] = counts.get(name, 0.0) + increment
    return counts


@attrs.define
class LimitCounter:
    """The counts during one cycle (mutable, cycle-local)."""

    policy: LimitPolicy
    counts: dict[str, float]
    _maxima: dict[str, float] = attrs.field(factory=dict)

    def maximum(self, name: str) -> float:
        found = self._maxima.get(name)
        if found is None:
            found = self._maxima[name] = self.policy.maximum(name)
        return found

    def blocked(self, text: str) -> tuple[str, ...]:
        """The names of ``text`` that one more job would take over their limit (or whose
        count is below zero, which HTCondor reports as an error and refuses)."""
        over = []
        for name, increment in parse_limits(text):
            count = self.counts.get(name, 0.0)
            if count < 0 or count + increment > self.maximum(name) + 1e-9:
                over.append(name)
        return tuple(over)

    def add(self, text: str) -> None:
        """Count one more job using ``text``'s limits."""
        for name, increment in parse_limits(text):
            self.counts[name] = self.counts.get(name, 0.0) + increment


def limit_ad_attributes(counts: Mapping[str, float]) -> dict[str, float]:
    """``ConcurrencyLimit_<name>`` attributes as condor_userprio -l shows them (``.`` as
    ``_``)."""
    return {f"ConcurrencyLimit_{name.replace('.', '_')}": count for name, count in counts.items()}


def rejection(names: Iterable[str]) -> str:
    """The analysis reason for a job held back by concurrency limits."""
    return f"concurrency limit {', '.join(names)} reached"


@attrs.frozen
class MatchedLimits:
    """The concurrency limits of a match the negotiator made (HTCondor's accountant keeps
    them as MatchedConcurrencyLimits) until the slot's ad shows its claim."""

    slot: str
    limits: str
    matched_at: float


def still_pending(
    matched: Iterable[MatchedLimits], slots: Iterable[ClassAd], now: float, timeout: float
) -> list[MatchedLimits]:
    """The matches whose slot ads do not show them yet, younger than ``timeout``
    (MATCH_TIMEOUT): a slot claimed and heard from since the match counts its own
    ConcurrencyLimits instead."""
    by_name = {str(slot.evaluate("Name")): slot for slot in slots}
    kept = []
    for entry in matched:
        if now - entry.matched_at > timeout:
            continue
        slot = by_name.get(entry.slot)
        if slot is not None:
            heard = slot.evaluate("LastHeardFrom")
            # LastHeardFrom is in whole seconds: an ad of the match's second may show it.
            fresh = isinstance(heard, int | float) and heard >= int(entry.matched_at)
            if fresh and slot.evaluate("State") in ("Claimed", "Preempting"):
                continue
        kept.append(entry)
    return kept
