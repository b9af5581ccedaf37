"""Every attribute the startd puts into a slot ad: its name, ClassAd type, and when it is there.

This table is the contract of :func:`epcore.slots.ads.build_slot_ads`: the builder publishes
exactly these names (plus what the configuration adds through ``STARTD_ATTRS`` and what plugins
add through ``ep_machine_attributes``), with these types. It covers every *modern* machine
attribute of section (d) of the requirements inventory that applies to a startd slot ad, and a
few more that HTCondor's startd publishes and policies use (``Start``, ``MyCurrentTime``,
``WithinResourceLimits``...).

Names written with placeholders stand for a family of attributes: ``<name>`` is a custom
resource (``GPUs``, ``Cogs``), ``<id>`` a device id with every character that may not appear in
an attribute name replaced by ``_`` (``GPU-6a96bd13`` gives ``GPUs_GPU_6a96bd13``), ``<res>`` a
resource a consumption policy covers, and ``slot<N>_<attr>`` a cross-slot copy.

``presence`` says which ads carry the attribute:

- ``always``: every slot ad.
- ``configured``: every slot ad, when the configuration defines the macro it comes from (the
  platform macros HTCondor detects, such as ``OPSYSANDVER``).
- ``partitionable`` / ``dynamic``: partitionable (dynamic) slots only.
- ``resource-limited``: partitionable and dynamic slots (whose Requirements check the request).
- ``consumption``: slots under a consumption policy (``CONSUMPTION_POLICY``).
- ``custom``: every slot, once per custom resource; ``devices``: when the resource is made of
  identified devices; ``properties``: when those devices have property ads (nested GPU ads).
- ``benchmarked``: once the benchmarks have run (before that HTCondor publishes neither).
- ``claimed``: while the slot is claimed (Claimed or Preempting with a claim).
- ``preempting``: while a preempting claim waits for the slot.
- ``job``: while a job runs on the slot.
- ``cross-slot``: when ``STARTD_SLOT_ATTRS`` names the attribute.
- ``timed``: once the slot has spent a second or more in that State and Activity.

``source`` says who supplies the value: ``issue 4`` is the ad builder itself (configuration,
inventory, machine readings); ``issue 5`` is the policy engine, which hands the builder a
:class:`~epcore.slots.slot_status.SlotStatus` per slot (until it exists, every slot gets the
state a startd starts in: Owner/Idle).
"""

from __future__ import annotations

import re
from typing import Literal

import attrs

#: The ClassAd types of slot attributes. ``expression`` is an attribute advertised as an
#: expression (evaluated against the job at match time), not as a literal.
ClassAdType = Literal["bool", "int", "real", "string", "list", "classad", "expression"]

Presence = Literal[
    "always",
    "configured",
    "partitionable",
    "dynamic",
    "resource-limited",
    "consumption",
    "custom",
    "devices",
    "properties",
    "benchmarked",
    "claimed",
    "preempting",
    "job",
    "cross-slot",
    "timed",
    "draining",
]


@attrs.frozen
class SlotAttribute:
    """One attribute (or family of attributes) of a slot ad."""

    name: str
    type: ClassAdType
    description: str
    presence: Presence = "always"
    source: str = "issue 4"

    @property
    def is_template(self) -> bool:
        """True when ``name`` has placeholders (``Total<name>``, ``slot<N>_<attr>``)."""
        return "<" in self.name


def _a(
    name: str,
    kind: ClassAdType,
    description: str,
    presence: Presence = "always",
    source: str = "issue 4",
) -> SlotAttribute:
    return SlotAttribute(name, kind, description, presence, source)


_POLICY = "issue 5"

