"""The startd's in-process link: peers name slots as its ads do (``slot1@host``), vacate and
drain go through it."""

from __future__ import annotations

import pytest

from epcore.classad import ClassAd
from epcore.runtime.control import ControlError
from epcore.startd.link import LocalStartdLink
from epcore.startd.startd import Startd


def _job() -> ClassAd:
    return ClassAd({"ClusterId": 1, "ProcId": 0, "Owner": "alice", "Cmd": "/bin/true"})


def test_a_claim_by_the_slots_full_name_holds_that_slot(startd: Startd) -> None:
    """Claiming ``slot2@host`` claims the startd's slot2, and the link names it in full."""
    link = LocalStartdLink(startd)
    claim_id = link.claim(f"slot2@{startd.host_name}", _job(), "schedd")
    assert link.slot_of(claim_id) == f"slot2@{startd.host_name}"
    assert startd.slot_of(claim_id) == "slot2"
    assert link.address == startd.address


def test_a_slot_of_another_host_is_refused(startd: Startd) -> None:
    """A slot name with another host is not this startd's: the claim is refused, naming it."""
    link = LocalStartdLink(startd)
    with pytest.raises(ControlError, match=f"slot1@elsewhere is not a slot of {startd.host_name}"):
        link.claim("slot1@elsewhere", _job())
    assert link.claims() == []


def test_vacating_every_slot_vacates_the_claimed_ones(startd: Startd) -> None:
    """``vacate_slots(None)`` names the slots it vacated: the claimed ones only."""
    link = LocalStartdLink(startd)
    assert link.vacate_slots(None) == []
    link.claim("slot1", _job())
    assert link.vacate_slots(None) == ["slot1"]


def test_vacating_an_unknown_slot_names_it(startd: Startd) -> None:
    """An unknown slot is refused with its name and the startd's host."""
    with pytest.raises(ControlError, match=f"no slot slot9 on {startd.host_name}"):
        LocalStartdLink(startd).vacate_slots(f"slot9@{startd.host_name}")
