"""Seed 004's group quota examples computed by the pure allocator (epcore.negotiator.groups).

Where the seed's text and HTCondor's real defaults differ, each test says which numbers it
checks: the seed implies NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION is False by default, while
HTCondor's parameter table (23.9 and later) makes it True.
"""

from __future__ import annotations

import pytest

from epcore.config import Config
from epcore.errors import PoolError
from epcore.negotiator.group_policy import ROOT, GroupPolicy
from epcore.negotiator.groups import (
    allocate,
    negotiation_limit,
    negotiation_order,
    round_robin_fractions,
)

TWO_GROUPS = """
GROUP_NAMES = group_physics, group_chemistry
GROUP_QUOTA_group_physics = 20
GROUP_QUOTA_group_chemistry = 10
"""
SUBGROUPS = """
GROUP_NAMES = group_physics, group_physics.hep, group_physics.lep, group_chemistry
GROUP_QUOTA_group_physics     =   20
GROUP_QUOTA_group_physics.hep =   15
GROUP_QUOTA_group_physics.lep =    5
GROUP_QUOTA_group_chemistry   =   10
"""


def policy(text: str) -> GroupPolicy:
    """The group policy of a configuration text."""
    return GroupPolicy.from_config(Config.from_text(text))


def quotas(text: str, pool: float) -> dict[str, float]:
    """Each group's computed quota in a pool of ``pool`` slots, nobody asking."""
    return {s.name: s.quota for s in allocate(policy(text), pool, {}).shares}


def test_static_quotas_of_the_thirty_slot_pool() -> None:
    """Seed: 30 slots, physics 20 and chemistry 10: the quotas are 20 and 10, the root gets 0."""
    assert quotas(TWO_GROUPS, 30) == {ROOT: 0.0, "group_physics": 20.0, "group_chemistry": 10.0}


def test_shrunken_pool_scales_static_quotas_without_oversubscription() -> None:
    """Seed numbers, with NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = False set explicitly: a
    pool shrunk to 15 slots scales 20 and 10 down to 10 and 5."""
    found = quotas(TWO_GROUPS + "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = False\n", 15)
    assert found == {ROOT: 0.0, "group_physics": 10.0, "group_chemistry": 5.0}


def test_shrunken_pool_keeps_static_quotas_with_the_real_default() -> None:
    """Real default (oversubscription True, unlike the seed's text): 20 and 10 are kept in a
    15-slot pool and the root keeps nothing."""
    assert quotas(TWO_GROUPS, 15) == {ROOT: 0.0, "group_physics": 20.0, "group_chemistry": 10.0}


def test_dynamic_quotas_are_fractions_of_the_pool() -> None:
    """Seed: dynamic 0.66 and 0.33 of 30 slots are 19.8 and 9.9; the root keeps the rest."""
    text = """
    GROUP_NAMES = group_physics, group_chemistry
    GROUP_QUOTA_DYNAMIC_group_chemistry = 0.33
    GROUP_QUOTA_DYNAMIC_group_physics = 0.66
    """
    found = quotas(text, 30)
    assert found["group_physics"] == pytest.approx(19.8)
    assert found["group_chemistry"] == pytest.approx(9.9)
    assert found[ROOT] == pytest.approx(0.3)


def test_dynamic_subgroups_are_fractions_of_their_parent() -> None:
    """Seed: hep gets 75% of the 66.667% physics gets, so 15 of 30 slots, lep 5, chemistry
    10 (rounded as the seed rounds them); physics keeps its whole 20 (real default)."""
    text = """
    GROUP_NAMES = group_physics, group_physics.hep, group_physics.lep, group_chemistry
    GROUP_QUOTA_DYNAMIC_group_chemistry   =   0.33334
    GROUP_QUOTA_DYNAMIC_group_physics     =   0.66667
    GROUP_QUOTA_DYNAMIC_group_physics.hep =   0.75
    GROUP_QUOTA_DYNAMIC_group_physics.lep =   0.25
    """
    found = quotas(text, 30)
    assert found["group_physics.hep"] == pytest.approx(15.0, abs=1e-3)
    assert found["group_physics.lep"] == pytest.approx(5.0, abs=1e-3)
    assert found["group_chemistry"] == pytest.approx(10.0, abs=1e-3)
    assert found["group_physics"] == pytest.approx(20.0, abs=1e-3)


def test_static_subgroups() -> None:
    """Seed's static subgroups: hep 15, lep 5, chemistry 10; physics keeps 20 with the real
    default and only what its children left (0) without oversubscription."""
    found = quotas(SUBGROUPS, 30)
    assert found == {
        ROOT: 0.0,
        "group_physics": 20.0,
        "group_physics.hep": 15.0,
        "group_physics.lep": 5.0,
        "group_chemistry": 10.0,
    }
    strict = quotas(SUBGROUPS + "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = False\n", 30)
    assert strict["group_physics"] == 0.0
    assert strict["group_physics.hep"] == 15.0


def test_userprio_example_allocations() -> None:
    """Seed's condor_userprio example: hep and lep with 60 jobs each and no surplus get their
    quotas, 15 and 5."""
    found = allocate(policy(SUBGROUPS), 30, {"group_physics.hep": 60, "group_physics.lep": 60})
    assert found.share("group_physics.hep").allocated == 15.0
    assert found.share("group_physics.lep").allocated == 5.0


