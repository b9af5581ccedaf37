"""Hierarchical group quotas: how much of the pool each group may take in a cycle (pure).

This follows HTCondor's negotiator (docs and wave-2 requirements F.2-F.3), not only seed
004's text, which implies NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION defaults to False:

1. Quotas are assigned from the root down. A node's static children get their configured
   quotas (scaled down to fit only without oversubscription), its dynamic children fractions
   of what is left; a node keeps its whole quota with oversubscription, else what its children
   did not take. The root always keeps only what its children did not take.
2. Fair share (post-order): each node is allocated ``min(requested, quota)``; the unused quota
   of a subtree is surplus, shared among the node and its children that accept surplus and
   still ask, in proportion to their subtree quotas, then equally among zero-quota askers.
   Surplus that no one below takes goes up to the parent; the root always accepts it.
3. With unweighted slots, fractional allocations are floored and the fractions handed out
   again one slot at a time.

The cycle then negotiates group by group in GROUP_SORT_EXPR order, each up to
:func:`negotiation_limit` (strict enforcement caps a group under every ancestor that does not
accept surplus).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs

from epcore.classad import ClassAd, EvalContext
from epcore.negotiator.group_policy import ROOT, GroupPolicy, GroupSpec

#: Sort value of a group whose GROUP_SORT_EXPR is not a number (HTCondor's FLT_MAX).
UNSORTABLE = 3.4028234663852886e38
_PRECISION = 1e-9


@attrs.define
class _Node:
    """One group during the allocation (mutable, local to :func:`allocate`)."""

    spec: GroupSpec
    parent: _Node | None
    children: list[_Node] = attrs.field(factory=list)
    quota: float = 0.0
    subtree_quota: float = 0.0
    requested: float = 0.0
    subtree_requested: float = 0.0
    allocated: float = 0.0

    @property
    def name(self) -> str:
        return self.spec.name


@attrs.frozen
class GroupShare:
    """What the allocation gave one group: ``quota`` (its computed quota), ``subtree_quota``
    (the quota its subtree received), ``requested`` (its demand), ``allocated`` (quota plus the
    surplus it may take)."""

    name: str
    parent: str | None
    config_quota: float
    static: bool
    accept_surplus: bool
    quota: float
    subtree_quota: float
    requested: float
    allocated: float


@attrs.frozen
class Allocation:
    """Every group's share in one allocation round, the root first, then in GROUP_NAMES order
    (parents before children); ``surplus`` is what no group could use."""

    shares: tuple[GroupShare, ...]
    surplus: float

    def share(self, name: str) -> GroupShare:
        """The share of the group named ``name`` (exactly as the policy spells it)."""
        for share in self.shares:
            if share.name == name:
                return share
        raise KeyError(name)


def _tree(policy: GroupPolicy) -> tuple[_Node, list[_Node]]:
    root = _Node(GroupSpec(ROOT, 0.0, False, True, policy.root_autoregroup), None)
    nodes = [root]
    by_name = {ROOT: root}
    for spec in policy.groups:
        parent = by_name[spec.parent.lower() if spec.parent != ROOT else ROOT]
        node = _Node(spec, parent)
        parent.children.append(node)
        by_name[spec.name.lower()] = node
        nodes.append(node)
    return root, nodes


def _assign_quotas(node: _Node, quota: float, oversubscription: bool) -> None:
    if quota <= 0:
        return  # the subtree keeps quotas of zero
    node.subtree_quota = quota
    static_sum = sum(c.spec.config_quota for c in node.children if c.spec.static)
    dynamic_sum = sum(c.spec.config_quota for c in node.children if not c.spec.static)
    static_pot = static_sum if oversubscription else min(static_sum, quota)
    dynamic_pot = max(0.0, quota - static_pot)
    static_scale = static_pot / (static_sum if static_sum > 0 else 1.0)
    dynamic_scale = dynamic_pot / max(dynamic_sum, 1.0)
    given = 0.0
    for child in node.children:
        scale = static_scale if child.spec.static else dynamic_scale
        share = max(child.spec.config_quota * scale, 0.0)
        _assign_quotas(child, share, oversubscription)
        given += share
    own = quota if oversubscription and node.parent is not None else quota - given
    node.quota = max(own, 0.0)


def _fairshare(node: _Node) -> float:
    """Allocate ``node``'s subtree; the surplus it returns to its parent."""
    node.allocated = min(node.requested, node.quota)
    node.requested -= node.allocated
    node.subtree_requested = node.requested
    surplus = node.quota - node.allocated
    if not node.children:
        return surplus
    for child in node.children:
        surplus += _fairshare(child)
        if child.spec.accept_surplus:
            node.subtree_requested += child.subtree_requested
    return _allocate_surplus(node, surplus)


