"""Slot ads: configured policy expressions and their errors, plugin attributes, identity,
claims, the clock, platform, benchmarks, resources, and classad2 reading what we write."""

from __future__ import annotations

import classad2
import pytest
from slot_ad_fixtures import (
    HOST,
    NOW,
    build,
    by_name,
    config_of,
    gpus,
    inventory_of,
    partitionable_with_dynamic,
    resources,
    rich_scenario,
    static_slots,
)

from epcore.classad import (
    ERROR,
    UNDEFINED,
    ClassAd,
    format_old,
    parse_ad,
    parse_expr,
    symmetric_match,
)
from epcore.errors import PluginError, SlotConfigError
from epcore.slots.model import SlotLayout
from epcore.slots.slot_status import (
    Benchmarks,
    ClaimInfo,
    PreemptingClaim,
    RunningJob,
    SlotStatus,
)
from epcore.types import MachineAttribute

# -- configured expressions, errors, plugins -----------------------------------------------


@pytest.mark.parametrize(
    ("text", "knob"),
    [
        ("START = (KeyboardIdle > \n", "START"),
        ("SLOT_TYPE_1_START = KeyboardIdle >\n", "SLOT_TYPE_1_START"),
        ("RANK = Owner ==\n", "RANK"),
        ("SLOT_WEIGHT = Cpus +\n", "SLOT_WEIGHT"),
        ("MAXJOBRETIREMENTTIME = 3600 *\n", "MAXJOBRETIREMENTTIME"),
    ],
)
def test_policy_expression_that_does_not_parse_names_its_knob(text: str, knob: str) -> None:
    """A START, RANK, SLOT_WEIGHT or MAXJOBRETIREMENTTIME that is no expression is an error
    naming the knob and where it was set."""
    with pytest.raises(SlotConfigError) as caught:
        build(config_of(text), static_slots(1))
    assert str(caught.value).startswith("<string>, line 1: " + knob + " = ")


def test_slot_weight_rank_and_retirement_are_published_as_expressions() -> None:
    """SlotWeight, Rank and MaxJobRetirementTime carry the configured expressions per slot."""
    config = config_of(
        "SLOT_WEIGHT = Cpus * 2\nSLOT_TYPE_2_SLOT_WEIGHT = Memory\n"
        'RANK = TARGET.Owner == "coltrane"\nMAXJOBRETIREMENTTIME = 2 * 3600\n'
    )
    layout = SlotLayout(static_slots(1, cpus=3).slots + static_slots(2, type_id=2).slots[1:])
    first, second = build(config, layout)
    assert (first.evaluate("SlotWeight"), second.evaluate("SlotWeight")) == (6, 2048)
    assert str(first["Rank"]) == 'TARGET.Owner == "coltrane"'
    assert first.evaluate("MaxJobRetirementTime") == 7200


def test_defaults_of_rank_retirement_and_weight() -> None:
    """Without configuration: Rank 0.0, MaxJobRetirementTime 0, SlotWeight = Cpus, Start true."""
    (ad,) = build(config_of(), static_slots(1, cpus=2))
    assert [str(ad[n]) for n in ("Rank", "MaxJobRetirementTime", "SlotWeight", "Start")] == [
        "0.0",
        "0",
        "Cpus",
        "true",
    ]
    assert ad.evaluate("SlotWeight") == 2


def test_consumption_policy_slots_publish_consumption_expressions() -> None:
    """A partitionable slot under CONSUMPTION_POLICY advertises Consumption<res> and checks
    them in WithinResourceLimits."""
    custom = gpus(("GPU-1", 8.0))
    whole = resources(cpus=4, custom={"GPUs": 1}, devices={"GPUs": ("GPU-1",)})
    config = config_of("CONSUMPTION_POLICY = True\nSLOT_TYPE_1_CONSUMPTION_GPUs = 1\n")
    pslot = build(config, partitionable_with_dynamic([], whole), inventory_of(custom=custom))[0]
    assert str(pslot["ConsumptionCpus"]) == "quantize(target.RequestCpus,{ 1 })"
    assert str(pslot["ConsumptionGPUs"]) == "1"
    assert "MY.ConsumptionMemory <= MY.Memory" in str(pslot["WithinResourceLimits"])
    job = parse_ad("[RequestCpus = 2; RequestMemory = 200; RequestDisk = 10; Requirements = true]")
    assert symmetric_match(pslot, job)


