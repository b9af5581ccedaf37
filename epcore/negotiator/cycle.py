"""One negotiation cycle: the pie spin of seed 004.

Submitters are served best EUP first. Each gets a slice of the pool's total slot weight in
proportion to 1/EUP, less what it already uses, capped by its ceiling. Before that, a floor
round serves each submitter below its floor up to it. After a first spin, the slot weight
still unmatched is divided again among the submitters that still have jobs, and so on until
a spin matches nothing. Slices are real numbers while slots come whole: when a spin matches
nothing, the following spins raise each limit to the lightest unmatched slot's weight (so
leftovers go in EUP order instead of staying idle), and the cycle ends at the first such spin
that matches nothing either.

With accounting groups configured (GROUP_NAMES), :mod:`epcore.negotiator.group_cycle` splits
the pool among the groups and calls :func:`_spin` per group, with that group's submitters and a
room of slot weight no match to an unclaimed slot may exceed (a preemption is held to the
submitter's own limit, as HTCondor's submitterLimitUnclaimed and submitterLimit).
Concurrency limits are checked before each job is considered and counted at each match
(:mod:`epcore.negotiator.limits`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import attrs

from epcore.classad import ClassAd, ast
from epcore.classad.references import (
    SLOT_STATE_ATTRIBUTES,
    ReferenceIndex,
    consumption_names,
)
from epcore.config import Config
from epcore.interfaces import Match, SubmitterJobs
from epcore.negotiator.accountant import Accountant, usage_principal
from epcore.negotiator.autoclusters import autocluster_ids
from epcore.negotiator.candidates import (
    Bidder,
    Candidate,
    Evaluator,
    SlotTable,
    apply_consumption,
    attribute,
    number_or,
)
from epcore.negotiator.choosers import EPSILON, Chooser, PlainChooser
from epcore.negotiator.group_cycle import GroupRun, Spin, negotiate_groups
from epcore.negotiator.group_policy import GroupPolicy
from epcore.negotiator.indexed import IndexedChooser
from epcore.negotiator.limits import LimitCounter, LimitPolicy, count_limits, job_limits, rejection
from epcore.negotiator.offline import ghost_multiplier
from epcore.negotiator.records import Cycle, CycleStats
from epcore.negotiator.settings import NegotiatorSettings

_NO_MATCH = "no match found"
_SKIPPED = "not considered: another job of its autocluster found no match this cycle"
_LIMIT = "insufficient priority: the submitter's share of the pool is used up"
_FAILED = "not considered: the negotiator failed on this job (see the negotiator's log)"


def job_id(job: ClassAd) -> str:
    """``"cluster.proc"`` of a job ad."""
    return f"{job.evaluate('ClusterId')}.{job.evaluate('ProcId')}"


@attrs.define
class _Queue:
    """One submitter's jobs during the cycle."""

    name: str
    jobs: tuple[ClassAd, ...]
    clusters: list[int]
    bidder: Bidder
    ceiling: float | None
    floor: float | None
    usage: float
    done: list[bool]
    #: The cycle-wide number of the first job.
    first: int
    failed_clusters: set[int] = attrs.field(factory=set)

    def has_jobs(self) -> bool:
        return not all(self.done)


