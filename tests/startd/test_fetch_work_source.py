"""A Python FetchWorkSource feeding a startd embedded in the test's own process (no hook
subprocess): its jobs run on real claims with real starters, it hears accept and reject, a job
with a higher RANK preempts the running one, and the claims are evicted when the work runs out."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest

from epcore import hookimpl
from epcore.classad import ClassAd, parse_ad
from epcore.config import Config
from epcore.plugins import load_plugins
from epcore.startd.loop import StartdLoop
from epcore.startd.main import build_startd
from epcore.startd.startd import Startd


@attrs.define
class ListSource:
    """Hands out its jobs in order and records what the startd told it."""

    name: str
    jobs: list[ClassAd] = attrs.field(factory=list)
    replies: list[tuple[bool, int, str]] = attrs.field(factory=list)
    evicted: list[int] = attrs.field(factory=list)
    raise_next: bool = False
    garbage_next: bool = False

    def fetch(self, slot_ad: ClassAd) -> ClassAd | None:
        if self.raise_next:
            self.raise_next = False
            raise RuntimeError("the queue is down")
        if self.garbage_next:
            self.garbage_next = False
            return "Cmd = /bin/true"  # type: ignore[return-value]
        return self.jobs.pop(0) if self.jobs else None

    def reply(self, accepted: bool, job_ad: ClassAd, slot_ad: ClassAd) -> None:
        keyword = job_ad.evaluate("HookKeyword")
        self.replies.append((accepted, int(job_ad.evaluate("ProcId")), str(keyword)))

    def evict_claim(self, job_ad: ClassAd, slot_ad: ClassAd) -> None:
        self.evicted.append(int(job_ad.evaluate("ProcId")))


class SourcePlugin:
    """A plugin offering one source, as a scheduler embedding epcore would register it."""

    def __init__(self, source: ListSource) -> None:
        self.source = source

    @hookimpl
    def ep_fetch_work_sources(self, config: Config) -> list[ListSource]:
        return [self.source]


def job(proc_id: int, command: str = "/bin/true", args: str = "", **extra: object) -> ClassAd:
    """A fetched job ad (Owner nobody, for a startd running as root)."""
    ad = parse_ad(f'[ Cmd = "{command}"; Args = "{args}"; Owner = "nobody"; ProcId = {proc_id} ]')
    for name, value in extra.items():
        ad[name] = value
    return ad


CONFIG = """
LOCAL_DIR = {local}
START = True
SUSPEND = False
PREEMPT = False
KILL = False
WANT_VACATE = True
BASE_CGROUP =
RUNBENCHMARKS = False
NUM_CPUS = {slots}
NUM_SLOTS = {slots}
POLLING_INTERVAL = 1
STARTD_JOB_HOOK_KEYWORD = LISTQ
FetchWorkDelay = ifThenElse(State == "Claimed" && Activity == "Idle", 0, 1)
RANK = ifThenElse(isUndefined(TARGET.Priority), 0, TARGET.Priority)
"""


@pytest.fixture
def embedded() -> Iterator[Callable[..., tuple[Startd, StartdLoop]]]:
    """``embedded(source, slots, extra_config="")``: an opened in-process startd loop fed by
    ``source``.

    Its directory is not under pytest's base directory, which a concurrent pytest session
    makes private again: as root the jobs run as nobody, who must reach their sandboxes.
    """
    opened: list[StartdLoop] = []
    top = Path(tempfile.mkdtemp(prefix="ep_fetch_work_"))
    top.chmod(0o711)

    def make(source: ListSource, slots: int, extra: str = "") -> tuple[Startd, StartdLoop]:
        tmp_path = top / f"startd{len(opened)}"
        local = tmp_path / "local"
        local.mkdir(parents=True)
        tmp_path.chmod(0o711)
        text = CONFIG.format(local=local, slots=slots) + extra
        (tmp_path / "condor_config").write_text(text)
        plugins = load_plugins(extra=[("listq", SourcePlugin(source))])
        startd = build_startd(str(tmp_path / "condor_config"), plugins=plugins)
        loop = StartdLoop(startd)
        loop.open()
        opened.append(loop)
        return startd, loop

    yield make
    for loop in opened:
        loop.startd.shutdown(fast=True)
        deadline = time.monotonic() + 30
        while not loop.finished and time.monotonic() < deadline:
            loop.turn()
        loop.close()
    shutil.rmtree(top, ignore_errors=True)


def turn_until(loop: StartdLoop, check: Callable[[], bool], timeout: float, what: str) -> None:
    """Turn the loop until ``check`` holds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        loop.turn()


def places(startd: Startd) -> dict[str, str]:
    return {record.name: str(record.place) for record in startd.state.slots}


