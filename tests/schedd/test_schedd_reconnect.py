"""A restarted schedd takes back its jobs running on startds in other processes: the claim
kept in the job's ad is asked about once; a startd holding it keeps the job (a reconnect),
one without it has the job requeued, a silent one leaves it to the lease, counted from
LastJobLeaseRenewal."""

from __future__ import annotations

import logging
import os
import pwd
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from epcore.classad import UNDEFINED, ClassAd
from epcore.config import Config
from epcore.interfaces import Locator, PeerUnreachable, StartdLink
from epcore.schedd.jobqueue import JobQueue, JobStatus
from epcore.schedd.jobqueue_model import JobId
from epcore.schedd.leases import JobLeases, startd_reachable
from epcore.schedd.reconnect import Reconnects, remote_claim
from epcore.schedd.results import ResultReceiver
from epcore.schedd.schedd import Schedd
from epcore.schedd.transfer import TransferKeys
from tests.links.negotiate_peers import NOW, SCHEDD_CONFIG, make_schedd

CLAIM = "<127.0.0.9:9618>#1700000000#1#secret"
STARTD = "<127.0.0.9:9618>"
JOB = JobId(1, 0)


class _Startd:
    """A startd elsewhere as its link answers: ``holds`` says whether it has the claim."""

    address = STARTD

    def __init__(self, holds: bool = True) -> None:
        self.holds = holds

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        pass

    def alive(self, claim_id: str) -> None:
        pass

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        pass

    def slot_of(self, claim_id: str) -> str | None:
        return "slot1_1@exec.example.org" if self.holds and claim_id == CLAIM else None

    def claim_ready(self, claim_id: str) -> bool:
        return False

    def claims(self) -> list[tuple[str, ClassAd]]:
        return []

    def recent_results(self, claim_ids: Iterable[str]) -> list[ClassAd]:
        return []


def _before_restart(directory: Path) -> None:
    """A schedd ran job 1.0 (a 600 s lease) on CLAIM of the startd at STARTD, renewed its
    lease at NOW + 100, then died."""
    schedd = make_schedd(directory, {"alice": 1})
    schedd.queue.set_attributes(JOB, {"JobLeaseDuration": 600}, NOW)
    schedd.startds.register(STARTD, _Startd())  # type: ignore[arg-type]  # the calls it gets
    assert schedd.activate(JOB, schedd.queue.get(JOB), STARTD, CLAIM, "alice", NOW)
    leases = JobLeases(startd_reachable(schedd.startds), logging.getLogger("test"))
    leases.check(schedd, NOW + 100)
    schedd.queue.close()


def _restarted(directory: Path, startd: _Startd | None, at: float) -> Schedd:
    """The schedd started again on the same queue at ``at``; ``startd``: its startd's link
    (None: that startd cannot be reached)."""
    startds: Locator[StartdLink] = Locator("startd")
    if startd is not None:
        startds.register(STARTD, startd)  # type: ignore[arg-type]  # the calls it gets
    schedd = Schedd(
        Config.from_text(SCHEDD_CONFIG, subsystem="SCHEDD"),
        JobQueue.open(directory / "job_queue.db"),
        startds,
        host_name="submit.example.org",
        log=logging.getLogger("test.schedd"),
        clock=lambda: at,
    )
    schedd.reconnect = Reconnects()
    schedd.recover([], at)
    return schedd


def test_a_running_job_keeps_its_claim_and_startd_in_its_ad(tmp_path: Path) -> None:
    """A job started on a startd elsewhere keeps ClaimId and StartdIpAddr in its ad: the
    claim a restart reconnects to."""
    _before_restart(tmp_path)
    job = JobQueue.open(tmp_path / "job_queue.db").get(JOB)
    assert remote_claim(job) == (STARTD, CLAIM)
    assert remote_claim(ClassAd({"ClaimId": CLAIM, "StartdIpAddr": "<unix:/x>"})) is None


