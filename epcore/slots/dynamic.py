"""Dynamic slots: carving one out of a partitionable slot for a job, and giving it back.

How much a dynamic slot gets (seed 000, "Dynamic Provisioning" and "Defaults for Partitionable
Slot Sizes"; HTCondor's startd where the seed is silent):

- Without a consumption policy, the job's requests are first rewritten by
  ``MODIFY_REQUEST_EXPR_REQUESTCPUS`` / ``..._REQUESTMEMORY`` / ``..._REQUESTDISK`` (and
  ``MODIFY_REQUEST_EXPR_REQUEST<name>`` for a custom resource when set;
  ``SLOT_TYPE_<N>_MODIFY_REQUEST_EXPR_...`` first), each evaluated with the job as MY and the
  partitionable slot as TARGET; a result that is not an integer leaves the request alone.
  Unless ``MUST_MODIFY_REQUEST_EXPRS`` is true, a rewritten request that no longer fits falls
  back to the job's own request.
- ``_condor_Request<res>`` (set by a schedd) wins over ``Request<res>``; a job without
  ``RequestCpus`` asks for 1; a job without ``RequestMemory`` or ``RequestDisk`` is refused, as
  HTCondor refuses it; a custom resource not requested is 0.
- With a consumption policy (see :mod:`epcore.slots.consumption`) the dynamic slot gets what
  the policy says the match consumes.
- Devices of a custom resource (GPUs) are taken from the partitionable slot's free ones, in
  order; when the job has ``Require<name>`` (``require_gpus``) only devices whose property ad
  satisfies it are taken.
- The dynamic slot is ``slot<N>_<M>``, M the lowest number not used by another dynamic slot
  of ``slot<N>``. It shares the parent's execute directory; Swap is not divided (a dynamic slot
  advertises its parent's swap, as HTCondor's auto share of swap does).
- When it goes away its resources, devices included, return to the partitionable slot.

A request that does not fit is not an exception (the negotiator asks often): it is a
:class:`NoFit` saying which resources are short and by how much.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import attrs

from epcore.classad import ClassAd, EvalContext, parse_expr
from epcore.config import Config
from epcore.errors import ClassAdSyntaxError, EpError
from epcore.slots.consumption import (
    compute_consumption,
    consumption_policy,
    resource_ad,
    type_knob,
)
from epcore.slots.knobs import format_amount, knob_error
from epcore.slots.layout import whole
from epcore.slots.model import Slot, SlotLayout, SlotResources
from epcore.slots.slot_types import DeviceConstraint
from epcore.types import MachineInventory, ResourceDevice

_SLACK = 1e-9
_MODIFIED = ("Cpus", "Memory", "Disk")


@attrs.frozen
class ResourceRequest:
    """What a dynamic slot would get: Cpus, Memory (MB), Disk (KB) and custom amounts, plus
    the job's ``Require<name>`` device constraints."""

    cpus: float
    memory_mb: int
    disk_kb: int
    custom: Mapping[str, float] = attrs.field(factory=dict)
    constraints: Mapping[str, DeviceConstraint] = attrs.field(factory=dict)


@attrs.frozen
class Shortfall:
    """One resource the partitionable slot has too little of for a request."""

    resource: str
    requested: float
    available: float
    detail: str = ""

    @property
    def missing(self) -> float:
        """How much more the request needs than there is."""
        return self.requested - self.available

    def __str__(self) -> str:
        detail = f" {self.detail}" if self.detail else ""
        return (
            f"{self.resource}: {format_amount(self.requested)} requested{detail}, "
            f"{format_amount(self.available)} available ({format_amount(self.missing)} short)"
        )


@attrs.frozen
class Carved:
    """A dynamic slot carved out: the new slot, what its parent has left, and the request
    that sized it. ``layout`` is the machine's new layout when the carve was made on one."""

    dslot: Slot
    pslot: Slot
    request: ResourceRequest
    layout: SlotLayout | None = None
    fits: bool = attrs.field(default=True, init=False)


@attrs.frozen
class NoFit:
    """Why no dynamic slot could be carved: the resources that are short, or (``reason``)
    why the request could not be read at all."""

    reason: str
    shortfalls: tuple[Shortfall, ...] = ()
    request: ResourceRequest | None = None
    fits: bool = attrs.field(default=False, init=False)


