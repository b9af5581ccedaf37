"""A claim whose answer comes later (a remote startd's, ClaimPending): the schedd keeps the
match pending, activates the claim once answered with the job and slot ad as matched, and
drops the match when the startd refuses."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError
from epcore.interfaces import ClaimPending, Locator, Match, StartdLink
from epcore.schedd.jobqueue import JobId, JobQueue, JobStatus
from epcore.schedd.schedd import Schedd

ADDRESS = "<127.0.0.3:9618>"
SLOT = "slot1@exec"


class LateStartd:
    """A startd whose claims are answered on the second asking (``refuse``: refused then)."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.asked: list[ClassAd] = []
        self.activated: list[str] = []

    @property
    def address(self) -> str:
        return ADDRESS

    def claim(self, slot: str, job: ClassAd, client: str = "", by_priority: bool = False) -> str:
        self.asked.append(job)
        if len(self.asked) == 1:
            raise ClaimPending("asked")
        if self.refuse:
            raise EpError("START is false")
        return "claim#1#secret"

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        self.activated.append(claim_id)

    def slot_of(self, claim_id: str) -> str | None:
        return SLOT

    def claim_ready(self, claim_id: str) -> bool:
        return True

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        pass

    def alive(self, claim_id: str) -> None:
        pass

    def vacate(self, slot: str, fast: bool = False) -> None:
        pass

    def vacate_slots(self, slot: str | None, fast: bool = False) -> list[str]:
        return []

    def drain(
        self, how: str, check: str | None = None, start: str | None = None, **_: object
    ) -> None:
        pass

    def cancel_drain(self) -> None:
        pass

    def query(self, constraint: str | None = None) -> list[ClassAd]:
        return []

    def claims(self) -> list[tuple[str, ClassAd]]:
        return []

    def recent_results(self, claim_ids: Iterable[str]) -> list[ClassAd]:
        return []


def _schedd(tmp_path: Path, startd: LateStartd) -> tuple[Schedd, JobId]:
    startds: Locator[StartdLink] = Locator("startd")
    startds.register(ADDRESS, startd)
    queue = JobQueue.open(tmp_path / "job_queue.db")
    schedd = Schedd(
        Config.from_text(""),
        queue,
        startds,
        host_name="submit",
        log=logging.getLogger("test.pending"),
        clock=lambda: 100.0,
    )
    common = ClassAd({"Owner": "alice", "JobStatus": 1, "QDate": 1, "RequestCpus": 1})
    (job_id,) = queue.submit(queue.next_cluster_id(), common, [ClassAd({"ProcId": 0})])
    schedd.now_idle(job_id)
    return schedd, job_id


def _match(schedd: Schedd, job_id: JobId) -> Match:
    slot = ClassAd({"Name": SLOT, "MyAddress": ADDRESS, "Machine": "exec", "Cpus": 1})
    job = schedd.queue.get(job_id)
    return Match("alice@d", str(job_id), job, SLOT, slot, "no_preemption")


def test_a_pending_claim_is_activated_at_the_next_tick_with_the_matched_job(
    tmp_path: Path,
) -> None:
    """The first asking is pending (the job stays idle); at the next tick the claim is asked
    again with the job as matched (LastMatchTime set), activated, and the job runs with the
    slot's ad kept for reusing the claim."""
    startd = LateStartd()
    schedd, job_id = _schedd(tmp_path, startd)
    schedd.take_matches([_match(schedd, job_id)], 100.0)
    assert job_id in schedd.pending
    assert schedd.queue.get(job_id).evaluate("JobStatus") == int(JobStatus.IDLE)
    schedd.tick(101.0)
    assert startd.activated == ["claim#1#secret"]
    assert startd.asked[1].evaluate("LastMatchTime") == 100
    assert schedd.queue.get(job_id).evaluate("JobStatus") == int(JobStatus.RUNNING)
    assert schedd.queue.get(job_id).evaluate("RemoteHost") == SLOT
    running = schedd.running["claim#1#secret"]
    assert running.slot_ad is not None and running.slot_ad.evaluate("Name") == SLOT
    assert not schedd.pending


def test_a_pending_claim_the_startd_refuses_is_dropped_for_a_new_match(tmp_path: Path) -> None:
    """When the later answer is a refusal the match is void: not pending any more, the job
    idle, and the schedd asks for a negotiation."""
    startd = LateStartd(refuse=True)
    schedd, job_id = _schedd(tmp_path, startd)
    schedd.take_matches([_match(schedd, job_id)], 100.0)
    schedd.wants_negotiation = False
    schedd.tick(101.0)
    assert not schedd.pending
    assert startd.activated == []
    assert schedd.wants_negotiation
    assert schedd.queue.get(job_id).evaluate("JobStatus") == int(JobStatus.IDLE)
