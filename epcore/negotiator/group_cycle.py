"""The group layer of a negotiation cycle: allocation rounds, starvation order and each
group's limit (HTCondor's ``hgq_negotiate_with_all_groups``; the allocation itself is
:mod:`epcore.negotiator.groups`).

Each round allocates the pool among the groups for their demand (usage plus idle jobs), then
negotiates group by group in GROUP_SORT_EXPR order, each up to its limit. A round that left
some group below its allocation (its jobs found no slots) frees that part for the next round,
up to GROUP_QUOTA_MAX_ALLOCATION_ROUNDS.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

from epcore.classad import EvalContext
from epcore.negotiator.group_policy import ROOT, GroupPolicy
from epcore.negotiator.groups import (
    Allocation,
    allocate,
    negotiation_limit,
    negotiation_order,
    round_robin_fractions,
)

#: ``spin(submitters, pie, room, reason)``: negotiate those submitters with ``pie`` as the
#: slot weight their shares divide and at most ``room`` more slot weight in all; returns each
#: submitter's first slice and the number of spins.
Spin = Callable[[Sequence[str], float, float, str], tuple[dict[str, float], int]]


@attrs.define
class GroupRun:
    """Which group each submitter is in and each group's usage, kept current as the cycle
    matches (mutable, cycle-local)."""

    group_of: dict[str, str]
    usage: dict[str, float]

    @classmethod
    def build(
        cls, policy: GroupPolicy, usage_by_submitter: Mapping[str, float], submitters: Iterable[str]
    ) -> GroupRun:
        """The groups of every known principal, and each group's usage from its members'."""
        group_of: dict[str, str] = {}
        usage = {ROOT: 0.0, **{spec.name: 0.0 for spec in policy.groups}}
        for name in {*usage_by_submitter, *submitters}:
            group = group_of[name] = policy.group_of(name)
            usage[group] += usage_by_submitter.get(name, 0.0)
        return cls(group_of, usage)

    def charge(self, submitter: str, weight: float) -> None:
        """A match of ``weight`` for ``submitter`` (its own group's usage, as HTCondor counts a
        submitter that negotiated in the root through autoregroup)."""
        group = self.group_of.get(submitter, ROOT)
        self.usage[group] = self.usage.get(group, 0.0) + weight


def group_reason(group: str, limit: float, used: float) -> str:
    """Why a job waits when its group's limit stops it (better-analyze shows this)."""
    return (
        f"group quota: accounting group {group} may use {limit:g} slot weight this cycle "
        f"and uses {used:g}"
    )


def negotiate_groups(
    policy: GroupPolicy,
    pool_size: float,
    weighted: bool,
    idle: Mapping[str, float],
    run: GroupRun,
    spin: Spin,
    consider_preemption: bool = True,
    context: EvalContext | None = None,
) -> tuple[dict[str, float], int, Allocation]:
    """Negotiate every group (submitters in ``idle``'s order, with their idle demand); each
    submitter's first slice, the spins, and the last round's allocation (with each group's
    demand at the start of the cycle as ``requested``)."""
    members: dict[str, list[str]] = {}
    for submitter in idle:
        members.setdefault(run.group_of.get(submitter, ROOT), []).append(submitter)
    if policy.root_autoregroup:
        again = [
            s
            for s in idle
            if (spec := policy.spec(run.group_of.get(s, ROOT))) is not None and spec.autoregroup
        ]
        members.setdefault(ROOT, []).extend(again)
    requested = dict(run.usage)
    for submitter, demand in idle.items():
        group = run.group_of.get(submitter, ROOT)
        requested[group] = requested.get(group, 0.0) + demand
    wanted = dict(requested)
    slices: dict[str, float] = {}
    spins = 0
    rounds = 0
    while True:
        rounds += 1
        allocation = allocate(policy, pool_size, requested, weighted)
        if policy.root_autoregroup:
            shares = tuple(
                attrs.evolve(s, quota=pool_size, allocated=pool_size) if s.name == ROOT else s
                for s in allocation.shares
            )
            allocation = attrs.evolve(allocation, shares=shares)
        any_accepts = any(s.accept_surplus for s in allocation.shares if s.name != ROOT)
        maxdelta = max(
            max(0.0, (s.allocated if any_accepts else s.quota) - run.usage.get(s.name, 0.0))
            for s in allocation.shares
        )
        order = negotiation_order(policy, allocation, run.usage, context)
        for fraction in round_robin_fractions(policy.round_robin_rate, maxdelta):
            for group in order:
                share = allocation.share(group)
                names = members.get(group)
                used = run.usage.get(group, 0.0)
                if share.allocated <= 0 or not names:
                    continue
                if used >= share.allocated and not consider_preemption:
                    continue
                limit = negotiation_limit(policy, allocation, group, run.usage, fraction, weighted)
                room = max(limit - used, 0.0)
                found, count = spin(names, limit, room, group_reason(group, limit, used))
                for name, value in found.items():
                    slices.setdefault(name, value)
                spins += count
        allocated = sum(s.allocated for s in allocation.shares)
        served = sum(min(run.usage.get(s.name, 0.0), s.allocated) for s in allocation.shares)
        if served >= allocated - 1e-9 or rounds >= policy.max_rounds:
            break
        for share in allocation.shares:
            used = run.usage.get(share.name, 0.0)
            if used < share.allocated:
                requested[share.name] = used
    # The report shows the cycle's demand, not the last round's reduced one.
    shares = tuple(attrs.evolve(s, requested=wanted.get(s.name, 0.0)) for s in allocation.shares)
    return slices, spins, attrs.evolve(allocation, shares=shares)
