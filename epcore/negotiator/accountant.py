"""User priorities: the accountant's records of usage, RUP, EUP, factors, floors and ceilings.

RUP follows seed 004: ``rup(t) = b * rup(t - dt) + (1 - b) * usage`` with
``b = 0.5 ** (dt / PRIORITY_HALFLIFE)``, where usage is what the submitter held during the
interval (its recorded weighted usage, as HTCondor's accountant ages priorities before it
recounts the claimed slots); RUP starts at and never falls below 0.5. EUP is RUP times the
priority factor; lower is better.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import attrs

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import PoolError
from epcore.negotiator.group_policy import GroupPolicy

MINIMUM_RUP = 0.5


@attrs.frozen
class AccountantPolicy:
    """The knobs the accountant reads, read once."""

    halflife: float
    default_factor: float
    nice_factor: float
    remote_factor: float
    local_domain: str | None
    use_slot_weights: bool
    uid_domain: str
    #: The accounting groups (GROUP_NAMES, parents first): each gets a record of its own,
    #: charged with its members' usage (not its subgroups'), as HTCondor's accountant keeps.
    groups: GroupPolicy = attrs.field(factory=GroupPolicy)

    @classmethod
    def from_config(cls, config: Config) -> AccountantPolicy:
        """The accountant's knobs from ``config``."""
        halflife = config.get_float("PRIORITY_HALFLIFE", 86400.0)
        if halflife <= 0:
            raise PoolError(f"PRIORITY_HALFLIFE must be a positive number of seconds: {halflife}")
        return cls(
            halflife=halflife,
            default_factor=config.get_float("DEFAULT_PRIO_FACTOR", 1000.0),
            nice_factor=config.get_float("NICE_USER_PRIO_FACTOR", 1e10),
            remote_factor=config.get_float("REMOTE_PRIO_FACTOR", 1e7),
            local_domain=config.get("ACCOUNTANT_LOCAL_DOMAIN"),
            use_slot_weights=config.get_bool("NEGOTIATOR_USE_SLOT_WEIGHTS", True),
            uid_domain=config.get("UID_DOMAIN") or "",
            groups=GroupPolicy.from_config(config),
        )

    def initial_factor(self, name: str) -> float:
        """The factor of a submitter seen for the first time."""
        if name.lower().startswith("nice-user."):
            return self.nice_factor
        if self.groups.enabled and "@" in name:
            spec = self.groups.spec(self.groups.group_of(name))
            if spec is not None and spec.prio_factor is not None:
                return spec.prio_factor
        domain = name.rpartition("@")[2] if "@" in name else ""
        if self.local_domain and domain.lower() != self.local_domain.lower():
            return self.remote_factor
        return self.default_factor


@attrs.frozen
class SubmitterRecord:
    """What the accountant knows of one accounting principal; ``floor`` and ``ceiling`` are
    None when not set."""

    name: str
    factor: float
    rup: float = MINIMUM_RUP
    floor: float | None = None
    ceiling: float | None = None
    resources_used: int = 0
    weighted_resources_used: float = 0.0
    accumulated_usage: float = 0.0
    weighted_accumulated_usage: float = 0.0
    begin_usage_time: float = 0.0
    last_usage_time: float = 0.0

    @property
    def eup(self) -> float:
        """Effective user priority: RUP times the factor."""
        return self.rup * self.factor


@attrs.frozen
class SlotUsage:
    """What one principal holds according to the claimed slot ads."""

    slots: int = 0
    weight: float = 0.0


def usage_principal(slot: ClassAd, uid_domain: str) -> str | None:
    """The accounting principal a claimed slot's running job is charged to, or None.

    The job's AccountingGroup (as the slot ad carries it) wins over RemoteUser; a group name
    without a domain gets the slot's UidDomain, else ``uid_domain``.
    """
    if slot.evaluate("State") != "Claimed":
        return None
    group = slot.evaluate("AccountingGroup")
    if isinstance(group, str) and group:
        if "@" in group:
            return group
        domain = slot.evaluate("UidDomain")
        return f"{group}@{domain if isinstance(domain, str) else uid_domain}"
    user = slot.evaluate("RemoteUser")
    return user if isinstance(user, str) and user else None