def _allocate_surplus(node: _Node, surplus: float) -> float:
    """Share ``surplus`` among ``node`` and its children; what nobody below could take."""
    if surplus <= 0:
        return 0.0
    if node.subtree_requested <= 0:
        return surplus
    # The node competes with its children as one more peer that accepts surplus, with its
    # own quota and its own outstanding request.
    peers = [*node.children, node]
    weights = [c.subtree_quota for c in node.children] + [node.quota]
    asks = [
        c.subtree_requested if c.spec.accept_surplus and c.subtree_requested > 0 else 0.0
        for c in node.children
    ] + [max(node.requested, 0.0)]
    total = node.subtree_requested
    given = [0.0] * len(peers)
    if surplus >= total:
        given = list(asks)
        surplus -= total
    else:
        surplus = _surplus_loop(weights, asks, given, surplus)
        surplus = _surplus_loop([1.0] * len(peers), asks, given, surplus)
    for child, amount in zip(node.children, given, strict=False):
        if amount > 0:
            _allocate_surplus(child, amount)
    node.allocated += given[-1]
    node.requested -= given[-1]
    # What the subtree still asks for once this surplus is handed out: the parent (or a
    # later call for the same node) must not hand the same request out twice.
    node.subtree_requested = total - sum(given)
    return surplus


def _surplus_loop(
    weights: list[float], asks: list[float], given: list[float], surplus: float
) -> float:
    """Hand out ``surplus`` in proportion to ``weights`` among the peers still asking, until it
    is gone or nobody (with weight) asks; the surplus left."""
    while surplus > 0:
        norm = sum(w for w, ask in zip(weights, asks, strict=True) if ask > 0)
        if norm <= 0:
            break
        capped = False
        handed = 0.0
        for j, (weight, ask) in enumerate(zip(weights, asks, strict=True)):
            if ask <= 0:
                continue
            amount = surplus * weight / norm
            if amount > ask:
                amount, capped = ask, True
            given[j] += amount
            asks[j] -= amount
            handed += amount
        surplus -= handed
        if not capped or surplus < 0:
            surplus = 0.0  # everything was handed out; what is left is rounding noise
    return surplus


def _recover_remainders(node: _Node) -> float:
    """Floor ``node``'s subtree's allocations; the fractions become surplus, handed out again
    a slot at a time (:func:`_round_robin`). What nobody below could take is returned."""
    surplus = node.allocated - math.floor(node.allocated + _PRECISION)
    surplus = max(surplus, 0.0)
    node.allocated = round(node.allocated - surplus)
    node.requested = round(node.requested + surplus)
    node.subtree_requested = node.requested
    if not node.children:
        return surplus
    for child in node.children:
        surplus += _recover_remainders(child)
        if child.spec.accept_surplus:
            node.subtree_requested += child.subtree_requested
    return _round_robin(node, surplus)


def _round_robin(node: _Node, surplus: float) -> float:
    """Whole slots of ``surplus`` to ``node`` and its children that accept surplus and ask,
    larger subtree quota, then larger demand first, at most ``max(1, surplus / askers)`` each
    per pass (HTCondor orders by the time each was last served first; every group here counts
    as served equally long ago)."""
    if node.subtree_requested <= 0 or surplus < 1:
        return surplus
    peers = [*node.children, node]
    quotas = [c.subtree_quota for c in node.children] + [node.quota]
    asks = [
        math.floor(c.subtree_requested) if c.spec.accept_surplus else 0.0 for c in node.children
    ] + [math.floor(node.requested)]
    order = sorted(range(len(peers)), key=lambda j: (-quotas[j], -asks[j], j))
    given = [0.0] * len(peers)
    requested = sum(asks)
    while surplus >= 1 and requested > 0:
        outstanding = sum(1 for ask in asks if ask > 0)
        each = max(1.0, math.floor(surplus / outstanding))
        handed = 0.0
        for j in order:
            if asks[j] <= 0:
                continue
            amount = min(asks[j], each)
            given[j] += amount
            asks[j] -= amount
            handed += amount
            surplus -= amount
            requested -= amount
            if surplus < each:
                break
        if handed < 1:
            break
    for child, amount in zip(node.children, given, strict=False):
        if amount > 0:
            _round_robin(child, amount)
    node.allocated += given[-1]
    node.requested -= given[-1]
    node.subtree_requested = requested
    return surplus


