"""What ``ep userprio`` shows of groups and concurrency limits: the accountant's ads with each
group's quota figures from the last cycle, and a summary ad with each limit's use (pure)."""

from __future__ import annotations

from epcore.classad import ClassAd
from epcore.negotiator.accountant import Accountant
from epcore.negotiator.group_policy import ROOT
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
