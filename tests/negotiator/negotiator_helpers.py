"""Slot and job ads for the negotiator tests, shaped as a startd and a schedd publish them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from epcore.classad import ClassAd, parse_ad
from epcore.config import Config
from epcore.interfaces import SubmitterJobs
from epcore.negotiator import Accountant, Cycle
from epcore.negotiator.cycle import run_cycle

NOW = 1_700_000_000.0
#: Which chooser a cycle uses: the indexed one negotiate() uses, or the plain reference.
ChooserName = Literal["indexed", "plain"]
DOMAIN = "example.org"


def config(text: str = "") -> Config:
    """A configuration with the test pool's UID_DOMAIN and ``text`` after it."""
    return Config.from_text(f"UID_DOMAIN = {DOMAIN}\n{text}")


def slot(
    number: int,
    *,
    machine: str = "m1",
    cpus: int = 1,
    memory: int = 1024,
    requirements: str = "true",
    rank: str = "0.0",
    extra: Mapping[str, object] | None = None,
    running: str | None = None,
) -> ClassAd:
    """A static slot; with ``running`` (a user), Claimed/Busy running that user's job."""
    ad = parse_ad(
        f"""[
        MyType = "Machine"; Name = "slot{number}@{machine}"; Machine = "{machine}";
        SlotID = {number}; SlotType = "Static"; Cpus = {cpus}; Memory = {memory};
        Disk = 1000000; OpSys = "LINUX"; Arch = "X86_64"; UidDomain = "{DOMAIN}";
        State = "Unclaimed"; Activity = "Idle"; CurrentRank = 0.0; SlotWeight = Cpus;
        Start = {requirements}; Requirements = {requirements}; Rank = {rank}
        ]"""
    )
    if running is not None:
        ad["State"] = "Claimed"
        ad["Activity"] = "Busy"
        ad["RemoteUser"] = running
        ad["RemoteOwner"] = running
        ad["JobId"] = "99.0"
    for name, value in (extra or {}).items():
        ad[name] = value
    return ad


def job(
    cluster: int,
    proc: int = 0,
    *,
    owner: str = "alice",
    cpus: int = 1,
    memory: int = 512,
    requirements: str = "TARGET.Memory >= RequestMemory && TARGET.Cpus >= RequestCpus",
    rank: str = "0",
    extra: Mapping[str, object] | None = None,
) -> ClassAd:
    """An idle vanilla job."""
    ad = parse_ad(
        f"""[
        MyType = "Job"; ClusterId = {cluster}; ProcId = {proc}; Owner = "{owner}";
        User = "{owner}@{DOMAIN}"; JobStatus = 1; JobUniverse = 5; QDate = {int(NOW)};
        RequestCpus = {cpus}; RequestMemory = {memory}; RequestDisk = 1000;
        Requirements = {requirements}; Rank = {rank}
        ]"""
    )
    for name, value in (extra or {}).items():
        ad[name] = value
    return ad


def jobs_of(
    owner: str,
    count: int,
    cluster: int = 1,
    *,
    cpus: int = 1,
    memory: int = 512,
    rank: str = "0",
) -> SubmitterJobs:
    """``count`` procs of one cluster of ``owner``, as the schedd hands them over."""
    return SubmitterJobs(
        f"{owner}@{DOMAIN}",
        tuple(
            job(cluster, proc, owner=owner, cpus=cpus, memory=memory, rank=rank)
            for proc in range(count)
        ),
    )


def cycle(
    cfg: Config,
    slots: Sequence[ClassAd],
    submitters: Sequence[SubmitterJobs],
    accountant: Accountant | None = None,
    *,
    chooser: ChooserName = "indexed",
) -> Cycle:
    """One cycle at NOW (with an empty accountant unless one is given)."""
    start = accountant if accountant is not None else Accountant.empty(cfg)
    return run_cycle(cfg, start, slots, submitters, NOW, chooser)


def matched(result: Cycle) -> dict[str, str]:
    """job id -> slot name of a cycle's matches."""
    return {match.job_id: match.slot_name for match in result.matches}


def count_by_submitter(result: Cycle) -> dict[str, int]:
    """How many matches each submitter got."""
    found: dict[str, int] = {}
    for match in result.matches:
        found[match.submitter] = found.get(match.submitter, 0) + 1
    return found
