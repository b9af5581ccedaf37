"""What the schedd reads from job ads: submitters, claim-reuse keys, queue order, results."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.config import Config
from epcore.errors import PoolError
from epcore.interfaces import Locator, Significance, SubmitterJobs
from epcore.negotiator.settings import significance
from epcore.schedd.jobqueue import JobId, JobQueue
from epcore.schedd.schedd import Schedd
from epcore.schedd.schedd_jobs import (
    IdleIndex,
    JobKinds,
    job_id_of,
    match_capacity,
    matching_names,
    queue_order,
    result_values,
    reuse_key,
    submitter_of,
)


@pytest.mark.parametrize(
    ("job", "submitter"),
    [
        ('[ Owner = "alice"; User = "alice@site" ]', "alice@site"),
        ('[ Owner = "alice" ]', "alice@dom"),
        ('[ Owner = "alice"; NiceUser = true; User = "alice@site" ]', "nice-user.alice@dom"),
        ('[ Owner = "alice"; AccountingGroup = "physics.alice" ]', "physics.alice@dom"),
        ('[ Owner = "alice"; AccountingGroup = "" ; User = "alice@x" ]', "alice@x"),
        ("[ ]", "unknown@dom"),
    ],
)
def test_the_submitter_is_the_accounting_principal(job: str, submitter: str) -> None:
    """Nice users, accounting groups and plain users each negotiate under their principal."""
    assert submitter_of(parse_ad(job), "dom") == submitter


def test_jobs_of_one_autocluster_share_a_reuse_key() -> None:
    """Two procs with the same requests and expressions may share a claim; a different
    request or owner may not."""
    base = '[ Owner = "a"; RequestCpus = 1; RequestMemory = 64; Requirements = TARGET.Cpus > 0; '
    one = parse_ad(base + "ProcId = 0 ]")
    two = parse_ad(base + 'ProcId = 1; Cmd = "/bin/other" ]')
    bigger = parse_ad(base.replace("RequestMemory = 64", "RequestMemory = 65") + "ProcId = 2 ]")
    other = parse_ad(base.replace('"a"', '"b"') + "ProcId = 3 ]")
    assert reuse_key(one) == reuse_key(two)
    assert reuse_key(one) != reuse_key(bigger)
    assert reuse_key(one) != reuse_key(other)


def test_a_claim_is_reused_only_under_the_same_concurrency_limits() -> None:
    """Jobs asking for other concurrency limits do not share a claim (HTCondor's
    CLAIM_RECYCLING_CONSIDER_LIMITS default), so reuse cannot pass a limit."""
    base = '[ Owner = "a"; RequestCpus = 1; '
    plain = parse_ad(base + "ProcId = 0 ]")
    matlab = parse_ad(base + 'ProcId = 1; ConcurrencyLimits = "matlab" ]')
    also_matlab = parse_ad(base + 'ProcId = 2; ConcurrencyLimits = "matlab" ]')
    assert reuse_key(plain) != reuse_key(matlab)
    assert reuse_key(matlab) == reuse_key(also_matlab)


def test_without_consider_limits_a_claim_runs_jobs_of_any_limits(tmp_path: Path) -> None:
    """CLAIM_RECYCLING_CONSIDER_LIMITS = false keys claim reuse without ConcurrencyLimits, so
    the schedd's idle index hands a plain job's claim a matlab job; the default keeps them
    apart."""
    base = '[ ClusterId = 1; Owner = "a"; RequestCpus = 1; QDate = 1; '
    plain = parse_ad(base + "ProcId = 0 ]")
    matlab = parse_ad(base + 'ProcId = 1; ConcurrencyLimits = "matlab" ]')
    for text, found in (("CLAIM_RECYCLING_CONSIDER_LIMITS = false", JobId(1, 1)), ("", None)):
        schedd = Schedd(
            Config.from_text(text),
            JobQueue.open(tmp_path / f"queue{len(text)}"),
            Locator("startd"),
            host_name="h",
            log=logging.getLogger("test"),
            clock=lambda: 0.0,
        )
        schedd.idle.add(matlab, "a@d")
        key = reuse_key(plain, schedd.idle.consider_limits)
        assert schedd.idle.pop("a@d", key) == found


def test_the_queue_order_is_priority_then_age_then_ids() -> None:
    """Higher JobPrio first, then older QDate, then cluster and proc."""
    jobs = [
        parse_ad("[ ClusterId = 2; ProcId = 0; JobPrio = 0; QDate = 5 ]"),
        parse_ad("[ ClusterId = 1; ProcId = 1; JobPrio = 0; QDate = 5 ]"),
        parse_ad("[ ClusterId = 3; ProcId = 0; JobPrio = 5; QDate = 9 ]"),
        parse_ad("[ ClusterId = 1; ProcId = 0; JobPrio = 0; QDate = 1 ]"),
    ]
    ordered = [str(job_id_of(j)) for j in sorted(jobs, key=queue_order)]
    assert ordered == ["3.0", "1.0", "1.1", "2.0"]


def test_the_idle_index_hands_out_jobs_of_one_key_in_order() -> None:
    """The index gives a key's jobs best first and nothing for another key."""
    index = IdleIndex()
    jobs = [
        parse_ad(f'[ ClusterId = 1; ProcId = {n}; QDate = {10 - n}; Owner = "a" ]')
        for n in range(3)
    ]
    for job in jobs:
        index.add(job, "a@d")
    key = reuse_key(jobs[0])
    assert index.pop("b@d", key) is None
    assert [index.pop("a@d", key) for _ in range(4)] == [
        JobId(1, 2),
        JobId(1, 1),
        JobId(1, 0),
        None,
    ]


