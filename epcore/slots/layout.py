"""Planning the slots of a machine: :func:`plan_slots` turns slot types into slots.

Rules (seed 000 "Dividing System Resources", and HTCondor's startd where the seed is silent):

- Slots are numbered from 1 in type order (the slots of type 1, then of type 2...); a static
  or partitionable slot is ``slot<N>``.
- Explicit shares are taken first: an absolute amount as is, a fraction of the machine's total.
  A slot gets at least 1 Cpu and 1 MB of memory from an explicit share (fewer Cpus only with a
  ``min`` blanket share); memory is whole MB (truncated); custom resources keep fractions.
- Then every resource's ``auto`` slots split evenly what the explicit shares leave: Cpus
  evenly (each at least 1), memory in whole MB, the Disk and Swap fractions evenly (each more
  than nothing), and custom resources in whole units, the first slots getting the odd units
  ("if one slot is defined to use 10% of the memory and the rest define it as auto ... the rest
  of the slots will evenly divide 90% of the memory").
- Disk is taken from the partition of the slot's execute directory (``SLOT<N>_EXECUTE``, else
  ``EXECUTE``): slots on one partition may total at most 100% of it, slots on different
  partitions up to 100% each. Partitions are told apart by execute path (see
  :func:`disk_of`). A slot's Disk is its fraction of that partition's free KB, rounded up;
  Swap its fraction of the machine's swap, rounded down.
- Cpus are advertised as whole numbers (HTCondor adds 0.1 and truncates), except for slots
  with fractional Cpus.
- Devices of custom resources (GPUs) are bound after all amounts are known, slot by slot in
  slot order, each slot taking the first free devices that satisfy its constraint.

An impossible layout is a SlotConfigError that names the knobs, the resource, and by how much
it over-commits ("SLOT_TYPE_1 and SLOT_TYPE_2 (2 slots) ask for 6 Cpus, the machine has 4 (2
too many)"). HTCondor finds the same layouts impossible, one slot at a time, and logs the first
slot it cannot build.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import attrs

from epcore.config import Config
from epcore.slots.knobs import format_amount, knob_error
from epcore.slots.model import Slot, SlotKind, SlotLayout, SlotResources
from epcore.slots.shares import ResourceShare
from epcore.slots.slot_types import SlotTypeSpec, read_slot_types
from epcore.types import MachineInventory

_SLACK = 1e-6  # HTCondor's tolerance when it subtracts shares from what is left


@attrs.frozen
class SlotPlan:
    """A machine's slots and how they came about: the slot types and anything ignored."""

    layout: SlotLayout
    types: tuple[SlotTypeSpec, ...]
    warnings: tuple[str, ...] = ()

    def type_spec(self, type_id: int) -> SlotTypeSpec | None:
        """The slot type ``type_id``, or None."""
        return next((spec for spec in self.types if spec.type_id == type_id), None)


@attrs.define
class _Draft:
    """One slot while amounts are decided (private, mutable while planning)."""

    slot_id: int
    spec: SlotTypeSpec
    execute: str
    disk_total: int
    cpus: float | None = None
    memory: int | None = None
    disk: float | None = None
    swap: float | None = None
    custom: dict[str, float] = attrs.field(factory=dict)
    devices: dict[str, tuple[str, ...]] = attrs.field(factory=dict)


def plan_slots(config: Config, inventory: MachineInventory) -> SlotLayout:
    """The static and partitionable slots of the machine (no dynamic slots yet)."""
    return plan(config, inventory).layout


def plan(config: Config, inventory: MachineInventory) -> SlotPlan:
    """The slots of the machine with the slot types they come from and any warnings."""
    specs = read_slot_types(config, inventory)
    drafts = _drafts(config, inventory, specs)
    _explicit_amounts(drafts, inventory)
    _check_totals(config, drafts, inventory)
    _auto_amounts(config, drafts, inventory)
    _bind_devices(config, drafts, inventory)
    slots = tuple(_slot(draft, inventory) for draft in drafts)
    warnings = tuple(
        f"{spec.knob}: {item!r} names a resource this machine does not have; ignored"
        for spec in specs
        for item in spec.ignored
    )
    return SlotPlan(SlotLayout(slots), specs, warnings)


