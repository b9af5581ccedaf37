"""Consumption policies and slot weight: what a match takes from a partitionable slot, and what
a slot counts for in accounting (seed 000, "condor_negotiator-Side Resource Consumption
Policies").

- A partitionable slot has a consumption policy when ``SLOT_TYPE_<N>_CONSUMPTION_POLICY`` (else
  ``CONSUMPTION_POLICY``) is true.
- For every resource of the machine but Swap, the slot advertises ``Consumption<resource>``:
  ``SLOT_TYPE_<N>_CONSUMPTION_<resource>``, else ``CONSUMPTION_<resource>`` (the defaults are
  ``quantize(target.RequestCpus,{1})``, ``quantize(target.RequestMemory,{128})`` and
  ``quantize(target.RequestDisk,{1024})``), else, for a custom resource,
  ``ifthenelse(target.Request<name> =?= undefined, 0, target.Request<name>)``.
- Consumption is evaluated with the slot as MY and the job as TARGET. As in HTCondor, a
  missing ``Request<resource>`` counts as 0 while evaluating and ``_condor_Request<resource>``
  (set by a schedd) overrides ``Request<resource>``. A value that is not a non-negative number
  makes the match impossible; so does a consumption of nothing at all.
- ``SLOT_WEIGHT`` (``SLOT_TYPE_<N>_SLOT_WEIGHT`` first; default ``Cpus``) may use only Cpus,
  Memory and Disk; the cost of a match is the slot weight before less the weight after.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from epcore.classad import ClassAd, parse_expr
from epcore.config import Config
from epcore.errors import ClassAdSyntaxError
from epcore.slots.knobs import knob_error
from epcore.slots.model import Slot, SlotResources

#: What a slot weight may refer to (seed 000: "the only attributes valid within the
#: SLOT_WEIGHT expression are Cpus, Memory, and disk").
WEIGHT_ATTRIBUTES = ("Cpus", "Memory", "Disk")

_STANDARD_CONSUMED = ("Cpus", "Memory", "Disk")


@attrs.frozen
class Consumption:
    """What one match consumes from a partitionable slot, by resource name.

    ``problems`` says why a resource's consumption could not be computed (the knob and what
    it gave); a consumption with problems cannot be granted.
    """

    amounts: Mapping[str, float]
    problems: tuple[str, ...] = ()


def type_knob(config: Config, type_id: int, name: str) -> tuple[str, str | None]:
    """The knob a slot of type ``type_id`` reads for ``name``: ``SLOT_TYPE_<N>_<name>`` when
    set, else ``name``; with its value (None when neither is set)."""
    typed = f"SLOT_TYPE_{type_id}_{name}"
    value = config.get(typed)
    if value is not None:
        return _spelled(config, typed), value
    return _spelled(config, name), config.get(name)


def _spelled(config: Config, knob: str) -> str:
    # Messages name a knob as the configuration (or the default table) spells it.
    found = config.definition(knob)
    return found.name if found is not None and found.name.lower() == knob.lower() else knob


def consumption_policy(config: Config, type_id: int) -> bool:
    """Whether partitionable slots of type ``type_id`` have a consumption policy."""
    default = config.get_bool("CONSUMPTION_POLICY", False)
    return config.get_bool(f"SLOT_TYPE_{type_id}_CONSUMPTION_POLICY", default)


def consumption_expressions(
    config: Config, type_id: int, resources: Iterable[str]
) -> dict[str, tuple[str, str]]:
    """``Consumption<resource>`` for each resource but Swap: resource -> (knob, expression).

    ``resources`` are the machine's resource names (``Cpus Memory Disk Swap`` and the custom
    ones, as in MachineResources); the knob is the one the expression came from, or
    ``Consumption<resource>`` for the built-in default of a custom resource.
    """
    found: dict[str, tuple[str, str]] = {}
    for resource in resources:
        if resource.lower() == "swap":
            continue
        knob, text = type_knob(config, type_id, f"CONSUMPTION_{resource}")
        if text is None:
            request = f"target.Request{resource}"
            knob, text = (
                f"Consumption{resource}",
                f"ifthenelse({request} =?= undefined, 0, {request})",
            )
        found[resource] = (knob, text)
    return found


def resource_ad(slot: Slot) -> ClassAd:
    """The resource attributes of ``slot`` as a ClassAd (what the policies evaluate against
    when the caller has no full slot ad): Cpus, Memory, Disk, VirtualMemory, each custom
    resource, their TotalSlot* values, SlotID, SlotTypeID and PartitionableSlot."""
    now, total = slot.resources, slot.total
    ad = ClassAd(
        {
            "Cpus": now.cpus,
            "Memory": now.memory_mb,
            "Disk": now.disk_kb,
            "VirtualMemory": now.swap_kb,
            "TotalSlotCpus": total.cpus,
            "TotalSlotMemory": total.memory_mb,
            "TotalSlotDisk": total.disk_kb,
            "SlotID": slot.slot_id,
            "SlotTypeID": slot.type_id,
            "PartitionableSlot": slot.kind == "partitionable",
            "MachineResources": " ".join(["Cpus", "Memory", "Disk", "Swap", *total.custom]),
        }
    )
    for name, amount in now.custom.items():
        ad[name] = amount
        ad[f"TotalSlot{name}"] = total.custom.get(name, amount)
    return ad


def compute_consumption(
    config: Config, pslot: Slot, job: ClassAd, *, slot_ad: ClassAd | None = None
) -> Consumption:
    """What ``job`` would consume from ``pslot`` under its type's consumption policy."""
    mine = slot_ad if slot_ad is not None else resource_ad(pslot)
    names = [*_STANDARD_CONSUMED, *pslot.total.custom]
    target = job.copy()
    for name in names:
        override = target.lookup(f"_condor_Request{name}")
        if override is not None:
            target[f"Request{name}"] = override
        elif target.lookup(f"Request{name}") is None:
            target[f"Request{name}"] = 0
    amounts: dict[str, float] = {}
    problems: list[str] = []
    for name, (knob, text) in consumption_expressions(config, pslot.type_id, names).items():
        try:
            value = parse_expr(text).evaluate(mine, target, context=config.eval_context)
        except ClassAdSyntaxError as exc:
            raise knob_error(
                config, knob, f"{knob}: {text!r} is not a ClassAd expression ({exc.reason})"
            ) from exc
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            problems.append(f"{knob} = {text} gives {value!r}, not a number of at least 0")
            continue
        amounts[name] = value
    if not problems and not any(amounts.values()):
        problems.append("the consumption policy takes nothing from the slot")
    return Consumption(amounts, tuple(problems))