def test_source_jobs_run_and_claims_are_reused_then_evicted(embedded) -> None:
    """Eight jobs from a Python source run on two slots, one claim each reused for the next
    jobs (HookKeyword set to the source's name), a source that raises or answers something
    other than a ClassAd is logged and skipped, and once the work runs out every claim is
    evicted (evict_claim) and the slots are free."""
    jobs = [job(n, "/bin/sleep", "0.3") for n in range(8)]
    source = ListSource("LISTQ", jobs, raise_next=True, garbage_next=True)
    startd, loop = embedded(source, 2)
    turn_until(loop, lambda: len(startd.results) >= 8, 60, "eight results")
    assert sorted(int(r.evaluate("ExitCode")) for r in startd.results) == [0] * 8
    assert sorted(proc for _, proc, _ in source.replies) == list(range(8))
    assert all(accepted and keyword == "LISTQ" for accepted, _, keyword in source.replies)
    claims = {r.evaluate("ClaimId") for r in startd.results}
    assert {r.evaluate("SlotName") for r in startd.results} == {"slot1", "slot2"}
    assert len(claims) == 2  # one claim per slot, reused for every next job
    turn_until(loop, lambda: len(source.evicted) == 2, 30, "both claims evicted")
    turn_until(
        loop,
        lambda: set(places(startd).values()) == {"Unclaimed/Idle"},
        30,
        "the slots to be free",
    )
    log = Path(startd.paths.startd_log).read_text()
    assert "source LISTQ raised RuntimeError: the queue is down" in log
    assert "source LISTQ returned 'Cmd = /bin/true', not a ClassAd" in log
    assert log.count("reuses its idle claim") >= 6


def test_higher_rank_preempts_and_lower_is_rejected(embedded) -> None:
    """On a busy slot a fetched job whose RANK is not above the running claim's is rejected;
    one with a higher RANK preempts: the running job is evicted (evict_claim) and the new one
    runs on its own claim."""
    source = ListSource("LISTQ", [job(1, "/bin/sleep", "300", Priority=1)])
    startd, loop = embedded(source, 1)
    turn_until(loop, lambda: places(startd).get("slot1") == "Claimed/Busy", 30, "the long job")
    source.jobs.extend([job(2, Priority=1), job(3, Priority=5)])
    turn_until(loop, lambda: len(startd.results) >= 2, 60, "the preempted and the new job")
    assert (False, 2, "LISTQ") in source.replies
    assert (True, 3, "LISTQ") in source.replies
    assert source.evicted[0] == 1
    by_proc = {int(r.evaluate("ProcId")): r for r in startd.results}
    assert by_proc[3].evaluate("ExitCode") == 0
    assert by_proc[1].evaluate("ExitCode") != 0  # killed by the eviction
    log = Path(startd.paths.startd_log).read_text()
    assert "the job's RANK 1 is not above the claim's 1" in log
    assert "the job's RANK 5 is above the claim's 1" in log


def test_fetched_claims_are_kept_alive(embedded) -> None:
    """Nobody else sends a fetched claim keep-alives: a job running longer than its claim's
    lease (JobLeaseDuration) still finishes, because the startd renews the lease itself."""
    source = ListSource("LISTQ", [job(1, "/bin/sleep", "7", JobLeaseDuration=3)])
    startd, loop = embedded(source, 1)
    turn_until(loop, lambda: len(startd.results) >= 1, 60, "the job's result")
    result = startd.results[0]
    assert result.evaluate("ExitCode") == 0, result
    assert result.evaluate("JobDuration") >= 7
    # The claim ended only when the work did (no more work: evicted), not with its lease.
    turn_until(loop, lambda: source.evicted == [1], 30, "the claim evicted for lack of work")
    assert "the claim lease expired" not in Path(startd.paths.startd_log).read_text()


PARTITIONABLE = """
NUM_SLOTS = 1
NUM_SLOTS_TYPE_1 = 1
SLOT_TYPE_1 = 100%
SLOT_TYPE_1_PARTITIONABLE = True
"""


def test_partitionable_slot_carves_dynamic_slots(embedded) -> None:
    """On a partitionable slot a job without RequestCpus/RequestMemory/RequestDisk is rejected
    with the reason; jobs with them run on dynamic slots carved for them, each claim reused for
    the next job that fits it and evicted when the work runs out."""
    requests = {"RequestCpus": 1, "RequestMemory": 64, "RequestDisk": 1024}
    jobs = [job(0)] + [job(n, "/bin/sleep", "0.3", **requests) for n in range(1, 7)]
    source = ListSource("LISTQ", jobs)
    startd, loop = embedded(source, 2, PARTITIONABLE)
    turn_until(loop, lambda: len(startd.results) >= 6, 60, "six results")
    assert source.replies[0] == (False, 0, "LISTQ")
    assert sorted(int(r.evaluate("ExitCode")) for r in startd.results) == [0] * 6
    slots = {str(r.evaluate("SlotName")) for r in startd.results}
    assert slots and all(name.startswith("slot1_") for name in slots), slots
    claims = {r.evaluate("ClaimId") for r in startd.results}
    assert len(claims) < 6  # claims were reused
    turn_until(loop, lambda: len(source.evicted) == len(claims), 30, "every claim evicted")
    turn_until(loop, lambda: list(places(startd)) == ["slot1"], 30, "the dynamic slots gone")
    log = Path(startd.paths.startd_log).read_text()
    assert "fetched work rejected: slot1: the job ad lacks RequestCpus" in log


def test_reconfig_changes_the_keyword(embedded) -> None:
    """The keywords are read again at reconfig: a slot whose keyword names nothing fetches
    nothing, and once the configuration names the source's keyword its jobs run."""
    source = ListSource("LISTQ", [job(1)])
    startd, loop = embedded(source, 1, "SLOT1_JOB_HOOK_KEYWORD = NOTHING\n")
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        loop.turn()
    assert source.jobs and not startd.results
    config_path = Path(startd.paths.execute).parents[1] / "condor_config"  # beside LOCAL_DIR
    config_path.write_text(config_path.read_text().replace("= NOTHING", "= listq"))
    startd.reconfig()
    turn_until(loop, lambda: len(startd.results) == 1, 30, "the job after reconfig")
    assert startd.results[0].evaluate("ExitCode") == 0