@attrs.define
class _Run:
    """The cycle in progress."""

    settings: NegotiatorSettings
    table: SlotTable
    chooser: Chooser
    queues: list[_Queue]
    matches: list[Match] = attrs.field(factory=list)
    rejections: dict[str, str] = attrs.field(factory=dict)
    failures: dict[str, str] = attrs.field(factory=dict)
    considered: int = 0
    #: (principal, slots, slot weight) each match adds to or takes from usage.
    charges: list[tuple[str, int, float]] = attrs.field(factory=list)
    limits: LimitCounter | None = None
    #: With groups: the slot weight the group being negotiated may still take (None: no cap),
    #: the reason a job waits when that is what stops it, and each group's usage.
    room: float | None = None
    room_reason: str = _LIMIT
    groups: GroupRun | None = None

    def serve(self, queue: _Queue, limit: float) -> int:
        """Match ``queue``'s jobs while they fit in ``limit``; the number of matches."""
        made = 0
        for position, job in enumerate(queue.jobs):
            if queue.done[position]:
                continue
            ident = job_id(job)
            cluster = queue.clusters[position]
            if cluster in queue.failed_clusters:
                queue.done[position] = True
                self.rejections[ident] = _SKIPPED
                continue
            limits = self._limits_of(job)
            if limits is not None and self._over_limits(queue, position, ident, limits):
                continue
            self.considered += 1
            room = limit
            if self.room is not None and (made or self.room <= EPSILON):
                # As HTCondor's SubmitterLimitPermits, a submitter's first match of a spin
                # may round the group's fractional room up, so no crumbs stay idle.
                room = min(limit, self.room)
            try:
                # The group's room caps only matches to unclaimed slots; a preemption is
                # held to the submitter's own limit (HTCondor's submitterLimit).
                choice = self.chooser.choose(job, queue.first + position, queue.bidder, room, limit)
            except Exception as error:
                # One job's ad must not end the cycle for everyone: it and its autocluster
                # sit this cycle out, and the daemon logs why.
                queue.done[position] = True
                queue.failed_clusters.add(cluster)
                self.failures[ident] = f"{type(error).__name__}: {error}"
                self.rejections[ident] = _FAILED
                continue
            if choice.candidate is None:
                if choice.limited:
                    # The group's room, not the submitter's share, is what stopped it.
                    capped = room < limit - EPSILON
                    self.rejections[ident] = self.room_reason if capped else _LIMIT
                    return made
                queue.done[position] = True
                self.rejections[ident] = _NO_MATCH
                if not self.settings.negotiate_all_jobs_in_cluster:
                    queue.failed_clusters.add(cluster)
                continue
            if limits == "" and self.limits is not None:
                # concurrency_limits_expr: the names depend on the slot matched.
                limits = job_limits(job, choice.candidate.matched_ad)
                if limits is not None and self._over_limits(queue, position, ident, limits):
                    continue
            self.take(queue, position, job, choice.candidate)
            if limits and self.limits is not None:
                self.limits.add(limits)
            limit -= choice.candidate.weight
            if self.room is not None:
                self.room -= choice.candidate.weight
            made += 1
        return made

    def _limits_of(self, job: ClassAd) -> str | None:
        """The job's concurrency limits; "" when they are an expression of the slot."""
        if self.limits is None or "ConcurrencyLimits" not in job:
            return None
        expr = job.lookup("ConcurrencyLimits")
        if expr is not None and type(expr.node) is not ast.Literal:
            return ""
        return job_limits(job)

    def _over_limits(self, queue: _Queue, position: int, ident: str, limits: str) -> bool:
        """Whether a concurrency limit holds the job back this cycle (noting why)."""
        assert self.limits is not None
        over = self.limits.blocked(limits)
        if over:
            queue.done[position] = True
            self.rejections[ident] = rejection(over)
        return bool(over)

    def take(self, queue: _Queue, position: int, job: ClassAd, candidate: Candidate) -> None:
        table = self.table
        queue.done[position] = True
        queue.usage += candidate.weight
        ident = job_id(job)
        self.rejections.pop(ident, None)
        index = candidate.index
        if candidate.consumed is not None:
            table.ads[index] = apply_consumption(table.ads[index], candidate.consumed)
            table.weights[index] -= candidate.weight
            table.versions[index] += 1
            table.changes.append(index)
        else:
            table.taken[index] = True
        self.charges.append((queue.name, 1, candidate.weight))
        if self.groups is not None:
            self.groups.charge(queue.name, candidate.weight)
        for victim in candidate.preempts:
            table.taken[victim] = True
            remote = usage_principal(table.ads[victim], self.settings.uid_domain)
            if remote is not None:
                self.charges.append((remote, -1, -table.weights[victim]))
        self.matches.append(
            Match(
                submitter=queue.name,
                job_id=ident,
                job=job,
                slot_name=table.names[index],
                slot=candidate.matched_ad,
                reason=candidate.reason,
                preempts=tuple(table.names[victim] for victim in candidate.preempts),
                weight=candidate.weight,
            )
        )

    def free_weight(self) -> tuple[float, float | None]:
        """The slot weight not yet matched, and the lightest unmatched slot's weight."""
        table = self.table
        free = [w for w, taken in zip(table.weights, table.taken, strict=True) if not taken]
        positive = [w for w in free if w > 0]
        return sum(free), (min(positive) if positive else None)


def _shares(queues: Sequence[_Queue], pie: float) -> list[float]:
    inverse = [1.0 / max(queue.bidder.eup, EPSILON) for queue in queues]
    total = sum(inverse)
    return [pie * weight / total for weight in inverse]


