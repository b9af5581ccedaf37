"""One poll of condor_defrag as pure functions: the slot ads, the daemon's state, its settings
and ``now`` in; what to cancel, what to drain and the new state out.

:func:`plan` follows HTCondor's ``Defrag::poll`` step by step: the number to drain this
interval (with the hourly and daily extra when an hour or a day boundary has passed since the
last poll), the draining and whole machines (counted by machine, the part of Name after
``@``), the arrival statistics of drained machines, the pool's draining cost, the drains to
cancel, the early outs, and the candidates in DEFRAG_RANK order. Sending the drains is the
caller's: a startd may refuse one (its check expression), and HTCondor then tries the next
candidate, so :func:`carry_out` walks the candidates with the caller's ``drain`` and
``cancel`` and records each outcome in the state.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

import attrs

from epcore.classad import ClassAd, EvalContext, Expr
from epcore.defrag.settings import DefragSettings
from epcore.defrag.state import DefragState, arrivals, record_cancel, record_drain

# HTCondor's hard-coded tolerances of the drain's check expression: the machine must still
# drain about as soon, and lose about as little, as its ad said when it was chosen.
_BADPUT_GROWTH = 1.25
_NEGLIGIBLE_BADPUT = 1200
_NEGLIGIBLE_SLIPPAGE = 1200


@attrs.frozen
class Candidate:
    """A partitionable slot to drain or whose drain to cancel: its Name, its machine (the
    part of Name after ``@``), MyAddress (where its startd is reached) and, for a drain, the
    check expression the startd must find TRUE."""

    name: str
    machine: str
    address: str
    check: str = ""


@attrs.frozen
class Plan:
    """What one poll decided: ``cancels`` (one per machine), ``candidates`` in the order to
    try, ``to_drain`` (how many drains to start at most), ``why`` (the early out's message,
    or empty) and the state after the poll's bookkeeping."""

    state: DefragState
    cancels: tuple[Candidate, ...]
    candidates: tuple[Candidate, ...]
    to_drain: int
    why: str


def machine_of(name: str) -> str:
    """The machine of a slot Name: what follows ``@`` (the whole name without one)."""
    return name.partition("@")[2] if "@" in name else name


def prorate(n: int, elapsed: float, period: float, granularity: float) -> tuple[int, float]:
    """``n`` per ``period`` in proportion to what is left of it (plus one polling interval,
    the most a poll can have missed), rounded; never more than ``n`` and never of the other
    sign. The unrounded figure is second."""
    fraction = (period - elapsed) / period + granularity / period
    real = n * fraction
    answer = math.floor(real + 0.5)
    if (n > 0 and answer > n) or (n < 0 and answer < n):
        return n, real
    if answer * n < 0:
        return 0, real
    return answer, real


def number_to_drain(settings: DefragSettings, prev: int, now: int) -> tuple[int, float]:
    """How many machines to drain in this poll (and the unrounded figure, for the log)."""
    rate = settings.rate
    count = rate.per_poll
    real = float(count)
    if prev != 0:
        real_fraction = 0.0
        if now // 3600 != prev // 3600:
            extra, real_fraction = prorate(
                rate.per_poll_hour, now - now // 3600 * 3600, 3600, settings.interval
            )
            count += extra
        day = 3600 * 24
        if now // day != prev // day:
            extra, real_fraction = prorate(
                rate.per_poll_day, now - now // day * day, day, settings.interval
            )
            count += extra
        real += real_fraction
    return count, real


def _matching(slots: Sequence[ClassAd], expr: Expr, context: EvalContext | None) -> list[ClassAd]:
    return [ad for ad in slots if expr.evaluate(ad, context=context) is True]


def _machines(ads: Sequence[ClassAd]) -> frozenset[str]:
    return frozenset(machine_of(_text(ad, "Name")) for ad in ads)


def _text(ad: ClassAd, name: str) -> str:
    value = ad.evaluate(name)
    return value if isinstance(value, str) else ""


def _integer(ad: ClassAd, name: str) -> int:
    """An attribute as HTCondor's LookupInteger reads it: 0 when it is not a number."""
    value = ad.evaluate(name)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return int(value)
    return 0


def _rank(ad: ClassAd, settings: DefragSettings, context: EvalContext | None) -> float:
    """DEFRAG_RANK with the slot as TARGET; 0 when it is not a number (EvalFloat failing)."""
    if settings.rank is None:
        return 0.0
    value = settings.rank.evaluate(ClassAd(), ad, context=context)
    if isinstance(value, bool | int | float) and math.isfinite(value):
        return float(value)
    return 0.0


def _ordered(
    ads: list[ClassAd],
    settings: DefragSettings,
    rng: random.Random | None,
    context: EvalContext | None,
) -> list[ClassAd]:
    """Shuffled (so that equal ranks take turns), then by DEFRAG_RANK, highest first."""
    if rng is not None:
        rng.shuffle(ads)
    return sorted(ads, key=lambda ad: -_rank(ad, settings, context))