def test_a_startd_holding_the_claim_keeps_the_job_running_as_a_reconnect(tmp_path: Path) -> None:
    """After the restart the startd still holds the claim: the job stays running on it
    (NumJobReconnects 1), its claim's keep-alive is due at once (the startd's lease ran on
    meanwhile), and its result, when it comes, is applied."""
    _before_restart(tmp_path)
    schedd = _restarted(tmp_path, _Startd(holds=True), NOW + 200)
    job = schedd.queue.get(JOB)
    assert job.evaluate("JobStatus") == 2
    assert job.evaluate("NumJobReconnects") == 1
    assert schedd.running[CLAIM].slot == "slot1_1@exec.example.org"
    assert schedd.alives.next_due() == NOW + 200
    receiver = ResultReceiver(schedd, schedd.job_result, logging.getLogger("test"))
    result = ClassAd({"ClusterId": 1, "ProcId": 0, "JobOutcome": "exited", "ExitCode": 0})
    assert receiver.receive(CLAIM, result, NOW + 300) == (True, "applied")
    assert JOB not in schedd.queue


def test_a_startd_without_the_claim_has_the_job_requeued_at_once(tmp_path: Path) -> None:
    """The startd answers but no longer has the claim: the job is idle again at the
    restart, and nothing runs on the claim."""
    _before_restart(tmp_path)
    schedd = _restarted(tmp_path, _Startd(holds=False), NOW + 200)
    assert schedd.queue.get(JOB).evaluate("JobStatus") == 1
    assert schedd.running == {}


def test_a_silent_startd_leaves_the_job_to_its_lease_from_the_last_renewal(
    tmp_path: Path,
) -> None:
    """The startd cannot be reached: the job stays running until its 600 s lease, counted
    from the LastJobLeaseRenewal written before the restart (NOW + 100), runs out."""
    _before_restart(tmp_path)
    schedd = _restarted(tmp_path, None, NOW + 200)
    assert schedd.queue.get(JOB).evaluate("JobStatus") == 2
    leases = JobLeases(startd_reachable(schedd.startds), logging.getLogger("test"))
    assert leases.check(schedd, NOW + 699) == []
    assert leases.check(schedd, NOW + 701) == [CLAIM]
    assert schedd.queue.get(JOB).evaluate("JobStatus") == 1


def test_without_reconnection_the_job_is_requeued_as_before(tmp_path: Path) -> None:
    """A schedd given no way to reconnect (the in-process pool's former rule) puts the job
    back to idle at the restart."""
    _before_restart(tmp_path)
    schedd = Schedd(
        Config.from_text(SCHEDD_CONFIG, subsystem="SCHEDD"),
        JobQueue.open(tmp_path / "job_queue.db"),
        Locator("startd"),
        host_name="submit.example.org",
        log=logging.getLogger("test.schedd"),
        clock=lambda: NOW + 200,
    )
    schedd.recover([], NOW + 200)
    assert schedd.queue.get(JOB).evaluate("JobStatus") == 1


def test_the_key_to_a_reconnected_job_s_files_is_taken_again(tmp_path: Path) -> None:
    """The TransferKey a job was activated with is kept (private) in its queue ad, and the
    restarted schedd that reconnects to the job takes that key again: the starter's output
    comes with it."""
    schedd = make_schedd(tmp_path, {"root": 1})
    schedd.queue.set_attributes(JOB, {"ShouldTransferFiles": "YES"}, NOW)
    schedd.transfers = TransferKeys(
        lambda: "<127.0.0.1:9>", host_name="submit.example.org", log=logging.getLogger("test")
    )
    schedd.startds.register(STARTD, _Startd())  # type: ignore[arg-type]  # the calls it gets
    assert schedd.activate(JOB, schedd.queue.get(JOB), STARTD, CLAIM, "root", NOW)
    key = schedd.transfers.by_job["1.0"]
    assert schedd.queue.get(JOB).evaluate("TransferKey") == key
    schedd.queue.close()
    startds: Locator[StartdLink] = Locator("startd")
    startds.register(STARTD, _Startd())  # type: ignore[arg-type]  # the calls it gets
    restarted = Schedd(
        Config.from_text(SCHEDD_CONFIG, subsystem="SCHEDD"),
        JobQueue.open(tmp_path / "job_queue.db"),
        startds,
        host_name="submit.example.org",
        log=logging.getLogger("test.schedd"),
        clock=lambda: NOW + 10,
    )
    restarted.transfers = TransferKeys(
        lambda: "<127.0.0.1:9>", host_name="submit.example.org", log=logging.getLogger("test")
    )
    restarted.reconnect = Reconnects()
    restarted.recover([], NOW + 10)
    assert restarted.transfers.by_job == {"1.0": key}
    assert restarted.transfers.offers[key].job.evaluate("Owner") == "root"


