"""Custom-resource attributes of slot ads, and the WithinResourceLimits expression.

A custom resource ``<name>`` (``MACHINE_RESOURCE_<name>``, or a detector's GPUs) gives every
slot ad ``<name>`` (what the slot offers), ``Total<name>`` and ``Detected<name>`` (what the
machine has) and ``TotalSlot<name>`` (what the slot was given), as seeds 000 and 002 list them.
A resource made of identified devices adds ``Assigned<name>``, the comma-separated ids given
to the slot (``AssignedGPUs = "GPU-6a96bd13,GPU-b2c83767"``). When the devices have properties
(condor_gpu_discovery's nested form, which seed 000 says GPU matchmaking needs) each device the
slot was given gets a nested ad ``<name>_<id>`` (``GPUs_GPU_6a96bd13 = [ Id = "GPU-6a96bd13";
Capability = 8.0; ... ]``) and ``Available<name>`` lists references to the ads of the devices
the slot still offers, so that a job's ``countMatches(RequireGPUs, AvailableGPUs)`` works.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Protocol

import attrs

from epcore.classad import ClassAd, Expr
from epcore.slots.config_attrs import ExprCache
from epcore.slots.model import Slot, SlotLayout
from epcore.types import MachineInventory

_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_]")


def device_attribute(resource: str, device_id: str) -> str:
    """The name of a device's property ad: ``GPUs`` + ``GPU-6a96bd13`` -> ``GPUs_GPU_6a96bd13``."""
    return f"{resource}_{_NOT_IN_NAME.sub('_', device_id)}"


def resource_limits_text(custom: tuple[str, ...], consumption_policy: bool) -> str:
    """WithinResourceLimits for a partitionable or dynamic slot, as HTCondor's startd builds it.

    Without a consumption policy: the slot must have some of each standard resource and at
    least what the job requests; a custom resource the job does not request is no obstacle.
    With one, each resource is checked against what the policy says the job consumes.
    """
    if consumption_policy:
        assets = sorted({"Cpus", "Memory", "Disk", *custom}, key=str.lower)
        clauses = [
            f"ifThenElse(TARGET._cp_orig_Request{a} isnt UNDEFINED, "
            f"TARGET.Request{a} <= MY.{a}, MY.Consumption{a} <= MY.{a})"
            for a in assets
        ]
        return "(" + " && ".join(clauses) + ")"
    clauses = [
        f"MY.{res} > 0 && TARGET.Request{res} <= MY.{res}" for res in ("Cpus", "Memory", "Disk")
    ]
    clauses += [
        f"(TARGET.Request{name} is UNDEFINED || MY.{name} >= TARGET.Request{name})"
        for name in custom
    ]
    return "(" + " && ".join(clauses) + ")"


def _count(amount: float) -> int | float:
    return int(amount) if float(amount).is_integer() else float(amount)


class AttributeSink(Protocol):
    """Where attributes are published: a ClassAd, or one layer of a slot ad."""

    def __setitem__(self, name: str, value: object, /) -> None: ...


@attrs.frozen
class CustomResources:
    """The machine's custom resources and the device property ads, prepared once per build."""

    names: tuple[str, ...]
    totals: Mapping[str, float]
    #: Resources made of identified devices.
    with_devices: frozenset[str]
    #: Nested property ad of each device that has properties, by (resource, device id).
    property_ads: Mapping[tuple[str, str], Expr]
    #: Resources whose devices have property ads (they get Available<name>).
    with_properties: frozenset[str]
    cache: ExprCache

    @classmethod
    def of(
        cls, inventory: MachineInventory, layout: SlotLayout, cache: ExprCache
    ) -> CustomResources:
        """The custom resources of ``inventory``, and any only the layout mentions."""
        names = list(inventory.custom)
        known = {name.lower() for name in names}
        for slot in layout.slots:
            for name in slot.total.custom:
                if name.lower() not in known:
                    known.add(name.lower())
                    names.append(name)
        totals = {name: float(found.quantity) for name, found in inventory.custom.items()}
        with_devices = {name for name, found in inventory.custom.items() if found.devices}
        property_ads: dict[tuple[str, str], Expr] = {}
        for name, found in inventory.custom.items():
            for device in found.devices:
                if device.properties:
                    nested = ClassAd({"Id": device.id, **device.properties})
                    property_ads[(name, device.id)] = cache.parse(str(nested))
        for slot in layout.slots:
            with_devices.update(name for name, ids in slot.total.devices.items() if ids)
        return cls(
            names=tuple(names),
            totals=totals,
            with_devices=frozenset(with_devices),
            property_ads=property_ads,
            with_properties=frozenset(name for name, _ in property_ads),
            cache=cache,
        )

    def publish_machine(self, ad: AttributeSink) -> None:
        """Total<name> and Detected<name> of every custom resource."""
        for name in self.names:
            total = _count(self.totals.get(name, 0.0))
            ad[f"Total{name}"] = total
            ad[f"Detected{name}"] = total

    def publish_slot(self, ad: AttributeSink, slot: Slot) -> None:
        """<name>, TotalSlot<name>, Assigned<name>, Available<name> and the property ads."""
        offered, given = slot.resources, slot.total
        for name in self.names:
            ad[name] = _count(offered.custom.get(name, 0))
            ad[f"TotalSlot{name}"] = _count(given.custom.get(name, 0))
            assigned = given.devices.get(name, ())
            if name in self.with_devices and assigned:
                ad[f"Assigned{name}"] = ",".join(assigned)
            if name not in self.with_properties:
                continue
            for device_id in assigned:
                nested = self.property_ads.get((name, device_id))
                if nested is not None:
                    ad[device_attribute(name, device_id)] = nested
            available = [
                device_attribute(name, device_id)
                for device_id in offered.devices.get(name, ())
                if (name, device_id) in self.property_ads
            ]
            ad[f"Available{name}"] = self.cache.parse("{ " + ", ".join(available) + " }")