def slot_weight_of(slot: ClassAd, use_weights: bool) -> float:
    """A slot's SlotWeight when weights are in use and it is a number, else 1."""
    if not use_weights:
        return 1.0
    weight = slot.evaluate("SlotWeight")
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        return 1.0
    return float(weight)


def count_usage(
    slots: Iterable[ClassAd], use_weights: bool, uid_domain: str
) -> dict[str, SlotUsage]:
    """Slots and weight held per principal in ``slots``."""
    found: dict[str, SlotUsage] = {}
    for slot in slots:
        principal = usage_principal(slot, uid_domain)
        if principal is None:
            continue
        old = found.get(principal, SlotUsage())
        found[principal] = SlotUsage(old.slots + 1, old.weight + slot_weight_of(slot, use_weights))
    return found


@attrs.frozen
class Accountant:
    """One :class:`SubmitterRecord` per principal, and when priorities were last aged."""

    policy: AccountantPolicy
    records: Mapping[str, SubmitterRecord] = attrs.field(factory=dict)
    last_update: float | None = None

    @classmethod
    def empty(cls, config: Config) -> Accountant:
        """An accountant that knows no one."""
        return cls(AccountantPolicy.from_config(config))

    # -- reading -------------------------------------------------------------------------------
    def record(self, name: str) -> SubmitterRecord:
        """``name``'s record, or the one a new submitter of that name would get."""
        found = self.records.get(name)
        if found is not None:
            return found
        return SubmitterRecord(name=name, factor=self.policy.initial_factor(name))

    def group_of(self, name: str) -> str:
        """The accounting group a record belongs to: a group's record is its own group, a
        submitter's is the group its name gives (``<none>`` without one)."""
        groups = self.policy.groups
        if "@" not in name:
            spec = groups.spec(name)
            if spec is not None:
                return spec.name
        return groups.group_of(name)

    def eup(self, name: str) -> float:
        """``name``'s effective user priority (lower is better)."""
        return self.record(name).eup

    # -- administration (condor_userprio) ------------------------------------------------------
    def _put(self, record: SubmitterRecord) -> Accountant:
        return attrs.evolve(self, records={**self.records, record.name: record})

    def with_submitters(self, names: Iterable[str]) -> Accountant:
        """This accountant with a record for each of ``names`` it did not know."""
        missing = [name for name in names if name not in self.records]
        if not missing:
            return self
        records = dict(self.records)
        for name in missing:
            records[name] = self.record(name)
        return attrs.evolve(self, records=records)

    def set_factor(self, name: str, factor: float, now: float) -> Accountant:
        """``name`` with priority factor ``factor`` (which must be positive)."""
        del now  # kept for the daemon's uniform call; a factor change has no time component
        if not factor > 0:
            raise PoolError(f"priority factor of {name} must be a positive number, not {factor}")
        return self._put(attrs.evolve(self.record(name), factor=float(factor)))

    def set_priority(self, name: str, rup: float, now: float) -> Accountant:
        """``name`` with real user priority ``rup`` (at least 0.5)."""
        del now
        if not math.isfinite(rup):
            raise PoolError(f"priority of {name} must be a finite number, not {rup}")
        return self._put(attrs.evolve(self.record(name), rup=max(float(rup), MINIMUM_RUP)))

    def set_ceiling(self, name: str, ceiling: float | None, now: float) -> Accountant:
        """``name`` capped at ``ceiling`` slot weight per cycle (None: no ceiling)."""
        del now
        if ceiling is not None and not ceiling >= 0:
            raise PoolError(f"ceiling of {name} must be at least 0, not {ceiling}")
        return self._put(attrs.evolve(self.record(name), ceiling=ceiling))

    def set_floor(self, name: str, floor: float | None, now: float) -> Accountant:
        """``name`` guaranteed ``floor`` slot weight first in each cycle (None: no floor)."""
        del now
        if floor is not None and not floor >= 0:
            raise PoolError(f"floor of {name} must be at least 0, not {floor}")
        return self._put(attrs.evolve(self.record(name), floor=floor))

    def set_accumulated_usage(self, name: str, usage: float, now: float) -> Accountant:
        """``name`` with ``usage`` accumulated (condor_userprio -setaccum)."""
        del now
        if not (math.isfinite(usage) and usage >= 0):
            raise PoolError(f"accumulated usage of {name} must be at least 0, not {usage}")
        return self._put(attrs.evolve(self.record(name), accumulated_usage=float(usage)))

    def set_usage_time(self, name: str, which: str, when: float, now: float) -> Accountant:
        """``name``'s ``which`` ("begin" or "last") usage time set to ``when`` (a Unix time;
        condor_userprio -setbegin and -setlast)."""
        del now
        if not (math.isfinite(when) and when >= 0):
            raise PoolError(f"the {which} usage time of {name} must be a Unix time, not {when}")
        old = self.record(name)
        if which == "begin":
            return self._put(attrs.evolve(old, begin_usage_time=float(when)))
        return self._put(attrs.evolve(old, last_usage_time=float(when)))

    def reset_usage(self, name: str, now: float) -> Accountant:
        """``name`` with its priority and accumulated usage back to a new submitter's."""
        old = self.record(name)
        return self._put(
            attrs.evolve(
                old,
                rup=MINIMUM_RUP,
                accumulated_usage=0.0,
                weighted_accumulated_usage=0.0,
                begin_usage_time=now,
            )
        )

    def delete(self, name: str) -> Accountant:
        """This accountant without ``name``'s record."""
        if name not in self.records:
            raise PoolError(f"the accountant has no record of submitter {name}")
        return attrs.evolve(self, records={k: v for k, v in self.records.items() if k != name})

    # -- ageing --------------------------------------------------------------------------------
    def update_usage(self, slots: Sequence[ClassAd], now: float) -> Accountant:
        """Age every RUP over the time since the last update with the usage recorded for that
        interval, then record the usage the claimed ``slots`` show now."""
        policy = self.policy
        usage = count_usage(slots, policy.use_slot_weights, policy.uid_domain)
        if policy.groups.enabled:
            usage = {**usage, **_group_usage(policy.groups, usage)}
        elapsed = 0.0 if self.last_update is None else max(now - self.last_update, 0.0)
        decay = 0.5 ** (elapsed / policy.halflife)
        records: dict[str, SubmitterRecord] = {}
        for name in {*self.records, *usage}:
            old = self.record(name)
            held = usage.get(name, SlotUsage())
            rup = decay * old.rup + (1.0 - decay) * old.weighted_resources_used
            begin = old.begin_usage_time
            if held.slots and not (old.resources_used or old.accumulated_usage):
                begin = now
            records[name] = attrs.evolve(
                old,
                rup=max(rup, MINIMUM_RUP),
                resources_used=held.slots,
                weighted_resources_used=held.weight,
                accumulated_usage=old.accumulated_usage + old.resources_used * elapsed,
                weighted_accumulated_usage=(
                    old.weighted_accumulated_usage + old.weighted_resources_used * elapsed
                ),
                begin_usage_time=begin,
                last_usage_time=now if held.slots or old.resources_used else old.last_usage_time,
            )
        return attrs.evolve(self, records=records, last_update=now)

    # -- persistence -----------------------------------------------------------------------
    def to_ads(self) -> list[ClassAd]:
        """One ``Accounting`` ad per record, with condor_userprio's attribute names (Priority
        is the EUP, as condor_userprio -l shows it; Ceiling -1 and Floor 0 mean none)."""
        ads: list[ClassAd] = []
        for record in self.records.values():
            ad = ClassAd()
            ad["MyType"] = "Accounting"
            ad["Name"] = record.name
            ad["Priority"] = record.eup
            ad["PriorityFactor"] = record.factor
            ad["ResourcesUsed"] = record.resources_used
            ad["WeightedResourcesUsed"] = record.weighted_resources_used
            ad["AccumulatedUsage"] = record.accumulated_usage
            ad["WeightedAccumulatedUsage"] = record.weighted_accumulated_usage
            ad["BeginUsageTime"] = record.begin_usage_time
            ad["LastUsageTime"] = record.last_usage_time
            ad["Ceiling"] = -1.0 if record.ceiling is None else record.ceiling
            group = self.group_of(record.name)
            ad["IsAccountingGroup"] = group == record.name
            ad["AccountingGroup"] = group
            ad["Floor"] = 0.0 if record.floor is None else record.floor
            if self.last_update is not None:
                ad["LastUpdateTime"] = self.last_update
            ads.append(ad)
        return ads

    @classmethod
    def from_ads(cls, ads: Iterable[ClassAd], config: Config) -> Accountant:
        """The accountant :meth:`to_ads` wrote; a damaged ad is a PoolError naming it and the
        attribute."""
        records: dict[str, SubmitterRecord] = {}
        last_update: float | None = None
        for position, ad in enumerate(ads, 1):
            record, updated = _record_from_ad(ad, position)
            records[record.name] = record
            if updated is not None:
                last_update = updated if last_update is None else max(last_update, updated)
        return cls(AccountantPolicy.from_config(config), records, last_update)

    def charge(self, name: str, slots: int, weight: float) -> Accountant:
        """``name`` holding ``slots`` more slots and ``weight`` more slot weight (negative to
        release), as a match or a preemption changes usage before the next update."""
        old = self.record(name)
        return self._put(
            attrs.evolve(
                old,
                resources_used=max(old.resources_used + slots, 0),
                weighted_resources_used=max(old.weighted_resources_used + weight, 0.0),
            )
        )