def test_a_reconnect_clears_the_disconnected_mark_from_before_the_restart(
    tmp_path: Path,
) -> None:
    """A job marked disconnected when the schedd died (JobDisconnectedDate) is no longer so
    once the restarted schedd finds its claim on the startd."""
    _before_restart(tmp_path)
    queue = JobQueue.open(tmp_path / "job_queue.db")
    queue.set_attributes(JOB, {"JobDisconnectedDate": int(NOW + 150)}, NOW + 150)
    queue.close()
    schedd = _restarted(tmp_path, _Startd(holds=True), NOW + 200)
    assert schedd.queue.get(JOB).evaluate("JobDisconnectedDate") is UNDEFINED


def _with_log(directory: Path) -> Path:
    """Job 1.0's ad names an event log (owned by the user running the test)."""
    log = directory / "job.log"
    queue = JobQueue.open(directory / "job_queue.db")
    owner = pwd.getpwuid(os.getuid()).pw_name
    queue.set_attributes(JOB, {"UserLog": str(log), "Owner": owner}, NOW + 150)
    queue.close()
    return log


def _events(log: Path) -> list[tuple[int, str]]:
    """The events in a text log: (number, the first detail line)."""
    entries = log.read_text().split("...\n") if log.exists() else []
    return [
        (int(entry[:3]), entry.splitlines()[1].strip() if "\n" in entry else "")
        for entry in entries
        if entry
    ]


def test_a_reconnect_after_a_restart_is_written_to_the_job_log(tmp_path: Path) -> None:
    """The restarted schedd writes 022 with HTCondor's restart reason, then 023 once the
    startd is found holding the claim."""
    _before_restart(tmp_path)
    log = _with_log(tmp_path)
    _restarted(tmp_path, _Startd(holds=True), NOW + 200)
    assert _events(log) == [
        (22, "Local schedd and job shadow died, schedd now running again"),
        (23, f"startd address: {STARTD}"),
    ]


def test_a_startd_without_the_claim_writes_reconnect_failed(tmp_path: Path) -> None:
    """A startd that no longer has the claim: 022, then 024 with HTCondor's reason."""
    _before_restart(tmp_path)
    log = _with_log(tmp_path)
    _restarted(tmp_path, _Startd(holds=False), NOW + 200)
    assert _events(log) == [
        (22, "Local schedd and job shadow died, schedd now running again"),
        (24, "Claim not found at execution machine"),
    ]


def test_a_silent_startd_after_a_restart_writes_one_disconnect_then_the_lease_s_end(
    tmp_path: Path,
) -> None:
    """A startd silent at the restart: 022 then, with the lease checks that follow, no
    second 022 and, when the lease runs out, 024."""
    _before_restart(tmp_path)
    log = _with_log(tmp_path)
    schedd = _restarted(tmp_path, None, NOW + 200)
    assert schedd.queue.get(JOB).evaluate("JobDisconnectedDate") == int(NOW + 200)
    leases = JobLeases(startd_reachable(schedd.startds), logging.getLogger("test"))
    assert leases.check(schedd, NOW + 300) == []
    assert leases.check(schedd, NOW + 701) == [CLAIM]
    assert [number for number, _ in _events(log)] == [22, 24]


class _SilentStartd(_Startd):
    """A startd elsewhere whose link takes ``delay`` s to answer (a dead host's connection
    timeout), then fails; counts the questions."""

    def __init__(self, address: str, delay: float, arrived: threading.Barrier) -> None:
        super().__init__(holds=False)
        self.address = address
        self.delay = delay
        self.arrived = arrived
        self.asked = 0

    def slot_of(self, claim_id: str) -> str | None:
        self.asked += 1
        # Every startd's question is in flight at once, or this times out.
        self.arrived.wait(timeout=self.delay)
        time.sleep(self.delay)
        raise PeerUnreachable(f"{self.address}: timed out")