@pytest.mark.parametrize("ad", ["[ ClusterId = 1 ]", '[ ClusterId = "1"; ProcId = 0 ]', "[ ]"])
def test_a_job_ad_without_ids_is_refused(ad: str) -> None:
    """An ad without integer ClusterId and ProcId is a PoolError."""
    with pytest.raises(PoolError, match="ClusterId"):
        job_id_of(parse_ad(ad))


def test_a_result_adds_wall_clock_time_and_copies_the_exit() -> None:
    """An exit records ExitCode, CompletionDate and the run's wall-clock time on top of the
    earlier runs'."""
    job = parse_ad("[ JobCurrentStartDate = 100; RemoteWallClockTime = 30.0 ]")
    result = parse_ad('[ JobOutcome = "exited"; ExitCode = 3; ExitBySignal = false ]')
    values = result_values(job, result, 160)
    assert values["RemoteWallClockTime"] == 90.0
    assert values["CompletionDate"] == 160
    assert str(values["ExitCode"]) == "3"
    evicted = result_values(job, parse_ad('[ JobOutcome = "evicted" ]'), 160)
    assert "CompletionDate" not in evicted and "ExitCode" not in evicted


def test_a_result_s_listed_job_updates_are_written() -> None:
    """The attributes a result lists in EpJobUpdates (VM_CkptMac from the VM runtime) go
    into the job's ad; an attribute it carries but does not list does not."""
    result = parse_ad(
        '[ JobOutcome = "evicted"; VM_CkptMac = "52:54:00:aa:bb:cc"; Other = 1;'
        ' EpJobUpdates = "VM_CkptMac" ]'
    )
    values = result_values(parse_ad("[ ]"), result, 160)
    assert str(values["VM_CkptMac"]) == '"52:54:00:aa:bb:cc"'
    assert "Other" not in values


def test_the_match_capacity_counts_slots_and_their_cpus() -> None:
    """A cycle can make at most one match per slot ad plus one per CPU any slot has."""
    slots = [
        parse_ad('[ Name = "slot1@h"; PartitionableSlot = true; Cpus = 3 ]'),
        parse_ad('[ Name = "slot1_1@h"; Cpus = 1 ]'),
        parse_ad('[ Name = "slot2@h"; Cpus = undefined ]'),
    ]
    assert match_capacity(slots) == 3 + 3 + 1
    assert match_capacity([]) == 1


def _jobs(count: int, extra: str = "", owner: str = "a", cluster: int = 1) -> list[ClassAd]:
    return [
        parse_ad(
            f'[ ClusterId = {cluster}; ProcId = {proc}; Owner = "{owner}"; RequestCpus = 1; '
            f"Requirements = TARGET.Cpus > 0; QDate = {cluster}; {extra} ]"
        )
        for proc in range(count)
    ]


def _offer(kinds: JobKinds, jobs: list[ClassAd], capacity: int) -> list[SubmitterJobs]:
    ads = {job_id_of(job): job for job in jobs}
    return kinds.offered(list(ads), capacity, ads.__getitem__)


