"""Splitting the machine-wide load and idle times among slots.

The operating system knows one load average and one set of terminal access times for the
whole machine; HTCondor gives every slot its own ``LoadAvg``, ``KeyboardIdle`` and
``ConsoleIdle`` so that single-slot policies work unchanged on many slots. Both splits walk the
slots in the same order: by state (Owner first, then Unclaimed, Matched, Claimed, Preempting,
Backfill, Drained), claimed slots by ascending CurrentRank, then by slot number.

Load (seed 002, "Load Average for Multi-core Machines"): each slot's HTCondor load is its own;
what is left of the machine load is owner load, handed out in that order in increments of at
most 1.0, and when the slots run out the last one takes whatever remains.

Idle times (SLOTS_CONNECTED_TO_CONSOLE, SLOTS_CONNECTED_TO_KEYBOARD,
DISCONNECTED_KEYBOARD_IDLE_BOOST, as HTCondor's startd applies them): the first
SLOTS_CONNECTED_TO_CONSOLE slots see the console's idle time (as both ConsoleIdle and
KeyboardIdle), the first SLOTS_CONNECTED_TO_KEYBOARD see the keyboard's; a slot connected to
neither reports the time since the startd started plus the boost. Partitionable slots take the
values of their place in the order without using up a connection.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from epcore.slots.model import Slot
from epcore.slots.slot_status import STATES, SlotStatus
from epcore.types import HostReadings

_STATE_RANK = {state: index for index, state in enumerate(STATES)}


@attrs.frozen
class SlotReadings:
    """One slot's share of the machine readings."""

    load_avg: float
    condor_load_avg: float
    keyboard_idle: int
    console_idle: int


@attrs.frozen
class IdleConnections:
    """How many slots notice the console and the keyboard, and the boost the others get."""

    console_slots: int = 0
    keyboard_slots: int = 0
    disconnected_boost: int = 1200


def handout_order(slots: Sequence[tuple[Slot, SlotStatus]]) -> list[int]:
    """Indexes into ``slots`` in the order owner load and keyboard activity are handed out."""

    def key(index: int) -> tuple[int, float, int, int]:
        slot, status = slots[index]
        rank = status.current_rank if status.state in ("Claimed", "Preempting") else 0.0
        return (_STATE_RANK[status.state], rank, slot.slot_id, slot.sub_id or 0)

    return sorted(range(len(slots)), key=key)


def owner_load_shares(total_owner_load: float, count: int) -> list[float]:
    """The owner load of each of ``count`` slots, in hand-out order.

    >>> owner_load_shares(2.5, 4)
    [1.0, 1.0, 0.5, 0.0]
    >>> owner_load_shares(3.5, 2)
    [1.0, 2.5]
    """
    shares = [0.0] * count
    remaining = max(total_owner_load, 0.0)
    for index in range(count):
        last = index == count - 1
        share = remaining if last or remaining <= 1.0 else 1.0
        shares[index] = share
        remaining -= share
        if remaining <= 0.0:
            break
    return shares


def split_readings(
    slots: Sequence[tuple[Slot, SlotStatus]],
    readings: HostReadings,
    connections: IdleConnections,
    *,
    uptime: int,
) -> list[SlotReadings]:
    """Each slot's readings, in the order of ``slots``.

    ``uptime`` is how long the startd has run (seconds): a slot that notices neither the
    console nor the keyboard reports ``uptime + DISCONNECTED_KEYBOARD_IDLE_BOOST``.
    """
    order = handout_order(slots)
    owner_total = readings.load_avg - readings.condor_load_avg
    shares = owner_load_shares(owner_total, len(order))
    disconnected = max(uptime, 0) + connections.disconnected_boost
    console = readings.console_idle
    keyboard = readings.keyboard_idle
    console_left = connections.console_slots
    keyboard_left = connections.keyboard_slots
    result: list[SlotReadings | None] = [None] * len(slots)
    for position, index in enumerate(order):
        slot, status = slots[index]
        if slot.kind != "partitionable":
            console_left -= 1
            keyboard_left -= 1
            if console_left < 0:
                console = disconnected
            if keyboard_left < 0:
                # Console activity is keyboard activity too: a slot that is connected to the
                # console but not to the keyboard sees the console's idle time for both.
                keyboard = console
        condor = status.condor_load_avg
        result[index] = SlotReadings(
            load_avg=condor + shares[position],
            condor_load_avg=condor,
            keyboard_idle=int(keyboard),
            console_idle=int(console),
        )
    return [item for item in result if item is not None]
