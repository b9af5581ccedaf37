"""Slot ads: what the startd advertises for each slot, built from everything it knows.

The configuration, the machine inventory, the slot layout, the machine readings, the policy
engine's per-slot :class:`~epcore.slots.slot_status.SlotStatus` and ``now`` go in, one ClassAd
per slot comes out, with the attributes (names and types) that :mod:`epcore.slots.attributes`
lists. An ad is assembled from the layers of :mod:`epcore.slots.ad_layers` (the machine, the
slot's configuration, the startd cron attributes of :mod:`epcore.slots.cron_merge`, the slot's
own state), then the cross-slot copies of STARTD_SLOT_ATTRS,
and last Requirements, which depends on all of the above because START is evaluated against
the finished ad (seed 000: "When the START expression locally evaluates to True, the machine
advertises the Requirements expression as True").

:class:`SlotAdBuilder` is what a daemon keeps: it holds each slot's ad between calls and, like
the startd, changes only the attributes whose values changed, so that a polling pass over a
thousand slots whose clock moved costs a few attribute updates per slot rather than a thousand
new ads. :func:`build_slot_ads` builds fresh ads once (``ep status``, tests). Both are pure:
no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from epcore.classad import ERROR, UNDEFINED, ClassAd, EvalContext, SharedBindings
from epcore.config import Config
from epcore.slots.ad_layers import Entry, Layer, LayerMaker, SlotAttributes, changed_names
from epcore.slots.config_attrs import ExprCache, slot_attr_names, slot_prefix, startd_attrs
from epcore.slots.cron_merge import CronLayers, SlotCronAttributes
from epcore.slots.model import Slot, SlotLayout
from epcore.slots.readings import IdleConnections, SlotReadings, split_readings
from epcore.slots.slot_status import INITIAL_STATUS, Benchmarks, DrainingTotals, SlotStatus
from epcore.types import HostReadings, MachineAttribute, MachineInventory

#: States in which a slot advertises Requirements = False (seed 000: Matched "lies about its
#: START expression", Preempting "is not available for further matches"; a Drained slot takes
#: no jobs until draining is cancelled).
_UNAVAILABLE_STATES = frozenset({"Matched", "Preempting", "Drained"})

_START = ExprCache().parse("START")
_LIMITS = ExprCache().parse("WithinResourceLimits")
_START_AND_LIMITS = ExprCache().parse("START && (WithinResourceLimits)")

_Values = dict[str, Entry]
_EMPTY: _Values = {}


@attrs.define
class _SlotAd:
    """One slot's ad, and the inputs and layers it was last assembled from."""

    ad: ClassAd
    configured_key: tuple[int, int, str, str]
    slot: Slot
    status: SlotStatus
    loads: tuple[float, float]
    own: _Values
    clock: _Values
    configured: _Values
    policy: _Values
    cross: _Values = attrs.field(factory=dict)
    cron: _Values = attrs.field(factory=dict)
    # The folded Requirements is valid for this key (reset whenever the ad changes); the
    # unfolded one for this availability.
    requirements_key: tuple[object, ...] | None = None
    unfolded_for: bool | None = None


