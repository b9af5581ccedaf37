"""render_userprio: condor_userprio's default layout over the accountant's ads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import ClassAd
from epcore.views.tables import render_userprio

#: 2026-11-22 03:10:00 UTC.
NOW = 1_795_317_000
HOUR = 3600.0


def user(
    name: str,
    priority: float,
    factor: float = 1.0,
    in_use: int = 0,
    hours: float = 0.0,
    idle_for: float | None = None,
) -> ClassAd:
    """An Accounting ad as the negotiator publishes it (Priority is the effective one)."""
    ad = ClassAd(
        {
            "MyType": "Accounting",
            "Name": name,
            "Priority": priority,
            "PriorityFactor": factor,
            "ResourcesUsed": in_use,
            "WeightedResourcesUsed": float(in_use),
            "AccumulatedUsage": hours * HOUR,
            "WeightedAccumulatedUsage": hours * HOUR,
            "BeginUsageTime": NOW - 30 * 86400,
            "LastUsageTime": NOW if idle_for is None else NOW - idle_for,
            "Ceiling": -1.0,
            "Floor": 0.0,
            "LastUpdateTime": NOW - 60,
        }
    )
    return ad


#: A pool like the manual's example, in no particular order.
USERS = [
    user("leon@cs.wisc.edu", 1.63, in_use=2, hours=12597.82),
    user("www-cndr@cs.wisc.edu", 0.56, hours=591998.44, idle_for=16 * HOUR + 30 * 60),
    user("petra@cs.wisc.edu", 266.02, 500.0, 1, 288082.03),
    user("joey@cs.wisc.edu", 1.00, in_use=1, hours=990.15),
    user("suzy@cs.wisc.edu", 1.53, hours=261.78, idle_for=9 * HOUR + 31 * 60),
]

EXPECTED = """\
Last Priority Update: 11/22 03:09
                        Effective   Priority   Res   Total Usage  Time Since
User Name                Priority    Factor   In Use (wghted-hrs) Last Usage
---------------------- ------------ --------- ------ ------------ ----------
www-cndr@cs.wisc.edu           0.56      1.00      0    591998.44    0+16:30
joey@cs.wisc.edu               1.00      1.00      1       990.15 <now>
suzy@cs.wisc.edu               1.53      1.00      0       261.78    0+09:31
leon@cs.wisc.edu               1.63      1.00      2     12597.82 <now>
petra@cs.wisc.edu            266.02    500.00      1    288082.03 <now>
---------------------- ------------ --------- ------ ------------ ----------
Number of users: 5                                 4    893930.22    0+23:59
"""


def test_userprio_matches_the_manual_layout() -> None:
    """Users sorted by effective priority, with factor, slots in use, weighted usage in hours
    and time since last usage (<now> while in use), then the count and the sums."""
    assert render_userprio(USERS, now=NOW) == EXPECTED


@pytest.mark.parametrize(
    ("extra", "all_users", "listed"),
    [
        (user("old@x", 0.5, idle_for=2 * 86400), False, False),
        (user("old@x", 0.5, idle_for=2 * 86400), True, True),
        (user("decaying@x", 3.0, idle_for=2 * 86400), False, True),
        (user("recent@x", 0.5, idle_for=86400 - 60), False, True),
        (user("factor@x", 500.0, 1000.0, idle_for=5 * 86400), False, False),
    ],
)
def test_inactive_users_are_hidden_unless_all_users(
    extra: ClassAd, all_users: bool, listed: bool
) -> None:
    """Without all_users (-allusers), a user with no usage in the last day and a real priority
    at the minimum (0.5) is hidden; with it every user is listed."""
    text = render_userprio([*USERS, extra], now=NOW, all_users=all_users)
    assert (str(extra.evaluate("Name")) in text) == listed


def test_all_users_totals_show_the_longest_idle_time() -> None:
    """With all_users, the totals' last column is the time since the oldest last usage shown."""
    text = render_userprio([user("old@x", 0.5, idle_for=2 * 86400 + 120)], now=NOW, all_users=True)
    assert text.splitlines()[-1].endswith("    2+00:02")


