"""Slot types: how many slots of each ``SLOT_TYPE_<N>``, partitionable or not, and what share
of every resource of *this* machine each slot gets.

Which types exist (seed 000, "Dividing System Resources"; HTCondor's startd):

- ``NUM_SLOTS_TYPE_<N>`` > 0 makes N a used type (1 <= N < ``MAX_SLOT_TYPES``, 10 by default);
  ``SLOT_TYPE_<N>`` gives its shares (unset: ``auto`` for everything) and
  ``SLOT_TYPE_<N>_PARTITIONABLE`` makes its slots partitionable.
- Without any ``NUM_SLOTS_TYPE_<N>`` the machine has slots of the built-in type 0, which
  shares everything ``auto``: one partitionable slot holding the whole machine (HTCondor 23 and
  later); or, when ``NUM_SLOTS`` is set, that many static slots ("To simply configure static
  slots in any version, configure NUM_SLOTS to the integer number of slots desired"; the seed
  wins over HTCondor's code here, which would make NUM_SLOTS partitionable slots).
  ``SLOT_TYPE_0_PARTITIONABLE`` overrides either choice; without NUM_SLOTS a static type 0 has
  one slot per Cpu.
- ``SLOT_TYPE_0`` and ``NUM_SLOTS_TYPE_0`` may not be set (HTCondor refuses them too).

Share names are resolved against the machine: a custom resource of the machine, compared
without case, first; then the standard names (:func:`epcore.slots.shares.standard_resource`).
As in HTCondor, a share of a resource the machine does not have is ignored when it is a
fraction, ``auto`` or 0 (so one configuration can serve machines with and without GPUs) and an
error when it is a positive amount; Disk and Swap take only fractions and ``auto`` (their totals
change while the startd runs). A ``: constraint`` is allowed only on a custom resource made of
devices.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from epcore.classad import ClassAd, Expr
from epcore.classad.ast import Literal
from epcore.config import Config
from epcore.errors import SlotConfigError
from epcore.slots.knobs import is_configured, knob_error, matching_knobs, read_int
from epcore.slots.shares import (
    AUTO,
    ResourceShare,
    ShareItem,
    StandardResource,
    parse_slot_type,
    standard_resource,
)
from epcore.types import MachineInventory, ResourceDevice

_NUM_SLOTS_TYPE = re.compile(r"NUM_SLOTS_TYPE_(\d+)", re.IGNORECASE)
_DEFAULT_MAX_TYPES = 10


@attrs.frozen
class DeviceConstraint:
    """Which devices of a custom resource a slot may get (``GPUs = 2 : Capability >= 8.0``).

    A string literal matches a device id (without case); a whole number picks the device at
    that position of the resource's device list; any other expression is evaluated with the
    device's property ad as MY and matches when it is true (HTCondor's DevIdMatches rules).
    """

    text: str
    expr: Expr

    def matches(self, index: int, device: ResourceDevice) -> bool:
        """Whether ``device``, at ``index`` in its resource's list, satisfies the constraint."""
        node = self.expr.node
        if isinstance(node, Literal):
            if isinstance(node.value, str):
                return node.value.lower() == device.id.lower()
            if isinstance(node.value, int) and not isinstance(node.value, bool):
                return node.value == index
        value = self.expr.evaluate(ClassAd(dict(device.properties)))
        if isinstance(value, bool):
            return value
        return isinstance(value, int | float) and value != 0


@attrs.frozen
class SlotTypeSpec:
    """One slot type as this machine will build it.

    ``knob`` is what messages name for the type (``SLOT_TYPE_2``, or ``NUM_SLOTS`` /
    ``SLOT_TYPE_0`` for the built-in type 0). The shares have the blanket share applied:
    every standard resource and every custom resource of the machine has one. ``custom`` is
    keyed by the machine's spelling of each name. ``fractional_cpus`` is set by a ``min``
    blanket share (Cpus may then be below one). ``ignored`` lists items naming resources this
    machine lacks.
    """

    type_id: int
    count: int
    partitionable: bool
    knob: str
    cpus: ResourceShare = AUTO
    memory: ResourceShare = AUTO
    disk: ResourceShare = AUTO
    swap: ResourceShare = AUTO
    custom: Mapping[str, ResourceShare] = attrs.field(factory=dict)
    constraints: Mapping[str, DeviceConstraint] = attrs.field(factory=dict)
    fractional_cpus: bool = False
    ignored: tuple[str, ...] = ()

    def standard(self, resource: StandardResource) -> ResourceShare:
        """The share of a standard resource."""
        shares = {"Cpus": self.cpus, "Memory": self.memory, "Disk": self.disk, "Swap": self.swap}
        return shares[resource]

    def label(self) -> str:
        """The knob naming this type, with its slot count when there are several."""
        return self.knob if self.count == 1 else f"{self.knob} ({self.count} slots)"


