"""condor_status views of slot ads: the default table, -l, -af, -json and -constraint."""

from __future__ import annotations

import json

import pytest
from slot_ad_fixtures import NOW, build, config_of, partitionable_with_dynamic, static_slots

from epcore.classad import ClassAd, ClassAdSyntaxError, parse_ads
from epcore.slots.slot_status import SlotStatus
from epcore.types import HostReadings
from epcore.views.ad_formats import (
    format_autoformat,
    format_json,
    format_long,
    select,
)
from epcore.views.tables import activity_time, render_slots


def four_slots() -> list[ClassAd]:
    statuses = {
        "slot1": SlotStatus("Claimed", "Busy", NOW - 3725, NOW - 3725, condor_load_avg=0.99),
        "slot2": SlotStatus("Unclaimed", "Idle", NOW - 86400 * 3 - 5, NOW - 86400 * 3 - 5),
        "slot4": SlotStatus("Backfill", "Idle", NOW - 10, NOW - 10),
    }
    readings = HostReadings(load_avg=1.5, condor_load_avg=0.99, keyboard_idle=0, console_idle=0)
    return build(
        config_of(),
        static_slots(4, memory_mb=1967),
        statuses=statuses,
        readings=readings,
        started_at=NOW - 60,
    )


TABLE = """\
Name              OpSys      Arch   State     Activity LoadAv Mem   ActvtyTime

slot1@ep.example.org LINUX      X86_64 Claimed   Busy      0.990 1967  0+01:02:05
slot2@ep.example.org LINUX      X86_64 Unclaimed Idle      0.000 1967  3+00:00:05
slot3@ep.example.org LINUX      X86_64 Owner     Idle      0.510 1967  0+00:01:00
slot4@ep.example.org LINUX      X86_64 Backfill  Idle      0.000 1967  0+00:00:10

               Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle

  X86_64/LINUX     4     1       1         1       0          0      0        1      1

         Total     4     1       1         1       0          0      0        1      1
"""


def test_default_table_has_condor_status_columns_and_totals() -> None:
    """The default view: condor_status's columns and widths, then the totals per platform."""
    expected = TABLE.replace("Name              ", "Name" + " " * 17)
    assert render_slots(four_slots(), now=NOW) == expected


def test_table_of_no_slots_is_empty() -> None:
    """No ads (a constraint nothing satisfies) print nothing."""
    assert render_slots([], now=NOW) == ""


def test_memory_column_widens_for_big_machines() -> None:
    """Mem is at least 4 wide and grows with the largest value, right-aligned."""
    ads = build(config_of(), static_slots(1, memory_mb=2063937))
    header, _, row = render_slots(ads, now=NOW).splitlines()[:3]
    assert header.endswith("LoadAv Mem      ActvtyTime")
    assert row.endswith("0.000 2063937  0+00:00:00")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "  0+00:00:00"),
        (3725, "  0+01:02:05"),
        (11 * 86400 + 5, " 11+00:00:05"),
        (-5, "  0+00:00:00"),
    ],
)
def test_activity_time_format(seconds: int, text: str) -> None:
    """ActvtyTime is days+hh:mm:ss with the days right-aligned in three columns."""
    assert activity_time(seconds) == text


def test_long_view_is_sorted_old_syntax_that_reads_back() -> None:
    """-l prints every attribute sorted by name in old syntax; the text reads back as the ads."""
    ads = four_slots()
    text = format_long(ads)
    again = list(parse_ads(text))
    assert again == ads
    first = text.split("\n\n")[0].splitlines()
    names = [line.split(" = ")[0] for line in first]
    assert names == sorted(names, key=str.lower)


def test_autoformat_prints_bare_values() -> None:
    """-af prints one line per slot: strings bare, numbers and booleans as ClassAd literals,
    expressions evaluated, undefined for what is missing."""
    ads = four_slots()[:2]
    text = format_autoformat(ads, ["Name", "Cpus", "LoadAvg", 'State == "Claimed"', "Nope"], NOW)
    assert text == (
        "slot1@ep.example.org 1 0.99 true undefined\nslot2@ep.example.org 1 0.0 false undefined\n"
    )


def test_autoformat_rejects_an_expression_that_does_not_parse() -> None:
    """An -af expression that is no expression raises ClassAdSyntaxError."""
    with pytest.raises(ClassAdSyntaxError):
        format_autoformat(four_slots(), ["Cpus +"], NOW)


def test_json_view_is_a_list_of_ads() -> None:
    """-json prints a JSON list with one object per ad; expressions as /Expr(...)/ strings."""
    ads = build(config_of(), partitionable_with_dynamic())
    documents = json.loads(format_json(ads))
    assert [doc["Name"] for doc in documents] == ["slot1@ep.example.org", "slot1_1@ep.example.org"]
    assert documents[0]["Requirements"] == "/Expr(WithinResourceLimits)/"
    assert documents[1]["Cpus"] == 1


@pytest.mark.parametrize(
    ("constraint", "names"),
    [
        (None, ["slot1", "slot2", "slot3", "slot4"]),
        ('State == "Claimed"', ["slot1"]),
        ("LoadAvg > 0.5", ["slot1", "slot3"]),
        ("NoSuchAttribute > 1", []),
        ('regexp("slot[34]", Name)', ["slot3", "slot4"]),
    ],
)
def test_constraint_keeps_slots_where_it_is_true(constraint: str | None, names: list[str]) -> None:
    """-constraint keeps the ads for which the expression is True (not UNDEFINED)."""
    chosen = select(four_slots(), constraint, NOW)
    assert [str(ad.evaluate("Name")).split("@")[0] for ad in chosen] == names


def test_constraint_that_does_not_parse_raises() -> None:
    """A constraint that is no expression raises ClassAdSyntaxError."""
    with pytest.raises(ClassAdSyntaxError):
        select(four_slots(), "State ==", NOW)