def test_only_as_many_jobs_of_a_kind_as_can_match_are_offered() -> None:
    """Of 1,000 jobs alike, the first 5 are offered for a capacity of 5; another kind and
    another submitter keep their own first 5, in queue order."""
    alike = _jobs(1000)
    other = _jobs(10, "RequestMemory = 2048", cluster=2)
    theirs = _jobs(7, owner="b", cluster=3)
    offered = _offer(JobKinds("d"), theirs + other + alike, 5)
    assert [entry.submitter for entry in offered] == ["a@d", "b@d"]
    assert [j.evaluate("ProcId") for j in offered[0].jobs] == [0, 1, 2, 3, 4] * 2
    assert [j.evaluate("ClusterId") for j in offered[0].jobs] == [1] * 5 + [2] * 5
    assert offered[1].jobs == tuple(theirs[:5])


def test_jobs_asking_for_no_cpu_are_all_offered() -> None:
    """A kind whose jobs ask for less than one CPU could fill a slot many times: not cut."""
    jobs = [
        parse_ad(f'[ ClusterId = 1; ProcId = {proc}; Owner = "a"; RequestCpus = 0 ]')
        for proc in range(20)
    ]
    [offered] = _offer(JobKinds("d"), jobs, 3)
    assert len(offered.jobs) == 20


def test_the_facts_are_read_once_and_kept_only_for_jobs_still_idle() -> None:
    """A job's ad is read the first time it is offered, not again; jobs gone from the idle
    list are forgotten at the next cycle."""
    kinds = JobKinds("d")
    jobs = {job_id_of(job): job for job in _jobs(50)}
    reads: list[JobId] = []

    def load(job_id: JobId) -> ClassAd:
        reads.append(job_id)
        return jobs[job_id]

    kinds.offered(list(jobs), 2, load)
    assert len(reads) == 50 + 2  # every ad once for its facts, the two offered once more
    reads.clear()
    kinds.offered(list(jobs), 2, load)
    assert reads == [JobId(1, 0), JobId(1, 1)]
    kinds.offered([JobId(1, 0), JobId(1, 1), JobId(1, 2)], 2, load)
    assert set(kinds.of_job) == {JobId(1, 0), JobId(1, 1), JobId(1, 2)}


def _default_negotiator(slots: list[ClassAd]) -> Significance:
    """What a negotiator with the default configuration reads besides the ads' expressions."""
    return significance(Config.from_text("", subsystem="NEGOTIATOR"), slots, 0.0)


def test_jobs_the_slots_can_tell_apart_are_each_offered() -> None:
    """When a slot's START reads the job's ProcId, jobs alike otherwise are of different
    kinds, and none is cut: a later job may match where the first ones do not."""
    slot = parse_ad(
        '[ Name = "slot1@h"; Cpus = 1; START = TARGET.ProcId >= 40; Requirements = START ]'
    )
    jobs = _jobs(50)
    names = matching_names(_default_negotiator([slot]), [slot], jobs[:1])
    assert names is not None and "procid" in names
    kinds = JobKinds("d")
    kinds.distinguish(names)
    [offered] = _offer(kinds, jobs, match_capacity([slot]))
    assert len(offered.jobs) == 50


def test_an_expression_that_can_read_anything_leaves_every_job_its_own_kind() -> None:
    """A slot expression calling eval() defeats the analysis: nothing is cut."""
    slot = parse_ad('[ Name = "slot1@h"; Cpus = 1; START = eval("true"); Requirements = START ]')
    names = matching_names(_default_negotiator([slot]), [slot], [])
    assert names is None
    kinds = JobKinds("d")
    kinds.distinguish(names)
    [offered] = _offer(kinds, _jobs(30), 2)
    assert len(offered.jobs) == 30


def test_names_once_told_apart_stay_so_without_working_the_kinds_out_again() -> None:
    """A name no longer read keeps telling jobs apart, so the jobs' kinds are not worked out
    again; a new name makes them be."""
    kinds = JobKinds("d")
    jobs = {job_id_of(job): job for job in _jobs(10)}
    kinds.distinguish(("procid",))
    kinds.offered(list(jobs), 2, jobs.__getitem__)
    kinds.distinguish(())
    assert kinds.names == ("procid",) and len(kinds.of_job) == 10
    kinds.distinguish(("imagesize",))
    assert kinds.names == ("imagesize", "procid") and kinds.of_job == {}
