"""render_slots: condor_status's default table over the pool's slot ads (``ep status`` uses
it too)."""

from __future__ import annotations

from analysis_pool import NOW, claimed_by, pool
from hypothesis import given
from hypothesis import strategies as st

from epcore.classad import ClassAd
from epcore.cli.status_cmd import StatusRequest, render
from epcore.views.tables import render_slots

EXPECTED = """\
Name                 OpSys      Arch   State     Activity LoadAv Mem   ActvtyTime

slot1@ep.example.org LINUX      X86_64 Claimed   Busy      0.000 1024  0+00:01:00
slot2@ep.example.org LINUX      X86_64 Unclaimed Idle      0.000 2048  0+00:01:00

               Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle

  X86_64/LINUX     2     0       1         1       0          0      0        0      0

         Total     2     0       1         1       0          0      0        0      0
"""


def test_pool_slots_table() -> None:
    """Slot ads built by epcore.slots print one row each, then the totals per platform."""
    slots = pool(memories=(1024, 2048), statuses={"slot1": claimed_by("bob@x")})
    assert render_slots(slots, now=NOW) == EXPECTED


def test_ep_status_default_view_is_this_table() -> None:
    """`ep status` without options prints render_slots' table (one implementation, not two)."""
    slots = pool(memories=(1024, 2048))
    assert render(StatusRequest(), slots, NOW) == render_slots(slots, now=NOW)


def test_odd_slot_ads() -> None:
    """Missing attributes print as [???] (ActvtyTime as [Unknown]); long text is cut to the
    column; platforms group by their printed Arch/OpSys."""
    odd = ClassAd({"Name": 12, "OpSys": "AVERYLONGOPSYS", "State": "Drained", "LoadAvg": "x"})
    lines = render_slots([odd, ClassAd()], now=NOW).splitlines()
    assert lines[2] == "12    AVERYLONGO [???]  Drained   [???]     [???] [???]   [Unknown]"
    assert lines[3] == "[???] [???]      [???]  [???]     [???]     [???] [???]   [Unknown]"
    assert "[???]/AVERYLONGOPSYS" in lines[7]
    assert lines[-1].split() == ["Total", "2", "0", "0", "0", "0", "0", "1", "0", "0"]


def test_no_slots_print_nothing() -> None:
    """No ads (a constraint nothing satisfies) print nothing, as condor_status does."""
    assert render_slots([], now=NOW) == ""


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\0")),
)
NAMES = st.sampled_from(
    [
        "Name",
        "OpSys",
        "Arch",
        "State",
        "Activity",
        "LoadAvg",
        "Memory",
        "EnteredCurrentActivity",
        "MyCurrentTime",
    ]
)


@given(ads=st.lists(st.dictionaries(NAMES, VALUES), min_size=1, max_size=4))
def test_any_slot_ads_render(ads: list[dict[str, object]]) -> None:
    """Any values in the attributes the table reads render without raising: the heading, a
    row per ad, and the totals line counting every ad."""
    lines = render_slots([ClassAd(ad) for ad in ads], now=NOW).splitlines()
    assert lines[0].startswith("Name")
    assert lines[-1].split()[:2] == ["Total", str(len(ads))]