def read_slot_types(config: Config, inventory: MachineInventory) -> tuple[SlotTypeSpec, ...]:
    """The slot types this machine builds, in type order, each with at least one slot."""
    for knob in ("SLOT_TYPE_0", "NUM_SLOTS_TYPE_0"):
        if is_configured(config, knob):
            raise knob_error(
                config, knob, f"{knob}: slot type 0 is built in and cannot be configured"
            )
    max_types = read_int(config, "MAX_SLOT_TYPES", minimum=1) or _DEFAULT_MAX_TYPES
    counts: dict[int, int] = {}
    for knob, match in matching_knobs(config, _NUM_SLOTS_TYPE):
        type_id = int(match.group(1))
        count = read_int(config, knob, minimum=0) or 0
        if type_id == 0 or count == 0:
            continue
        if type_id >= max_types:
            raise knob_error(
                config,
                knob,
                f"{knob}: slot type {type_id} is beyond MAX_SLOT_TYPES ({max_types}); "
                f"raise MAX_SLOT_TYPES or use a lower type number",
            )
        counts[type_id] = count
    if counts:
        return tuple(
            _typed_spec(config, inventory, type_id, counts[type_id]) for type_id in sorted(counts)
        )
    return (_default_spec(config, inventory),)


def _typed_spec(
    config: Config, inventory: MachineInventory, type_id: int, count: int
) -> SlotTypeSpec:
    knob = f"SLOT_TYPE_{type_id}"
    partitionable = config.get_bool(f"{knob}_PARTITIONABLE", False)
    spec = SlotTypeSpec(type_id, count, partitionable, knob)
    return resolve_shares(config, inventory, spec, config.get(knob))


def _default_spec(config: Config, inventory: MachineInventory) -> SlotTypeSpec:
    num_slots = read_int(config, "NUM_SLOTS", minimum=1)
    partitionable = config.get_bool("SLOT_TYPE_0_PARTITIONABLE", num_slots is None)
    if num_slots is not None:
        count, knob = num_slots, "NUM_SLOTS"
    else:
        count = 1 if partitionable else max(1, inventory.cpus)
        knob = "SLOT_TYPE_0"
    spec = SlotTypeSpec(0, count, partitionable, knob)
    return resolve_shares(config, inventory, spec, None)


def resolve_shares(
    config: Config, inventory: MachineInventory, spec: SlotTypeSpec, text: str | None
) -> SlotTypeSpec:
    """``spec`` with the shares of ``text`` (a SLOT_TYPE value) resolved for ``inventory``."""
    try:
        parsed = parse_slot_type(spec.knob, text)
    except SlotConfigError as exc:
        raise knob_error(config, spec.knob, exc.reason) from exc
    custom_names = {name.lower(): name for name in inventory.custom}
    standard: dict[str, ResourceShare] = {}
    custom: dict[str, ResourceShare] = {}
    constraints: dict[str, DeviceConstraint] = {}
    named: dict[str, ShareItem] = {}
    ignored: list[str] = []
    for item in parsed.items:
        target = custom_names.get(item.name.lower()) or standard_resource(item.name)
        if target is None:
            if item.share.kind == "absolute" and item.share.amount > 0:
                raise knob_error(
                    config,
                    spec.knob,
                    f"{spec.knob}: {item.text!r}: this machine has no resource "
                    f"{item.name!r} (custom resources: {_names(inventory)})",
                )
            ignored.append(item.text)
            continue
        earlier = named.get(target.lower())
        if earlier is not None:
            raise knob_error(
                config,
                spec.knob,
                f"{spec.knob}: {target} is given twice, {earlier.text!r} and {item.text!r}",
            )
        named[target.lower()] = item
        if target in ("Cpus", "Memory", "Disk", "Swap"):
            _check_standard(config, spec.knob, target, item)
            standard[target] = item.share
        else:
            custom[target] = item.share
            if item.constraint is not None:
                _check_devices(config, spec.knob, inventory, target, item)
                assert item.constraint_text is not None
                constraints[target] = DeviceConstraint(item.constraint_text, item.constraint)
    blanket = parsed.blanket
    return attrs.evolve(
        spec,
        cpus=standard.get("Cpus", blanket),
        memory=standard.get("Memory", blanket),
        disk=standard.get("Disk", blanket),
        swap=standard.get("Swap", blanket),
        custom={name: custom.get(name, blanket) for name in inventory.custom},
        constraints=constraints,
        fractional_cpus=blanket.minimal,
        ignored=tuple(ignored),
    )


def _check_standard(config: Config, knob: str, target: str, item: ShareItem) -> None:
    if item.constraint is not None:
        raise knob_error(
            config,
            knob,
            f"{knob}: {item.text!r}: a constraint chooses devices of a custom resource; "
            f"{target} has none",
        )
    if target in ("Disk", "Swap") and item.share.kind == "absolute" and item.share.amount > 0:
        raise knob_error(
            config,
            knob,
            f"{knob}: {item.text!r}: {target} changes while the startd runs, so its share "
            "must be a percentage, a fraction or auto",
        )


def _check_devices(
    config: Config, knob: str, inventory: MachineInventory, target: str, item: ShareItem
) -> None:
    if not inventory.custom[target].devices:
        raise knob_error(
            config,
            knob,
            f"{knob}: {item.text!r}: the constraint chooses devices, but {target} is a plain "
            "quantity without device ids",
        )


def _names(inventory: MachineInventory) -> str:
    return ", ".join(inventory.custom) if inventory.custom else "none"
