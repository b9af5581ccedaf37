"""The negotiator's CEDAR handlers: the numbered priority report condor_userprio reads, and
the changes carried out by the local request handlers."""

from __future__ import annotations

import logging
from pathlib import Path

from epcore.classad import ClassAd, parse_ad
from epcore.interfaces import Locator
from epcore.negotiator import Accountant
from epcore.negotiator.cedar import cedar_handlers
from epcore.negotiator.service import NegotiatorService
from epcore.net import commands
from epcore.net.codec import Writer
from tests.negotiator.negotiator_helpers import config
from tests.net.drive import drive

NOW = 1_800_000_000.0
ALICE = "alice@example.org"


class Slots:
    """A collector link holding fixed slot ads."""

    def __init__(self, slots: list[ClassAd]) -> None:
        self.slots = slots

    def query(self, my_type, constraint=None, projection=None, *, now):  # type: ignore[no-untyped-def]
        return list(self.slots)

    def update(self, ads, now):  # type: ignore[no-untyped-def]
        pass


def _service(tmp_path: Path, slots: list[ClassAd] = ()) -> NegotiatorService:  # type: ignore[assignment]
    settings = config()
    accountant = Accountant.empty(settings).set_factor(ALICE, 100.0, NOW)
    return NegotiatorService(
        accountant,
        config=lambda: settings,
        collector=Slots(list(slots)),  # type: ignore[arg-type]
        schedds=Locator("schedd"),
        accountant_file=str(tmp_path / "accountant"),
        ad_name="cm",
        log=logging.getLogger("test"),
        clock=lambda: NOW,
    )


def _change(user: str, value: float | int | None, kind: str = "double") -> bytes:
    writer = Writer().put_string(user)
    if kind == "double" and value is not None:
        writer.put_double(float(value))
    elif value is not None:
        writer.put_int(int(value))
    return writer.bytes()


def test_priority_report_numbers_each_submitter_without_type_strings(tmp_path: Path) -> None:
    """GET_PRIORITY answers one ad without the type strings, Name1, Priority1 (the EUP),
    PriorityFactor1, Ceiling1 -1 for none... and NumSubmittors."""
    service = _service(tmp_path)
    (answer,) = drive(cedar_handlers(service)[commands.GET_PRIORITY], 451, [])
    report = answer.get_classad(types=False)
    assert answer.at_end
    assert report.evaluate("NumSubmittors") == 1
    assert report.evaluate("Name1") == ALICE
    assert report.evaluate("PriorityFactor1") == 100.0
    assert report.evaluate("Priority1") == service.accountant.eup(ALICE)
    assert (report.evaluate("Ceiling1"), report.evaluate("IsAccountingGroup1")) == (-1, False)


def test_changes_go_through_the_local_handlers_and_are_saved(tmp_path: Path) -> None:
    """SET_PRIORITYFACTOR answers ErrorCode 0 and changes the factor; SET_CEILING -1 means no
    ceiling; SET_ACCUMUSAGE and DELETE_USER change the record; each change is saved."""
    service = _service(tmp_path)
    handlers = cedar_handlers(service)
    (answer,) = drive(handlers[commands.SET_PRIORITYFACTOR], 459, [_change(ALICE, 250.0)])
    assert answer.get_classad().evaluate("ErrorCode") == 0
    assert service.accountant.record(ALICE).factor == 250.0
    drive(handlers[commands.SET_CEILING], 525, [_change(ALICE, 3, "int")])
    assert service.accountant.record(ALICE).ceiling == 3
    drive(handlers[commands.SET_CEILING], 525, [_change(ALICE, -1, "int")])
    assert service.accountant.record(ALICE).ceiling is None
    drive(handlers[commands.SET_ACCUMUSAGE], 494, [_change(ALICE, 3600.0)])
    assert service.accountant.record(ALICE).accumulated_usage == 3600.0
    assert ALICE in (tmp_path / "accountant").read_text()
    drive(handlers[commands.DELETE_USER], 482, [_change(ALICE, None)])
    assert ALICE not in service.accountant.records