def disk_of(inventory: MachineInventory, execute: str, main_execute: str) -> int | None:
    """Free KB of the partition holding ``execute``, or None when nobody measured it.

    The inventory records free space by execute path (``disk_by_path``); two paths are taken
    to be two partitions. The main EXECUTE directory falls back to ``disk_kb``.
    """
    if execute in inventory.disk_by_path:
        return inventory.disk_by_path[execute]
    if execute == main_execute:
        return inventory.disk_kb
    return None


def _drafts(
    config: Config, inventory: MachineInventory, specs: Sequence[SlotTypeSpec]
) -> list[_Draft]:
    main_execute = config.get("EXECUTE") or ""
    drafts: list[_Draft] = []
    for spec in specs:
        for _ in range(spec.count):
            slot_id = len(drafts) + 1
            knob = f"SLOT{slot_id}_EXECUTE"
            execute = config.get(knob) or main_execute
            disk_total = disk_of(inventory, execute, main_execute)
            if disk_total is None:
                raise knob_error(
                    config,
                    knob,
                    f"{knob}: the free space of {execute} is unknown (it was not measured "
                    "when the machine was detected)",
                )
            drafts.append(_Draft(slot_id, spec, execute, disk_total))
    return drafts


def _explicit_amounts(drafts: list[_Draft], inventory: MachineInventory) -> None:
    for draft in drafts:
        spec = draft.spec
        if spec.cpus.kind != "auto":
            lowest = 0.0 if spec.fractional_cpus else 1.0
            draft.cpus = max(spec.cpus.of(inventory.cpus), lowest)
        if spec.memory.kind != "auto":
            draft.memory = max(int(spec.memory.of(inventory.memory_mb)), 1)
        if spec.disk.kind != "auto":
            draft.disk = spec.disk.amount
        if spec.swap.kind != "auto":
            draft.swap = spec.swap.amount
        for name, share in spec.custom.items():
            if share.kind != "auto":
                draft.custom[name] = share.of(inventory.custom[name].quantity)


# -- over-commitment --------------------------------------------------------------------------


@attrs.frozen
class _Resource:
    """How one resource is accounted: its total, the slots sharing it, how to read a slot's
    explicit amount and share, and how messages show amounts of it.

    ``kind`` is "Cpus", "Memory", "Swap", "Disk" (one per partition) or "custom"; ``name`` the
    resource's name; ``unit`` what follows an amount in messages ("Cpus", "of the Swap").
    """

    kind: str
    name: str
    unit: str
    total: float
    slots: tuple[_Draft, ...]
    explicit: Callable[[_Draft], float | None]
    share: Callable[[SlotTypeSpec], ResourceShare]
    show: Callable[[float], str] = format_amount

    def describe(self, amount: float) -> str:
        """``amount`` with its unit: "6 Cpus", "300 MB of Memory", "120% of the Swap"."""
        return f"{self.show(amount)} {self.unit}"


def _resources(drafts: list[_Draft], inventory: MachineInventory) -> list[_Resource]:
    everything = tuple(drafts)
    resources = [
        _Resource("Cpus", "Cpus", "Cpus", inventory.cpus, everything, _get_cpus, _cpus_share),
        _Resource(
            "Memory",
            "Memory",
            "of Memory",
            inventory.memory_mb,
            everything,
            _get_memory,
            _memory_share,
            _megabytes,
        ),
        _Resource("Swap", "Swap", "of the Swap", 1.0, everything, _get_swap, _swap_share, _percent),
    ]
    for path in dict.fromkeys(draft.execute for draft in drafts):
        on_path = tuple(draft for draft in drafts if draft.execute == path)
        unit = f"of the Disk of {path}"
        resources.append(
            _Resource("Disk", "Disk", unit, 1.0, on_path, _get_disk, _disk_share, _percent)
        )
    for name, resource in inventory.custom.items():
        resources.append(
            _Resource(
                "custom",
                name,
                name,
                resource.quantity,
                everything,
                _custom_amount(name),
                _custom_share(name),
            )
        )
    return resources