CarveResult = Carved | NoFit


def carve(
    pslot: Slot,
    job: ClassAd,
    config: Config,
    *,
    sub_id: int,
    inventory: MachineInventory | None = None,
    slot_ad: ClassAd | None = None,
) -> CarveResult:
    """Carve dynamic slot ``slot<N>_<sub_id>`` for ``job`` out of partitionable ``pslot``.

    ``inventory`` supplies the devices' property ads for ``Require<name>`` constraints;
    ``slot_ad`` is the p-slot's full ad for the expressions' TARGET/MY (a resource-only ad
    is made from ``pslot`` without it).
    """
    if pslot.kind != "partitionable":
        raise EpError(f"slot{pslot.slot_id} is {pslot.kind}, not partitionable")
    ad = slot_ad if slot_ad is not None else resource_ad(pslot)
    request = _request(config, pslot, job, ad)
    if isinstance(request, NoFit):
        return request
    devices = _device_table(pslot, inventory)
    chosen, shortfalls = _fit(pslot, request, devices)
    if shortfalls:
        reason = "; ".join(str(s) for s in shortfalls)
        return NoFit(
            f"slot{pslot.slot_id} cannot hold the request: {reason}", tuple(shortfalls), request
        )
    return _split(pslot, request, chosen, sub_id)


def carve_in(
    layout: SlotLayout,
    slot_id: int,
    job: ClassAd,
    config: Config,
    *,
    inventory: MachineInventory | None = None,
    slot_ad: ClassAd | None = None,
) -> CarveResult:
    """:func:`carve` from partitionable ``slot<slot_id>`` of ``layout``, with the next free
    sub-id; the result's ``layout`` has the new dynamic slot and the reduced parent."""
    pslot = layout.find(slot_id)
    if pslot is None:
        raise EpError(f"there is no slot{slot_id}")
    sub_id = next_sub_id(layout, slot_id)
    result = carve(pslot, job, config, sub_id=sub_id, inventory=inventory, slot_ad=slot_ad)
    if isinstance(result, NoFit):
        return result
    slots = [result.pslot if s is pslot else s for s in layout.slots]
    return attrs.evolve(result, layout=SlotLayout(_ordered([*slots, result.dslot])))


def release(pslot: Slot, dslot: Slot) -> Slot:
    """``pslot`` with the resources (and devices) of its dynamic slot ``dslot`` back."""
    if dslot.kind != "dynamic" or dslot.slot_id != pslot.slot_id:
        raise EpError(
            f"slot{dslot.slot_id}_{dslot.sub_id} is not a dynamic slot of slot{pslot.slot_id}"
        )
    have, back = pslot.resources, dslot.total
    devices = dict(have.devices)
    for name, ids in back.devices.items():
        returned = set(devices.get(name, ())) | set(ids)
        order = pslot.total.devices.get(name, ())
        devices[name] = tuple(i for i in order if i in returned)
    custom = {
        name: whole(amount + back.custom.get(name, 0)) for name, amount in have.custom.items()
    }
    resources = SlotResources(
        cpus=whole(have.cpus + back.cpus),
        memory_mb=have.memory_mb + back.memory_mb,
        disk_kb=have.disk_kb + back.disk_kb,
        swap_kb=have.swap_kb,
        custom=custom,
        devices=devices,
    )
    total = pslot.total
    if (
        resources.cpus > total.cpus + _SLACK
        or resources.memory_mb > total.memory_mb
        or resources.disk_kb > total.disk_kb
    ):
        raise EpError(
            f"slot{dslot.slot_id}_{dslot.sub_id} gives back more than slot{pslot.slot_id} has"
        )
    return attrs.evolve(pslot, resources=resources)


def release_in(layout: SlotLayout, slot_id: int, sub_id: int) -> SlotLayout:
    """``layout`` without dynamic slot ``slot<slot_id>_<sub_id>``, its parent made whole."""
    pslot, dslot = layout.find(slot_id), layout.find(slot_id, sub_id)
    if pslot is None or dslot is None:
        raise EpError(f"there is no slot{slot_id}_{sub_id}")
    back = release(pslot, dslot)
    return SlotLayout(tuple(back if s is pslot else s for s in layout.slots if s is not dslot))