SLOT_ATTRIBUTES: tuple[SlotAttribute, ...] = (
    # -- identity ------------------------------------------------------------------------------
    _a("MyType", "string", 'The kind of ad: "Machine".'),
    _a(
        "TargetType",
        "string",
        'What the ad matches: "Job". Obsolete for ClassAd semantics, but HTCondor still '
        "publishes it because matchmakers before 23.0 need it.",
    ),
    _a(
        "Name",
        "string",
        "slot<N>@host for a static or partitionable slot, slot<N>_<M>@host for a dynamic one.",
    ),
    _a("Machine", "string", "The machine's fully qualified host name."),
    _a(
        "CondorVersion",
        "string",
        "The HTCondor version the startd speaks as; HTCondor 25's submit compares it "
        "(versionGE(split(TARGET.CondorVersion)[1], ...)) in every job's Requirements.",
        source="issue 22",
    ),
    _a("CondorPlatform", "string", "The platform string beside CondorVersion.", source="issue 22"),
    _a("SlotID", "int", "N of slot<N>; a dynamic slot has its parent's number."),
    _a("SlotType", "string", '"Static", "Partitionable" or "Dynamic".'),
    _a("SlotTypeId", "int", "N of the SLOT_TYPE_<N> the slot comes from (0 when none)."),
    _a("PartitionableSlot", "bool", "True on a partitionable slot.", "partitionable"),
    _a("DynamicSlot", "bool", "True on a dynamic slot.", "dynamic"),
    _a("TotalSlots", "int", "How many slots the startd advertises."),
    _a(
        "MyCurrentTime",
        "int",
        "When the ad was made (epoch seconds); condor_status computes ActvtyTime from it.",
    ),
    # -- state and policy ----------------------------------------------------------------------
    _a(
        "State",
        "string",
        "Owner, Unclaimed, Matched, Claimed, Preempting, Backfill or Drained.",
        source=_POLICY,
    ),
    _a(
        "Activity",
        "string",
        "Idle, Busy, Suspended, Retiring, Vacating, Killing or Benchmarking.",
        source=_POLICY,
    ),
    _a(
        "EnteredCurrentState",
        "int",
        "When the slot entered its State (epoch seconds).",
        source=_POLICY,
    ),
    _a(
        "EnteredCurrentActivity",
        "int",
        "When the slot entered its Activity (epoch seconds).",
        source=_POLICY,
    ),
    _a(
        "Start",
        "expression",
        "The START expression (SLOT_TYPE_<N>_START / SLOT<N>_START override it per slot).",
    ),
    _a(
        "Requirements",
        "expression",
        "What a job must satisfy: False in Matched, Preempting and Drained and while the "
        "startd accepts no jobs; else True when START evaluates to True against the slot ad "
        "alone, otherwise START; partitionable and dynamic slots also require "
        "WithinResourceLimits.",
    ),
    _a(
        "WithinResourceLimits",
        "expression",
        "True when the job's requests fit what the slot has left.",
        "resource-limited",
    ),
    _a(
        "Rank",
        "expression",
        "The RANK expression: how much the slot prefers a job (0.0 when RANK is not set).",
    ),
    _a("CurrentRank", "real", "Rank of the job the slot runs (0.0 when none).", source=_POLICY),
    _a(
        "MaxJobRetirementTime",
        "expression",
        "MAXJOBRETIREMENTTIME: seconds of retirement a preempted job gets (0 when not set).",
    ),
    _a(
        "SlotWeight",
        "expression",
        "SLOT_WEIGHT: how much the slot counts for accounting (Cpus by default).",
    ),
    # -- resources -----------------------------------------------------------------------------
    _a("Cpus", "int", "Cores the slot offers (what is left, on a partitionable slot)."),
    _a("Memory", "int", "Memory (MB) the slot offers."),
    _a("Disk", "int", "Disk (KB) the slot offers in its execute partition, less RESERVED_DISK."),
    _a("VirtualMemory", "int", "Swap (KB) the slot offers."),
    _a("TotalSlotCpus", "int", "Cores the slot was given."),
    _a("TotalSlotMemory", "int", "Memory (MB) the slot was given."),
    _a("TotalSlotDisk", "int", "Disk (KB) the slot was given."),
    _a("TotalCpus", "int", "Cores the startd divides among its slots (NUM_CPUS)."),
    _a("TotalMemory", "int", "Memory (MB) the startd divides (MEMORY, less RESERVED_MEMORY)."),
    _a("TotalDisk", "int", "Free disk (KB) of the slot's execute partition, less RESERVED_DISK."),
    _a("TotalVirtualMemory", "int", "Swap (KB) of the machine."),
    _a("DetectedCpus", "int", "Cores the hardware has, before NUM_CPUS."),
    _a("DetectedMemory", "int", "Memory (MB) the hardware has, before MEMORY."),
    _a(
        "MachineResources",
        "string",
        'The resources slots are made of: "Cpus Memory Disk Swap" and the custom ones.',
    ),
    _a("<name>", "int", "Amount of the custom resource the slot offers.", "custom"),
    _a("Total<name>", "int", "Amount of the custom resource the machine has.", "custom"),
    _a("Detected<name>", "int", "Amount detected; currently equal to Total<name>.", "custom"),
    _a("TotalSlot<name>", "int", "Amount of the custom resource the slot was given.", "custom"),
    _a(
        "Assigned<name>",
        "string",
        'Ids of the devices given to the slot, comma separated ("GPU-6a96bd13,GPU-b2c83767").',
        "devices",
    ),
    _a(
        "Available<name>",
        "list",
        "References to the property ads of the devices the slot "
        "still offers, for countMatches(RequireGPUs, AvailableGPUs).",
        "properties",
    ),
    _a(
        "<name>_<id>",
        "classad",
        "The property ad of one device (Id, Capability, "
        "GlobalMemoryMb...), as condor_gpu_discovery -nested publishes it.",
        "properties",
    ),
    _a(
        "Consumption<res>",
        "expression",
        "CONSUMPTION_<res>: how much of the resource a job consumes under a consumption policy.",
        "consumption",
    ),
    # -- load, idle time, clock, benchmarks ----------------------------------------------------
    _a("LoadAvg", "real", "The slot's load: its HTCondor load plus its share of the owner load."),
    _a("CondorLoadAvg", "real", "Load of the slot's job (or benchmarks)."),
    _a("TotalLoadAvg", "real", "Load average of the whole machine."),
    _a("TotalCondorLoadAvg", "real", "Load HTCondor puts on the whole machine."),
    _a(
        "KeyboardIdle",
        "int",
        "Seconds since keyboard, mouse or terminal activity the slot "
        "notices (see SLOTS_CONNECTED_TO_KEYBOARD).",
    ),
    _a(
        "ConsoleIdle",
        "int",
        "Seconds since console activity the slot notices (see SLOTS_CONNECTED_TO_CONSOLE).",
    ),
    _a("CpuBusyTime", "int", "Seconds the non-HTCondor load has been high (0 when it is not)."),
    _a("CpuIsBusy", "bool", "Whether the non-HTCondor load is high now."),
    _a("ClockMin", "int", "Minutes since local midnight (0-1439)."),
    _a("ClockDay", "int", "Day of the week, 0 = Sunday ... 6 = Saturday."),
    _a("Mips", "int", "Dhrystone integer benchmark result.", "benchmarked"),
    _a("KFlops", "int", "Linpack floating point benchmark result.", "benchmarked"),
    _a("LastBenchmark", "int", "When the benchmarks last ran (0 before they ever have)."),
    _a(
        "TotalTime<State><Activity>",
        "int",
        "Seconds the slot has spent in that State and Activity since the startd started, the "
        "current one counted to now (TotalTimeClaimedBusy, TotalTimeOwnerIdle...).",
        "timed",
        _POLICY,
    ),
    _a(
        "TotalMachineDrainingUnclaimedTime",
        "int",
        "Core-seconds left unused because the machine was draining.",
        source=_POLICY,
    ),
    _a(
        "TotalMachineDrainingBadput",
        "int",
        "Core-seconds of job run time thrown away by draining evictions.",
        source=_POLICY,
    ),
    _a("Draining", "bool", "Whether the machine is draining.", source="issue 28"),
    _a(
        "DrainReason",
        "string",
        'Why the machine drains ("Defrag <name>" for condor_defrag\'s drains).',
        "draining",
        "issue 28",
    ),
    _a(
        "ExpectedMachineGracefulDrainingCompletion",
        "int",
        "When a graceful drain started now would be done (the running jobs retired).",
        source="issue 28",
    ),
    _a(
        "ExpectedMachineGracefulDrainingBadput",
        "int",
        "Core-seconds of job run time a graceful drain started now would throw away.",
        source="issue 28",
    ),
    _a(
        "ExpectedMachineQuickDrainingCompletion",
        "int",
        "When a quick drain started now would be done.",
        source="issue 28",
    ),
    _a(
        "ExpectedMachineQuickDrainingBadput",
        "int",
        "Core-seconds of job run time a quick drain started now would throw away.",
        source="issue 28",
    ),
    # -- platform ------------------------------------------------------------------------------
    _a("Arch", "string", 'The architecture, from ARCH ("X86_64").'),
    _a("OpSys", "string", 'The operating system, from OPSYS ("LINUX").'),
    _a("OpSysAndVer", "string", 'OPSYSANDVER ("Debian12").', "configured"),
    _a("OpSysName", "string", 'OPSYSNAME ("Debian").', "configured"),
    _a("OpSysMajorVer", "int", "OPSYSMAJORVER (12).", "configured"),
    _a("OpSysLongName", "string", 'OPSYSLONGNAME ("Debian GNU/Linux 12").', "configured"),
    _a("OpSysShortName", "string", 'OPSYSSHORTNAME ("Debian").', "configured"),
    _a("OpSysVer", "int", "OPSYSVER (1200).", "configured"),
    _a("OpSysLegacy", "string", 'OPSYSLEGACY ("LINUX").', "configured"),
    _a("UidDomain", "string", "UID_DOMAIN: machines sharing it share user accounts."),
    _a("FileSystemDomain", "string", "FILESYSTEM_DOMAIN: machines sharing it share files."),
    _a("HasFileTransfer", "bool", "True: jobs that ask for file transfer can run here."),
    _a("StartdIpAddr", "string", 'The startd\'s address ("<192.0.2.5:9618>").'),
    _a("MyAddress", "string", "The startd's address, as every daemon ad carries it."),
    # -- claim and job (the policy engine fills these in) --------------------------------------
    _a("ClientMachine", "string", "Host of the schedd holding the claim.", "claimed", _POLICY),
    _a("RemoteOwner", "string", "User who claimed the slot.", "claimed", _POLICY),
    _a("RemoteUser", "string", "User whose job uses the slot.", "claimed", _POLICY),
    _a(
        "AccountingGroup",
        "string",
        "Accounting group of the claim's job (when it has one).",
        "claimed",
        _POLICY,
    ),
    _a(
        "ConcurrencyLimits",
        "string",
        'Concurrency limits of the claim\'s job, when it has some ("matlab,db:2").',
        "claimed",
        _POLICY,
    ),
    _a("TotalClaimRunTime", "int", "Seconds the claim has run jobs.", "claimed", _POLICY),
    _a("TotalClaimSuspendTime", "int", "Seconds the claim has been suspended.", "claimed", _POLICY),
    _a("PreemptingOwner", "string", "User of the claim waiting to preempt.", "preempting", _POLICY),
    _a("PreemptingUser", "string", "User of the job waiting to preempt.", "preempting", _POLICY),
    _a("PreemptingRank", "real", "Rank of the job waiting to preempt.", "preempting", _POLICY),
    _a("JobId", "string", 'Id of the running job ("152.3").', "job", _POLICY),
    _a("JobStart", "int", "When the running job started (epoch seconds).", "job", _POLICY),
    _a("TotalJobRunTime", "int", "Seconds the running job has run.", "job", _POLICY),
    _a("TotalJobSuspendTime", "int", "Seconds the running job has been suspended.", "job", _POLICY),
    # -- cross-slot ----------------------------------------------------------------------------
    _a(
        "slot<N>_<attr>",
        "expression",
        "Slot N's attribute <attr> (a STARTD_SLOT_ATTRS entry), "
        "copied into every slot's ad; slot<N>_<M>_<attr> for a dynamic slot.",
        "cross-slot",
    ),
)

_PLACEHOLDER = re.compile(r"<([^>]+)>")


def expand(spec: SlotAttribute, **values: str) -> str:
    """The attribute name ``spec`` stands for once its placeholders are given values.

    >>> expand(SlotAttribute("Total<name>", "int", ""), name="GPUs")
    'TotalGPUs'
    """
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], spec.name)


#: The table by lower-case name (templates under their placeholder spelling).
ATTRIBUTES_BY_NAME: dict[str, SlotAttribute] = {spec.name.lower(): spec for spec in SLOT_ATTRIBUTES}