def test_subgroups_accepting_surplus_stay_within_their_parents_quota() -> None:
    """Seed's surplus case: hep and lep accept surplus, physics does not: together they may
    not exceed physics' 20 (strict enforcement caps the limits), whatever they ask."""
    text = SUBGROUPS + (
        "GROUP_ACCEPT_SURPLUS_group_physics = false\n"
        "GROUP_ACCEPT_SURPLUS_group_physics.lep = true\n"
        "GROUP_ACCEPT_SURPLUS_group_physics.hep = true\n"
    )
    groups = policy(text)
    demand = {"group_physics.hep": 60.0, "group_physics.lep": 60.0}
    found = allocate(groups, 30, demand)
    assert found.share("group_physics.hep").allocated > 15.0  # surplus was offered
    usage = {"group_physics.hep": 15.0, "group_physics.lep": 0.0}
    hep = negotiation_limit(groups, found, "group_physics.hep", usage)
    lep = negotiation_limit(groups, found, "group_physics.lep", usage)
    assert hep == 20.0 and lep == 5.0  # 5 free under physics, whoever takes them


def test_surplus_goes_to_accepting_group_when_another_idles() -> None:
    """With GROUP_ACCEPT_SURPLUS true, chemistry takes physics' unused quota."""
    text = TWO_GROUPS + "GROUP_ACCEPT_SURPLUS = true\n"
    found = allocate(policy(text), 30, {"group_physics": 5, "group_chemistry": 40})
    assert found.share("group_physics").allocated == 5.0
    assert found.share("group_chemistry").allocated == 25.0


def test_without_surplus_unused_quota_stays_unused() -> None:
    """With surplus off (the default) chemistry stays at its 10 while physics idles; the
    root keeps the unused part."""
    found = allocate(policy(TWO_GROUPS), 30, {"group_physics": 5, "group_chemistry": 40})
    assert found.share("group_chemistry").allocated == 10.0
    assert found.surplus == 15.0


def test_strict_priority_group_negotiates_first() -> None:
    """Seed's strict priority: physics with a quota of a million is the most starved group
    and negotiates first, chemistry (quota above the pool) next, the root last."""
    text = """
    GROUP_NAMES = group_physics, group_chemistry
    GROUP_QUOTA_group_physics = 1000000
    GROUP_QUOTA_group_chemistry = 100
    """
    groups = policy(text)
    found = allocate(groups, 30, {"group_physics": 40, "group_chemistry": 40})
    usage = {"group_physics": 25.0, "group_chemistry": 5.0}
    assert negotiation_order(groups, found, usage) == ["group_physics", "group_chemistry", ROOT]


def test_default_sort_puts_zero_quota_groups_before_root() -> None:
    """GROUP_SORT_EXPR's default: a group with quota 0 sorts at 3.3e38, the root at 3.4e38."""
    text = TWO_GROUPS + "GROUP_NAMES = $(GROUP_NAMES), group_empty\n"
    groups = policy(text)
    found = allocate(groups, 30, {})
    order = negotiation_order(groups, found, {"group_physics": 19.0, "group_chemistry": 1.0})
    assert order == ["group_chemistry", "group_physics", "group_empty", ROOT]


def test_unweighted_allocations_are_whole_slots() -> None:
    """With slot weights off, fractional allocations are floored and the fractions handed out
    again whole: 0.5/0.5 of 5 slots asked by both gives 3 and 2 (larger demand first)."""
    text = """
    GROUP_NAMES = a, b
    GROUP_QUOTA_DYNAMIC_a = 0.5
    GROUP_QUOTA_DYNAMIC_b = 0.5
    GROUP_ACCEPT_SURPLUS = true
    """
    found = allocate(policy(text), 5, {"a": 10, "b": 9}, weighted=False)
    allocated = sorted(s.allocated for s in found.shares if s.name != ROOT)
    assert allocated == [2.0, 3.0]


def test_group_of_takes_the_name_as_htcondor_does() -> None:
    """Submitter names map to the deepest defined group before the last dot; plain users,
    names without a domain and undefined groups go to the root; case is ignored."""
    groups = policy(SUBGROUPS)
    assert groups.group_of("group_physics.hep.higgs@x.org") == "group_physics.hep"
    assert groups.group_of("GROUP_PHYSICS.einstein@x.org") == "group_physics"
    assert groups.group_of("group_physics.nope.bob@x.org") == "group_physics"
    assert groups.group_of("alice@x.org") == ROOT
    assert groups.group_of("group_physics.hep") == ROOT
    assert groups.group_of("john.smith@x.org") == ROOT


def test_orphan_and_reserved_group_names_are_ignored() -> None:
    """A group whose parent is not defined, a duplicate and ``<none>`` are left out."""
    groups = policy("GROUP_NAMES = a, A, b.c, <none>, a.d\nGROUP_QUOTA_a = 1\n")
    assert [spec.name for spec in groups.groups] == ["a", "a.d"]


@pytest.mark.parametrize(
    "line",
    ["GROUP_QUOTA_a = -1", "GROUP_QUOTA_DYNAMIC_a = 1.5", "GROUP_QUOTA_a = lots"],
)
def test_unusable_quota_is_an_error_naming_the_knob(line: str) -> None:
    """A negative static quota, a dynamic one above 1 or a non-number is a PoolError."""
    with pytest.raises(PoolError, match="GROUP_QUOTA"):
        policy(f"GROUP_NAMES = a\n{line}\n")


def test_round_robin_rate_steps_through_the_largest_delta() -> None:
    """GROUP_QUOTA_ROUND_ROBIN_RATE's default gives one pass; a rate of 2 over a delta of 5
    gives passes at 2, 4 and 5."""
    assert round_robin_fractions(1.0e100, 5.0) == [1.0]
    assert round_robin_fractions(2.0, 5.0) == [0.4, 0.8, 1.0]
