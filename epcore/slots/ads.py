"""Slot ads: what the startd advertises for each slot, built from everything it knows.

:func:`build_slot_ads` is pure: the configuration, the machine inventory, the slot layout, the
machine readings, the policy engine's per-slot :class:`~epcore.slots.slot_status.SlotStatus`
and ``now`` go in, one ClassAd per slot comes out, with the attributes (names and types) that
:mod:`epcore.slots.attributes` lists. An ad is assembled in layers, later ones winning:

1. machine-wide attributes, shared by every slot (platform, domains, address, totals, machine
   load, clock, benchmarks) and the attributes plugins add (``ep_machine_attributes``);
2. the slot's own configured attributes (SlotID, SlotType, Start, Rank, SlotWeight...), then
   its STARTD_ATTRS entries, which may replace anything above, as in HTCondor (layers 1 and
   2 are built once per slot number, type and kind, and shared by all dynamic slots of a
   parent);
3. the slot's Name, resources, state, load and idle times, claim and job, which nothing
   replaces;
4. the cross-slot copies of STARTD_SLOT_ATTRS, and last Requirements, which depends on all of
   the above because START is evaluated against the finished ad (seed 000: "When the START
   expression locally evaluates to True, the machine advertises the Requirements expression
   as True").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from epcore.classad import ERROR, UNDEFINED, ClassAd, ClassAdSyntaxError, EvalContext, Expr
from epcore.config import Config
from epcore.errors import PluginError, SlotConfigError
from epcore.slots.config_attrs import (
    ConfigAttribute,
    ExprCache,
    slot_attr_names,
    slot_prefix,
    startd_attrs,
)
from epcore.slots.consumption import (
    consumption_expressions,
    consumption_policy,
    slot_weight_expression,
)
from epcore.slots.model import Slot, SlotLayout, SlotResources
from epcore.slots.readings import IdleConnections, SlotReadings, split_readings
from epcore.slots.resource_attrs import CustomResources, resource_limits_text
from epcore.slots.slot_status import INITIAL_STATUS, Benchmarks, SlotStatus
from epcore.types import HostReadings, MachineAttribute, MachineInventory

#: Platform attributes and the configuration macros HTCondor fills them from.
_PLATFORM: tuple[tuple[str, str, bool], ...] = (
    ("Arch", "ARCH", False),
    ("OpSys", "OPSYS", False),
    ("OpSysAndVer", "OPSYSANDVER", False),
    ("OpSysName", "OPSYSNAME", False),
    ("OpSysMajorVer", "OPSYSMAJORVER", True),
    ("OpSysLongName", "OPSYSLONGNAME", False),
    ("OpSysShortName", "OPSYSSHORTNAME", False),
    ("OpSysVer", "OPSYSVER", True),
    ("OpSysLegacy", "OPSYSLEGACY", False),
)

#: States in which a slot advertises Requirements = False (seed 000: Matched "lies about its
#: START expression", Preempting "is not available for further matches"; a Drained slot takes
#: no jobs until draining is cancelled).
_UNAVAILABLE_STATES = frozenset({"Matched", "Preempting", "Drained"})

_SECONDS_PER_DAY = 86400
#: 1970-01-01 was a Thursday; ClockDay counts from Sunday.
_EPOCH_WEEKDAY = 4


def _count(amount: float) -> int | float:
    """A resource amount as HTCondor advertises it: an integer unless it has a fraction."""
    return int(amount) if float(amount).is_integer() else float(amount)


def _knob_used(config: Config, name: str, slot_id: int, type_id: int) -> str:
    """Which of SLOT<N>_NAME, SLOT_TYPE_<T>_NAME, NAME gave a slot its value (for errors)."""
    candidates = [f"SLOT{slot_id}_{name}"]
    if type_id:
        candidates.append(f"SLOT_TYPE_{type_id}_{name}")
    for candidate in candidates:
        if config.get(candidate) is not None:
            return candidate
    return name


@attrs.frozen
class _SlotConfig:
    """What the configuration says about one slot number and type (shared by its d-slots)."""

    start: Expr
    rank: Expr
    retirement: Expr
    weight: Expr
    consumption: tuple[tuple[str, Expr], ...]
    limits: Expr | None
    attributes: tuple[ConfigAttribute, ...]


class _Builder:
    """Holds what every slot's ad shares, and builds the ads one slot at a time."""

    def __init__(
        self,
        config: Config,
        inventory: MachineInventory,
        layout: SlotLayout,
        now: float,
        host_name: str,
    ) -> None:
        self.config = config
        self.inventory = inventory
        self.layout = layout
        self.now = now
        self.host_name = host_name
        self.cache = ExprCache()
        self.custom = CustomResources.of(inventory, layout, self.cache)
        self._slot_configs: dict[tuple[int, int, bool], _SlotConfig] = {}
        self._templates: dict[tuple[int, int, str, str], ClassAd] = {}

    # -- configuration ------------------------------------------------------------------------

    def _parse(self, knob: str, text: str) -> Expr:
        try:
            return self.cache.parse(text)
        except ClassAdSyntaxError as error:
            origin = self.config.origin(knob)
            raise SlotConfigError(
                f"{knob} = {text} is not a ClassAd expression: {error}",
                origin.source if origin else None,
                origin.line if origin else None,
            ) from error

    def _expression(self, name: str, slot: Slot, default: str) -> Expr:
        text = self.config.slot_get(name, slot.slot_id, slot.type_id or None)
        if text is None:
            return self._parse(name, default)
        return self._parse(_knob_used(self.config, name, slot.slot_id, slot.type_id), text)

    def slot_config(self, slot: Slot) -> _SlotConfig:
        """The configured expressions of ``slot`` (computed once per number, type and kind)."""
        key = (slot.slot_id, slot.type_id, slot.kind == "static")
        found = self._slot_configs.get(key)
        if found is not None:
            return found
        # SLOT_WEIGHT and the consumption policy are read per slot type, as the carving code
        # (epcore.slots.consumption) reads them, so that ads and carving agree.
        has_cp = slot.kind != "static" and consumption_policy(self.config, slot.type_id)
        consumption: list[tuple[str, Expr]] = []
        if has_cp:
            resources = ["Cpus", "Memory", "Disk", "Swap", *self.custom.names]
            expressions = consumption_expressions(self.config, slot.type_id, resources)
            for resource, (knob, text) in expressions.items():
                consumption.append((f"Consumption{resource}", self._parse(knob, text)))
        limits = None
        if slot.kind != "static":
            limits = self.cache.parse(resource_limits_text(self.custom.names, has_cp))
        weight_knob, weight_text = slot_weight_expression(self.config, slot.type_id or None)
        found = _SlotConfig(
            start=self._expression("START", slot, "True"),
            rank=self._expression("RANK", slot, "0.0"),
            retirement=self._expression("MAXJOBRETIREMENTTIME", slot, "0"),
            weight=self._parse(weight_knob, weight_text),
            consumption=tuple(consumption),
            limits=limits,
            attributes=tuple(startd_attrs(self.config, slot.slot_id, slot.type_id, self.cache)),
        )
        self._slot_configs[key] = found
        return found

    # -- the shared part ----------------------------------------------------------------------

    def machine_ad(
        self,
        readings: HostReadings,
        address: str,
        benchmarks: Benchmarks,
        utc_offset: int,
        extra_attributes: Sequence[MachineAttribute],
    ) -> ClassAd:
        """The attributes every slot ad starts from."""
        config, inventory = self.config, self.inventory
        ad = ClassAd()
        ad["MyType"] = "Machine"
        ad["TargetType"] = "Job"
        ad["Machine"] = self.host_name
        ad["TotalSlots"] = len(self.layout.slots)
        ad["MyCurrentTime"] = int(self.now)
        for attribute, macro, numeric in _PLATFORM:
            text = config.get(macro)
            if text is None:
                continue
            if numeric:
                try:
                    ad[attribute] = int(text)
                except ValueError:
                    continue
            else:
                ad[attribute] = text
        for attribute, macro in (
            ("UidDomain", "UID_DOMAIN"),
            ("FileSystemDomain", "FILESYSTEM_DOMAIN"),
        ):
            ad[attribute] = config.get(macro) or self.host_name
        ad["StartdIpAddr"] = address
        ad["MyAddress"] = address
        ad["TotalCpus"] = inventory.cpus
        ad["TotalMemory"] = inventory.memory_mb
        ad["TotalDisk"] = inventory.disk_kb
        ad["TotalVirtualMemory"] = inventory.swap_kb
        ad["DetectedCpus"] = inventory.detected_cpus
        ad["DetectedMemory"] = inventory.detected_memory_mb
        ad["MachineResources"] = " ".join(["Cpus", "Memory", "Disk", "Swap", *self.custom.names])
        self.custom.publish_machine(ad)
        ad["TotalLoadAvg"] = float(readings.load_avg)
        ad["TotalCondorLoadAvg"] = float(readings.condor_load_avg)
        ad["CpuBusyTime"] = int(readings.cpu_busy_time)
        ad["CpuIsBusy"] = bool(readings.cpu_is_busy)
        local = int(self.now) + utc_offset
        ad["ClockMin"] = local % _SECONDS_PER_DAY // 60
        ad["ClockDay"] = (local // _SECONDS_PER_DAY + _EPOCH_WEEKDAY) % 7
        ad["LastBenchmark"] = int(benchmarks.last_run)
        if benchmarks.mips is not None:
            ad["Mips"] = int(benchmarks.mips)
        if benchmarks.kflops is not None:
            ad["KFlops"] = int(benchmarks.kflops)
        for extra in extra_attributes:
            ad[extra.name] = self._plugin_value(extra)
        return ad

    def _plugin_value(self, extra: MachineAttribute) -> object:
        if not extra.expression:
            try:
                ClassAd()[extra.name] = extra.value
            except (TypeError, ValueError) as error:
                raise PluginError(f"machine attribute {extra.name}: {error}") from error
            return extra.value
        try:
            return self.cache.parse(str(extra.value))
        except ClassAdSyntaxError as error:
            raise PluginError(
                f"machine attribute {extra.name} = {extra.value} is not a ClassAd expression: "
                f"{error}"
            ) from error

    # -- one slot -----------------------------------------------------------------------------

    def _template(self, base: ClassAd, slot: Slot) -> ClassAd:
        """``base`` plus what the configuration gives ``slot``: shared by every slot of the
        same number, type, kind and execute directory (all the dynamic slots of a parent)."""
        key = (slot.slot_id, slot.type_id, slot.kind, slot.execute)
        found = self._templates.get(key)
        if found is not None:
            return found
        configured = self.slot_config(slot)
        ad = base.copy()
        ad["SlotID"] = slot.slot_id
        ad["SlotTypeId"] = slot.type_id
        if slot.kind == "partitionable":
            ad["SlotType"] = "Partitionable"
            ad["PartitionableSlot"] = True
        elif slot.kind == "dynamic":
            ad["SlotType"] = "Dynamic"
            ad["DynamicSlot"] = True
        else:
            ad["SlotType"] = "Static"
        ad["Start"] = configured.start
        ad["Rank"] = configured.rank
        ad["MaxJobRetirementTime"] = configured.retirement
        ad["SlotWeight"] = configured.weight
        for name, expr in configured.consumption:
            ad[name] = expr
        if slot.execute in self.inventory.disk_by_path:
            ad["TotalDisk"] = self.inventory.disk_by_path[slot.execute]
        for entry in configured.attributes:
            if entry.expr is not None:
                ad[entry.name] = entry.expr
        self._templates[key] = ad
        return ad

    def slot_ad(
        self, base: ClassAd, slot: Slot, status: SlotStatus, share: SlotReadings, since: float
    ) -> ClassAd:
        """The ad of ``slot`` without cross-slot attributes and Requirements."""
        ad = self._template(base, slot).copy()
        ad["Name"] = slot.name(self.host_name)
        self._resources(ad, slot.resources, slot.total)
        self.custom.publish_slot(ad, slot)
        ad["State"] = status.state
        ad["Activity"] = status.activity
        ad["EnteredCurrentState"] = int(
            since if status.entered_state is None else status.entered_state
        )
        ad["EnteredCurrentActivity"] = int(
            since if status.entered_activity is None else status.entered_activity
        )
        ad["CurrentRank"] = float(status.current_rank)
        ad["LoadAvg"] = float(share.load_avg)
        ad["CondorLoadAvg"] = float(share.condor_load_avg)
        ad["KeyboardIdle"] = share.keyboard_idle
        ad["ConsoleIdle"] = share.console_idle
        _publish_claim(ad, status)
        return ad

    @staticmethod
    def _resources(ad: ClassAd, offered: SlotResources, given: SlotResources) -> None:
        ad["Cpus"] = _count(offered.cpus)
        ad["Memory"] = offered.memory_mb
        ad["Disk"] = offered.disk_kb
        ad["VirtualMemory"] = offered.swap_kb
        ad["TotalSlotCpus"] = _count(given.cpus)
        ad["TotalSlotMemory"] = given.memory_mb
        ad["TotalSlotDisk"] = given.disk_kb

    def requirements(self, ad: ClassAd, slot: Slot, status: SlotStatus) -> None:
        """Set WithinResourceLimits and Requirements, START being evaluated on ``ad``."""
        limits = self.slot_config(slot).limits
        if limits is not None:
            ad["WithinResourceLimits"] = limits
        if status.state in _UNAVAILABLE_STATES or not status.accepting:
            ad["Requirements"] = False
            return
        locally_true = ad.evaluate("Start", context=EvalContext(now=self.now)) is True
        if limits is None:
            ad["Requirements"] = True if locally_true else _START
        else:
            ad["Requirements"] = _LIMITS if locally_true else _START_AND_LIMITS


_START = ExprCache().parse("START")
_LIMITS = ExprCache().parse("WithinResourceLimits")
_START_AND_LIMITS = ExprCache().parse("START && (WithinResourceLimits)")


def _publish_claim(ad: ClassAd, status: SlotStatus) -> None:
    claim, job, preempting = status.claim, status.job, status.preempting
    if claim is not None and status.state in ("Claimed", "Preempting"):
        ad["ClientMachine"] = claim.client_machine
        ad["RemoteOwner"] = claim.remote_owner
        ad["RemoteUser"] = claim.remote_user
        ad["TotalClaimRunTime"] = int(claim.total_run_time)
        ad["TotalClaimSuspendTime"] = int(claim.total_suspend_time)
    if preempting is not None:
        ad["PreemptingOwner"] = preempting.owner
        ad["PreemptingUser"] = preempting.user
        ad["PreemptingRank"] = float(preempting.rank)
    if job is not None:
        ad["JobId"] = job.job_id
        ad["JobStart"] = int(job.started_at)
        ad["TotalJobRunTime"] = int(job.total_run_time)
        ad["TotalJobSuspendTime"] = int(job.total_suspend_time)


def _status_of(statuses: Mapping[str, SlotStatus], slot: Slot, host_name: str) -> SlotStatus:
    found = statuses.get(slot.name(host_name))
    if found is None:
        found = statuses.get(slot_prefix(slot))
    return INITIAL_STATUS if found is None else found


def _cross_slot(config: Config, slots: Sequence[Slot], ads: Sequence[ClassAd], now: float) -> None:
    """Copy every STARTD_SLOT_ATTRS attribute of every slot into every slot's ad."""
    names = slot_attr_names(config)
    if not names:
        return
    as_values = config.get_bool("STARTD_EVAL_SLOT_ATTRS", False)
    copies: dict[str, object] = {}
    for slot, ad in zip(slots, ads, strict=True):
        for name in names:
            expr = ad.lookup(name)
            if expr is None:
                continue
            target = f"{slot_prefix(slot)}_{name}"
            if not as_values:
                copies[target] = expr
                continue
            value = ad.evaluate(name, context=EvalContext(now=now))
            if value is not ERROR and value is not UNDEFINED:
                copies[target] = value
    for ad in ads:
        for target, copy in copies.items():
            ad[target] = copy


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
    utc_offset: int = 0,
) -> list[ClassAd]:
    """One ad per slot of ``layout``, in layout order.

    ``statuses`` maps a slot's name (``slot1@host`` or just ``slot1``, ``slot1_2``) to what
    the policy engine says about it; a slot it does not name is in its initial Owner/Idle
    state, entered at ``started_at``. ``started_at`` is when the startd started (default:
    ``now``); ``address`` the startd's address (default ``<IP_ADDRESS:0>``); ``benchmarks``
    the benchmark results (default: none yet); ``utc_offset`` the local time zone's offset
    in seconds, for ClockMin and ClockDay. ``extra_attributes`` are the plugins' machine
    attributes.

    Raises SlotConfigError when START, RANK, MAXJOBRETIREMENTTIME, SLOT_WEIGHT or a
    CONSUMPTION_<res> expression does not parse (naming the knob), and PluginError when a
    plugin attribute is not a ClassAd value. A STARTD_ATTRS value that does not parse is left
    out, as HTCondor does; :func:`slot_ad_problems` reports it.
    """
    since = now if started_at is None else started_at
    if address is None:
        address = f"<{config.get('IP_ADDRESS') or '127.0.0.1'}:0>"
    builder = _Builder(config, inventory, layout, now, host_name)
    base = builder.machine_ad(
        readings, address, benchmarks or Benchmarks(), utc_offset, extra_attributes
    )
    slots = layout.slots
    pairs = [(slot, _status_of(statuses, slot, host_name)) for slot in slots]
    connections = IdleConnections(
        console_slots=config.get_int("SLOTS_CONNECTED_TO_CONSOLE", 0),
        keyboard_slots=config.get_int("SLOTS_CONNECTED_TO_KEYBOARD", 0),
        disconnected_boost=config.get_int("DISCONNECTED_KEYBOARD_IDLE_BOOST", 1200),
    )
    shares = split_readings(pairs, readings, connections, uptime=int(now - since))
    ads = [
        builder.slot_ad(base, slot, status, share, since)
        for (slot, status), share in zip(pairs, shares, strict=True)
    ]
    _cross_slot(config, slots, ads, now)
    for ad, (slot, status) in zip(ads, pairs, strict=True):
        builder.requirements(ad, slot, status)
    return ads


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
