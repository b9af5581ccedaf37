"""Group quotas and concurrency limits inside a whole negotiation cycle (pure)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from hypothesis import example, given, settings
from hypothesis import strategies as st

from epcore.classad import parse_expr
from epcore.interfaces import SubmitterJobs
from epcore.negotiator import Accountant, Cycle
from epcore.negotiator.cycle import run_cycle
from epcore.negotiator.group_policy import ROOT, GroupPolicy
from epcore.negotiator.groups import allocate
from tests.negotiator.negotiator_helpers import DOMAIN, config, cycle, job, slot

QUOTAS_6_2 = """
GROUP_NAMES = physics, chemistry
GROUP_QUOTA_physics = 6
GROUP_QUOTA_chemistry = 2
"""


def grouped(group: str, user: str, count: int, cluster: int, **extra: object) -> SubmitterJobs:
    """``count`` jobs of ``user`` in accounting group ``group`` (as submit sets them)."""
    jobs = []
    for proc in range(count):
        attributes: dict[str, object] = {
            "AcctGroup": group,
            "AcctGroupUser": user,
            "AccountingGroup": f"{group}.{user}",
        }
        attributes.update(extra)
        jobs.append(job(cluster, proc, owner=user, extra=attributes))
    return SubmitterJobs(f"{group}.{user}@{DOMAIN}", tuple(jobs))


def by_group(result: Cycle) -> dict[str, int]:
    """Matches per accounting group (the text before the submitter's last dot)."""
    found: dict[str, int] = {}
    for match in result.matches:
        group = match.submitter.rpartition("@")[0].rpartition(".")[0] or ROOT
        found[group] = found.get(group, 0) + 1
    return found


def test_quotas_split_the_pool_six_and_two() -> None:
    """8 slots, physics 6 and chemistry 2 without surplus, 40 jobs each: 6 and 2 match."""
    slots = [slot(n) for n in range(1, 9)]
    result = cycle(
        config(QUOTAS_6_2),
        slots,
        [grouped("physics", "einstein", 40, 1), grouped("chemistry", "curie", 40, 2)],
    )
    assert by_group(result) == {"physics": 6, "chemistry": 2}
    waiting = result.rejections["2.2"]
    assert "group quota" in waiting and "chemistry" in waiting


def test_surplus_lets_chemistry_take_physics_idle_share() -> None:
    """With GROUP_ACCEPT_SURPLUS, chemistry takes the 6 slots physics does not ask for."""
    slots = [slot(n) for n in range(1, 9)]
    cfg = config(QUOTAS_6_2 + "GROUP_ACCEPT_SURPLUS = true\n")
    result = cycle(cfg, slots, [grouped("chemistry", "curie", 40, 2)])
    assert by_group(result) == {"chemistry": 8}


def test_without_surplus_idle_quota_stays_idle() -> None:
    """Without surplus chemistry keeps to its 2 even while physics asks for nothing."""
    slots = [slot(n) for n in range(1, 9)]
    result = cycle(config(QUOTAS_6_2), slots, [grouped("chemistry", "curie", 40, 2)])
    assert by_group(result) == {"chemistry": 2}


def test_running_jobs_count_against_the_quota() -> None:
    """A physics job already running (its slot ad's AccountingGroup) leaves physics 5 more."""
    slots = [slot(n) for n in range(1, 9)]
    slots[0] = slot(1, running="einstein@example.org")
    slots[0]["AccountingGroup"] = f"physics.einstein@{DOMAIN}"
    cfg = config(QUOTAS_6_2)
    accountant = Accountant.empty(cfg).update_usage(slots, 0.0)
    result = cycle(cfg, slots, [grouped("physics", "einstein", 40, 1)], accountant)
    assert by_group(result) == {"physics": 5}
    assert result.group_usage["physics"] == 6.0


def test_ungrouped_jobs_use_the_root_leftover() -> None:
    """Plain users negotiate in <none>, last, with what the groups' quotas leave (4 of 12
    slots) plus the quota idle groups return to the root, which always accepts surplus
    (chemistry's 2): 6."""
    slots = [slot(n) for n in range(1, 13)]
    result = cycle(
        config(QUOTAS_6_2),
        slots,
        [
            grouped("physics", "einstein", 40, 1),
            SubmitterJobs(f"alice@{DOMAIN}", tuple(job(3, p) for p in range(20))),
        ],
    )
    assert by_group(result) == {"physics": 6, ROOT: 6}


def test_autoregroup_lets_a_group_negotiate_again_in_the_root() -> None:
    """With GROUP_AUTOREGROUP_physics, physics jobs past the quota also take the idle rest."""
    slots = [slot(n) for n in range(1, 9)]
    cfg = config(QUOTAS_6_2 + "GROUP_AUTOREGROUP_physics = true\n")
    result = cycle(cfg, slots, [grouped("physics", "einstein", 40, 1)])
    assert by_group(result) == {"physics": 8}


def limited(owner: str, count: int, cluster: int, limits: str) -> SubmitterJobs:
    """``count`` jobs of ``owner`` asking for ``limits``."""
    jobs = tuple(
        job(cluster, p, owner=owner, extra={"ConcurrencyLimits": limits}) for p in range(count)
    )
    return SubmitterJobs(f"{owner}@{DOMAIN}", jobs)


def test_named_limit_caps_the_matches() -> None:
    """MATLAB_LIMIT = 2 and 20 jobs asking matlab: 2 match, the rest wait with the reason."""
    slots = [slot(n) for n in range(1, 11)]
    result = cycle(config("MATLAB_LIMIT = 2\n"), slots, [limited("alice", 20, 1, "matlab")])
    assert len(result.matches) == 2
    assert result.rejections["1.5"] == "concurrency limit matlab reached"
    assert result.limits["matlab"] == (2.0, 2.0)


def test_running_jobs_and_pending_matches_count() -> None:
    """A slot running a matlab job and a match the ads do not show yet leave no room."""
    slots = [slot(n) for n in range(1, 5)]
    slots[0] = slot(1, running="bob@example.org")
    slots[0]["ConcurrencyLimits"] = "matlab"
    cfg = config("MATLAB_LIMIT = 2\n")
    result = run_cycle(
        cfg,
        Accountant.empty(cfg),
        slots,
        [limited("alice", 5, 1, "matlab")],
        1.0,
        pending_limits=("matlab",),
    )
    assert result.matches == ()


def test_fractional_increments_and_set_defaults() -> None:
    """``lic:0.5`` under LIC_LIMIT = 2 lets 4 run; ``large.sw`` gets
    CONCURRENCY_LIMIT_DEFAULT_LARGE (3) and ``other.x`` CONCURRENCY_LIMIT_DEFAULT (1)."""
    slots = [slot(n) for n in range(1, 21)]
    cfg = config(
        "LIC_LIMIT = 2\nCONCURRENCY_LIMIT_DEFAULT = 1\nCONCURRENCY_LIMIT_DEFAULT_LARGE = 3\n"
    )
    result = cycle(
        cfg,
        slots,
        [
            limited("alice", 10, 1, "lic:0.5"),
            limited("bob", 10, 2, "large.sw"),
            limited("carol", 10, 3, "other.x"),
        ],
    )
    counts: dict[str, int] = {}
    for match in result.matches:
        counts[match.submitter] = counts.get(match.submitter, 0) + 1
    assert counts == {f"alice@{DOMAIN}": 4, f"bob@{DOMAIN}": 3, f"carol@{DOMAIN}": 1}


def test_expression_limits_are_evaluated_against_the_matched_slot() -> None:
    """concurrency_limits_expr = TARGET.Network counts per network: NET_A_LIMIT = 1."""
    slots = [slot(n, extra={"Network": "net_a"}) for n in range(1, 5)]
    jobs = []
    for proc in range(4):
        ad = job(1, proc)
        ad["ConcurrencyLimits"] = parse_expr("TARGET.Network")
        jobs.append(ad)
    result = cycle(
        config("NET_A_LIMIT = 1\n"), slots, [SubmitterJobs(f"alice@{DOMAIN}", tuple(jobs))]
    )
    assert len(result.matches) == 1


# -- invariants over generated group trees ----------------------------------------------------

_TREE = st.lists(
    st.tuples(
        st.integers(0, 3),  # parent: index of an earlier group, or top level
        st.one_of(st.integers(0, 12).map(float), st.floats(0.0, 1.0).map(lambda x: -x)),
        st.booleans(),  # accepts surplus
        st.integers(0, 15),  # idle jobs
    ),
    min_size=1,
    max_size=6,
)


def _config_text(
    tree: Sequence[tuple[int, float, bool, int]], all_accept: bool
) -> tuple[str, list[str]]:
    names: list[str] = []
    lines = []
    for position, (parent, quota, accepts, _) in enumerate(tree):
        name = f"g{position}"
        if position and parent < position and parent % 2 == 0:
            name = f"{names[parent]}.g{position}"
        names.append(name)
        if quota >= 0:
            lines.append(f"GROUP_QUOTA_{name} = {quota:g}")
        else:
            lines.append(f"GROUP_QUOTA_DYNAMIC_{name} = {-quota:g}")
        lines.append(f"GROUP_ACCEPT_SURPLUS_{name} = {accepts or all_accept}")
    return f"GROUP_NAMES = {', '.join(names)}\n" + "\n".join(lines) + "\n", names


def _run(
    tree: Sequence[tuple[int, float, bool, int]], pool: int, all_accept: bool, root_jobs: int
) -> tuple[Cycle, GroupPolicy, list[str]]:
    text, names = _config_text(tree, all_accept)
    cfg = config(text)
    submitters = [
        grouped(name, "u", entry[3], position + 1)
        for position, (name, entry) in enumerate(zip(names, tree, strict=True))
        if entry[3]
    ]
    if root_jobs:
        submitters.append(
            SubmitterJobs(
                f"plain@{DOMAIN}", tuple(job(99, p, owner="plain") for p in range(root_jobs))
            )
        )
    slots = [slot(n) for n in range(1, pool + 1)]
    return cycle(cfg, slots, submitters), GroupPolicy.from_config(cfg), names


def _subtree_matches(result: Cycle, name: str) -> int:
    prefix = name.lower() + "."
    total = 0
    for match in result.matches:
        account = match.submitter.rpartition("@")[0].lower()
        if account.startswith(prefix):
            total += 1
    return total


@settings(max_examples=60, deadline=None)
@given(_TREE, st.integers(1, 30), st.integers(0, 10))
def test_no_group_exceeds_what_it_may_take(
    tree: list[tuple[int, float, bool, int]], pool: int, root_jobs: int
) -> None:
    """A group that does not accept surplus never holds (with its subgroups) more than its
    configured static quota or the quota its subtree received, rounded up to whole slots (a
    fractional room may be rounded up once, as HTCondor does); the pool is never overfilled."""
    result, policy, _ = _run(tree, pool, False, root_jobs)
    assert len(result.matches) <= pool
    received = {share.name: share.subtree_quota for share in result.groups}
    for spec in policy.groups:
        if spec.accept_surplus:
            continue
        cap = spec.config_quota if spec.static else received[spec.name]
        assert _subtree_matches(result, spec.name) <= math.ceil(cap - 1e-9)


@settings(max_examples=60, deadline=None)
@given(_TREE, st.integers(1, 30), st.integers(0, 10))
# A zero-quota subgroup's request was once handed out twice while its zero-quota uncle's
# was never served.
@example([(0, 1.0, False, 0), (0, 0.0, False, 2), (1, 0.0, False, 1)], 3, 0)
def test_whole_pool_is_used_when_every_group_accepts_surplus(
    tree: list[tuple[int, float, bool, int]], pool: int, root_jobs: int
) -> None:
    """When every group accepts surplus, the cycle matches min(pool, all idle jobs)."""
    result, _, _ = _run(tree, pool, True, root_jobs)
    demand = sum(entry[3] for entry in tree) + root_jobs
    assert len(result.matches) == min(pool, demand)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "s.x", "s.y"]), st.sampled_from(["", ":0.5", ":2"])),
        min_size=1,
        max_size=12,
    ),
    st.integers(0, 4),
    st.integers(1, 30),
)
def test_limits_are_never_exceeded(asks: list[tuple[str, str]], maximum: int, pool: int) -> None:
    """Whatever the jobs ask, no concurrency limit's count passes its maximum."""
    cfg = config(
        f"A_LIMIT = {maximum}\nCONCURRENCY_LIMIT_DEFAULT_S = {maximum + 1}\n"
        "CONCURRENCY_LIMIT_DEFAULT = 3\n"
    )
    jobs = tuple(
        job(1, p, extra={"ConcurrencyLimits": f"{name}{amount}"})
        for p, (name, amount) in enumerate(asks)
    )
    result = cycle(
        cfg, [slot(n) for n in range(1, pool + 1)], [SubmitterJobs(f"alice@{DOMAIN}", jobs)]
    )
    for name, (count, most) in result.limits.items():
        assert count <= most + 1e-9, name


