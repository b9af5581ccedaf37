"""One job against one slot: whether the slot is a candidate, for what reason, and where it
sorts (seed 004, "The Negotiation Algorithm").

Every chooser in :mod:`epcore.negotiator.choosers` decides through these functions, so
the fast chooser and the plain one cannot disagree on a single pair.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import attrs

from epcore.classad import UNDEFINED, ClassAd, Expr, ast, rank, symmetric_match
from epcore.interfaces.records import REASON_ORDER, Reason
from epcore.negotiator.accountant import Accountant, slot_weight_of, usage_principal
from epcore.negotiator.settings import NegotiatorSettings

SortKey = tuple[float, float, float, int, float, int]
_WORST = -math.inf
_STANDARD_RESOURCES = ("Cpus", "Memory", "Disk")
#: Group attributes get "<none>" until accounting groups exist (a later issue).
_NO_GROUP = "<none>"


def attribute(ad: ClassAd, name: str) -> object:
    """``ad.evaluate(name)``, quicker for the common case of a literal value."""
    expr = ad.lookup(name)
    if expr is None:
        return UNDEFINED
    if type(expr.node) is ast.Literal:
        return expr.evaluate()
    return ad.evaluate(name)


def apply_consumption(pslot: ClassAd, left: Iterable[tuple[str, int | float]]) -> ClassAd:
    """``pslot`` with the resources a match leaves."""
    remaining = pslot.copy()
    for resource, amount in left:
        remaining[resource] = amount
    return remaining


def number_or(value: object, default: float) -> float:
    """``value`` as a real when it is a number (not a boolean and not NaN), else default."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return default
    return float(value)


@attrs.frozen
class Bidder:
    """The submitter whose job is being placed, as evaluation sees it; its slots in use are
    those at the start of the cycle (PREEMPTION_REQUIREMENTS_STABLE's default promise)."""

    name: str
    eup: float
    resources_in_use: int


@attrs.frozen
class Candidate:
    """A slot a job may get: its reason, its sort key (smaller is better), its cost in slot
    weight, the slot indices it preempts, the slot ad as matched and, for a partitionable slot
    with a consumption policy, the resources that remain after the match."""

    index: int
    reason: Reason
    key: SortKey
    weight: float
    preempts: tuple[int, ...]
    matched_ad: ClassAd
    #: For a partitionable slot with a consumption policy: its resources after the match.
    consumed: tuple[tuple[str, int | float], ...] | None = None


@attrs.define
class SlotTable:
    """The cycle's slots and what has happened to them so far (mutable, cycle-local)."""

    ads: list[ClassAd]
    names: list[str]
    taken: list[bool]
    weights: list[float]
    partitionable: list[bool]
    dynamic: list[bool]
    consumption: list[bool]
    running: list[bool]
    claimed_idle: list[bool]
    children: Mapping[int, tuple[int, ...]]
    #: Bumped each time a slot's ad is replaced (a consumption policy took from it).
    versions: list[int] = attrs.field(factory=list)
    #: The slots whose ads were replaced, in order (each replacement appends one entry).
    changes: list[int] = attrs.field(factory=list)

    @classmethod
    def build(cls, slots: Sequence[ClassAd], use_weights: bool) -> SlotTable:
        """The table of ``slots``; dynamic slots are tied to the partitionable slot of the
        same Machine and SlotID."""
        names, partitionable, consumption, running, idle = [], [], [], [], []
        parents: dict[tuple[object, object], int] = {}
        for index, ad in enumerate(slots):
            name = attribute(ad, "Name")
            names.append(name if isinstance(name, str) else f"slot #{index}")
            is_p = attribute(ad, "PartitionableSlot") is True
            partitionable.append(is_p)
            consumption.append(is_p and any(k.lower().startswith("consumption") for k in ad))
            claimed = attribute(ad, "State") == "Claimed"
            busy = claimed and attribute(ad, "Activity") != "Idle"
            running.append(busy)
            idle.append(claimed and not busy)
            if is_p:
                parents[(attribute(ad, "Machine"), attribute(ad, "SlotID"))] = index
        children: dict[int, list[int]] = {}
        dynamic = [attribute(ad, "DynamicSlot") is True for ad in slots]
        for index, ad in enumerate(slots):
            if dynamic[index]:
                parent = parents.get((attribute(ad, "Machine"), attribute(ad, "SlotID")))
                if parent is not None:
                    children.setdefault(parent, []).append(index)
        return cls(
            ads=list(slots),
            names=names,
            taken=[False] * len(slots),
            weights=[slot_weight_of(ad, use_weights) for ad in slots],
            partitionable=partitionable,
            dynamic=dynamic,
            consumption=consumption,
            running=running,
            claimed_idle=idle,
            children={k: tuple(v) for k, v in children.items()},
            versions=[0] * len(slots),
        )