def test_plugin_attributes_are_published_and_startd_attrs_win() -> None:
    """Plugin attributes appear in every ad; STARTD_ATTRS may replace them."""
    extra = (
        MachineAttribute("HasGizmo", True),
        MachineAttribute("GizmoSlots", "Cpus * 2", expression=True),
        MachineAttribute("GizmoName", "plugin"),
    )
    config = config_of('GizmoName = "admin"\nSTARTD_ATTRS = GizmoName\n')
    ads = build(config, static_slots(2, cpus=2), extra=extra)
    assert [ads[1].evaluate(n) for n in ("HasGizmo", "GizmoSlots", "GizmoName")] == [
        True,
        4,
        "admin",
    ]


@pytest.mark.parametrize(
    "extra",
    [MachineAttribute("Bad", "Cpus +", expression=True), MachineAttribute("Bad", object())],
)
def test_plugin_attribute_that_is_no_classad_value_is_a_plugin_error(
    extra: MachineAttribute,
) -> None:
    """An attribute a plugin cannot have meant is a PluginError naming it."""
    with pytest.raises(PluginError, match="machine attribute Bad"):
        build(config_of(), static_slots(1), extra=(extra,))


# -- identity, claims, clock, platform -------------------------------------------------------


def test_names_ids_and_types_of_each_kind_of_slot() -> None:
    """Names, SlotID, SlotType and the kind flags of partitionable and dynamic slots."""
    ads = build(config_of(), partitionable_with_dynamic([resources(), resources()]))
    assert [ad.evaluate("Name") for ad in ads] == [
        f"slot1@{HOST}",
        f"slot1_1@{HOST}",
        f"slot1_2@{HOST}",
    ]
    assert [ad.evaluate("SlotID") for ad in ads] == [1, 1, 1]
    assert [ad.evaluate("SlotType") for ad in ads] == ["Partitionable", "Dynamic", "Dynamic"]
    assert [ad.evaluate("PartitionableSlot") for ad in ads] == [True, UNDEFINED, UNDEFINED]
    assert [ad.evaluate("DynamicSlot") for ad in ads] == [UNDEFINED, True, True]
    (static,) = build(config_of(), static_slots(1))
    assert static.evaluate("SlotType") == "Static"


def test_statuses_are_found_by_full_or_short_name() -> None:
    """A status keyed slot1@host or slot2 applies; other slots start Owner/Idle at started_at."""
    statuses = {
        f"slot1@{HOST}": SlotStatus("Unclaimed", "Idle", NOW - 50, NOW - 40),
        "slot2": SlotStatus("Backfill", "Busy"),
    }
    ads = build(config_of(), static_slots(3), statuses=statuses, started_at=NOW - 100)
    assert [(a.evaluate("State"), a.evaluate("Activity")) for a in ads] == [
        ("Unclaimed", "Idle"),
        ("Backfill", "Busy"),
        ("Owner", "Idle"),
    ]
    assert [a.evaluate("EnteredCurrentState") for a in ads] == [NOW - 50, NOW - 100, NOW - 100]
    assert ads[0].evaluate("EnteredCurrentActivity") == NOW - 40


def test_claim_and_job_attributes_appear_while_claimed() -> None:
    """A claimed slot running a job advertises who holds it and which job runs."""
    status = SlotStatus(
        "Claimed",
        "Busy",
        current_rank=10.0,
        claim=ClaimInfo("coltrane@example.org", "coltrane", "submit.example.org", 300, 5),
        job=RunningJob("152.3", NOW - 200, 10.0),
        preempting=PreemptingClaim("miles", "miles@example.org", 20.0),
    )
    claimed, idle = build(config_of(), static_slots(2), statuses={"slot1": status})
    assert [
        claimed.evaluate(n)
        for n in (
            "RemoteUser",
            "RemoteOwner",
            "ClientMachine",
            "JobId",
            "JobStart",
            "CurrentRank",
            "PreemptingRank",
        )
    ] == ["coltrane@example.org", "coltrane", "submit.example.org", "152.3", NOW - 200, 10.0, 20.0]
    assert all(n not in idle for n in ("RemoteUser", "JobId", "ClientMachine"))