def _get_cpus(draft: _Draft) -> float | None:
    return draft.cpus


def _get_memory(draft: _Draft) -> float | None:
    return draft.memory


def _get_swap(draft: _Draft) -> float | None:
    return draft.swap


def _get_disk(draft: _Draft) -> float | None:
    return draft.disk


def _cpus_share(spec: SlotTypeSpec) -> ResourceShare:
    return spec.cpus


def _memory_share(spec: SlotTypeSpec) -> ResourceShare:
    return spec.memory


def _swap_share(spec: SlotTypeSpec) -> ResourceShare:
    return spec.swap


def _disk_share(spec: SlotTypeSpec) -> ResourceShare:
    return spec.disk


def _custom_amount(name: str) -> Callable[[_Draft], float | None]:
    return lambda draft: draft.custom.get(name)


def _custom_share(name: str) -> Callable[[SlotTypeSpec], ResourceShare]:
    return lambda spec: spec.custom[name]


def _megabytes(amount: float) -> str:
    return f"{format_amount(amount)} MB"


def _percent(fraction: float) -> str:
    return f"{format_amount(round(fraction * 100, 4))}%"


def _check_totals(config: Config, drafts: list[_Draft], inventory: MachineInventory) -> None:
    for resource in _resources(drafts, inventory):
        amounts = [(d, resource.explicit(d)) for d in resource.slots]
        asked = sum(amount for _, amount in amounts if amount is not None)
        if asked <= resource.total + _SLACK:
            continue
        askers = [d.spec for d, amount in amounts if amount]
        labels = _labels(askers)
        verb = "asks" if len(askers) == 1 else "ask"
        if resource.kind in ("Disk", "Swap"):
            limit = "at most 100% is possible"
        else:
            limit = f"the machine has {resource.show(resource.total)}"
        raise knob_error(
            config,
            askers[0].knob,
            f"{_join(labels)} {verb} for {resource.describe(asked)}, {limit} "
            f"({resource.show(asked - resource.total)} too many)",
            *_count_knobs(askers),
        )


def _labels(specs: Sequence[SlotTypeSpec]) -> list[str]:
    counts: dict[int, int] = {}
    by_type: dict[int, SlotTypeSpec] = {}
    for spec in specs:
        counts[spec.type_id] = counts.get(spec.type_id, 0) + 1
        by_type[spec.type_id] = spec
    return [
        by_type[t].knob if counts[t] == 1 else f"{by_type[t].knob} ({counts[t]} slots)"
        for t in by_type
    ]


def _count_knobs(specs: Sequence[SlotTypeSpec]) -> list[str]:
    # Where to point when a type's SLOT_TYPE_<N> is not set: the knob that made its slots.
    return [f"NUM_SLOTS_TYPE_{spec.type_id}" if spec.type_id else "NUM_SLOTS" for spec in specs]


def _join(labels: list[str]) -> str:
    if len(labels) <= 1:
        return "".join(labels)
    return f"{', '.join(labels[:-1])} and {labels[-1]}"


# -- auto shares ------------------------------------------------------------------------------