@attrs.define
class Evaluator:
    """Evaluates pairs for one cycle; the accountant's priorities are those at its start."""

    settings: NegotiatorSettings
    accountant: Accountant
    #: Slots in use per principal at the start of the cycle (the *ResourcesInUse values).
    usage: Mapping[str, int]
    #: Per Machine, ``Slot<N>_RemoteUserPrio`` of each of its slots running a job.
    neighbours: Mapping[str, Mapping[str, float]] = attrs.field(factory=dict)

    def with_neighbours(self, table: SlotTable) -> Evaluator:
        """This evaluator knowing the remote users' priorities of every machine's slots, when
        NEGOTIATOR_CROSS_SLOT_PRIOS asks for them."""
        found: dict[str, dict[str, float]] = {}
        if not self.settings.cross_slot_prios:
            return self
        for ad, name, running in zip(table.ads, table.names, table.running, strict=True):
            machine, remote = attribute(ad, "Machine"), self.remote(ad)
            if running and isinstance(machine, str) and remote is not None:
                prefix = name.partition("@")[0]
                found.setdefault(machine, {})[f"{prefix}_RemoteUserPrio"] = self.accountant.eup(
                    remote
                )
        return attrs.evolve(self, neighbours=found)

    # -- ordering ------------------------------------------------------------------------------
    def _config_value(self, expr: Expr | None, my: ClassAd, target: ClassAd) -> float:
        if expr is None:
            return _WORST
        return number_or(expr.evaluate(my, target, context=self.settings.context), _WORST)

    def order(
        self, job: ClassAd, slot: ClassAd, reason: Reason, prank: float, index: int
    ) -> SortKey:
        """The sort key of a candidate: NEGOTIATOR_PRE_JOB_RANK, the job's Rank,
        NEGOTIATOR_POST_JOB_RANK, the reason, PREEMPTION_RANK, all higher-is-better, then the
        slot's position."""
        context = self.settings.context
        pre = self._config_value(self.settings.pre_job_rank, slot, job)
        job_rank = rank(job, slot, context=context)
        post = self._config_value(self.settings.post_job_rank, slot, job)
        return (-pre, -job_rank, -post, -REASON_ORDER[reason], -prank, index)

    # -- ephemeral attributes ------------------------------------------------------------------
    def remote(self, slot: ClassAd) -> str | None:
        """The principal the slot's running job is charged to."""
        return usage_principal(slot, self.settings.uid_domain)

    def ephemeral(self, job: ClassAd, slot: ClassAd, bidder: Bidder) -> tuple[ClassAd, ClassAd]:
        """Copies of ``job`` and ``slot`` carrying the Submitter* and Remote* attributes, and
        (with NEGOTIATOR_CROSS_SLOT_PRIOS) ``Slot<N>_RemoteUserPrio`` of each running slot of
        its machine."""
        job = job.copy()
        slot = slot.copy()
        job["SubmitterUserPrio"] = bidder.eup
        job["SubmitterUserResourcesInUse"] = bidder.resources_in_use
        job["SubmitterGroup"] = _NO_GROUP
        job["SubmitterNegotiatingGroup"] = _NO_GROUP
        job["SubmitterAutoregroup"] = False
        machine = attribute(slot, "Machine")
        if isinstance(machine, str):
            for name, priority in self.neighbours.get(machine, {}).items():
                slot[name] = priority
        remote = self.remote(slot)
        if remote is not None:
            slot["RemoteUserPrio"] = self.accountant.eup(remote)
            slot["RemoteUserResourcesInUse"] = self.usage.get(remote, 0)
            slot["RemoteGroup"] = _NO_GROUP
            slot["RemoteNegotiatingGroup"] = _NO_GROUP
            slot["RemoteAutoregroup"] = False
        return job, slot

    # -- reasons -------------------------------------------------------------------------------
    def retiring(self, slot: ClassAd) -> bool:
        """Whether the job on ``slot`` is still within its retirement time: the slot's
        RetirementTimeRemaining, else MaxJobRetirementTime less the time since JobStart."""
        context = self.settings.context
        if "RetirementTimeRemaining" in slot:
            return number_or(slot.evaluate("RetirementTimeRemaining", context=context), 0) > 0
        allowed = number_or(slot.evaluate("MaxJobRetirementTime", context=context), 0.0)
        started = number_or(slot.evaluate("JobStart", context=context), math.nan)
        if allowed <= 0 or started != started or context.now is None:
            return False
        return allowed - (context.now - started) > 0

    def preemption(
        self, job: ClassAd, slot: ClassAd, bidder: Bidder
    ) -> tuple[Reason, float] | None:
        """Whether ``job`` may preempt the job running on ``slot`` (whose Requirements already
        match), with the reason and the PREEMPTION_RANK; None when it may not."""
        settings = self.settings
        if not settings.consider_preemption:
            return None
        context = settings.context
        if not settings.consider_early_preemption and self.retiring(slot):
            return None
        new_rank = rank(slot, job, context=context)
        current = self.current_rank(slot)
        reason: Reason
        if new_rank > current:
            reason = "rank"
        else:
            remote = self.remote(slot)
            if remote is None or new_rank < current:
                return None
            if not bidder.eup < self.accountant.eup(remote):
                return None
            reason = "priority"
        job_e, slot_e = self.ephemeral(job, slot, bidder)
        if reason == "priority" and not self.requirements_allow(job_e, slot_e):
            return None
        return reason, self.preemption_rank(job_e, slot_e)

    def current_rank(self, slot: ClassAd) -> float:
        """The slot's CurrentRank (the running job's rank), 0 when it is not a number."""
        return number_or(slot.evaluate("CurrentRank", context=self.settings.context), 0.0)

    def requirements_allow(self, job_e: ClassAd, slot_e: ClassAd) -> bool:
        """PREEMPTION_REQUIREMENTS on the ads with their ephemeral attributes (unset: false,
        as the manual gives it; a non-zero number counts as true)."""
        expr = self.settings.preemption_requirements
        if expr is None:
            return False
        allowed = expr.evaluate(slot_e, job_e, context=self.settings.context)
        return allowed is True or (not isinstance(allowed, bool) and number_or(allowed, 0) != 0)

    def preemption_rank(self, job_e: ClassAd, slot_e: ClassAd) -> float:
        """PREEMPTION_RANK on the ads with their ephemeral attributes."""
        return self._config_value(self.settings.preemption_rank, slot_e, job_e)

    def plain(
        self, job: ClassAd, table: SlotTable, index: int, bidder: Bidder | None
    ) -> Candidate | None:
        """``table``'s slot ``index`` as a candidate for ``job``, or None. ``bidder`` may be
        None only for slots that cannot be preempted (nothing then depends on it)."""
        if table.taken[index] or table.claimed_idle[index]:
            return None
        slot = table.ads[index]
        context = self.settings.context
        if not symmetric_match(slot, job, context=context):
            if table.partitionable[index] and self.settings.allow_pslot_preemption:
                assert bidder is not None
                return self.through_children(job, table, index, bidder)
            return None
        if table.running[index]:
            if table.dynamic[index] and self.settings.allow_pslot_preemption:
                # Under pslot preemption dynamic slots go only through their parent.
                return None
            assert bidder is not None
            found = self.preemption(job, slot, bidder)
            if found is None:
                return None
            reason, prank = found
            key = self.order(job, slot, reason, prank, index)
            return Candidate(index, reason, key, table.weights[index], (index,), slot)
        key = self.order(job, slot, "no_preemption", _WORST, index)
        if table.consumption[index]:
            consumed = self.consume(job, slot)
            if consumed is None:
                return None
            left, cost = consumed
            return Candidate(index, "no_preemption", key, cost, (), slot, left)
        return Candidate(index, "no_preemption", key, table.weights[index], (), slot)

    # -- partitionable slots -------------------------------------------------------------------
    def consume(
        self, job: ClassAd, pslot: ClassAd
    ) -> tuple[tuple[tuple[str, int | float], ...], float] | None:
        """What is left of each resource ``job``'s consumption takes from ``pslot``, and the
        cost in slot weight; None when the policy cannot grant the job (a consumption that is
        not a number of at least 0, takes nothing, or takes more than the slot has)."""
        context = self.settings.context
        target = job.copy()
        policies = [name for name in pslot if name.lower().startswith("consumption")]
        for name in policies:
            resource = name[len("consumption") :]
            override = target.lookup(f"_condor_Request{resource}")
            if override is not None:
                target[f"Request{resource}"] = override
            elif target.lookup(f"Request{resource}") is None:
                target[f"Request{resource}"] = 0
        left: list[tuple[str, int | float]] = []
        for name in policies:
            resource = name[len("consumption") :]
            amount = pslot[name].evaluate(pslot, target, context=context)
            if isinstance(amount, bool) or not isinstance(amount, int | float) or amount < 0:
                return None
            have = number_or(pslot.evaluate(resource, context=context), 0.0)
            if amount > have:
                return None
            if amount:
                rest = have - amount
                left.append((resource, int(rest) if float(rest).is_integer() else rest))
        if not left:
            return None
        use_weights = self.settings.use_slot_weights
        if not use_weights:
            return tuple(left), 1.0
        cost = slot_weight_of(pslot, True) - slot_weight_of(apply_consumption(pslot, left), True)
        return tuple(left), cost

    def through_children(
        self, job: ClassAd, table: SlotTable, index: int, bidder: Bidder
    ) -> Candidate | None:
        """``job`` on partitionable slot ``index`` once some of its dynamic slots' jobs go
        (HTCondor's pslot preemption): the dynamic slots the job may preempt by the usual
        rules, and not in their retirement time, are taken lowest CurrentRank first, their
        Cpus, Memory and Disk returned to the partitionable slot, until the job fits. Ranks
        are evaluated on the partitionable slot's own ad; the match takes the whole slot for
        the rest of the cycle."""
        context = self.settings.context
        victims: list[tuple[float, int, Reason, float]] = []
        for child in table.children.get(index, ()):
            if table.taken[child] or not table.running[child]:
                continue
            child_ad = table.ads[child]
            if self.retiring(child_ad):
                continue
            found = self.preemption(job, child_ad, bidder)
            if found is not None:
                victims.append((self.current_rank(child_ad), child, found[0], found[1]))
        victims.sort()
        pslot = table.ads[index]
        merged = pslot.copy()
        used: list[int] = []
        reasons: list[Reason] = []
        for _, child, reason, _ in victims:
            child_ad = table.ads[child]
            for resource in _STANDARD_RESOURCES:
                total = number_or(merged.evaluate(resource), 0.0) + number_or(
                    child_ad.evaluate(resource), 0.0
                )
                merged[resource] = int(total) if total.is_integer() else total
            used.append(child)
            reasons.append(reason)
            if symmetric_match(merged, job, context=context):
                worst: Reason = "priority" if "priority" in reasons else "rank"
                key = self.order(job, pslot, worst, victims[0][3], index)
                weight = slot_weight_of(merged, self.settings.use_slot_weights)
                return Candidate(index, worst, key, weight, tuple(used), merged)
        return None
