"""The tools' side of the startd's and negotiator's commands: -pool's address and the
numbered priority report condor_userprio reads."""

from __future__ import annotations

import pytest

from epcore.classad import parse_ad
from epcore.errors import EpError
from epcore.net.tools import parse_pool, split_report


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cm.example.org", ("cm.example.org", 9618)),
        ("cm.example.org:9620", ("cm.example.org", 9620)),
        ("<127.0.0.1:40000?sock=collector>", ("127.0.0.1", 40000)),
        ("[::1]", ("::1", 9618)),
    ],
)
def test_pool_names_a_host_and_port(text: str, expected: tuple[str, int]) -> None:
    """-pool takes HOST, HOST:PORT or a sinful string; a host alone is on port 9618."""
    assert parse_pool(text) == expected


@pytest.mark.parametrize("text", ["", "cm:notaport", "cm:70000"])
def test_bad_pool_is_refused(text: str) -> None:
    """An empty -pool or a port that is not one is an error naming it."""
    with pytest.raises(EpError):
        parse_pool(text)


def test_numbered_report_splits_into_one_ad_per_submitter() -> None:
    """Name1..Name3 become three Accounting ads (the group's too); numbers beyond
    NumSubmittors are left out; LastUpdate is no submitter's; a ConcurrencyLimit_ count
    becomes an Accountant ad."""
    report = parse_ad(
        '[ LastUpdate = 5; NumSubmittors = 3; Name1 = "<none>"; IsAccountingGroup1 = true;'
        ' Name2 = "a@d"; Priority2 = 1.5; PriorityFactor2 = 1000.0; IsAccountingGroup2 = false;'
        ' Name3 = "b@d"; Priority3 = 0.5; Name4 = "ghost@d"; ConcurrencyLimit_matlab = 2.0 ]'
    )
    ads = split_report(report)
    assert [ad.evaluate("Name") for ad in ads[:3]] == ["<none>", "a@d", "b@d"]
    assert ads[0].evaluate("IsAccountingGroup") is True
    assert ads[1].evaluate("PriorityFactor") == 1000.0 and ads[1].evaluate("MyType") == "Accounting"
    assert "LastUpdate" not in ads[1]
    assert ads[3].evaluate("MyType") == "Accountant"
    assert ads[3].evaluate("ConcurrencyLimit_matlab") == 2.0