def _spin(run: _Run, pie: float) -> tuple[dict[str, float], int]:
    """The floor round and the spins; each submitter's first slice and the number of spins."""
    slices: dict[str, float] = {}
    spins = 0
    for queue in run.queues:
        if queue.floor is not None and queue.usage < queue.floor and queue.has_jobs():
            run.serve(queue, queue.floor - queue.usage)
    first, forced = True, False
    while True:
        active = [queue for queue in run.queues if queue.has_jobs()]
        if not active:
            break
        free, lightest = run.free_weight()
        if lightest is None and not first:
            break
        base = pie if first else free
        spins += 1
        made = 0
        for queue, share in zip(active, _shares(active, base), strict=True):
            if queue.ceiling is not None:
                share = min(share, queue.ceiling)
            if first:
                slices[queue.name] = share
                limit = share - queue.usage
            else:
                limit = share
                if queue.ceiling is not None:
                    limit = min(limit, queue.ceiling - queue.usage)
            if forced and lightest is not None:
                room = lightest if queue.ceiling is None else queue.ceiling - queue.usage
                limit = max(limit, min(lightest, room))
            made += run.serve(queue, limit)
        if made == 0:
            if forced:
                break
            forced = True
        first = False
    return slices, spins


def run_cycle(
    config: Config,
    accountant: Accountant,
    slots: Sequence[ClassAd],
    submitters: Sequence[SubmitterJobs],
    now: float,
    chooser: Literal["indexed", "plain"] = "indexed",
    pending_limits: Sequence[str] = (),
) -> Cycle:
    """:func:`negotiate` with a choice of chooser (``"plain"`` is the reference algorithm).

    A job whose ad makes matching fail is skipped by the spin (see ``_Run.serve``). One that
    makes the cycle fail before it (indexing walks every job's expressions) is found by
    indexing the jobs one by one, which costs too much to do every cycle, and the cycle runs
    again without it.
    """
    try:
        return _cycle(config, accountant, slots, submitters, now, chooser, {}, pending_limits)
    except Exception:
        failures: dict[str, str] = {}
        kept = [_keyable(entry, failures) for entry in submitters]
        if not failures:
            raise
        return _cycle(config, accountant, slots, kept, now, chooser, failures, pending_limits)


def _cycle(
    config: Config,
    accountant: Accountant,
    slots: Sequence[ClassAd],
    submitters: Sequence[SubmitterJobs],
    now: float,
    chooser: Literal["indexed", "plain"],
    failures: dict[str, str],
    pending_limits: Sequence[str],
) -> Cycle:
    settings = NegotiatorSettings.from_config(config, now)
    all_slots = slots
    # NEGOTIATOR_SLOT_CONSTRAINT and NEGOTIATOR_JOB_CONSTRAINT hide ads from the whole cycle.
    slots = [slot for slot in slots if settings.admits(settings.slot_constraint, slot)]
    if settings.job_constraint is not None:
        submitters = [
            attrs.evolve(
                entry,
                jobs=tuple(j for j in entry.jobs if settings.admits(settings.job_constraint, j)),
            )
            for entry in submitters
        ]
    with_jobs = [entry for entry in submitters if entry.jobs]
    accountant = accountant.with_submitters(entry.submitter for entry in with_jobs)
    table = SlotTable.build(slots, settings.use_slot_weights)
    usage = {name: r.resources_used for name, r in accountant.records.items()}
    evaluator = Evaluator(settings, accountant, usage).with_neighbours(table)
    all_jobs = [job for entry in with_jobs for job in entry.jobs]
    index = ReferenceIndex([*slots, *all_jobs])
    consumption = consumption_names(slots)
    whole = index.closure(settings.expressions(), (*SLOT_STATE_ATTRIBUTES, *consumption))
    job_keys = [whole.key(job) for job in all_jobs]
    picker: Chooser
    if chooser == "plain":
        picker = PlainChooser(evaluator, table)
    else:
        picker = IndexedChooser(evaluator, table, index, whole, job_keys, consumption)
    clusters = autocluster_ids(settings, index, whole, all_jobs, job_keys)
    queues: list[_Queue] = []
    start = 0
    for entry in with_jobs:
        record = accountant.record(entry.submitter)
        count = len(entry.jobs)
        queues.append(
            _Queue(
                name=entry.submitter,
                jobs=entry.jobs,
                clusters=clusters[start : start + count],
                bidder=Bidder(entry.submitter, record.eup, record.resources_used),
                ceiling=record.ceiling,
                floor=record.floor,
                usage=record.weighted_resources_used,
                done=[False] * count,
                first=start,
            )
        )
        start += count
    order = sorted(range(len(queues)), key=lambda i: (queues[i].bidder.eup, i))
    run = _Run(settings, table, picker, [queues[i] for i in order], failures=failures)
    run.limits = LimitCounter(LimitPolicy(config), count_limits(all_slots, pending_limits))
    # NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT: only the slots it admits make the pie.
    pie = sum(
        weight * ghost_multiplier(ad)
        for weight, ad in zip(table.weights, table.ads, strict=True)
        if settings.admits(settings.poolsize_constraint, ad)
    )
    policy = GroupPolicy.from_config(config)
    allocation = None
    if policy.enabled:
        # Group records (names without a domain) hold their members' usage: not submitters.
        weighted_usage = {
            n: r.weighted_resources_used for n, r in accountant.records.items() if "@" in n
        }
        run.groups = GroupRun.build(policy, weighted_usage, (q.name for q in queues))
        slices, spins, allocation = negotiate_groups(
            policy,
            pie,
            settings.use_slot_weights,
            {q.name: _demand(q, settings.use_slot_weights) for q in run.queues},
            run.groups,
            _group_spin(run),
            settings.consider_preemption,
            settings.context,
        )
    else:
        slices, spins = _spin(run, pie)
    charges: dict[str, tuple[int, float]] = {}
    for submitter, count, weight in run.charges:
        old = charges.get(submitter, (0, 0.0))
        charges[submitter] = (old[0] + count, old[1] + weight)
    for submitter, (count, weight) in charges.items():
        accountant = accountant.charge(submitter, count, weight)
    stats = CycleStats(
        submitters=len(with_jobs),
        jobs_considered=run.considered,
        matches=len(run.matches),
        preemptions=sum(1 for match in run.matches if match.preempts),
        rejections=len(run.rejections),
        autoclusters=len(set(clusters)),
        spins=spins,
    )
    return Cycle(
        tuple(run.matches),
        accountant,
        slices,
        dict(run.rejections),
        stats,
        dict(run.failures),
        groups=allocation.shares if allocation is not None else (),
        group_usage=dict(run.groups.usage) if run.groups is not None else {},
        limits=_limit_report(run.limits),
    )


