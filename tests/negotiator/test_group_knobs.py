"""The group and concurrency-limit knobs' defaults against HTCondor's own (htcondor2.param)."""

from __future__ import annotations

import pytest
from param_oracle import ParamOracle

from epcore.config import Config
from epcore.negotiator.group_policy import GroupPolicy
from epcore.negotiator.limits import LimitPolicy

KNOBS = (
    "GROUP_ACCEPT_SURPLUS",
    "GROUP_AUTOREGROUP",
    "GROUP_QUOTA_ROUND_ROBIN_RATE",
    "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS",
    "GROUP_SORT_EXPR",
    "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION",
    "NEGOTIATOR_USE_WEIGHTED_DEMAND",
    "CONCURRENCY_LIMIT_DEFAULT",
)


@pytest.mark.oracle
def test_group_knob_defaults_are_htcondors(param_oracle: ParamOracle) -> None:
    """With nothing configured, the group policy and the default concurrency limit take the
    values HTCondor's parameter table gives (oversubscription True, not the seed's False)."""
    answer = param_oracle.load("", list(KNOBS), subsystem="NEGOTIATOR")
    assert answer.error is None, answer.error
    theirs = {name: answer.values[name].typed for name in KNOBS}
    config = Config.from_text("GROUP_NAMES = g\nGROUP_QUOTA_g = 1\n")
    policy = GroupPolicy.from_config(config)
    (spec,) = policy.groups
    ours = {
        "GROUP_ACCEPT_SURPLUS": repr(spec.accept_surplus),
        "GROUP_AUTOREGROUP": repr(spec.autoregroup),
        "GROUP_QUOTA_ROUND_ROBIN_RATE": repr(policy.round_robin_rate),
        "GROUP_QUOTA_MAX_ALLOCATION_ROUNDS": repr(policy.max_rounds),
        "GROUP_SORT_EXPR": repr(config.get("GROUP_SORT_EXPR")),
        "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION": repr(policy.oversubscription),
        "NEGOTIATOR_USE_WEIGHTED_DEMAND": repr(policy.use_weighted_demand),
        "CONCURRENCY_LIMIT_DEFAULT": repr(int(LimitPolicy(config).maximum("anything"))),
    }
    assert ours == theirs