class SlotAdBuilder:
    """Builds one startd's slot ads again and again, updating each ad in place.

    The ads :meth:`build` returns belong to the builder: the next call changes them (copy an
    ad to keep it as it is). Create a new builder when the configuration or the inventory
    changes. ``started_at`` is when the startd started (the entered times of slots the engine
    has not named yet, and the uptime disconnected idle times count from; default: the first
    call's ``now``); ``address`` the startd's address (default ``<IP_ADDRESS:0>``);
    ``utc_offset`` the local time zone's offset in seconds, for ClockMin and ClockDay;
    ``policy_attributes`` the expressions the policy engine adds to each slot's ad.

    Raises SlotConfigError when START, RANK, MAXJOBRETIREMENTTIME, SLOT_WEIGHT or a
    CONSUMPTION_<res> expression does not parse (naming the knob), and PluginError when a
    plugin attribute is not a ClassAd value. A STARTD_ATTRS value that does not parse is left
    out, as HTCondor does; :func:`slot_ad_problems` reports it.
    """

    def __init__(
        self,
        config: Config,
        inventory: MachineInventory,
        *,
        host_name: str,
        started_at: float | None = None,
        address: str | None = None,
        utc_offset: int = 0,
        policy_attributes: SlotAttributes | None = None,
    ) -> None:
        self.config = config
        self.host_name = host_name
        self.started_at = started_at
        self.address = address or f"<{config.get('IP_ADDRESS') or '127.0.0.1'}:0>"
        self.utc_offset = utc_offset
        self.layers = LayerMaker(config, inventory, host_name, policy_attributes)
        self.connections = IdleConnections(
            console_slots=config.get_int("SLOTS_CONNECTED_TO_CONSOLE", 0),
            keyboard_slots=config.get_int("SLOTS_CONNECTED_TO_KEYBOARD", 0),
            disconnected_boost=config.get_int("DISCONNECTED_KEYBOARD_IDLE_BOOST", 1200),
        )
        self.cross_names = slot_attr_names(config)
        self.cross_as_values = config.get_bool("STARTD_EVAL_SLOT_ATTRS", False)
        self._machine: _Values = {}
        self._slots: dict[tuple[int, int | None], _SlotAd] = {}
        # The policy, machine and configured layers of each configured key, assembled: a new
        # slot's ad starts as a copy (the machine layer changing clears them).
        self._templates: dict[tuple[int, int, str, str], ClassAd] = {}
        # The slots' ads share the bindings of the values they set alike (most of them).
        self._shared = SharedBindings()
        self._names: dict[tuple[int, int | None], tuple[str, str]] = {}
        # Each slot's cron attributes as a layer, with the tuple they were made from.
        self._cron: dict[str, tuple[SlotCronAttributes, _Values]] = {}

    def build(
        self,
        layout: SlotLayout,
        readings: HostReadings,
        statuses: Mapping[str, SlotStatus],
        now: float,
        *,
        extra_attributes: Sequence[MachineAttribute] = (),
        benchmarks: Benchmarks | None = None,
        draining: DrainingTotals | None = None,
        fold_requirements: bool = True,
        cron: CronLayers | None = None,
    ) -> list[ClassAd]:
        """One ad per slot of ``layout``, in layout order.

        ``statuses`` maps a slot's name (``slot1@host`` or just ``slot1``, ``slot1_2``) to
        what the policy engine says about it; a slot it does not name is in its initial
        Owner/Idle state. ``extra_attributes`` are the plugins' machine attributes,
        ``benchmarks`` the benchmark results (default: none yet), ``draining`` the machine's
        draining totals, ``cron`` the startd cron attributes of each slot (they replace the
        machine's and the configured attributes, not the slot's state).

        ``fold_requirements`` False leaves Requirements as START (``START &&
        (WithinResourceLimits)`` on partitionable and dynamic slots, False while the slot is
        unavailable) instead of evaluating START to advertise True: folding is for the ads a
        startd publishes (seed 000: "When the START expression locally evaluates to True, the
        machine advertises the Requirements expression as True"); the ads the policy is
        evaluated against at every polling interval need not pay a START evaluation per slot.
        """
        if self.started_at is None:
            self.started_at = now
        since = self.started_at
        if self.layers.use_layout(layout):
            self._slots.clear()
            self._templates.clear()
        machine = self.layers.machine(
            layout,
            readings,
            now,
            self.address,
            benchmarks or Benchmarks(),
            draining or DrainingTotals(),
            self.utc_offset,
            extra_attributes,
        ).values
        machine_changed = changed_names(self._machine, machine)
        self._machine = machine
        if machine_changed:
            self._templates.clear()
        pairs = [(slot, self._status_of(statuses, slot)) for slot in layout.slots]
        shares = split_readings(pairs, readings, self.connections, uptime=int(now - since))
        entries: list[_SlotAd] = []
        pending: list[set[str] | None] = []
        for (slot, status), share in zip(pairs, shares, strict=True):
            entry = self._slots.get((slot.slot_id, slot.sub_id))
            loads = (share.load_avg, share.condor_load_avg)
            cron_values = self._cron_values(cron, slot)
            if (
                entry is not None
                and slot is entry.slot
                and status is entry.status
                and loads == entry.loads
            ):
                # The common case at a polling interval: the slot has not moved (the engine
                # hands over the same status record), only the clock has.
                self._tick(entry, share, since, now)
                if entry.cron is not cron_values:
                    pending.append(machine_changed | changed_names(entry.cron, cron_values))
                    entry.cron = cron_values
                else:
                    pending.append(machine_changed)
                entries.append(entry)
                continue
            clock, _ = self.layers.clock(status, share, since, now)
            if entry is not None and slot is entry.slot:
                key = entry.configured_key
            else:
                key = LayerMaker.configured_key(slot)
            if entry is None or entry.configured_key != key:
                own = self.layers.status(slot, status, share, since).values
                configured = self.layers.configured(slot).values
                policy = self.layers.policy(slot).values
                entry = _SlotAd(ClassAd(), key, slot, status, loads, own, clock, configured, policy)
                entry.cron = cron_values
                self._slots[(slot.slot_id, slot.sub_id)] = entry
                pending.append(None)
            else:
                own = self.layers.status(slot, status, share, since).values
                changes = machine_changed | changed_names(entry.clock, clock)
                changes |= changed_names(entry.own, own)
                changes |= changed_names(entry.cron, cron_values)
                entry.own, entry.clock, entry.cron = own, clock, cron_values
                entry.status, entry.slot, entry.loads = status, slot, loads
                pending.append(changes)
            entries.append(entry)
        present = {(slot.slot_id, slot.sub_id) for slot in layout.slots}
        for gone in [key for key in self._slots if key not in present]:
            del self._slots[gone]
        cross = self._cross_slot(layout.slots, entries, pending, now)
        for entry, changed in zip(entries, pending, strict=True):
            if changed is None:
                self._assemble(entry, cross)
            else:
                if cross or entry.cross:
                    changed = changed | changed_names(entry.cross, cross)
                self._apply(entry, changed, cross)
            entry.cross = cross
        context = self.config.eval_context.at(now)
        for entry, (slot, status) in zip(entries, pairs, strict=True):
            self._requirements(entry, slot, status, context, fold_requirements)
        return [entry.ad for entry in entries]

    def refold(self, layout: SlotLayout, now: float, *, fold_requirements: bool) -> list[ClassAd]:
        """The last build's ads again, one per slot of ``layout`` in its order, with
        Requirements folded or not (as :meth:`build`'s ``fold_requirements`` says). For the
        layout, statuses and ``now`` of that build only: nothing but Requirements changes,
        so nothing else is assembled again."""
        context = self.config.eval_context.at(now)
        entries = [self._slots[(slot.slot_id, slot.sub_id)] for slot in layout.slots]
        for entry in entries:
            self._requirements(entry, entry.slot, entry.status, context, fold_requirements)
        return [entry.ad for entry in entries]

    # -- assembling ---------------------------------------------------------------------------

    def _stack(self, entry: _SlotAd, cross: _Values) -> tuple[_Values, ...]:
        """The slot's layers, the winning one first."""
        return (
            cross,
            entry.clock,
            entry.own,
            entry.cron,
            entry.configured,
            self._machine,
            entry.policy,
        )

    def _assemble(self, entry: _SlotAd, cross: _Values) -> None:
        """Build the slot's ad anew: a copy of its template, then its own layers."""
        template = self._templates.get(entry.configured_key)
        shared = self._shared.set
        if template is None:
            template = ClassAd()
            for layer in (entry.policy, self._machine, entry.configured):
                for name, value, _ in layer.values():
                    shared(template, name, value)
            self._templates[entry.configured_key] = template
        ad = entry.ad = template.copy()
        for layer in (entry.cron, entry.own, entry.clock, cross):
            for name, value, _ in layer.values():
                shared(ad, name, value)
        entry.requirements_key = entry.unfolded_for = None

    def _apply(self, entry: _SlotAd, changed: set[str], cross: _Values) -> None:
        if not changed:
            return
        ad, stack, shared = entry.ad, self._stack(entry, cross), self._shared.set
        for key in changed:
            for layer in stack:
                found = layer.get(key)
                if found is not None:
                    shared(ad, found[0], found[1])
                    break
            else:
                if key in ad:
                    del ad[key]
        entry.requirements_key = None

    def _tick(self, entry: _SlotAd, share: SlotReadings, since: float, now: float) -> None:
        """Bring the clock attributes of an unchanged slot up to ``now``, in place."""
        clock, ticked = self.layers.clock(entry.status, share, since, now, into=entry.clock)
        if ticked:
            ad, shared = entry.ad, self._shared.set
            for key in ticked:
                name, value, _ = clock[key]
                shared(ad, name, value)
            entry.requirements_key = None

    def _cross_slot(
        self,
        slots: Sequence[Slot],
        entries: Sequence[_SlotAd],
        pending: Sequence[set[str] | None],
        now: float,
    ) -> _Values:
        """Every STARTD_SLOT_ATTRS attribute of every slot, as ``slot<N>_<name>``."""
        if not self.cross_names:
            return _EMPTY
        copies = Layer()
        context = self.config.eval_context.at(now)
        for slot, entry, changed in zip(slots, entries, pending, strict=True):
            # An entry's ad is up to date but for its own changes: look at its layers.
            if changed is None:
                self._assemble(entry, _EMPTY)
            else:
                self._apply(entry, changed, entry.cross)
            for name in self.cross_names:
                expr = entry.ad.lookup(name)
                if expr is None:
                    continue
                target = f"{slot_prefix(slot)}_{name}"
                if not self.cross_as_values:
                    copies[target] = expr
                    continue
                value = entry.ad.evaluate(name, context=context)
                if value is not ERROR and value is not UNDEFINED:
                    copies[target] = value
        return copies.values

    def _cron_values(self, cron: CronLayers | None, slot: Slot) -> _Values:
        """The cron attributes of ``slot`` as a layer (the same object while they stay)."""
        if cron is None or not cron.by_slot:
            return _EMPTY
        short = slot_prefix(slot)
        given = cron.of(short)
        known = self._cron.get(short)
        if known is not None and known[0] is given:
            return known[1]
        layer = Layer()
        for name, expr in given:
            layer[name] = expr
        self._cron[short] = (given, layer.values)
        return layer.values

    def _status_of(self, statuses: Mapping[str, SlotStatus], slot: Slot) -> SlotStatus:
        """The status ``statuses`` gives ``slot`` under its full or its short name."""
        names = self._names.get((slot.slot_id, slot.sub_id))
        if names is None:
            names = self._names[(slot.slot_id, slot.sub_id)] = (
                slot.name(self.host_name),
                slot_prefix(slot),
            )
        found = statuses.get(names[0])
        if found is None:
            found = statuses.get(names[1])
        return INITIAL_STATUS if found is None else found

    def _requirements(
        self,
        entry: _SlotAd,
        slot: Slot,
        status: SlotStatus,
        context: EvalContext,
        fold: bool,
    ) -> None:
        """Set Requirements. Folded, START is evaluated on the finished ad (again only when
        the ad, the slot's availability or the clock changed) and a START that is locally
        TRUE is advertised as True; unfolded, Requirements is START itself."""
        unavailable = status.state in _UNAVAILABLE_STATES or not status.accepting
        ad = entry.ad
        if slot.broken is not None:
            # HTCondor's: the reason as Requirements, so that nothing matches the slot and
            # -better-analyze shows why.
            entry.requirements_key, entry.unfolded_for = None, None
            self._shared.set(ad, "Requirements", slot.broken.reason)
            return
        if not fold:
            if entry.unfolded_for is not unavailable:
                entry.unfolded_for, entry.requirements_key = unavailable, None
                if unavailable:
                    self._shared.set(ad, "Requirements", False)
                elif self.layers.slot_config(slot).limits is None:
                    self._shared.set(ad, "Requirements", _START)
                else:
                    self._shared.set(ad, "Requirements", _START_AND_LIMITS)
            return
        key = (context.now, unavailable)
        if entry.requirements_key == key:
            return
        entry.requirements_key, entry.unfolded_for = key, None
        if unavailable:
            self._shared.set(ad, "Requirements", False)
            return
        limits = self.layers.slot_config(slot).limits
        locally_true = ad.evaluate("Start", context=context) is True
        if limits is None:
            self._shared.set(ad, "Requirements", True if locally_true else _START)
        else:
            self._shared.set(ad, "Requirements", _LIMITS if locally_true else _START_AND_LIMITS)


