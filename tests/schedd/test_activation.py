"""ACTIVATE_CLAIM and the claim-status questions to startds in other processes are asked by
worker threads: the schedd's calls return at once with the job pending, a silent startd
does not hold back another startd's job nor the loop, the job runs once its startd
answers, and a refusal leaves it idle with the claim given back."""

from __future__ import annotations

import logging
import selectors
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from epcore.classad import ClassAd
from epcore.errors import EpError
from epcore.interfaces import Locator, StartdLink
from epcore.schedd.activation import Activations
from epcore.schedd.jobqueue_model import JobId
from epcore.schedd.schedd import Schedd
from epcore.schedd.service import ScheddService
from tests.links.negotiate_peers import NOW, make_schedd

SILENT = "<127.0.0.8:9618>"
QUICK = "<127.0.0.9:9618>"


class _Remote:
    """A startd elsewhere: ``gate`` holds its answers (a silent startd) until set;
    ``refuse`` makes it refuse activations."""

    def __init__(self, address: str, *, silent: bool = False, refuse: bool = False) -> None:
        self.address = address
        self.gate = threading.Event()
        if not silent:
            self.gate.set()
        self.refuse = refuse
        self.activated: list[str] = []
        self.released: list[str] = []

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        self.gate.wait(30)
        if self.refuse:
            raise EpError(f"the startd at {self.address} refused to activate the claim")
        self.activated.append(claim_id)

    def slot_of(self, claim_id: str) -> str | None:
        self.gate.wait(30)
        return f"slot1_1@{self.address}"

    def claim_ready(self, claim_id: str) -> bool:
        self.gate.wait(30)
        return True

    def alive(self, claim_id: str) -> None:
        pass

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        self.released.append(claim_id)

    def claims(self) -> list[tuple[str, ClassAd]]:
        return []

    def recent_results(self, claim_ids: Iterable[str]) -> list[ClassAd]:
        return []


def _schedd(directory: Path, *links: _Remote) -> Schedd:
    """A schedd with two idle jobs whose startds are reached through made (remote) links."""
    schedd = make_schedd(directory, {"alice": 2})
    by_address = {link.address: link for link in links}
    schedd.startds = Locator("startd", connect=lambda address: by_address[address])  # type: ignore[arg-type,return-value]
    schedd.activations = Activations()
    return schedd


