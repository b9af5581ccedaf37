"""The layers a slot ad is made of, each computed as plain values (no ClassAd is built here).

:mod:`epcore.slots.ads` assembles a slot's ad from these layers in this order, later layers
winning:

1. :meth:`LayerMaker.policy`: the policy expressions the engine evaluates (SUSPEND,
   PREEMPT...), under everything else, so that anything of the same name replaces them;
2. :meth:`LayerMaker.machine`: what every slot shares (platform, domains, address, totals,
   machine load, clock, benchmarks, draining totals) and the attributes plugins add;
3. :meth:`LayerMaker.configured`: the slot's configured attributes (SlotID, SlotType, Start,
   Rank, SlotWeight, consumption policy, then the STARTD_ATTRS entries, which may replace
   anything above, as in HTCondor); the same for every slot of one number, type, kind and
   execute directory (all the dynamic slots of a parent);
4. :meth:`LayerMaker.status`: the slot's Name, resources, state, load, claim and job, which
   change only when the slot does;
5. :meth:`LayerMaker.clock`: what moves with the clock (idle times, the time in the current
   State and Activity, run and suspension times).

The ads builder adds two layers of its own: the STARTD_CRON outputs between layers 3 and 4 (so
layers 4 and 5 replace them), and last the other slots' STARTD_SLOT_ATTRS copies
(``slot<N>_<attr>``), whose names no other layer uses.

Keeping the layers apart is what lets the ads builder update a slot's ad in place: it compares
each layer with the one it used last time and sets only the attributes that changed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import attrs

from epcore.classad import ClassAd, ClassAdSyntaxError, Expr
from epcore.config import Config
from epcore.errors import PluginError, SlotConfigError
from epcore.slots.broken import held_total
from epcore.slots.config_attrs import ConfigAttribute, ExprCache, startd_attrs
from epcore.slots.consumption import (
    consumption_expressions,
    consumption_policy,
    slot_weight_expression,
)
from epcore.slots.model import Slot, SlotLayout, SlotResources
from epcore.slots.readings import SlotReadings
from epcore.slots.resource_attrs import CustomResources, resource_limits_text
from epcore.slots.slot_status import Benchmarks, DrainingTotals, SlotStatus
from epcore.types import HostReadings, MachineAttribute, MachineInventory

#: Extra configured attributes of a slot (the policy engine's SUSPEND, PREEMPT...), by slot.
SlotAttributes = Callable[[Slot], Sequence[tuple[str, Expr]]]

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

#: States in which a slot publishes its claim.
#: The HTCondor version and platform a slot ad names (epcore.net.policy's VERSION, which a
#: test holds them to; the pure core cannot import the network layer).
CONDOR_VERSION = "$CondorVersion: 25.0.0 2025-01-01 BuildID: epcore $"
CONDOR_PLATFORM = "$CondorPlatform: epcore $"
_CLAIMED_STATES = frozenset({"Claimed", "Preempting"})

_SECONDS_PER_DAY = 86400
#: 1970-01-01 was a Thursday; ClockDay counts from Sunday.
_EPOCH_WEEKDAY = 4


#: One attribute in a layer: its spelling, its value and the value's type. With the type in
#: the tuple, comparing two entries compares ClassAd values: ``True`` is not ``1``, nor ``1.0``.
Entry = tuple[str, object, type]


class Layer:
    """One layer of a slot ad: attribute values by lower-case name, the spelling kept.

    Values are what a ClassAd accepts (Python scalars, lists, an :class:`Expr`).
    """

    __slots__ = ("values",)

    def __init__(self) -> None:
        self.values: dict[str, Entry] = {}

    def __setitem__(self, name: str, value: object) -> None:
        # Interned: every slot's layers hold the same names, rebuilt at every change; one
        # string per name rather than one per slot and layer.
        self.values[sys.intern(name.lower())] = (name, value, type(value))


def changed_names(old: dict[str, Entry], new: dict[str, Entry]) -> set[str]:
    """The lower-case names whose values differ between two layers (added, changed, gone)."""
    before = old.get
    changed = {key for key, entry in new.items() if before(key) != entry}
    if changed or len(old) != len(new):
        changed.update(old.keys() - new.keys())
    return changed


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
class SlotConfig:
    """What the configuration says about one slot number and type (shared by its d-slots)."""

    start: Expr
    rank: Expr
    retirement: Expr
    weight: Expr
    consumption: tuple[tuple[str, Expr], ...]
    limits: Expr | None
    attributes: tuple[ConfigAttribute, ...]


class LayerMaker:
    """Computes the layers of one startd's slot ads; caches what depends on configuration only.

    ``policy_attributes`` gives a slot the expressions the policy engine evaluates against its
    ad (SUSPEND, PREEMPT...), as the startd's own ad carries them.
    """

    def __init__(
        self,
        config: Config,
        inventory: MachineInventory,
        host_name: str,
        policy_attributes: SlotAttributes | None = None,
    ) -> None:
        self.config = config
        self.inventory = inventory
        self.host_name = host_name
        self.policy_attributes = policy_attributes
        self.cache = ExprCache()
        self.custom = CustomResources.of(inventory, SlotLayout(()), self.cache)
        self._slot_configs: dict[tuple[int, int, bool], SlotConfig] = {}
        self._configured: dict[tuple[int, int, str, str], Layer] = {}
        self._policy: dict[tuple[int, int, str, str], Layer] = {}

    def use_layout(self, layout: SlotLayout) -> bool:
        """Take the custom resources ``layout`` mentions; True when they changed (every
        configured layer is then recomputed)."""
        custom = CustomResources.of(self.inventory, layout, self.cache)
        if custom == self.custom:
            return False
        self.custom = custom
        self._slot_configs.clear()
        self._configured.clear()
        self._policy.clear()
        return True

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

    def slot_config(self, slot: Slot) -> SlotConfig:
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
        found = SlotConfig(
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

    # -- layer 2: the machine -----------------------------------------------------------------

    def machine(
        self,
        layout: SlotLayout,
        readings: HostReadings,
        now: float,
        address: str,
        benchmarks: Benchmarks,
        draining: DrainingTotals,
        utc_offset: int,
        extra_attributes: Sequence[MachineAttribute],
    ) -> Layer:
        """The attributes every slot ad starts from."""
        config, inventory = self.config, self.inventory
        ad = Layer()
        ad["MyType"] = "Machine"
        ad["TargetType"] = "Job"
        ad["Machine"] = self.host_name
        ad["TotalSlots"] = len(layout.slots)
        ad["MyCurrentTime"] = int(now)
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
        # Jobs that ask for file transfer (docker jobs, should_transfer_files = YES) match:
        # a container job's files travel between its Iwd and its sandbox, and any other job
        # runs where its Iwd is.
        ad["HasFileTransfer"] = True
        # Jobs htcondor2 submits split the slot's CondorVersion in their Requirements; without
        # one they match nothing (the version is the one epcore's CEDAR face speaks as).
        ad["CondorVersion"] = CONDOR_VERSION
        ad["CondorPlatform"] = CONDOR_PLATFORM
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
        local = int(now) + utc_offset
        ad["ClockMin"] = local % _SECONDS_PER_DAY // 60
        ad["ClockDay"] = (local // _SECONDS_PER_DAY + _EPOCH_WEEKDAY) % 7
        ad["LastBenchmark"] = int(benchmarks.last_run)
        if benchmarks.mips is not None:
            ad["Mips"] = int(benchmarks.mips)
        if benchmarks.kflops is not None:
            ad["KFlops"] = int(benchmarks.kflops)
        ad["TotalMachineDrainingUnclaimedTime"] = int(draining.unclaimed_time)
        ad["TotalMachineDrainingBadput"] = int(draining.badput)
        ad["Draining"] = draining.draining
        if draining.reason is not None:
            ad["DrainReason"] = draining.reason
        ad["ExpectedMachineGracefulDrainingCompletion"] = int(draining.graceful_completion)
        ad["ExpectedMachineGracefulDrainingBadput"] = int(draining.graceful_badput)
        ad["ExpectedMachineQuickDrainingCompletion"] = int(draining.quick_completion)
        ad["ExpectedMachineQuickDrainingBadput"] = int(draining.quick_badput)
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

    # -- layer 3: the slot's configuration ----------------------------------------------------

    @staticmethod
    def configured_key(slot: Slot) -> tuple[int, int, str, str]:
        """Slots with the same key share their configured layer."""
        return (slot.slot_id, slot.type_id, slot.kind, slot.execute)

    def configured(self, slot: Slot) -> Layer:
        """What the configuration gives ``slot`` (computed once per :meth:`configured_key`)."""
        key = self.configured_key(slot)
        found = self._configured.get(key)
        if found is not None:
            return found
        configured = self.slot_config(slot)
        ad = Layer()
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
        if configured.limits is not None:
            ad["WithinResourceLimits"] = configured.limits
        self._configured[key] = ad
        return ad

    # -- layer 1: the policy expressions -----------------------------------------------------

    def policy(self, slot: Slot) -> Layer:
        """The policy expressions of ``slot`` (``policy_attributes``): the layer under all the
        others, so that an attribute of the same name from anywhere else wins (a machine
        attribute ``Preempt`` that ``PREEMPT = Preempt =?= True`` refers to, say)."""
        key = self.configured_key(slot)
        found = self._policy.get(key)
        if found is None:
            found = Layer()
            if self.policy_attributes is not None:
                for name, expr in self.policy_attributes(slot):
                    found[name] = expr
            self._policy[key] = found
        return found

    # -- layer 4: the slot's own state ----------------------------------------------------------

    def status(self, slot: Slot, status: SlotStatus, share: SlotReadings, since: float) -> Layer:
        """The slot's name, resources, state, load, claim and job: what changes only when the
        slot changes (the same ``status`` record gives the same layer)."""
        ad = Layer()
        ad["Name"] = slot.name(self.host_name)
        _resources(ad, slot.resources, slot.total)
        self.custom.publish_slot(ad, slot)
        if slot.broken is not None or slot.held:
            _broken(ad, slot)
        ad["State"] = status.state
        ad["Activity"] = status.activity
        entered_state = since if status.entered_state is None else status.entered_state
        entered_activity = since if status.entered_activity is None else status.entered_activity
        ad["EnteredCurrentState"] = int(entered_state)
        ad["EnteredCurrentActivity"] = int(entered_activity)
        ad["CurrentRank"] = float(status.current_rank)
        ad["LoadAvg"] = float(share.load_avg)
        ad["CondorLoadAvg"] = float(share.condor_load_avg)
        for key, seconds in status.time_totals:
            if int(seconds):
                ad[f"TotalTime{key}"] = int(seconds)
        _publish_claim(ad, status)
        return ad

    # -- layer 5: the clock -------------------------------------------------------------------

    def clock(
        self,
        status: SlotStatus,
        share: SlotReadings,
        since: float,
        now: float,
        into: dict[str, Entry] | None = None,
    ) -> tuple[dict[str, Entry], list[str]]:
        """What moves with the clock: idle times, the time in the current State and Activity,
        the running job's and the claim's run and suspension times.

        Returns the layer's values and the names that changed. With ``into`` (the values
        computed for the same ``status`` at an earlier time) the values are updated in place
        and only the changed entries are replaced: this runs for every slot at every polling
        interval, and a daemon's memory should not churn for values that stay put.
        """
        values: dict[str, Entry] = {} if into is None else into
        changed: list[str] = []
        _put(values, changed, "keyboardidle", "KeyboardIdle", share.keyboard_idle)
        _put(values, changed, "consoleidle", "ConsoleIdle", share.console_idle)
        current = status.state + status.activity
        entered = since if status.entered_activity is None else status.entered_activity
        spent = max(now - entered, 0.0)
        for key, seconds in status.time_totals:
            if key == current:
                spent += seconds
        if int(spent):
            name = f"TotalTime{current}"
            _put(values, changed, name.lower(), name, int(spent))
        job, claim = status.job, status.claim
        run = suspended = 0.0
        if job is not None:
            run, suspended = job.run_time_at(now), job.suspended_at(now)
            _put(values, changed, "totaljobruntime", "TotalJobRunTime", int(run))
            _put(values, changed, "totaljobsuspendtime", "TotalJobSuspendTime", int(suspended))
        if claim is not None and status.state in _CLAIMED_STATES:
            claim_run = int(claim.run_time + run)
            claim_suspended = int(claim.suspend_time + suspended)
            _put(values, changed, "totalclaimruntime", "TotalClaimRunTime", claim_run)
            _put(values, changed, "totalclaimsuspendtime", "TotalClaimSuspendTime", claim_suspended)
        return values, changed


def _put(values: dict[str, Entry], changed: list[str], key: str, name: str, value: int) -> None:
    """Set an integer entry unless it already holds ``value``, noting the change."""
    old = values.get(key)
    if old is None or old[1] != value:
        values[key] = (name, value, int)
        changed.append(key)


def _resources(ad: Layer, offered: SlotResources, given: SlotResources) -> None:
    ad["Cpus"] = _count(offered.cpus)
    ad["Memory"] = offered.memory_mb
    ad["Disk"] = offered.disk_kb
    ad["VirtualMemory"] = offered.swap_kb
    ad["TotalSlotCpus"] = _count(given.cpus)
    ad["TotalSlotMemory"] = given.memory_mb
    ad["TotalSlotDisk"] = given.disk_kb


def _broken(ad: Layer, slot: Slot) -> None:
    """A broken slot offers no Cpus nor Memory (HTCondor's publish_static); a partitionable
    slot says what it holds for its broken dynamic slots, which its totals no longer count."""
    if slot.broken is not None:
        ad["SlotBrokenCode"] = slot.broken.code
        ad["SlotBrokenReason"] = slot.broken.reason
        ad["Cpus"] = 0
        ad["Memory"] = 0
    if slot.held:
        held = held_total(slot)
        ad["BrokenSlotCpus"] = _count(held.cpus)
        ad["BrokenSlotMemory"] = held.memory_mb
        ad["BrokenSlotDisk"] = held.disk_kb
        ad["TotalSlotCpus"] = _count(max(0.0, slot.total.cpus - held.cpus))
        ad["TotalSlotMemory"] = max(0, slot.total.memory_mb - held.memory_mb)
        ad["TotalSlotDisk"] = max(0, slot.total.disk_kb - held.disk_kb)


def _publish_claim(ad: Layer, status: SlotStatus) -> None:
    claim, job, preempting = status.claim, status.job, status.preempting
    if claim is not None and status.state in _CLAIMED_STATES:
        if claim.client_machine:
            ad["ClientMachine"] = claim.client_machine
        ad["RemoteOwner"] = claim.remote_owner
        ad["RemoteUser"] = claim.remote_user
        if claim.accounting_group:
            ad["AccountingGroup"] = claim.accounting_group
        if claim.concurrency_limits:
            ad["ConcurrencyLimits"] = claim.concurrency_limits
    if preempting is not None:
        ad["PreemptingOwner"] = preempting.owner
        ad["PreemptingUser"] = preempting.user
        ad["PreemptingRank"] = float(preempting.rank)
    if job is not None:
        ad["JobId"] = job.job_id
        ad["JobStart"] = int(job.started_at)