def build_slot_ads(
    config: Config,
    inventory: MachineInventory,
    layout: SlotLayout,
    readings: HostReadings,
    statuses: Mapping[str, SlotStatus],
    now: float,
    *,
    host_name: str,
    extra_attributes: Sequence[MachineAttribute] = (),
    started_at: float | None = None,
    address: str | None = None,
    benchmarks: Benchmarks | None = None,
    draining: DrainingTotals | None = None,
    utc_offset: int = 0,
    fold_requirements: bool = True,
) -> list[ClassAd]:
    """One fresh ad per slot of ``layout``, in layout order: :meth:`SlotAdBuilder.build` of a
    new builder (the arguments are those of the builder and of its ``build``)."""
    builder = SlotAdBuilder(
        config,
        inventory,
        host_name=host_name,
        started_at=started_at,
        address=address,
        utc_offset=utc_offset,
    )
    return builder.build(
        layout,
        readings,
        statuses,
        now,
        extra_attributes=extra_attributes,
        benchmarks=benchmarks,
        draining=draining,
        fold_requirements=fold_requirements,
    )


def slot_ad_problems(config: Config, layout: SlotLayout) -> list[str]:
    """The STARTD_ATTRS entries that are left out of some slot ad because they do not parse,
    one message per slot number and entry (what HTCondor logs as a CONFIGURATION PROBLEM)."""
    problems: list[str] = []
    seen: set[tuple[int, int]] = set()
    cache = ExprCache()
    for slot in layout.slots:
        key = (slot.slot_id, slot.type_id)
        if key in seen:
            continue
        seen.add(key)
        problems.extend(
            entry.problem
            for entry in startd_attrs(config, slot.slot_id, slot.type_id, cache)
            if entry.problem is not None
        )
    return problems
