"""What ``ep userprio`` shows of groups and concurrency limits: the accountant's ads with each
group's quota figures from the last cycle, and a summary ad with each limit's use (pure).

:func:`numbered_report` turns those ads into the one ad GET_PRIORITY answers over CEDAR, as
the accountant's ReportState numbers it (condor_negotiator.V6/Accountant.cpp): the groups
first, breadth first from the root ``<none>`` (1), a group's AccountingGroup naming its
parent; then the submitters, AccountingGroup naming their group; NumSubmittors counting both;
each concurrency limit's ``ConcurrencyLimit_<name>`` unnumbered. With ``rollup``
(GET_PRIORITY_ROLLUP) a group's usage adds its subgroups' (the times take the earliest start
and the latest use) and its priority is 0, as HTCondor's rollup reports them.
"""

from __future__ import annotations

from epcore.classad import ClassAd
from epcore.negotiator.accountant import Accountant
from epcore.negotiator.group_policy import ROOT, GroupPolicy
from epcore.negotiator.limits import limit_ad_attributes
from epcore.negotiator.records import Cycle


def userprio_ads(accountant: Accountant, cycle: Cycle | None) -> list[ClassAd]:
    """One Accounting ad per record; a group's carries ConfigQuota, EffectiveQuota,
    SubtreeQuota, SurplusPolicy, Requested and GroupResourcesAllocated (condor_userprio
    -quotas' columns; the root ``<none>`` gets an ad of its own), then, when any concurrency
    limit is in use, an ``Accountant`` ad with ``ConcurrencyLimit_<name>`` counts."""
    ads = accountant.to_ads()
    if cycle is None:
        return ads
    shares = {share.name: share for share in cycle.groups}
    named = {str(ad.evaluate("Name")): ad for ad in ads}
    for name, share in shares.items():
        ad = named.get(name)
        if ad is None:
            ad = ClassAd()
            ad["MyType"] = "Accounting"
            ad["Name"] = name
            ad["IsAccountingGroup"] = True
            ad["AccountingGroup"] = name
            ad["Priority"] = 0.0
            ad["PriorityFactor"] = 1.0
            ad["ResourcesUsed"] = 0
            ad["WeightedResourcesUsed"] = cycle.group_usage.get(name, 0.0)
            ads.append(ad)
        ad["ConfigQuota"] = share.config_quota if name != ROOT else 0.0
        ad["EffectiveQuota"] = share.quota
        ad["SubtreeQuota"] = share.subtree_quota
        ad["SurplusPolicy"] = "byquota" if share.accept_surplus else "no"
        ad["Requested"] = share.requested
        ad["GroupResourcesAllocated"] = share.allocated
    if cycle.limits:
        summary = ClassAd()
        summary["MyType"] = "Accountant"
        for attribute, count in limit_ad_attributes(
            {name: count for name, (count, _) in cycle.limits.items()}
        ).items():
            summary[attribute] = count
        for name, (_, most) in cycle.limits.items():
            summary[f"ConcurrencyLimitMax_{name.replace('.', '_')}"] = most
        ads.append(summary)
    return ads


#: Attributes of a number in the report and the type HTCondor gives each (ints stay ints
#: there: condor_userprio reads Ceiling, ResourcesUsed and the times with LookupInteger).
_INTEGERS = ("Ceiling", "Floor", "ResourcesUsed", "BeginUsageTime", "LastUsageTime")
_FLOATS = (
    "Priority",
    "PriorityFactor",
    "WeightedResourcesUsed",
    "AccumulatedUsage",
    "WeightedAccumulatedUsage",
)
#: A group's quota figures (report's :func:`userprio_ads`), sent as they are.
_GROUP_EXTRAS = (
    "EffectiveQuota",
    "ConfigQuota",
    "SubtreeQuota",
    "SurplusPolicy",
    "Requested",
    "GroupResourcesAllocated",
)
_SUMMED = ("ResourcesUsed", "WeightedResourcesUsed", "AccumulatedUsage", "WeightedAccumulatedUsage")


def _number(ad: ClassAd, name: str) -> float:
    value = ad.evaluate(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value)


def _entry(ad: ClassAd, group: str, is_group: bool) -> dict[str, object]:
    entry: dict[str, object] = {
        "Name": str(ad.evaluate("Name")),
        "IsAccountingGroup": is_group,
        "AccountingGroup": group,
    }
    for name in _FLOATS:
        entry[name] = _number(ad, name)
    for name in _INTEGERS:
        entry[name] = int(_number(ad, name)) if name in ad else (-1 if name == "Ceiling" else 0)
    return entry


def _group_order(policy: GroupPolicy) -> list[str]:
    """Every group's name breadth first from the root, as ReportState numbers them."""
    order = [ROOT]
    for name in order:
        order.extend(spec.name for spec in policy.children(name))
    return order


def numbered_report(
    ads: list[ClassAd], policy: GroupPolicy, last_update: int, *, rollup: bool = False
) -> ClassAd:
    """GET_PRIORITY's (or, with ``rollup``, GET_PRIORITY_ROLLUP's) ad from the ads of
    :func:`userprio_ads` (module docstring)."""
    accounting = [ad for ad in ads if ad.evaluate("MyType") == "Accounting"]
    groups = {
        str(ad.evaluate("Name")).lower(): ad
        for ad in accounting
        if ad.evaluate("IsAccountingGroup") is True
    }
    order = [name for name in _group_order(policy) if name.lower() in groups]
    if rollup:
        groups = {name: ad.copy() for name, ad in groups.items()}
        # Deepest first, so that a group's total holds its whole subtree before its parent
        # adds it.
        for name in reversed(order):
            child = groups[name.lower()]
            child["Priority"] = 0.0
            spec = policy.spec(name)
            parent = None if spec is None else groups.get(spec.parent.lower())
            if parent is None:
                continue
            for attribute in _SUMMED:
                parent[attribute] = _number(parent, attribute) + _number(child, attribute)
            for attribute, pick in (("BeginUsageTime", min), ("LastUsageTime", max)):
                parent[attribute] = pick(_number(parent, attribute), _number(child, attribute))
    entries: list[dict[str, object]] = []
    for name in order:
        ad = groups[name.lower()]
        spec = policy.spec(name)
        entry = _entry(ad, ROOT if spec is None else spec.parent, True)
        for extra in _GROUP_EXTRAS:
            if extra in ad:
                entry[extra] = ad.evaluate(extra)
        if spec is not None and spec.autoregroup:
            entry["SurplusPolicy"] = "regroup"
        entries.append(entry)
    submitters = sorted(
        (ad for ad in accounting if ad.evaluate("IsAccountingGroup") is not True),
        key=lambda ad: str(ad.evaluate("Name")),
    )
    for ad in submitters:
        group = ad.evaluate("AccountingGroup")
        entry = _entry(ad, group if isinstance(group, str) else ROOT, False)
        entry["SubmitterShare"] = 0.0
        entry["SubmitterLimit"] = 0.0
        entries.append(entry)
    report = ClassAd()
    report["LastUpdate"] = last_update
    for number, entry in enumerate(entries, 1):
        for name, value in entry.items():
            report[f"{name}{number}"] = value
    report["NumSubmittors"] = len(entries)
    for ad in ads:
        if ad.evaluate("MyType") == "Accountant":
            for name in ad:
                if name.lower().startswith("concurrencylimit"):
                    report[name] = ad.evaluate(name)
    return report