def test_claimed_slot_shows_the_jobs_group_and_concurrency_limits() -> None:
    """A claim's job with an accounting group and concurrency limits shows both in the slot
    ad (the negotiator counts group usage and limits from them); a plain job shows neither."""
    grouped = ClaimInfo(
        "higgs@example.org",
        "higgs",
        "submit.example.org",
        accounting_group="group_physics.hep.higgs",
        concurrency_limits="matlab,db:2",
    )
    plain = ClaimInfo("coltrane@example.org", "coltrane", "submit.example.org")
    statuses = {
        "slot1": SlotStatus("Claimed", "Busy", claim=grouped, job=RunningJob("1.0", NOW - 5)),
        "slot2": SlotStatus("Claimed", "Busy", claim=plain, job=RunningJob("2.0", NOW - 5)),
    }
    first, second = build(config_of(), static_slots(2), statuses=statuses)
    assert first.evaluate("AccountingGroup") == "group_physics.hep.higgs"
    assert first.evaluate("ConcurrencyLimits") == "matlab,db:2"
    assert "AccountingGroup" not in second and "ConcurrencyLimits" not in second


@pytest.mark.parametrize(
    ("now", "offset", "clock_min", "clock_day"),
    [
        (1_704_585_600, 0, 0, 0),  # 2024-01-07 00:00 UTC, a Sunday
        (1_704_585_600 + 8 * 3600, 0, 480, 0),
        (1_704_585_600 + 17 * 3600, 0, 1020, 0),
        (1_704_585_600 + 3600, -2 * 3600, 1380, 6),  # 23:00 on Saturday, two hours west
        (NOW, 3600, 23 * 60 + 13, 2),  # Tuesday 23:13 in UTC+1
    ],
)
def test_clock_min_and_clock_day_follow_local_time(
    now: int, offset: int, clock_min: int, clock_day: int
) -> None:
    """ClockMin counts minutes since local midnight, ClockDay days since Sunday."""
    (ad,) = build(config_of(), static_slots(1), now=now, utc_offset=offset)
    assert (ad.evaluate("ClockMin"), ad.evaluate("ClockDay")) == (clock_min, clock_day)


def test_platform_domains_and_address_come_from_the_configuration() -> None:
    """Arch, OpSys..., UidDomain, FileSystemDomain and the address come from the macros."""
    config = config_of("UID_DOMAIN = cs.example.org\nFILESYSTEM_DOMAIN = nfs.example.org\n")
    (ad,) = build(config, static_slots(1))
    assert [
        ad.evaluate(n)
        for n in (
            "Arch",
            "OpSys",
            "OpSysAndVer",
            "OpSysMajorVer",
            "OpSysVer",
            "UidDomain",
            "FileSystemDomain",
            "StartdIpAddr",
            "MyAddress",
            "Machine",
        )
    ] == [
        "X86_64",
        "LINUX",
        "Debian12",
        12,
        1200,
        "cs.example.org",
        "nfs.example.org",
        "<192.0.2.10:0>",
        "<192.0.2.10:0>",
        HOST,
    ]


def test_benchmarks_appear_once_they_have_run() -> None:
    """Before benchmarks LastBenchmark is 0 and Mips/KFlops are absent; afterwards all three."""
    (before,) = build(config_of(), static_slots(1))
    assert before.evaluate("LastBenchmark") == 0
    assert "Mips" not in before and "KFlops" not in before
    (after,) = build(config_of(), static_slots(1), benchmarks=Benchmarks(3000, 900000, NOW))
    assert [after.evaluate(n) for n in ("Mips", "KFlops", "LastBenchmark")] == [3000, 900000, NOW]