def check_expression(ad: ClassAd, settings: DefragSettings) -> str:
    """The drain's check: the machine must drain no later, and lose no more, than its ad
    promised (within HTCondor's tolerances); quick and fast read the Quick figures."""
    kind = "Graceful" if settings.schedule_number == 0 else "Quick"
    completion = _integer(ad, f"ExpectedMachine{kind}DrainingCompletion")
    badput = _integer(ad, f"ExpectedMachine{kind}DrainingBadput")
    return (
        f"ExpectedMachine{kind}DrainingCompletion <= {completion + _NEGLIGIBLE_SLIPPAGE} && "
        f"ExpectedMachine{kind}DrainingBadput <= "
        f"{int(_BADPUT_GROWTH * badput) + _NEGLIGIBLE_BADPUT}"
    )


def draining_cost(slots: Sequence[ClassAd]) -> tuple[float, float]:
    """AvgDrainingBadput and AvgDrainingUnclaimed: per machine's first slot, the draining
    totals over the startd's age, summed and divided by the pool's cpus."""
    badput = unclaimed = 0.0
    cpus = 0
    for ad in slots:
        if ad.evaluate("SlotID") != 1:
            continue
        if "TotalMachineDrainingUnclaimedTime" not in ad and "TotalMachineDrainingBadput" not in ad:
            continue
        heard, started = _integer(ad, "LastHeardFrom"), _integer(ad, "DaemonStartTime")
        age = heard - started
        if heard == 0 or started == 0 or age <= 0:
            continue
        badput += _integer(ad, "TotalMachineDrainingBadput") / age
        unclaimed += _integer(ad, "TotalMachineDrainingUnclaimedTime") / age
        cpus += _integer(ad, "TotalCpus")
    if cpus > 0:
        return badput / cpus, unclaimed / cpus
    return badput, unclaimed


def _candidate(ad: ClassAd, check: str = "") -> Candidate:
    name = _text(ad, "Name")
    return Candidate(name, machine_of(name), _text(ad, "MyAddress"), check)


def plan(
    slots: Sequence[ClassAd],
    state: DefragState,
    settings: DefragSettings,
    now: int,
    *,
    rng: random.Random | None = None,
    context: EvalContext | None = None,
) -> Plan:
    """One poll over the pool's slot ads (module docstring). ``rng`` shuffles machines of
    equal rank (None: they keep the ads' order)."""
    to_drain, real_to_drain = number_to_drain(settings, state.last_poll, now)
    state = attrs.evolve(state, last_poll=now)
    draining = _machines(_matching(slots, settings.draining, context))
    whole = _machines(_matching(slots, settings.whole_machine, context))
    state = arrivals(state, draining, whole, now)
    badput, unclaimed = draining_cost(slots)
    state = attrs.evolve(state, avg_draining_badput=badput, avg_draining_unclaimed=unclaimed)

    cancels: list[Candidate] = []
    if settings.cancel is not None:
        cancelled: set[str] = set()
        for ad in _ordered(_matching(slots, settings.cancel, context), settings, rng, context):
            candidate = _candidate(ad)
            if candidate.machine not in cancelled:
                cancelled.add(candidate.machine)
                cancels.append(candidate)

    def early(why: str) -> Plan:
        return Plan(state, tuple(cancels), (), 0, f"Doing nothing, because {why}")

    if to_drain <= 0:
        return early(
            f"number to drain in next {settings.interval}s is calculated to be {real_to_drain:.3f}."
        )
    if math.ceil(settings.rate.per_hour) <= 0:
        return early(f"DEFRAG_DRAINING_MACHINES_PER_HOUR={settings.rate.per_hour:f}")
    if settings.max_draining == 0:
        return early("DEFRAG_MAX_CONCURRENT_DRAINING=0")
    if settings.max_whole_machines == 0:
        return early("DEFRAG_MAX_WHOLE_MACHINES=0")
    if settings.max_draining >= 0 and len(draining) >= settings.max_draining:
        return early(
            f"DEFRAG_MAX_CONCURRENT_DRAINING={settings.max_draining} and there are "
            f"{len(draining)} draining machines."
        )
    if settings.max_whole_machines >= 0 and len(whole) >= settings.max_whole_machines:
        return early(
            f"DEFRAG_MAX_WHOLE_MACHINES={settings.max_whole_machines} and there are "
            f"{len(whole)} whole machines."
        )
    skipped = {c.machine for c in cancels} | whole
    matching = _matching(slots, settings.candidates, context)
    candidates = [
        _candidate(ad, check_expression(ad, settings))
        for ad in _ordered(matching, settings, rng, context)
        if machine_of(_text(ad, "Name")) not in skipped
    ]
    return Plan(state, tuple(cancels), tuple(candidates), to_drain, "")


def carry_out(
    planned: Plan,
    settings: DefragSettings,
    now: int,
    *,
    drain: Callable[[Candidate], bool],
    cancel: Callable[[Candidate], bool],
) -> tuple[DefragState, int]:
    """Send the plan's cancels, then its drains in order until ``to_drain`` succeeded (one
    attempt per machine that succeeded, as HTCondor); the state with each outcome recorded
    and the number of drains started. ``drain`` and ``cancel`` answer whether the startd
    took the request."""
    state = planned.state
    for candidate in planned.cancels:
        cancel(candidate)
        state = record_cancel(state, candidate.name, now)
    done: set[str] = set()
    drained = 0
    for candidate in planned.candidates:
        if drained >= planned.to_drain:
            break
        if candidate.machine in done:
            continue
        ok = drain(candidate)
        state = record_drain(state, candidate.name, settings.schedule, ok, now)
        if ok:
            done.add(candidate.machine)
            drained += 1
    return state, drained