def test_plain_and_indexed_choosers_agree_under_groups_and_limits() -> None:
    """The group layer and the limits give the same matches with the plain reference chooser
    as with the indexed one, on a pool of mixed slots with ranks and a surplus tree."""
    text = QUOTAS_6_2 + (
        "GROUP_NAMES = $(GROUP_NAMES), physics.hep\n"
        "GROUP_QUOTA_DYNAMIC_physics.hep = 0.5\nGROUP_ACCEPT_SURPLUS_physics.hep = true\n"
        "GROUP_ACCEPT_SURPLUS_chemistry = true\nDB_LIMIT = 3\n"
    )
    slots = [slot(n, memory=512 * (1 + n % 3), rank=f"{n % 4}") for n in range(1, 15)]
    submitters = [
        grouped("physics", "einstein", 6, 1),
        grouped("physics.hep", "higgs", 8, 2, ConcurrencyLimits="db"),
        grouped("chemistry", "curie", 9, 3, ConcurrencyLimits="db:0.5"),
        SubmitterJobs(f"plain@{DOMAIN}", tuple(job(4, p, owner="plain") for p in range(5))),
    ]
    indexed = cycle(config(text), slots, submitters)
    plain = cycle(config(text), slots, submitters, chooser="plain")
    assert [(m.job_id, m.slot_name) for m in indexed.matches] == [
        (m.job_id, m.slot_name) for m in plain.matches
    ]
    assert indexed.rejections == plain.rejections
    assert indexed.limits["db"][0] <= 3