def slot_weight_expression(config: Config, type_id: int | None = None) -> tuple[str, str]:
    """(knob, expression) of the slot weight of a slot of type ``type_id``; ``Cpus`` when no
    knob sets it."""
    if type_id is not None:
        knob, text = type_knob(config, type_id, "SLOT_WEIGHT")
    else:
        knob, text = "SLOT_WEIGHT", config.get("SLOT_WEIGHT")
    return (knob, text) if text is not None else ("SLOT_WEIGHT", "Cpus")


def slot_weight(config: Config, resources: SlotResources, type_id: int | None = None) -> float:
    """The slot weight of a slot with ``resources``: SLOT_WEIGHT evaluated with only Cpus,
    Memory and Disk defined. A weight that is not a number is a SlotConfigError."""
    knob, text = slot_weight_expression(config, type_id)
    ad = ClassAd({"Cpus": resources.cpus, "Memory": resources.memory_mb, "Disk": resources.disk_kb})
    try:
        value = parse_expr(text).evaluate(ad, context=config.eval_context)
    except ClassAdSyntaxError as exc:
        raise knob_error(
            config, knob, f"{knob}: {text!r} is not a ClassAd expression ({exc.reason})"
        ) from exc
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise knob_error(
            config,
            knob,
            f"{knob}: {text!r} gives {value!r}, not a number; a slot weight may use only "
            f"{', '.join(WEIGHT_ATTRIBUTES)}",
        )
    return value


def consumption_cost(config: Config, pslot: Slot, consumption: Consumption) -> float:
    """How much a match costs in slot weight: the p-slot's weight before the consumption less
    its weight after (HTCondor's cp_deduct_assets)."""
    before = pslot.resources
    after = attrs.evolve(
        before,
        cpus=before.cpus - consumption.amounts.get("Cpus", 0),
        memory_mb=before.memory_mb - int(consumption.amounts.get("Memory", 0)),
        disk_kb=before.disk_kb - int(consumption.amounts.get("Disk", 0)),
    )
    weight_before = slot_weight(config, before, pslot.type_id)
    return weight_before - slot_weight(config, after, pslot.type_id)
