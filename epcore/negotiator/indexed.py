"""The indexed chooser: the plain algorithm's answers with the work done per class of ads.

It gives the same answers as :class:`epcore.negotiator.choosers.PlainChooser`, faster.
An answer depends only on the attributes the expressions read
(:mod:`epcore.classad.references`), so each role (the Requirements of both ads, the
Ranks, NEGOTIATOR_PRE/POST_JOB_RANK, PREEMPTION_REQUIREMENTS and PREEMPTION_RANK, a
consumption policy) is evaluated once per class of equal ads, and:

- unclaimed slots that a match removes ("settled") are sorted once per combination of job
  rank classes; each class of equal jobs walks that list with a cursor, skipping slots that
  are taken or whose Requirements class does not match;
- running slots get one sorted list per (job class, submitter);
- partitionable slots with a consumption policy, which change at every match, sit in one heap
  per job class, re-evaluated only for the slots changed since the class last looked;
- under ALLOW_PSLOT_PREEMPTION partitionable slots are evaluated per job.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence

import attrs

from epcore.classad import ClassAd, rank, symmetric_match
from epcore.classad.references import ReferenceIndex, References
from epcore.interfaces.records import REASON_ORDER, Reason
from epcore.negotiator.candidates import (
    Bidder,
    Candidate,
    Evaluator,
    SlotTable,
    SortKey,
    number_or,
)
from epcore.negotiator.choosers import EPSILON, Choice, pick

_WORST = float("-inf")


@attrs.define
class _Ordering:
    """The settled slots sorted for one combination of job-side rank classes."""

    keys: list[SortKey]


@attrs.define
class _JobView:
    """One job class's walk down its ordering: which Requirements classes match, and how far
    the slots that are taken or do not match reach from the top."""

    ordering: _Ordering
    matches: list[bool]
    roles: tuple[int, ...]
    cursor: int = 0


class _Interner:
    """Small integers for equal keys, with the first ad of each (kept as it was then: a
    partitionable slot's ad is replaced, not changed, when a match consumes from it)."""

    def __init__(self) -> None:
        self.ids: dict[tuple[object, ...], int] = {}
        self.first: list[ClassAd] = []

    def add(self, key: tuple[object, ...], ad: ClassAd) -> int:
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.first)
            self.first.append(ad)
        return found


#: Evaluation roles, in the order of the role-id tuples. The slot's Rank for the job is read
#: under the _JOB_RANK references too (they follow every Rank binding, the slot's included).
_REQUIREMENTS, _JOB_RANK, _PRE, _POST, _PREEMPTION_REQUIREMENTS, _PREEMPTION_RANK = range(6)
#: What a consumption policy reads: its expressions, the resources, the requests, SlotWeight.
_CONSUMPTION = 6
_REASONS: dict[int, Reason] = {-2: "no_preemption", -1: "rank", 0: "priority"}


@attrs.frozen
class _ClaimedClass:
    """Running slots that answer every preemption question alike, and those answers' inputs
    that do not depend on the job."""

    roles: tuple[int, ...]
    current_rank: float
    remote: str | None
    remote_eup: float
    members: tuple[int, ...]


@attrs.define
class _Heap:
    """One job class's candidates among the changing partitionable slots: (key, version of
    the slot's ad, candidate), and how much of the table's change log it has seen."""

    entries: list[tuple[SortKey, int, Candidate]]
    seen: int


@attrs.define
class _Walk:
    """Candidates sorted best first, and how far the taken ones reach from the top."""

    keys: list[SortKey]
    cursor: int = 0