def _group_usage(groups: GroupPolicy, usage: Mapping[str, SlotUsage]) -> dict[str, SlotUsage]:
    """Each group's usage: the sum of its direct members' (a group's record is charged with
    what its submitters hold, as HTCondor's accountant charges it)."""
    found: dict[str, SlotUsage] = {spec.name: SlotUsage() for spec in groups.groups}
    for principal, held in usage.items():
        group = groups.group_of(principal)
        if group in found:
            old = found[group]
            found[group] = SlotUsage(old.slots + held.slots, old.weight + held.weight)
    return found


def _number(ad: ClassAd, attribute: str, where: str, default: float | None = None) -> float:
    if attribute not in ad:
        if default is not None:
            return default
        raise PoolError(f"accountant {where}: attribute {attribute} is missing")
    value = ad.evaluate(attribute)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise PoolError(
            f"accountant {where}: attribute {attribute} is {value!r}, not a finite number"
        )
    return float(value)


def _record_from_ad(ad: ClassAd, position: int) -> tuple[SubmitterRecord, float | None]:
    where = f"ad {position}"
    kind = ad.evaluate("MyType")
    if kind != "Accounting":
        raise PoolError(f'accountant {where}: attribute MyType is {kind!r}, not "Accounting"')
    name = ad.evaluate("Name")
    if not isinstance(name, str) or not name:
        raise PoolError(f"accountant {where}: attribute Name is {name!r}, not a submitter name")
    where = f"ad {position} ({name})"
    factor = _number(ad, "PriorityFactor", where)
    if factor <= 0:
        raise PoolError(f"accountant {where}: attribute PriorityFactor is {factor}, not positive")
    eup = _number(ad, "Priority", where)
    used = _number(ad, "ResourcesUsed", where, 0.0)
    if used < 0 or used != int(used):
        raise PoolError(f"accountant {where}: attribute ResourcesUsed is {used}, not a count")
    ceiling = _number(ad, "Ceiling", where, -1.0)
    floor = _number(ad, "Floor", where, 0.0)
    updated = _number(ad, "LastUpdateTime", where) if "LastUpdateTime" in ad else None
    record = SubmitterRecord(
        name=name,
        factor=factor,
        rup=max(eup / factor, MINIMUM_RUP),
        floor=floor if floor > 0 else None,
        ceiling=ceiling if ceiling >= 0 else None,
        resources_used=int(used),
        weighted_resources_used=_number(ad, "WeightedResourcesUsed", where, used),
        accumulated_usage=_number(ad, "AccumulatedUsage", where, 0.0),
        weighted_accumulated_usage=_number(ad, "WeightedAccumulatedUsage", where, 0.0),
        begin_usage_time=_number(ad, "BeginUsageTime", where, 0.0),
        last_usage_time=_number(ad, "LastUsageTime", where, 0.0),
    )
    return record, updated
