"""What ep userprio gets from the negotiator about groups and concurrency limits."""

from __future__ import annotations

from negotiator_helpers import DOMAIN, config, cycle, job, slot

from epcore.interfaces import SubmitterJobs
from epcore.negotiator import Accountant
from epcore.negotiator.report import userprio_ads

GROUPS = """
GROUP_NAMES = physics, chemistry
GROUP_QUOTA_physics = 3
GROUP_QUOTA_DYNAMIC_chemistry = 0.5
GROUP_ACCEPT_SURPLUS_chemistry = true
MATLAB_LIMIT = 1
"""


def test_group_ads_carry_quotas_and_the_summary_counts_limits() -> None:
    """After a cycle, each group's ad has its quotas, surplus policy and demand (the root
    too), and the Accountant ad counts each concurrency limit with its maximum."""
    cfg = config(GROUPS)
    jobs = tuple(
        job(1, p, owner="einstein", extra={"ConcurrencyLimits": "matlab"}) for p in range(5)
    )
    result = cycle(
        cfg, [slot(n) for n in range(1, 5)], [SubmitterJobs(f"physics.einstein@{DOMAIN}", jobs)]
    )
    accountant = Accountant.empty(cfg).update_usage([], 0.0)
    ads = {str(ad.evaluate("Name")): ad for ad in userprio_ads(accountant, result) if "Name" in ad}
    physics = ads["physics"]
    assert [physics.evaluate(n) for n in ("ConfigQuota", "EffectiveQuota", "SurplusPolicy")] == [
        3.0,
        3.0,
        "no",
    ]
    assert physics.evaluate("Requested") == 5.0
    assert ads["chemistry"].evaluate("EffectiveQuota") == 0.5  # half of what is left: 4 - 3
    assert ads["<none>"].evaluate("IsAccountingGroup") is True
    (summary,) = [ad for ad in userprio_ads(accountant, result) if "Name" not in ad]
    assert summary.evaluate("ConcurrencyLimit_matlab") == 1.0
    assert summary.evaluate("ConcurrencyLimitMax_matlab") == 1.0