def test_resources_and_totals_of_a_dynamic_slot() -> None:
    """A dynamic slot advertises its own amounts; Total* describe the machine."""
    child = resources(cpus=2, memory_mb=1536, disk_kb=20000, swap_kb=100)
    ads = by_name(build(config_of(), partitionable_with_dynamic([child])))
    d = ads["slot1_1"]
    assert [
        d.evaluate(n)
        for n in (
            "Cpus",
            "Memory",
            "Disk",
            "VirtualMemory",
            "TotalSlotCpus",
            "TotalSlotMemory",
            "TotalCpus",
            "TotalMemory",
        )
    ] == [2, 1536, 20000, 100, 2, 1536, 4, 8192]
    p = ads["slot1"]
    assert [p.evaluate(n) for n in ("Cpus", "Memory", "TotalSlotCpus")] == [2, 8192 - 1536, 4]


# -- the oracle: classad2 reads the ads we write -------------------------------------------------


ORACLE_JOB = """[
  Owner = "coltrane"; RequestCpus = 1; RequestMemory = 512; RequestDisk = 1000;
  RequestGPUs = 1; RequireGPUs = Capability >= 8.0
]"""


def _ours(ad: ClassAd, text: str, target: str) -> object:
    return _canon(parse_expr(text).evaluate(ad, parse_ad(target)))


def _oracle(ad: classad2.ClassAd, text: str, target: str) -> object:
    # With a target classad2 evaluates in a match context, where MY is the ad itself, as
    # HTCondor's daemons always do (without one, MY.x is UNDEFINED in classad2).
    return _canon(classad2.ExprTree(text).eval(ad, classad2.ClassAd(target)))


def _canon(value: object) -> object:
    """Both engines' values in one comparable form (lists and ads by their sizes only: their
    items are compared one by one through subscripts)."""
    # classad2.Value is an int enum (Error == 1, Undefined == 2): test its type, not equality.
    if value is UNDEFINED or (isinstance(value, classad2.Value) and value.name == "Undefined"):
        return "undefined"
    if value is ERROR or isinstance(value, classad2.Value):
        return "error"
    if isinstance(value, list):
        return ("list", len(value))
    if isinstance(value, ClassAd | classad2.ClassAd):
        return ("classad", sorted(name.lower() for name in value))
    return (type(value).__name__, value)


def _probes(ad: ClassAd) -> list[str]:
    probes = []
    for name in ad:
        probes.append(name)
        value = ad.evaluate(name)
        if isinstance(value, list):
            probes += [f"{name}[{index}]" for index in range(len(value))]
            probes += [f"{name}[{index}].Id" for index in range(len(value))]
        if isinstance(value, ClassAd):
            probes += [f"{name}.{inner}" for inner in value]
    return probes


@pytest.mark.oracle
@pytest.mark.parametrize("syntax", ["new", "old"])
def test_classad2_reads_our_ads_with_the_same_values(syntax: str) -> None:
    """str(ad) (new syntax) and format_old(ad) parse in classad2, and every attribute, list item
    and nested attribute evaluates there as in epcore, alone and against a job."""
    ads, _ = rich_scenario()
    for ad in ads.values():
        if syntax == "new":
            theirs = classad2.ClassAd(str(ad))
        else:
            theirs = classad2.parseOne(format_old(ad), classad2.ParserType.Old)
        assert sorted(name.lower() for name in theirs) == sorted(name.lower() for name in ad)
        for target in ("[]", ORACLE_JOB):
            for probe in _probes(ad):
                assert _oracle(theirs, probe, target) == _ours(ad, probe, target), probe


def test_slots_name_the_version_htcondor_jobs_compare() -> None:
    """Every slot ad carries CondorVersion (the one epcore's CEDAR face speaks as) and
    CondorPlatform, so that the Requirements htcondor2's submit writes, which split the
    slot's CondorVersion, evaluate to a value rather than ERROR."""
    from epcore.net.policy import VERSION

    (ad,) = build(config_of(""), static_slots(1))
    assert ad.evaluate("CondorVersion") == VERSION
    assert ad.evaluate("CondorPlatform") == "$CondorPlatform: epcore $"
    ad["Disk"] = 2_000_000
    ad["Requirements"] = True
    job = ClassAd({"RequestDisk": 1_048_576, "MyType": "Job"})
    job["Requirements"] = parse_expr(
        '(versionGE(split(TARGET.CondorVersion)[1], "25.12.0") || TARGET.Disk >= RequestDisk)'
    )
    assert symmetric_match(job, ad)
