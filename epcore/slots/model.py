"""The values the slot model works with: resource amounts, slots and a machine's slot layout.

All are frozen: carving a dynamic slot out of a partitionable one produces new values (see
``attrs.evolve``), it never changes the old ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

SlotKind = Literal["static", "partitionable", "dynamic"]


@attrs.frozen
class SlotResources:
    """Amounts of every resource: Cpus, Memory (MB), Disk (KB), Swap (KB) and custom ones.

    ``custom`` maps a custom resource's name (as configured, e.g. ``GPUs``) to its amount;
    ``devices`` maps it to the ids of the devices assigned (``Assigned<name>``) when the
    resource is made of identified devices.
    """

    cpus: float
    memory_mb: int
    disk_kb: int
    swap_kb: int
    custom: Mapping[str, float] = attrs.field(factory=dict)
    devices: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)


@attrs.frozen
class Broken:
    """Why a slot is broken (HTCondor's SlotBrokenCode and SlotBrokenReason): something of a
    job could not be cleaned up (a logical volume, a process, a cgroup). ``refid`` names the
    break for the clean-up that may later mend it."""

    code: int
    reason: str
    refid: int


@attrs.frozen
class BrokenHold:
    """What a broken dynamic slot held when its claim ended: its partitionable slot does not
    get it back (HTCondor's BrokenSlot<res>) until the break is mended."""

    broken: Broken
    sub_id: int
    resources: SlotResources


@attrs.frozen
class Slot:
    """One slot: its numbers, kind, and resources.

    ``slot_id`` is N in ``slotN@host``; ``sub_id`` is M in ``slotN_M@host`` for a dynamic slot
    (None otherwise). ``type_id`` is the SLOT_TYPE_<N> the slot comes from (0 when it comes from
    no slot type). ``resources`` is what the slot offers now (for a partitionable slot: what is
    left), ``total`` what it was given (TotalSlot<res>). ``execute`` is its execute directory.
    ``broken`` says why the slot is broken (None: it is not); ``held`` are the resources of
    its broken dynamic slots that a partitionable slot does not offer again
    (:mod:`epcore.slots.broken`).
    """

    slot_id: int
    type_id: int
    kind: SlotKind
    resources: SlotResources
    total: SlotResources
    execute: str
    sub_id: int | None = None
    broken: Broken | None = None
    held: tuple[BrokenHold, ...] = ()

    def name(self, host: str) -> str:
        """``slotN@host`` or ``slotN_M@host``."""
        if self.sub_id is None:
            return f"slot{self.slot_id}@{host}"
        return f"slot{self.slot_id}_{self.sub_id}@{host}"


@attrs.frozen
class SlotLayout:
    """The slots of a machine, in slot-id order (dynamic slots after their parent)."""

    slots: tuple[Slot, ...]
    # Slots by (slot_id, sub_id): the policy engine looks every slot up at every pass.
    _index: dict[tuple[int, int | None], Slot] = attrs.field(
        init=False, eq=False, repr=False, hash=False
    )

    def __attrs_post_init__(self) -> None:
        index = {(slot.slot_id, slot.sub_id): slot for slot in self.slots}
        object.__setattr__(self, "_index", index)

    def find(self, slot_id: int, sub_id: int | None = None) -> Slot | None:
        """The slot with these numbers, or None."""
        return self._index.get((slot_id, sub_id))