class IndexedChooser:
    """The plain algorithm's answers, with the work done per class instead of per ad."""

    def __init__(
        self,
        evaluator: Evaluator,
        table: SlotTable,
        index: ReferenceIndex,
        whole: References,
        job_keys: Sequence[tuple[object, ...]],
        consumption: Iterable[str] = (),
    ) -> None:
        self.evaluator = evaluator
        self.table = table
        settings = evaluator.settings
        self.whole = whole
        self.job_keys = job_keys
        expressions = (
            settings.pre_job_rank,
            settings.post_job_rank,
            settings.preemption_requirements,
            settings.preemption_rank,
        )
        pre, post, prq, prank = (() if expr is None else (expr,) for expr in expressions)
        self.roles = (
            index.closure((), ("requirements",)),
            index.closure((), ("rank",)),
            index.closure(pre),
            index.closure(post),
            index.closure(prq),
            index.closure(prank),
            index.closure((), (*consumption, "slotweight")),
        )
        # Whether an ephemeral role reads the Submitter* attributes, which differ per bidder,
        # or Slot<N>_RemoteUserPrio, which differ per machine.
        self.per_bidder = [
            refs.names is None or any(name.startswith("submitter") for name in refs.names)
            for refs in self.roles
        ]
        self.per_machine = any(
            refs.names is None or any(name.endswith("_remoteuserprio") for name in refs.names)
            for refs in self.roles[_PREEMPTION_REQUIREMENTS:_CONSUMPTION]
        )
        self.settled: list[int] = []
        self.changing: list[int] = []
        # Partitionable slots with a consumption policy: matched many times, so they change.
        self.consuming_slots: list[int] = []
        claimed: list[int] = []
        for position in range(len(table.ads)):
            if table.claimed_idle[position]:
                continue
            if table.running[position] and not table.partitionable[position]:
                # Without preemption a running slot is never a candidate, nor a dynamic slot
                # under pslot preemption (it goes through its parent).
                directly = not (table.dynamic[position] and settings.allow_pslot_preemption)
                if settings.consider_preemption and directly:
                    claimed.append(position)
                continue
            pslot_may_preempt = table.partitionable[position] and settings.allow_pslot_preemption
            if pslot_may_preempt or table.running[position]:
                self.changing.append(position)
            elif table.consumption[position]:
                self.consuming_slots.append(position)
            else:
                self.settled.append(position)
        self.slot_whole = _Interner()
        self.slot_class: dict[int, int] = {}
        slot_keys: dict[int, tuple[object, ...]] = {}
        for position in [*self.settled, *claimed]:
            key = slot_keys[position] = whole.key(table.ads[position])
            self.slot_class[position] = self.slot_whole.add(key, table.ads[position])
        self.projectors = [whole.projector(refs) for refs in self.roles]
        self.slot_interners = [_Interner() for _ in self.roles]
        by_class: dict[int, tuple[int, ...]] = {}
        self.slot_roles: list[tuple[int, ...]] = []
        for position in [*self.settled, *claimed]:
            whole_class = self.slot_class[position]
            roles = by_class.get(whole_class)
            if roles is None:
                roles = by_class[whole_class] = self._role_ids(
                    self.slot_interners, table.ads[position], slot_keys[position]
                )
            self.slot_roles.append(roles)
        roles_of = dict(zip([*self.settled, *claimed], self.slot_roles, strict=True))
        self.slot_roles = self.slot_roles[: len(self.settled)]
        self.requirement_class = {
            position: roles[_REQUIREMENTS]
            for position, roles in zip(self.settled, self.slot_roles, strict=True)
        }
        self.claimed_classes = self._claimed_classes(claimed, roles_of)
        # Jobs get interners of their own: a job's role key and a slot's may be equal tuples
        # without meaning the same thing.
        self.job_interners = [_Interner() for _ in self.roles]
        self.job_whole = _Interner()
        self.job_views: list[_JobView] = []
        self.orderings: dict[tuple[int, ...], _Ordering] = {}
        self.values: dict[tuple[int, int, int], object] = {}
        self.claimed_walks: dict[tuple[int, str], _Walk] = {}
        self.consuming: dict[int, _Heap] = {}
        self.consuming_roles: dict[int, tuple[int, tuple[int, ...]]] = {}
        self.consumptions: dict[
            tuple[int, int], tuple[tuple[tuple[str, int | float], ...], float] | None
        ] = {}
        self.ephemeral_values: dict[tuple[object, ...], object] = {}

    def _role_ids(
        self, interners: list[_Interner], ad: ClassAd, key: tuple[object, ...]
    ) -> tuple[int, ...]:
        return tuple(
            interner.add(project(ad, key), ad)
            for interner, project in zip(interners, self.projectors, strict=True)
        )

    # -- settled slots -------------------------------------------------------------------------
    def _value(self, role: int, job_id: int, slot_id: int, job: ClassAd) -> object:
        key = (role, job_id, slot_id)
        if key in self.values:
            return self.values[key]
        slot = self.slot_interners[role].first[slot_id]
        settings, context = self.evaluator.settings, self.evaluator.settings.context
        value: object
        if role == _REQUIREMENTS:
            value = symmetric_match(slot, job, context=context)
        elif role == _JOB_RANK:
            value = rank(job, slot, context=context)
        else:
            expr = settings.pre_job_rank if role == _PRE else settings.post_job_rank
            value = _WORST
            if expr is not None:
                value = number_or(expr.evaluate(slot, job, context=context), _WORST)
        self.values[key] = value
        return value

    def _real(self, role: int, job_id: int, slot_id: int, job: ClassAd) -> float:
        value = self._value(role, job_id, slot_id, job)
        assert isinstance(value, float)
        return value

    def _ordering(self, job: ClassAd, job_roles: tuple[int, ...]) -> _Ordering:
        ordering_key = job_roles[_JOB_RANK : _POST + 1]
        found = self.orderings.get(ordering_key)
        if found is not None:
            return found
        real = self._real
        rank_j, pre_j, post_j = ordering_key
        keys: list[SortKey] = []
        order = -REASON_ORDER["no_preemption"]
        for position, roles in zip(self.settled, self.slot_roles, strict=True):
            pre = real(_PRE, pre_j, roles[_PRE], job)
            job_rank = real(_JOB_RANK, rank_j, roles[_JOB_RANK], job)
            post = real(_POST, post_j, roles[_POST], job)
            keys.append((-pre, -job_rank, -post, order, -_WORST, position))
        keys.sort()
        found = self.orderings[ordering_key] = _Ordering(keys)
        return found

    def _view(self, job: ClassAd, number: int) -> tuple[int, _JobView]:
        key = self.job_keys[number]
        job_class = self.job_whole.add(key, job)
        if job_class < len(self.job_views):
            return job_class, self.job_views[job_class]
        roles = self._role_ids(self.job_interners, job, key)
        requirement_classes = len(self.slot_interners[_REQUIREMENTS].first)
        matches = [
            self._value(_REQUIREMENTS, roles[_REQUIREMENTS], slot_class, job) is True
            for slot_class in range(requirement_classes)
        ]
        view = _JobView(self._ordering(job, roles), matches, roles)
        self.job_views.append(view)
        return job_class, view

    def _best_settled(
        self, view: _JobView, slot_roles: dict[int, int], remaining: float
    ) -> tuple[Candidate | None, bool]:
        taken, weights, keys = self.table.taken, self.table.weights, view.ordering.keys
        matches = view.matches
        cursor, end = view.cursor, len(keys)
        while cursor < end:
            position = keys[cursor][5]
            if not taken[position] and matches[slot_roles[position]]:
                break
            cursor += 1
        view.cursor = cursor
        limited = False
        for at in range(cursor, end):
            key = keys[at]
            position = key[5]
            if taken[position] or not matches[slot_roles[position]]:
                continue
            if weights[position] <= remaining + EPSILON:
                ad = self.table.ads[position]
                return Candidate(position, "no_preemption", key, weights[position], (), ad), limited
            limited = True
        return None, limited

    # -- running slots -------------------------------------------------------------------------
    def _claimed_classes(
        self, claimed: list[int], roles_of: dict[int, tuple[int, ...]]
    ) -> list[_ClaimedClass]:
        evaluator, table = self.evaluator, self.table
        early = evaluator.settings.consider_early_preemption
        groups: dict[tuple[tuple[int, ...], float, str | None, object], list[int]] = {}
        for position in claimed:
            slot = table.ads[position]
            if not early and evaluator.retiring(slot):
                continue
            remote = evaluator.remote(slot)
            machine = slot.evaluate("Machine") if self.per_machine else None
            key = (roles_of[position], evaluator.current_rank(slot), remote, machine)
            groups.setdefault(key, []).append(position)
        found = []
        for (roles, current, remote, _), members in groups.items():
            eup = math.inf if remote is None else evaluator.accountant.eup(remote)
            found.append(_ClaimedClass(roles, current, remote, eup, tuple(members)))
        return found

    def _slot_rank(self, job_id: int, slot_id: int, job: ClassAd, position: int) -> float:
        key = ("slot rank", job_id, slot_id)
        if key not in self.ephemeral_values:
            context = self.evaluator.settings.context
            self.ephemeral_values[key] = rank(self.table.ads[position], job, context=context)
        return self.ephemeral_values[key]  # type: ignore[return-value]

    def _ephemeral(
        self,
        role: int,
        job_roles: tuple[int, ...],
        kind: _ClaimedClass,
        bidder: Bidder,
        job: ClassAd,
    ) -> object:
        who = bidder.name if self.per_bidder[role] else ""
        # A class is one machine's when Slot<N>_RemoteUserPrio matters, so its first member
        # stands for the machine.
        machine = kind.members[0] if self.per_machine else None
        key = (role, job_roles[role], kind.roles[role], kind.remote, who, machine)
        if key not in self.ephemeral_values:
            evaluator = self.evaluator
            job_e, slot_e = evaluator.ephemeral(job, self.table.ads[kind.members[0]], bidder)
            if role == _PREEMPTION_REQUIREMENTS:
                value: object = evaluator.requirements_allow(job_e, slot_e)
            else:
                value = evaluator.preemption_rank(job_e, slot_e)
            self.ephemeral_values[key] = value
        return self.ephemeral_values[key]

    def _claimed_walk(self, job: ClassAd, job_class: int, view: _JobView, bidder: Bidder) -> _Walk:
        found = self.claimed_walks.get((job_class, bidder.name))
        if found is not None:
            return found
        value, job_roles = self._value, view.roles
        keys: list[SortKey] = []
        for kind in self.claimed_classes:
            roles = kind.roles
            if (
                value(_REQUIREMENTS, job_roles[_REQUIREMENTS], roles[_REQUIREMENTS], job)
                is not True
            ):
                continue
            new_rank = self._slot_rank(job_roles[_JOB_RANK], roles[_JOB_RANK], job, kind.members[0])
            reason: Reason
            if new_rank > kind.current_rank:
                reason = "rank"
            else:
                if kind.remote is None or new_rank < kind.current_rank:
                    continue
                if not bidder.eup < kind.remote_eup:
                    continue
                reason = "priority"
                if not self._ephemeral(_PREEMPTION_REQUIREMENTS, job_roles, kind, bidder, job):
                    continue
            prank = self._ephemeral(_PREEMPTION_RANK, job_roles, kind, bidder, job)
            assert isinstance(prank, float)
            pre = self._real(_PRE, job_roles[_PRE], roles[_PRE], job)
            job_rank = self._real(_JOB_RANK, job_roles[_JOB_RANK], roles[_JOB_RANK], job)
            post = self._real(_POST, job_roles[_POST], roles[_POST], job)
            order = -REASON_ORDER[reason]
            keys.extend((-pre, -job_rank, -post, order, -prank, at) for at in kind.members)
        keys.sort()
        found = self.claimed_walks[(job_class, bidder.name)] = _Walk(keys)
        return found

    def _best_claimed(self, walk: _Walk, remaining: float) -> tuple[Candidate | None, bool]:
        taken, weights, keys = self.table.taken, self.table.weights, walk.keys
        cursor, end = walk.cursor, len(keys)
        while cursor < end and taken[keys[cursor][5]]:
            cursor += 1
        walk.cursor = cursor
        limited = False
        for at in range(cursor, end):
            key = keys[at]
            position = key[5]
            if taken[position]:
                continue
            if weights[position] <= remaining + EPSILON:
                ad = self.table.ads[position]
                reason = _REASONS[key[3]]
                candidate = Candidate(position, reason, key, weights[position], (position,), ad)
                return candidate, limited
            limited = True
        return None, limited

    def _consuming_candidate(self, job: ClassAd, view: _JobView, position: int) -> Candidate | None:
        """What ``evaluator.plain`` answers for a partitionable slot with a consumption
        policy, from values cached per class of equal job and equal slot state."""
        table = self.table
        if table.taken[position]:
            return None
        ad, version = table.ads[position], table.versions[position]
        known = self.consuming_roles.get(position)
        if known is None or known[0] != version:
            known = (version, self._role_ids(self.slot_interners, ad, self.whole.key(ad)))
            self.consuming_roles[position] = known
        roles, job_roles = known[1], view.roles
        if (
            self._value(_REQUIREMENTS, job_roles[_REQUIREMENTS], roles[_REQUIREMENTS], job)
            is not True
        ):
            return None
        pair = (job_roles[_CONSUMPTION], roles[_CONSUMPTION])
        if pair not in self.consumptions:
            self.consumptions[pair] = self.evaluator.consume(job, ad)
        consumed = self.consumptions[pair]
        if consumed is None:
            return None
        pre = self._real(_PRE, job_roles[_PRE], roles[_PRE], job)
        job_rank = self._real(_JOB_RANK, job_roles[_JOB_RANK], roles[_JOB_RANK], job)
        post = self._real(_POST, job_roles[_POST], roles[_POST], job)
        key = (-pre, -job_rank, -post, -REASON_ORDER["no_preemption"], -_WORST, position)
        left, cost = consumed
        return Candidate(position, "no_preemption", key, cost, (), ad, left)

    def _best_consuming(
        self, job: ClassAd, job_class: int, remaining: float
    ) -> tuple[Candidate | None, bool]:
        """The best partitionable slot with a consumption policy for ``job``. Each job class
        keeps its candidates in a heap; slots changed since the class last looked are
        evaluated again (their old entries are dropped when they surface), so the heap's top
        is always the plain algorithm's best."""
        table = self.table
        state = self.consuming.get(job_class)
        if state is None:
            state = self.consuming[job_class] = _Heap([], len(table.changes))
            fresh: Iterable[int] = self.consuming_slots
        else:
            fresh = dict.fromkeys(table.changes[state.seen :])
            state.seen = len(table.changes)
        view = self.job_views[job_class]
        for position in fresh:
            found = self._consuming_candidate(job, view, position)
            if found is not None:
                heapq.heappush(state.entries, (found.key, table.versions[position], found))
        entries, versions, taken = state.entries, table.versions, table.taken
        while entries and (
            taken[entries[0][2].index] or entries[0][1] != versions[entries[0][2].index]
        ):
            heapq.heappop(entries)
        if not entries:
            return None, False
        if entries[0][2].weight <= remaining + EPSILON:
            return entries[0][2], False
        limited = False
        for _, version, candidate in sorted(entries):
            position = candidate.index
            if taken[position] or version != versions[position]:
                continue
            if candidate.weight <= remaining + EPSILON:
                return candidate, limited
            limited = True
        return None, limited

    def choose(
        self,
        job: ClassAd,
        number: int,
        bidder: Bidder,
        remaining: float,
        preempting: float | None = None,
    ) -> Choice:
        """The best candidate for ``job`` costing at most ``remaining`` (a claimed slot's,
        which preempts, at most ``preempting`` when given)."""
        job_class, view = self._view(job, number)
        best, limited = self._best_settled(view, self.requirement_class, remaining)
        found: list[Candidate] = [] if best is None else [best]
        if self.claimed_classes:
            walk = self._claimed_walk(job, job_class, view, bidder)
            claimed, claimed_limited = self._best_claimed(
                walk, remaining if preempting is None else preempting
            )
            limited = limited or claimed_limited
            if claimed is not None:
                found.append(claimed)
        if self.consuming_slots:
            consuming, consuming_limited = self._best_consuming(job, job_class, remaining)
            limited = limited or consuming_limited
            if consuming is not None:
                found.append(consuming)
        for position in self.changing:
            candidate = self.evaluator.plain(job, self.table, position, bidder)
            if candidate is not None:
                found.append(candidate)
        choice = pick(found, remaining, preempting)
        return Choice(choice.candidate, limited or choice.limited)
