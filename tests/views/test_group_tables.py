"""condor_userprio's group views: -quotas, -grouprollup and the concurrency limits."""

from __future__ import annotations

from epcore.classad import ClassAd
from epcore.views.group_tables import render_limits, render_quotas, rolled_up
from epcore.views.tables import render_userprio

NOW = 1_700_000_000.0


def account(name: str, used: int, group: bool = False, **extra: object) -> ClassAd:
    """An Accounting ad as the negotiator sends it."""
    ad = ClassAd()
    ad["MyType"] = "Accounting"
    ad["Name"] = name
    ad["Priority"] = 500.0
    ad["PriorityFactor"] = 1000.0
    ad["ResourcesUsed"] = used
    ad["WeightedResourcesUsed"] = float(used)
    ad["LastUsageTime"] = NOW
    ad["IsAccountingGroup"] = group
    for key, value in extra.items():
        ad[key] = value
    return ad


ADS = [
    account(
        "group_physics",
        2,
        True,
        ConfigQuota=20.0,
        EffectiveQuota=20.0,
        SubtreeQuota=20.0,
        SurplusPolicy="no",
        Requested=60.0,
    ),
    account(
        "group_physics.hep",
        15,
        True,
        ConfigQuota=15.0,
        EffectiveQuota=15.0,
        SubtreeQuota=15.0,
        SurplusPolicy="byquota",
        Requested=60.0,
    ),
    account("group_physics.hep.higgs@x.org", 15),
]


def test_quotas_lists_each_group_with_its_figures() -> None:
    """-quotas shows each group's effective and configured quota, surplus, subtree quota and
    demand, as the seed's condor_userprio example does."""
    text = render_quotas(ADS)
    row = next(line for line in text.splitlines() if line.startswith("group_physics.hep "))
    assert row.split() == ["group_physics.hep", "15.00", "15.00", "yes", "15.00", "60"]
    assert "Number of groups: 2" in text


def test_default_listing_leaves_groups_out_and_rollup_adds_subgroups() -> None:
    """The default listing shows only submitters; -grouprollup lists the groups too, a
    group's usage including its subgroups' (2 + 15 = 17 for physics)."""
    plain = render_userprio(ADS, now=NOW)
    assert "group_physics " not in plain and "group_physics.hep.higgs@x.org" in plain
    rolled = render_userprio(rolled_up(ADS), now=NOW, groups=True)
    physics = next(line for line in rolled.splitlines() if line.startswith("group_physics "))
    assert physics.split()[3] == "17"


def test_limits_view_shows_use_and_maximum() -> None:
    """The Accountant ad's ConcurrencyLimit_<name> counts are listed with their maxima."""
    summary = ClassAd()
    summary["MyType"] = "Accountant"
    summary["ConcurrencyLimit_matlab"] = 2.0
    summary["ConcurrencyLimitMax_matlab"] = 2.0
    text = render_limits([*ADS, summary])
    assert ["matlab", "2", "2"] in [line.split() for line in text.splitlines()]
    assert "matlab" not in render_userprio([*ADS, summary], now=NOW)