def _auto_amounts(config: Config, drafts: list[_Draft], inventory: MachineInventory) -> None:
    for resource in _resources(drafts, inventory):
        autos = [d for d in resource.slots if resource.share(d.spec).kind == "auto"]
        if not autos:
            continue
        given = [d for d in resource.slots if resource.explicit(d)]
        left = resource.total - sum(resource.explicit(d) or 0.0 for d in resource.slots)
        left = max(left, 0.0)
        if resource.kind == "custom":
            _split_units(resource.name, autos, left)
            continue
        each = left / len(autos)
        if resource.kind == "Memory":
            each = float(int(left) // len(autos))
        needed = _auto_minimum(resource.kind, autos)
        if each < needed - _SLACK or each <= 0:
            raise _auto_error(config, resource, autos, given, left, needed)
        for draft in autos:
            _set_auto(draft, resource.kind, each)


def _auto_minimum(kind: str, autos: list[_Draft]) -> float:
    if kind == "Memory":
        return 1.0
    if kind == "Cpus":
        return 0.0 if all(d.spec.fractional_cpus for d in autos) else 1.0
    return 0.0  # Disk and Swap: any share above nothing


def _set_auto(draft: _Draft, kind: str, each: float) -> None:
    if kind == "Cpus":
        draft.cpus = each
    elif kind == "Memory":
        draft.memory = int(each)
    elif kind == "Swap":
        draft.swap = each
    else:
        draft.disk = each


def _split_units(name: str, autos: list[_Draft], left: float) -> None:
    # Whole units, the odd ones to the first slots; nothing when less than one unit is left.
    remaining, slots = left, len(autos)
    for draft in autos:
        share = 0.0 if left < 1 else float(math.ceil(remaining / slots - _SLACK))
        share = min(share, max(remaining, 0.0))
        draft.custom[name] = share
        remaining -= share
        slots -= 1


def _auto_error(
    config: Config,
    resource: _Resource,
    autos: list[_Draft],
    given: list[_Draft],
    left: float,
    needed: float,
) -> Exception:
    sharers = _join(_labels([d.spec for d in autos]))
    leavers = _labels([d.spec for d in given])
    after = ""
    if leavers:
        after = f", what {_join(leavers)} {'leaves' if len(given) == 1 else 'leave'}"
    if needed > 0:
        need = needed * len(autos)
        detail = (
            f"each slot needs at least {resource.show(needed)}, {resource.show(need)} in all "
            f"({resource.show(need - left)} too few)"
        )
    else:
        detail = "nothing is left for them"
    return knob_error(
        config,
        autos[0].spec.knob,
        f"{sharers} share {resource.describe(left)} automatically{after}; {detail}",
        *_count_knobs([d.spec for d in autos]),
    )


# -- devices and the final slots --------------------------------------------------------------


def _bind_devices(config: Config, drafts: list[_Draft], inventory: MachineInventory) -> None:
    for name, resource in inventory.custom.items():
        if not resource.devices:
            continue
        free = list(enumerate(resource.devices))
        for draft in drafts:
            wanted = int(draft.custom.get(name, 0.0) + _SLACK)
            constraint = draft.spec.constraints.get(name)
            chosen = [(i, d) for i, d in free if constraint is None or constraint.matches(i, d)][
                :wanted
            ]
            if len(chosen) < wanted:
                what = f"{name} matching {constraint.text}" if constraint else name
                free_ids = ", ".join(d.id for _, d in free) or "none"
                raise knob_error(
                    config,
                    draft.spec.knob,
                    f"{draft.spec.knob}: slot{draft.slot_id} needs {wanted} {what}, only "
                    f"{len(chosen)} of the free devices match (free: {free_ids})",
                    *_count_knobs([draft.spec]),
                )
            taken = {i for i, _ in chosen}
            free = [(i, d) for i, d in free if i not in taken]
            if chosen:
                draft.devices[name] = tuple(d.id for _, d in chosen)


def _slot(draft: _Draft, inventory: MachineInventory) -> Slot:
    assert draft.cpus is not None and draft.memory is not None
    assert draft.disk is not None and draft.swap is not None
    fractional = draft.spec.fractional_cpus
    cpus = whole(draft.cpus) if fractional else int(draft.cpus + 0.1)
    resources = SlotResources(
        cpus=cpus,
        memory_mb=draft.memory,
        disk_kb=math.ceil(draft.disk_total * draft.disk - _SLACK),
        swap_kb=math.floor(inventory.swap_kb * draft.swap + _SLACK),
        custom={name: int(draft.custom.get(name, 0.0) + _SLACK) for name in inventory.custom},
        devices=dict(draft.devices),
    )
    kind: SlotKind = "partitionable" if draft.spec.partitionable else "static"
    return Slot(draft.slot_id, draft.spec.type_id, kind, resources, resources, draft.execute)


def whole(value: float) -> float:
    """``value`` as an int when it is a whole number (Cpus = 2, not 2.0)."""
    return int(value) if float(value).is_integer() else value