def _until(condition: object, schedd: Schedd, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the condition did not come true"
        schedd.tick(NOW + 1)
        time.sleep(0.01)


def test_a_silent_startd_does_not_hold_back_another_startd_s_job(tmp_path: Path) -> None:
    """Job 1.0's startd does not answer; the activation call returns at once, job 1.1 on the
    other startd runs meanwhile, each tick returns at once, and 1.0 runs once its startd
    answers."""
    silent, quick = _Remote(SILENT, silent=True), _Remote(QUICK)
    schedd = _schedd(tmp_path, silent, quick)
    first, second = JobId(1, 0), JobId(1, 1)
    started = time.monotonic()
    assert schedd.activate(first, schedd.queue.get(first), SILENT, "claim-a", "alice", NOW)
    assert schedd.activate(second, schedd.queue.get(second), QUICK, "claim-b", "alice", NOW)
    assert time.monotonic() - started < 1.0
    assert schedd.busy_jobs() == {first, second}  # pending: not offered to the negotiator
    _until(lambda: "claim-b" in schedd.running, schedd)
    assert schedd.queue.get(second).evaluate("JobStatus") == 2
    assert schedd.queue.get(second).evaluate("RemoteHost") == f"slot1_1@{QUICK}"
    assert schedd.queue.get(first).evaluate("JobStatus") == 1
    assert first in schedd.pending
    ticked = time.monotonic()
    schedd.tick(NOW + 2)
    assert time.monotonic() - ticked < 0.5
    silent.gate.set()
    _until(lambda: "claim-a" in schedd.running, schedd)
    assert schedd.queue.get(first).evaluate("JobStatus") == 2
    assert schedd.pending == {}


def test_a_refused_activation_leaves_the_job_idle_and_gives_the_claim_back(
    tmp_path: Path,
) -> None:
    """The startd refuses: the job is idle again (offered at the next cycle) and its
    claim released."""
    refusing = _Remote(QUICK, refuse=True)
    schedd = _schedd(tmp_path, refusing)
    job = JobId(1, 0)
    assert schedd.activate(job, schedd.queue.get(job), QUICK, "claim-a", "alice", NOW)
    _until(lambda: job not in schedd.pending, schedd)
    assert schedd.queue.get(job).evaluate("JobStatus") == 1
    assert schedd.running == {}
    assert refusing.released == ["claim-a"]
    assert schedd.wants_negotiation


def test_a_reused_claim_is_checked_and_activated_by_the_worker(tmp_path: Path) -> None:
    """A job ends on a claim of a startd elsewhere: the next idle job is activated on the
    same claim, the claim's readiness asked by the worker, not in the loop."""
    quick = _Remote(QUICK)
    schedd = _schedd(tmp_path, quick)
    first, second = JobId(1, 0), JobId(1, 1)
    slot_ad = ClassAd({"Name": f"slot1_1@{QUICK}"})  # as matched: the next job's $$() read it
    job = schedd.queue.get(first)
    submitter = schedd.submitter(job)
    assert schedd.activate(first, job, QUICK, "claim-a", submitter, NOW, slot_ad=slot_ad)
    _until(lambda: "claim-a" in schedd.running, schedd)
    result = ClassAd({"ClusterId": 1, "ProcId": 0, "ClaimId": "claim-a", "JobOutcome": "exited"})
    result["ExitCode"] = 0
    schedd.job_result(result, NOW + 5)
    assert second in schedd.pending
    _until(lambda: "claim-a" in schedd.running, schedd)
    assert schedd.running["claim-a"].job_id == second
    assert quick.activated == ["claim-a", "claim-a"]


def test_a_link_registered_in_this_process_is_activated_at_once(tmp_path: Path) -> None:
    """A startd in this process answers in the loop, as before: the job runs when the call
    returns."""
    local = _Remote(QUICK)
    schedd = make_schedd(tmp_path, {"alice": 1})
    startds: Locator[StartdLink] = Locator("startd")
    startds.register(QUICK, local)  # type: ignore[arg-type]  # the calls it gets
    schedd.startds = startds
    job = JobId(1, 0)
    assert schedd.activate(job, schedd.queue.get(job), QUICK, "claim-a", "alice", NOW)
    assert "claim-a" in schedd.running
    assert schedd.pending == {}


class _Loop:
    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()

    def close_in_child(self) -> None:
        pass


def test_an_answer_wakes_the_schedd_service_s_loop(tmp_path: Path) -> None:
    """The service registers a wake-up socket: an activation's answer makes the loop's
    select return at once (the job starts without waiting for a timer)."""
    schedd = _schedd(tmp_path, _Remote(QUICK))
    service = ScheddService(
        schedd,
        config=lambda: schedd.config,
        address="<unix:/x>",
        collector=None,  # type: ignore[arg-type]  # not reached: nothing is advertised
        slots=None,  # type: ignore[arg-type]  # not asked
        priorities=None,
        log=logging.getLogger("test.schedd"),
        clock=lambda: NOW,
    )
    service.next_ads = float("inf")  # nothing to advertise in this test
    loop = _Loop()
    service.open(loop)
    try:
        assert loop.selector.select(0) == []
        job = JobId(1, 0)
        assert schedd.activate(job, schedd.queue.get(job), QUICK, "claim-a", "alice", NOW)
        ready = loop.selector.select(5)
        assert [key.data for key, _ in ready] == [service]
        service.ready([(key.fileobj, key.data) for key, _ in ready])
        service.tick()
        assert "claim-a" in schedd.running
        assert loop.selector.select(0) == []
    finally:
        service.close()