def test_refused_change_is_answered_and_logged(tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    """A factor the accountant refuses comes back with a non-zero ErrorCode and the reason,
    is logged with who asked, and changes nothing."""
    service = _service(tmp_path)
    with caplog.at_level(logging.WARNING):
        (answer,) = drive(
            cedar_handlers(service)[commands.SET_PRIORITYFACTOR], 459, [_change(ALICE, -5.0)]
        )
    reply = answer.get_classad()
    assert reply.evaluate("ErrorCode") != 0 and "positive" in str(reply.evaluate("ErrorString"))
    assert service.accountant.record(ALICE).factor == 100.0
    assert "SET_PRIORITYFACTOR (459) of alice@example.org from admin@example" in caplog.text


def test_resource_list_numbers_the_slots_the_submitter_holds(tmp_path: Path) -> None:
    """GET_RESLIST names the claimed slots running the submitter's jobs, with their start."""
    slots = [
        parse_ad(
            f'[ Name = "slot1_1@h"; State = "Claimed"; RemoteUser = "{ALICE}"; '
            "EnteredCurrentState = 17 ]"
        ),
        parse_ad('[ Name = "slot1_2@h"; State = "Claimed"; RemoteUser = "bob@example.org" ]'),
        parse_ad('[ Name = "slot1@h"; State = "Unclaimed" ]'),
    ]
    service = _service(tmp_path, slots)
    (answer,) = drive(cedar_handlers(service)[commands.GET_RESLIST], 463, [_change(ALICE, None)])
    report = answer.get_classad(types=False)
    assert (report.evaluate("Name1"), report.evaluate("StartTime1")) == ("slot1_1@h", 17)
    assert "Name2" not in report


GROUP_CONFIG = """
GROUP_NAMES = physics, chemistry, physics.theory
GROUP_QUOTA_physics = 6
GROUP_QUOTA_physics.theory = 2
GROUP_QUOTA_chemistry = 2
GROUP_ACCEPT_SURPLUS_chemistry = true
"""


def _group_service(tmp_path: Path) -> NegotiatorService:
    """A service whose last cycle allocated the three groups (shares as the cycle gives)."""
    from epcore.negotiator.groups import GroupShare
    from epcore.negotiator.records import Cycle, CycleStats

    settings = config(GROUP_CONFIG)
    accountant = (
        Accountant.empty(settings)
        .set_factor("physics.theory.ann@example.org", 10.0, NOW)
        .set_factor(ALICE, 100.0, NOW)
        .charge("physics.theory.ann@example.org", 2, 2.0)
        .charge("physics", 3, 3.0)
        .charge("physics.theory", 2, 2.0)
    )
    shares = tuple(
        GroupShare(name, parent, quota, True, name == "chemistry", quota, quota, 5.0, quota)
        for name, parent, quota in (
            ("<none>", None, 0.0),
            ("physics", "<none>", 6.0),
            ("chemistry", "<none>", 2.0),
            ("physics.theory", "physics", 2.0),
        )
    )
    service = NegotiatorService(
        accountant,
        config=lambda: settings,
        collector=Slots([]),  # type: ignore[arg-type]
        schedds=Locator("schedd"),
        accountant_file=str(tmp_path / "accountant"),
        ad_name="cm",
        log=logging.getLogger("test"),
        clock=lambda: NOW,
    )
    service.last_report = Cycle((), accountant, {}, {}, CycleStats(), groups=shares)
    return service


def test_priority_report_numbers_groups_breadth_first_then_submitters(tmp_path: Path) -> None:
    """GET_PRIORITY numbers the groups first, breadth first from <none> (1), each naming its
    parent in AccountingGroup with the quota attributes condor_userprio -quotas reads, then
    the submitters naming their group; NumSubmittors counts both."""
    service = _group_service(tmp_path)
    (answer,) = drive(cedar_handlers(service)[commands.GET_PRIORITY], 451, [])
    report = answer.get_classad(types=False)
    count = report.evaluate("NumSubmittors")
    names = [report.evaluate(f"Name{n}") for n in range(1, count + 1)]
    assert names == [
        "<none>",
        "chemistry",
        "physics",
        "physics.theory",
        ALICE,
        "physics.theory.ann@example.org",
    ]
    groups = [report.evaluate(f"AccountingGroup{n}") for n in range(1, count + 1)]
    assert groups == ["<none>", "<none>", "<none>", "physics", "<none>", "physics.theory"]
    flags = [report.evaluate(f"IsAccountingGroup{n}") for n in range(1, count + 1)]
    assert flags == [True] * 4 + [False] * 2
    assert report.evaluate("EffectiveQuota3") == 6.0 and report.evaluate("ConfigQuota4") == 2.0
    assert (report.evaluate("SurplusPolicy3"), report.evaluate("SurplusPolicy2")) == (
        "no",
        "byquota",
    )
    assert report.evaluate("Requested2") == 5.0 and report.evaluate("SubtreeQuota3") == 6.0
    assert report.evaluate("ResourcesUsed6") == 2 and report.evaluate("Ceiling6") == -1


def test_priority_rollup_adds_subgroups_usage_and_zeroes_group_priority(tmp_path: Path) -> None:
    """GET_PRIORITY_ROLLUP adds physics.theory's usage to physics' (and on to <none>), gives
    groups priority 0, and leaves the submitters' entries as GET_PRIORITY has them."""
    service = _group_service(tmp_path)
    handler = cedar_handlers(service)[commands.GET_PRIORITY_ROLLUP]
    (answer,) = drive(handler, 514, [])
    report = answer.get_classad(types=False)
    assert report.evaluate("Name3") == "physics"
    assert report.evaluate("ResourcesUsed3") == 5
    assert report.evaluate("WeightedResourcesUsed3") == 5.0
    assert report.evaluate("ResourcesUsed1") == 5
    assert report.evaluate("Priority3") == 0.0
    assert report.evaluate("ResourcesUsed6") == 2
