"""condor_userprio's group views: ``-quotas`` (each group's quotas and demand) and
``-grouprollup`` (a group's usage with its subgroups'), and the concurrency limits' use."""

from __future__ import annotations

from collections.abc import Sequence

from epcore.classad import ClassAd

#: -quotas' columns: the two heading lines, the width.
_QUOTA_COLUMNS = (
    ("Effective", "Quota", 9),
    ("Config", "Quota", 9),
    ("Use", "Surplus", 7),
    ("Subtree", "Quota", 9),
    ("Requested", "Resources", 9),
)
_ROLLED = ("ResourcesUsed", "WeightedResourcesUsed", "AccumulatedUsage", "WeightedAccumulatedUsage")


def _number(ad: ClassAd, name: str) -> float:
    value = ad.evaluate(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value)


def group_ads(ads: Sequence[ClassAd]) -> list[ClassAd]:
    """The accounting groups' ads (IsAccountingGroup), the root ``<none>`` first."""
    found = [ad for ad in ads if ad.evaluate("IsAccountingGroup") is True]
    return sorted(
        found,
        key=lambda ad: (str(ad.evaluate("Name")) != "<none>", str(ad.evaluate("Name")).lower()),
    )


def render_quotas(ads: Sequence[ClassAd]) -> str:
    """condor_userprio -quotas: each group's effective and configured quota, whether it takes
    surplus, its subtree's quota and the resources its jobs ask for."""
    groups = group_ads(ads)
    width = max([22, *(len(str(ad.evaluate("Name"))) + 2 for ad in groups)])
    head = " ".join(f"{c[0]:>{c[2]}}" for c in _QUOTA_COLUMNS)
    sub = " ".join(f"{c[1]:>{c[2]}}" for c in _QUOTA_COLUMNS)
    rule = "-" * width + "".join(" " + "-" * c[2] for c in _QUOTA_COLUMNS)
    lines = [f"{'Group':<{width}} {head}", f"{'Name':<{width}} {sub}", rule]
    for ad in groups:
        surplus = "yes" if ad.evaluate("SurplusPolicy") == "byquota" else "no"
        lines.append(
            f"{ad.evaluate('Name')!s:<{width}} "
            f"{_number(ad, 'EffectiveQuota'):9.2f} {_number(ad, 'ConfigQuota'):9.2f} "
            f"{surplus:<7} {_number(ad, 'SubtreeQuota'):9.2f} "
            f"{_number(ad, 'Requested'):9g}"
        )
    lines += [rule, f"Number of groups: {len(groups)}"]
    return "\n".join(lines) + "\n"


def rolled_up(ads: Sequence[ClassAd]) -> list[ClassAd]:
    """The ads with each group's usage summed with its subgroups' (-grouprollup)."""
    groups = {str(ad.evaluate("Name")).lower(): ad for ad in group_ads(ads)}
    result = []
    for ad in ads:
        name = str(ad.evaluate("Name")).lower()
        if name not in groups or name == "<none>":
            result.append(ad)
            continue
        total = ad.copy()
        for other, sub in groups.items():
            if other.startswith(name + "."):
                for attribute in _ROLLED:
                    total[attribute] = _number(total, attribute) + _number(sub, attribute)
        total["ResourcesUsed"] = int(_number(total, "ResourcesUsed"))
        result.append(total)
    return result


def render_limits(ads: Sequence[ClassAd]) -> str:
    """Each concurrency limit's use and maximum, from the accountant's summary ad."""
    lines = [f"{'Concurrency Limit':<30} {'In Use':>10} {'Maximum':>12}", "-" * 54]
    for ad in ads:
        if ad.evaluate("MyType") != "Accountant":
            continue
        for attribute in sorted(ad):
            if attribute.lower().startswith("concurrencylimit_"):
                name = attribute[len("ConcurrencyLimit_") :]
                most = _number(ad, f"ConcurrencyLimitMax_{name}")
                lines.append(f"{name:<30} {_number(ad, attribute):10g} {most:12g}")
    return "\n".join(lines) + "\n"