@settings(max_examples=200, deadline=None)
@given(
    _TREE,
    st.floats(0.0, 50.0),
    st.booleans(),
    st.dictionaries(st.integers(0, 5), st.floats(0.0, 40.0), max_size=6),
)
def test_allocation_gives_surplus_only_to_groups_that_accept_it(
    tree: list[tuple[int, float, bool, int]],
    pool: float,
    oversubscription: bool,
    asks: dict[int, float],
) -> None:
    """In any tree, a leaf group that does not accept surplus is allocated at most its quota,
    no group more than it asked for, and the surplus left over is never negative."""
    text, names = _config_text(tree, False)
    text += f"NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = {oversubscription}\n"
    policy = GroupPolicy.from_config(config(text))
    demand = {names[k]: v for k, v in asks.items() if k < len(names)}
    result = allocate(policy, pool, demand)
    parents = {share.parent for share in result.shares}
    for share in result.shares:
        assert share.allocated <= share.requested + 1e-6
        if share.name not in parents and not share.accept_surplus:
            assert share.allocated <= share.quota + 1e-6
    assert result.surplus >= -1e-6


def test_a_group_at_its_quota_may_still_preempt_within_its_share() -> None:
    """The group's room caps only matches to unclaimed slots, as HTCondor's
    submitterLimitUnclaimed: physics (quota 2) is at its quota with curie's two jobs, yet
    einstein's share of physics (all of it: curie asks for nothing) lets his jobs preempt
    both of hers; the unclaimed slot is not taken beyond the quota."""
    slots = [slot(n, running=f"physics.curie@{DOMAIN}") for n in (1, 2)]
    for ad in slots:
        ad["AccountingGroup"] = f"physics.curie@{DOMAIN}"
    slots.append(slot(3))
    cfg = config("GROUP_NAMES = physics\nGROUP_QUOTA_physics = 2\nPREEMPTION_REQUIREMENTS = True\n")
    # curie's worse priority is what lets einstein preempt her.
    curie = f"physics.curie@{DOMAIN}"
    accountant = Accountant.empty(cfg).set_factor(curie, 1.0e5, 0.0).update_usage(slots, 0.0)
    for chooser in ("indexed", "plain"):
        result = cycle(
            cfg, slots, [grouped("physics", "einstein", 3, 1)], accountant, chooser=chooser
        )
        assert len(result.matches) == 2, chooser
        assert all(match.preempts for match in result.matches)
        assert {match.slot_name for match in result.matches} == {"slot1@m1", "slot2@m1"}