def test_silent_startds_elsewhere_do_not_hold_up_a_restarted_schedd(tmp_path: Path) -> None:
    """Six jobs on five startds elsewhere that take 2 s each to fail: the restart returns at
    once (the loop serves its clients), the startds are asked together, once each, and
    their answers leave the jobs running, marked disconnected, to their leases."""
    schedd = make_schedd(tmp_path, {"alice": 6})
    addresses = [f"<127.0.0.{n}:9618>" for n in range(20, 25)]
    arrived = threading.Barrier(len(addresses))
    links = {a: _SilentStartd(a, 2.0, arrived) for a in addresses}
    for proc in range(6):
        address = addresses[proc % len(addresses)]
        schedd.startds.register(address, _Startd())  # type: ignore[arg-type]  # a fake
        claim = f"{address}#1700000000#{proc}#secret"
        assert schedd.activate(
            JobId(1, proc), schedd.queue.get(JobId(1, proc)), address, claim, "alice", NOW
        )
    schedd.queue.close()
    startds: Locator[StartdLink] = Locator("startd", connect=links.__getitem__)  # type: ignore[arg-type]
    restarted = Schedd(
        Config.from_text(SCHEDD_CONFIG, subsystem="SCHEDD"),
        JobQueue.open(tmp_path / "job_queue.db"),
        startds,
        host_name="submit.example.org",
        log=logging.getLogger("test.schedd"),
        clock=lambda: NOW + 200,
    )
    reconnects = Reconnects()
    restarted.reconnect = reconnects
    began = time.monotonic()
    restarted.recover([], NOW + 200)
    assert time.monotonic() - began < 1.0
    assert len(restarted.running) == 6
    assert restarted.queue.counts()[JobStatus.RUNNING] == 6
    assert reconnects.wait(10.0)
    assert time.monotonic() - began < 6.0  # together: 2 s each, not one after the other
    assert not arrived.broken
    assert [links[a].asked for a in addresses] == [1] * 5  # once per startd, not per claim
    reconnects.check(restarted, NOW + 205)
    assert reconnects.asking == {}
    for proc in range(6):
        job = restarted.queue.get(JobId(1, proc))
        assert job.evaluate("JobStatus") == 2
        assert job.evaluate("JobDisconnectedDate") == int(NOW + 205)


def test_answers_from_startds_elsewhere_are_applied_at_the_next_check(tmp_path: Path) -> None:
    """A startd elsewhere that holds the claim: the job is running at once, and counted as
    reconnected when its answer is applied (the lease check of the next tick)."""
    _before_restart(tmp_path)
    startds: Locator[StartdLink] = Locator("startd", connect=lambda address: _Startd(holds=True))  # type: ignore[arg-type,return-value]
    schedd = Schedd(
        Config.from_text(SCHEDD_CONFIG, subsystem="SCHEDD"),
        JobQueue.open(tmp_path / "job_queue.db"),
        startds,
        host_name="submit.example.org",
        log=logging.getLogger("test.schedd"),
        clock=lambda: NOW + 200,
    )
    leases = JobLeases(startd_reachable(schedd.startds), logging.getLogger("test"))
    reconnects = Reconnects(leases)
    schedd.reconnect = reconnects
    schedd.recover([], NOW + 200)
    assert schedd.queue.get(JOB).evaluate("JobStatus") == 2
    assert reconnects.wait(5.0)
    assert leases.check(schedd, NOW + 201) == []  # still asked: its answer is not applied
    assert schedd.queue.get(JOB).evaluate("NumJobReconnects") is UNDEFINED
    reconnects.check(schedd, NOW + 203)
    assert schedd.queue.get(JOB).evaluate("NumJobReconnects") == 1
    assert schedd.running[CLAIM].slot == "slot1_1@exec.example.org"
