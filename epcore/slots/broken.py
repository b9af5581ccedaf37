"""Broken slots: a slot whose job left something behind that could not be cleaned up.

HTCondor's startd marks such a slot broken (``SlotBrokenCode``, ``SlotBrokenReason``): it
offers no Cpus nor Memory and its Requirements is the reason, so that nothing matches it and
condor_q -better-analyze shows why. A broken dynamic slot is deleted when its claim ends, but
its partitionable slot does not take its resources back (``BrokenSlot<res>``, and the
TotalSlot<res> less them) until the break is mended: then they are given back, and a broken
slot still there is whole again. A break is not a state of the state diagram (the slot keeps
moving along it); it is a mark on the slot, kept here beside its resources.

The codes are HTCondor's (``BROKEN_CODE_*``); :func:`broken_by_exit` maps a starter's exit
status in the broken range (15 to 17) to the code and reason the startd gives the slot.
"""

from __future__ import annotations

import enum

import attrs

from epcore.errors import EpError
from epcore.slots.dynamic import release
from epcore.slots.model import Broken, BrokenHold, Slot, SlotLayout, SlotResources


class BrokenCode(enum.IntEnum):
    """SlotBrokenCode values (HTCondor's ResAttributes.h)."""

    NO_RESOURCES = 1
    BIND_FAILED = 2
    NO_EXECUTE_DIR = 3
    UNCLEAN = 4
    UNCLEAN_LOGICAL_VOLUME = 5
    HUNG_PROCESS = 6
    HUNG_CGROUP = 7


#: A starter's exit status that says the slot's resources are broken (HTCondor's exit.h:
#: STARTER_EXIT_BROKEN_RES_FIRST to _LAST) and what the startd then marks the slot with.
STARTER_EXIT_IMMORTAL_LVM = 15
STARTER_EXIT_IMMORTAL_JOB_PROCESS = 16
STARTER_EXIT_CGROUP_LOCKED = 17
_BY_EXIT: dict[int, tuple[BrokenCode, str]] = {
    STARTER_EXIT_IMMORTAL_LVM: (
        BrokenCode.UNCLEAN_LOGICAL_VOLUME,
        "Could not clean up Logical Volume",
    ),
    STARTER_EXIT_IMMORTAL_JOB_PROCESS: (
        BrokenCode.HUNG_PROCESS,
        "Could not terminate all job processes",
    ),
    STARTER_EXIT_CGROUP_LOCKED: (BrokenCode.HUNG_CGROUP, "Could not cleanup CGroup for slot"),
}


def broken_by_exit(status: int) -> tuple[BrokenCode, str] | None:
    """The code and reason of a starter that exited with ``status`` (its exit code, not a
    wait status), or None when the status does not say the slot is broken."""
    return _BY_EXIT.get(status)


def break_slot(layout: SlotLayout, slot_id: int, sub_id: int | None, broken: Broken) -> SlotLayout:
    """``layout`` with slot ``slot<slot_id>[_<sub_id>]`` marked ``broken``; a slot already
    broken keeps its first break (HTCondor's: the first reason is the one shown)."""
    slot = layout.find(slot_id, sub_id)
    if slot is None:
        raise EpError(f"there is no {_name(slot_id, sub_id)}")
    if slot.broken is not None:
        return layout
    marked = attrs.evolve(slot, broken=broken)
    return SlotLayout(tuple(marked if s is slot else s for s in layout.slots))


def hold_broken(layout: SlotLayout, slot_id: int, sub_id: int) -> SlotLayout:
    """``layout`` without the broken dynamic slot ``slot<slot_id>_<sub_id>`` (its claim
    ended); its partitionable slot keeps its resources held instead of offering them."""
    pslot, dslot = layout.find(slot_id), layout.find(slot_id, sub_id)
    if pslot is None or dslot is None or dslot.broken is None:
        raise EpError(f"there is no broken {_name(slot_id, sub_id)}")
    hold = BrokenHold(dslot.broken, sub_id, dslot.total)
    kept = attrs.evolve(pslot, held=(*pslot.held, hold))
    return SlotLayout(tuple(kept if s is pslot else s for s in layout.slots if s is not dslot))


def mend(layout: SlotLayout, refid: int) -> SlotLayout:
    """``layout`` with break ``refid`` mended: a slot still marked with it is whole again,
    resources a partitionable slot held for it are offered again. Unchanged when no slot
    knows ``refid``."""
    slots = []
    for slot in layout.slots:
        if slot.broken is not None and slot.broken.refid == refid:
            slot = attrs.evolve(slot, broken=None)
        held = [h for h in slot.held if h.broken.refid == refid]
        for hold in held:
            back = Slot(
                slot.slot_id, slot.type_id, "dynamic", hold.resources, hold.resources,
                slot.execute, hold.sub_id,
            )  # fmt: skip
            slot = attrs.evolve(
                release(slot, back), held=tuple(h for h in slot.held if h is not hold)
            )
        slots.append(slot)
    return SlotLayout(tuple(slots))


def breaks(layout: SlotLayout) -> list[Broken]:
    """Every break not mended yet, of slots present and of resources held."""
    found = [slot.broken for slot in layout.slots if slot.broken is not None]
    found += [hold.broken for slot in layout.slots for hold in slot.held]
    return found


def held_total(slot: Slot) -> SlotResources:
    """The sum of what ``slot`` holds for its broken dynamic slots (BrokenSlot<res>)."""
    cpus, memory, disk = 0.0, 0, 0
    for hold in slot.held:
        cpus += hold.resources.cpus
        memory += hold.resources.memory_mb
        disk += hold.resources.disk_kb
    return SlotResources(cpus=cpus, memory_mb=memory, disk_kb=disk, swap_kb=0)


def _name(slot_id: int, sub_id: int | None) -> str:
    return f"slot{slot_id}" if sub_id is None else f"slot{slot_id}_{sub_id}"