def next_sub_id(layout: SlotLayout, slot_id: int) -> int:
    """The lowest M >= 1 that no dynamic slot ``slot<slot_id>_<M>`` uses."""
    used = {s.sub_id for s in layout.slots if s.slot_id == slot_id and s.sub_id is not None}
    candidate = 1
    while candidate in used:
        candidate += 1
    return candidate


# -- the request ------------------------------------------------------------------------------


def resource_request(
    config: Config, pslot: Slot, job: ClassAd, *, slot_ad: ClassAd | None = None
) -> ResourceRequest | NoFit:
    """What a dynamic slot for ``job`` out of ``pslot`` would get (before checking it fits)."""
    return _request(config, pslot, job, slot_ad if slot_ad is not None else resource_ad(pslot))


def _request(config: Config, pslot: Slot, job: ClassAd, ad: ClassAd) -> ResourceRequest | NoFit:
    constraints = _constraints(job, pslot)
    if consumption_policy(config, pslot.type_id):
        consumption = compute_consumption(config, pslot, job, slot_ad=ad)
        if consumption.problems:
            return NoFit("; ".join(consumption.problems))
        amounts = consumption.amounts
        return ResourceRequest(
            cpus=whole(amounts.get("Cpus", 0)),
            memory_mb=int(amounts.get("Memory", 0)),
            disk_kb=int(amounts.get("Disk", 0)),
            custom={n: amounts.get(n, 0) for n in pslot.total.custom},
            constraints=constraints,
        )
    modified = _modified_job(config, pslot, job, ad)
    context = config.eval_context
    request = _read_request(modified, pslot, ad, constraints, context)
    must = config.get_bool("MUST_MODIFY_REQUEST_EXPRS", False)
    if isinstance(request, NoFit) or must or not _fit(pslot, request, {})[1]:
        return request
    # The rewritten request no longer fits: HTCondor then tries the job's own request.
    original = _read_request(job, pslot, ad, constraints, context)
    if isinstance(original, ResourceRequest) and not _fit(pslot, original, {})[1]:
        return original
    return request


def _modified_job(config: Config, pslot: Slot, job: ClassAd, ad: ClassAd) -> ClassAd:
    modified = job.copy()
    for name in [*_MODIFIED, *pslot.total.custom]:
        knob, text = type_knob(config, pslot.type_id, f"MODIFY_REQUEST_EXPR_REQUEST{name}")
        if text is None:
            continue
        try:
            value = parse_expr(text).evaluate(job, ad, context=config.eval_context)
        except ClassAdSyntaxError as exc:
            raise knob_error(
                config, knob, f"{knob}: {text!r} is not a ClassAd expression ({exc.reason})"
            ) from exc
        if isinstance(value, int) and not isinstance(value, bool):
            modified[f"Request{name}"] = value
    return modified


def _read_request(
    job: ClassAd,
    pslot: Slot,
    ad: ClassAd,
    constraints: Mapping[str, DeviceConstraint],
    context: EvalContext,
) -> ResourceRequest | NoFit:
    cpus = _requested(job, ad, "Cpus", context)
    memory = _requested(job, ad, "Memory", context)
    disk = _requested(job, ad, "Disk", context)
    for name, value in (("RequestMemory", memory), ("RequestDisk", disk)):
        if value is None:
            return NoFit(f"the job has no usable {name}, so no dynamic slot can be sized")
    assert memory is not None and disk is not None
    custom = {name: _requested(job, ad, name, context) or 0 for name in pslot.total.custom}
    return ResourceRequest(
        cpus=1 if cpus is None else cpus,
        memory_mb=memory,
        disk_kb=disk,
        custom=custom,
        constraints=constraints,
    )


def _requested(job: ClassAd, ad: ClassAd, name: str, context: EvalContext) -> int | None:
    # As HTCondor's EvalInteger: a real request is truncated; anything else is no request.
    for attribute in (f"_condor_Request{name}", f"Request{name}"):
        if job.lookup(attribute) is None:
            continue
        value = job.evaluate(attribute, ad, context=context)
        if isinstance(value, int | float) and not isinstance(value, bool):
            # NaN and infinities are no number a slot can be cut to: no request.
            return max(0, int(value)) if math.isfinite(value) else None
        return None
    return None