def allocate(
    policy: GroupPolicy,
    pool_size: float,
    requested: Mapping[str, float],
    weighted: bool = True,
) -> Allocation:
    """One allocation round: quotas from ``pool_size`` and each group's share of the pool for
    the demand ``requested`` (by group name; missing groups ask nothing). ``weighted`` False
    rounds to whole slots."""
    root, nodes = _tree(policy)
    _assign_quotas(root, pool_size, policy.oversubscription)
    for node in nodes:
        node.requested = max(requested.get(node.name, 0.0), 0.0)
    surplus = _fairshare(root)
    if not weighted:
        surplus += _recover_remainders(root)
    shares = tuple(
        GroupShare(
            name=node.name,
            parent=node.parent.name if node.parent is not None else None,
            config_quota=node.spec.config_quota,
            static=node.spec.static,
            accept_surplus=node.spec.accept_surplus,
            quota=node.quota,
            subtree_quota=node.subtree_quota,
            requested=max(requested.get(node.name, 0.0), 0.0),
            allocated=node.allocated,
        )
        for node in nodes
    )
    return Allocation(shares, surplus)


def sort_key(
    policy: GroupPolicy, share: GroupShare, in_use: float, context: EvalContext | None = None
) -> float:
    """GROUP_SORT_EXPR in the group's sort ad; not a number sorts last but for the root."""
    ad = ClassAd()
    ad["AccountingGroup"] = share.name
    ad["GroupQuota"] = share.quota
    ad["GroupResourcesAllocated"] = share.allocated
    ad["GroupResourcesInUse"] = in_use
    try:
        value = policy.sort_expr.evaluate(ad, context=context)
    except Exception:  # a broken sort expression must not stop the cycle (HTCondor: FLT_MAX)
        return UNSORTABLE
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return UNSORTABLE
    return float(value)


def negotiation_order(
    policy: GroupPolicy,
    allocation: Allocation,
    usage: Mapping[str, float],
    context: EvalContext | None = None,
) -> list[str]:
    """The groups in the order they negotiate: ascending GROUP_SORT_EXPR (ties in GROUP_NAMES
    order), the root last when autoregroup is on."""
    keyed = []
    for position, share in enumerate(allocation.shares):
        key = sort_key(policy, share, usage.get(share.name, 0.0), context)
        last = share.name == ROOT and policy.root_autoregroup
        keyed.append((last, key, position, share.name))
    return [name for *_, name in sorted(keyed)]


def subtree_usage(allocation: Allocation, usage: Mapping[str, float]) -> dict[str, float]:
    """Each group's usage plus that of every group below it."""
    totals = {share.name: usage.get(share.name, 0.0) for share in allocation.shares}
    for share in reversed(allocation.shares):  # children come after their parents
        if share.parent is not None:
            totals[share.parent] += totals[share.name]
    return totals


def negotiation_limit(
    policy: GroupPolicy,
    allocation: Allocation,
    name: str,
    usage: Mapping[str, float],
    fraction: float = 1.0,
    weighted: bool = True,
) -> float:
    """The slot weight group ``name`` may hold after negotiating (usage included).

    ``fraction`` is the weighted round robin's progress (1.0 with the default
    GROUP_QUOTA_ROUND_ROBIN_RATE). Strict enforcement caps the new allocation under every
    ancestor (the group itself included) that does not accept surplus, at its configured
    (static) or received (dynamic) quota less its subtree's usage.
    """
    share = allocation.share(name)
    own = usage.get(name, 0.0)
    target = max(share.allocated, share.quota)
    delta = max(0.0, target - own)
    limit = min(own + delta * fraction if delta > 0 else target, target)
    if not weighted:
        limit = math.floor(limit + _PRECISION)
    if not policy.strict:
        return limit
    below = subtree_usage(allocation, usage)
    new = limit - own
    walk: str | None = name
    while walk is not None:
        ancestor = allocation.share(walk)
        if not ancestor.accept_surplus:
            cap = ancestor.config_quota if ancestor.static else ancestor.subtree_quota
            new = min(new, max(cap - below[walk], 0.0))
        walk = ancestor.parent
    return new + own


def round_robin_fractions(rate: float, maxdelta: float) -> list[float]:
    """The weighted round robin's passes as fractions of each group's delta: one pass (1.0)
    with the default rate, else ``rate``, ``2 rate`` ... up to ``maxdelta``."""
    if maxdelta <= 0 or rate >= maxdelta:
        return [1.0]
    steps = []
    n = 0.0
    while n < maxdelta:
        n = min(n + rate, maxdelta)
        steps.append(n / maxdelta)
    return steps
