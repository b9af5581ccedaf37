"""What condor_defrag remembers between polls, its statistics, and the Defrag ad made of them.

Only ``LastPoll`` outlives the daemon (the state file, old ClassAd syntax, as HTCondor writes
it): a restarted daemon waits out the rest of the interval instead of draining again at once.
The statistics are HTCondor's: lifetime counters, peaks, and "Recent" counters over a window
of ten polling intervals.
"""

from __future__ import annotations

import math

import attrs

from epcore.classad import ClassAd, parse_ad
from epcore.errors import ClassAdSyntaxError

#: How many drains and cancels the Defrag ad lists (newest first).
LOG_LENGTH = 10


@attrs.frozen
class DefragState:
    """The daemon's memory (module docstring); times are whole seconds since the epoch."""

    started: int = 0
    last_poll: int = 0
    prev_draining: frozenset[str] = frozenset()
    prev_whole: frozenset[str] = frozenset()
    machines_arrived: int = 0
    last_arrival: int = 0
    arrival_sum: float = 0.0
    arrival_mean_squared: float = 0.0
    mean_drained_arrival: float = 0.0
    mean_drained_arrival_sd: float = 0.0
    machines_draining: int = 0
    machines_draining_peak: int = 0
    whole_machines: int = 0
    whole_machines_peak: int = 0
    avg_draining_badput: float = 0.0
    avg_draining_unclaimed: float = 0.0
    drain_successes: int = 0
    drain_failures: int = 0
    #: (when, slot name, schedule, succeeded), newest last; the last LOG_LENGTH.
    drains: tuple[tuple[int, str, str, bool], ...] = ()
    #: Every drain outcome in the Recent window: (when, succeeded).
    recent: tuple[tuple[int, bool], ...] = ()
    #: (when, name), newest last; the last LOG_LENGTH.
    cancels: tuple[tuple[int, str], ...] = ()


def arrivals(
    state: DefragState, draining: frozenset[str], whole: frozenset[str], now: int
) -> DefragState:
    """Count the machines that arrived since the last poll (newly whole, or no longer
    draining: drained and claimed again between two polls) into the arrival statistics."""
    newly = len(whole - state.prev_whole) + len(state.prev_draining - draining)
    state = attrs.evolve(
        state,
        prev_draining=draining,
        prev_whole=whole,
        machines_draining=len(draining),
        machines_draining_peak=max(state.machines_draining_peak, len(draining)),
        whole_machines=len(whole),
        whole_machines_peak=max(state.whole_machines_peak, len(whole)),
    )
    rate = 0.0
    if newly > 0:
        if state.last_arrival > 0:
            # The first arrival since the daemon started has no interval to measure.
            elapsed = max(now - state.last_arrival, 1)
            rate = newly / elapsed
            state = attrs.evolve(
                state,
                machines_arrived=state.machines_arrived + newly,
                arrival_sum=state.arrival_sum + newly * elapsed,
            )
        state = attrs.evolve(state, last_arrival=now)
    if state.arrival_sum > 0:
        mean = state.machines_arrived / state.arrival_sum
        squared = state.arrival_mean_squared
        if newly > 0:
            squared += (rate - mean) ** 2
        state = attrs.evolve(
            state,
            arrival_mean_squared=squared,
            mean_drained_arrival=mean,
            mean_drained_arrival_sd=math.sqrt(squared / state.machines_arrived),
        )
    return state


def record_drain(state: DefragState, name: str, schedule: str, ok: bool, now: int) -> DefragState:
    """A drain was sent to ``name``; ``ok``: the startd took it."""
    return attrs.evolve(
        state,
        drain_successes=state.drain_successes + ok,
        drain_failures=state.drain_failures + (not ok),
        drains=(*state.drains, (now, name, schedule, ok))[-LOG_LENGTH:],
        recent=(*state.recent, (now, ok)),
    )


def record_cancel(state: DefragState, name: str, now: int) -> DefragState:
    """A cancel was sent to ``name``."""
    return attrs.evolve(state, cancels=(*state.cancels, (now, name))[-LOG_LENGTH:])


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def defrag_ad(state: DefragState, name: str, interval: int, now: int) -> ClassAd:
    """The Defrag ad at ``now`` (MyType "Defrag", HTCondor's attribute names); the Recent
    counters cover the last ten polling intervals."""
    window = 10 * max(interval, 1)
    recent = [ok for when, ok in state.recent if when > now - window]
    drains = ", ".join(
        f"[ when = {when}; who = {_quote(who)}; what = {_quote(what)} ]"
        for when, who, what, _ in reversed(state.drains)
    )
    cancels = ", ".join(
        f"[ when = {when}; who = {_quote(who)} ]" for when, who in reversed(state.cancels)
    )
    lifetime = max(now - state.started, 0) if state.started else 0
    ad = parse_ad(f"[ RecentDrainsList = {{ {drains} }}; RecentCancelsList = {{ {cancels} }} ]")
    ad["MyType"] = "Defrag"
    ad["Name"] = name
    ad["DrainSuccesses"] = state.drain_successes
    ad["DrainFailures"] = state.drain_failures
    ad["RecentDrainSuccesses"] = sum(recent)
    ad["RecentDrainFailures"] = len(recent) - sum(recent)
    ad["MachinesDraining"] = state.machines_draining
    ad["MachinesDrainingPeak"] = state.machines_draining_peak
    ad["WholeMachines"] = state.whole_machines
    ad["WholeMachinesPeak"] = state.whole_machines_peak
    ad["AvgDrainingBadput"] = float(state.avg_draining_badput)
    ad["AvgDrainingUnclaimed"] = float(state.avg_draining_unclaimed)
    ad["MeanDrainedArrival"] = float(state.mean_drained_arrival)
    ad["MeanDrainedArrivalSD"] = float(state.mean_drained_arrival_sd)
    ad["DrainedMachines"] = state.machines_arrived
    ad["StatsLifetime"] = lifetime
    ad["StatsLastUpdateTime"] = now
    ad["RecentStatsLifetime"] = min(lifetime, window)
    ad["RecentWindowMax"] = window
    ad["RecentStatsTickTime"] = state.last_poll or now
    ad["LastPoll"] = state.last_poll
    return ad


def forget_old(state: DefragState, interval: int, now: int) -> DefragState:
    """Drop drain outcomes older than the Recent window (keeps the state small)."""
    window = 10 * max(interval, 1)
    return attrs.evolve(state, recent=tuple(r for r in state.recent if r[0] > now - window))


def state_text(state: DefragState) -> str:
    """The state file's text: ``LastPoll``, old ClassAd syntax."""
    return f"LastPoll = {state.last_poll}\n"


def last_poll_of(text: str) -> int | None:
    """``LastPoll`` from a state file's text; None when it says none (or does not parse,
    which HTCondor only warns about)."""
    try:
        ad = parse_ad("[" + ";".join(line for line in text.splitlines() if line.strip()) + "]")
    except ClassAdSyntaxError:
        return None
    value = ad.evaluate("LastPoll")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def first_poll_delay(last_poll: int, interval: int, now: int) -> int:
    """Seconds until the first poll after a start: the rest of the interval since the last
    poll, or none when that is over (or in the future)."""
    if last_poll != 0 and now - last_poll < interval and last_poll <= now:
        return interval - (now - last_poll)
    return 0