def _constraints(job: ClassAd, pslot: Slot) -> dict[str, DeviceConstraint]:
    found: dict[str, DeviceConstraint] = {}
    for name in pslot.total.devices:
        expr = job.lookup(f"Require{name}")
        if expr is not None:
            found[name] = DeviceConstraint(str(expr), expr)
    return found


# -- fitting and splitting --------------------------------------------------------------------


def _device_table(
    pslot: Slot, inventory: MachineInventory | None
) -> dict[str, Sequence[ResourceDevice]]:
    # The slot's devices in the machine's order, with their property ads when known.
    known: dict[str, dict[str, ResourceDevice]] = {}
    if inventory is not None:
        for name, resource in inventory.custom.items():
            known[name.lower()] = {d.id: d for d in resource.devices}
    table: dict[str, Sequence[ResourceDevice]] = {}
    for name, ids in pslot.total.devices.items():
        props = known.get(name.lower(), {})
        table[name] = [props.get(i, ResourceDevice(i)) for i in ids]
    return table


def _fit(
    pslot: Slot, request: ResourceRequest, devices: Mapping[str, Sequence[ResourceDevice]]
) -> tuple[dict[str, tuple[str, ...]], list[Shortfall]]:
    have = pslot.resources
    short: list[Shortfall] = []
    for name, wanted, available in (
        ("Cpus", request.cpus, have.cpus),
        ("Memory", request.memory_mb, have.memory_mb),
        ("Disk", request.disk_kb, have.disk_kb),
    ):
        if wanted > available + _SLACK:
            short.append(Shortfall(name, wanted, available))
    chosen: dict[str, tuple[str, ...]] = {}
    for name, wanted in request.custom.items():
        available = have.custom.get(name, 0)
        if wanted > available + _SLACK:
            short.append(Shortfall(name, wanted, available))
            continue
        if name not in pslot.total.devices or wanted <= 0:
            continue
        free_ids = set(have.devices.get(name, ()))
        order = devices.get(name) or [ResourceDevice(i) for i in pslot.total.devices[name]]
        constraint = request.constraints.get(name)
        index = {d.id: i for i, d in enumerate(order)}
        matching = [
            d.id
            for d in order
            if d.id in free_ids and (constraint is None or constraint.matches(index[d.id], d))
        ]
        if len(matching) < int(wanted):
            detail = f"matching {constraint.text}" if constraint else ""
            short.append(Shortfall(name, int(wanted), len(matching), detail))
            continue
        chosen[name] = tuple(matching[: int(wanted)])
    return chosen, short


def _split(
    pslot: Slot, request: ResourceRequest, chosen: Mapping[str, tuple[str, ...]], sub_id: int
) -> Carved:
    have = pslot.resources
    given = SlotResources(
        cpus=whole(request.cpus),
        memory_mb=request.memory_mb,
        disk_kb=request.disk_kb,
        swap_kb=pslot.total.swap_kb,
        custom={name: whole(request.custom.get(name, 0)) for name in have.custom},
        devices=dict(chosen),
    )
    devices = {
        name: tuple(i for i in ids if i not in chosen.get(name, ()))
        for name, ids in have.devices.items()
    }
    left = SlotResources(
        cpus=whole(have.cpus - given.cpus),
        memory_mb=have.memory_mb - given.memory_mb,
        disk_kb=have.disk_kb - given.disk_kb,
        swap_kb=have.swap_kb,
        custom={name: whole(amount - given.custom[name]) for name, amount in have.custom.items()},
        devices=devices,
    )
    dslot = Slot(
        slot_id=pslot.slot_id,
        type_id=pslot.type_id,
        kind="dynamic",
        resources=given,
        total=given,
        execute=pslot.execute,
        sub_id=sub_id,
    )
    return Carved(dslot, attrs.evolve(pslot, resources=left), request)


def _ordered(slots: Sequence[Slot]) -> tuple[Slot, ...]:
    return tuple(sorted(slots, key=lambda s: (s.slot_id, s.sub_id or 0)))