def _demand(queue: _Queue, weighted: bool) -> float:
    """A submitter's idle demand: its jobs' RequestCpus with slot weights, else their count."""
    if not weighted:
        return float(len(queue.jobs))
    return sum(number_or(attribute(job, "RequestCpus"), 1.0) for job in queue.jobs)


def _group_spin(run: _Run) -> Spin:
    """How the group layer negotiates one group's submitters (their queues, in EUP order)."""
    by_name = {queue.name: queue for queue in run.queues}
    everyone = list(run.queues)

    def spin(
        names: Sequence[str], pie: float, room: float, reason: str
    ) -> tuple[dict[str, float], int]:
        wanted = set(names)
        run.queues = [queue for queue in everyone if queue.name in wanted and queue.name in by_name]
        run.room, run.room_reason = room, reason
        try:
            return _spin(run, pie)
        finally:
            run.queues, run.room = everyone, None

    return spin


def _limit_report(limits: LimitCounter | None) -> dict[str, tuple[float, float]]:
    """Each concurrency limit's count after the cycle and its maximum."""
    if limits is None:
        return {}
    return {name: (count, limits.maximum(name)) for name, count in sorted(limits.counts.items())}


def _keyable(entry: SubmitterJobs, failures: dict[str, str]) -> SubmitterJobs:
    """``entry`` without the jobs whose ads the cycle cannot index (noted in failures)."""
    kept: list[ClassAd] = []
    for job in entry.jobs:
        try:
            index = ReferenceIndex([job])
            whole = index.closure(e for name in job if (e := job.lookup(name)) is not None)
            whole.key(job)
            kept.append(job)
        except Exception as error:
            failures[_safe_job_id(job)] = f"{type(error).__name__}: {error}"
    if len(kept) == len(entry.jobs):
        return entry
    return attrs.evolve(entry, jobs=tuple(kept))


def _safe_job_id(job: ClassAd) -> str:
    try:
        return job_id(job)
    except Exception:
        return "?.?"


def negotiate(
    config: Config,
    accountant: Accountant,
    slots: Sequence[ClassAd],
    submitters: Sequence[SubmitterJobs],
    now: float,
    pending_limits: Sequence[str] = (),
) -> Cycle:
    """One negotiation cycle: which idle jobs get which slots (pure; the daemon claims).
    ``pending_limits`` are the ConcurrencyLimits of matches the slot ads do not show yet."""
    return run_cycle(config, accountant, slots, submitters, now, pending_limits=pending_limits)