def test_all_fields_add_real_priority_and_usage_times() -> None:
    """all_fields (-all) adds Real Priority (effective / factor) after the effective priority
    and the usage start and last usage times (month/day/year hours:minutes, blank when never
    set) before the time since last usage, with condor_userprio's centred headings."""
    petra = user("petra@cs.wisc.edu", 266.02, 500.0, 1, 288082.03)
    never = ClassAd({"Name": "never@x", "Priority": 0.5, "PriorityFactor": 1.0})
    lines = render_userprio([petra, never], now=NOW, all_users=True, all_fields=True).splitlines()
    assert lines[1:4] == [
        "                        Effective     Real   Priority   Res   Total Usage       Usage"
        "             Last       Time Since",
        "User Name                Priority   Priority  Factor   In Use (wghted-hrs)    Start Time"
        "       Usage Time    Last Usage",
        "---------------------- ------------ -------- --------- ------ ------------ "
        "---------------- ---------------- ----------",
    ]
    assert lines[5] == (
        "petra@cs.wisc.edu            266.02     0.53    500.00      1    288082.03 "
        "10/23/2026 03:10 11/22/2026 03:10 <now>"
    )
    assert lines[4].startswith("never@x                        0.50     0.50      1.00      ?")
    assert lines[4].endswith(" " * 16 + " " + " " * 16 + "          ?")


def test_long_names_widen_the_name_column() -> None:
    """The name column is as wide as the longest name plus two, at least 22."""
    name = "someone-with-a-long-name@submit.example.org"
    lines = render_userprio([user(name, 1.0, in_use=1)], now=NOW).splitlines()
    assert lines[3].startswith("-" * (len(name) + 2) + " ")
    assert lines[4].startswith(name + "  " + " " * 9 + "1.00")


def test_odd_accounting_ads() -> None:
    """Missing or wrongly typed attributes print as undefined or ?; such users sort last, and
    one without usage or priority is listed only with all_users."""
    odd = ClassAd({"Name": 7, "Priority": "high", "ResourcesUsed": 1})
    bare = ClassAd({"ResourcesUsed": True})
    ads = [odd, bare, user("joey@x", 1.0, in_use=1)]
    lines = render_userprio(ads, now=NOW, all_users=True).splitlines()
    assert lines[4].startswith("joey@x ")
    assert lines[5:7] == [
        "7                                 ?         ?      1            ? <now>",
        "undefined                         ?         ?      ?            ?          ?",
    ]
    assert "undefined" not in render_userprio(ads, now=NOW)


def test_no_users() -> None:
    """No accounting ads: headings, rules and zero totals; the update time is now."""
    lines = render_userprio([], now=NOW).splitlines()
    assert lines[0] == "Last Priority Update: 11/22 03:10"
    assert (
        lines[-1] == "Number of users: 0                                 0         0.00    0+23:59"
    )


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),
    # Cells are printed raw, as HTCondor prints them; line breaks would only split the rows.
    st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc", "Zl", "Zp"])),
)
NAMES = st.sampled_from(
    [
        "Name",
        "Priority",
        "PriorityFactor",
        "ResourcesUsed",
        "WeightedAccumulatedUsage",
        "AccumulatedUsage",
        "LastUsageTime",
        "LastUpdateTime",
    ]
)


@given(ads=st.lists(st.dictionaries(NAMES, VALUES), max_size=4), most=st.booleans())
def test_any_accounting_ads_render(ads: list[dict[str, object]], most: bool) -> None:
    """Any values in the attributes condor_userprio reads render without raising; with most,
    one row per ad."""
    lines = render_userprio([ClassAd(ad) for ad in ads], now=NOW, all_users=most).splitlines()
    assert lines[-1].startswith("Number of users: ")
    if most:
        assert len(lines) == 6 + len(ads)
