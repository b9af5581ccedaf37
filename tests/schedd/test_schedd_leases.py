"""Job leases on the schedd's side, with a fake clock: a job whose startd stays unreachable
for its JobLeaseDuration goes back to idle with HTCondor's reason and its claim forgotten (a
later result for it is refused); a startd that answers again in time keeps its jobs, counted
as a reconnect; LastJobLeaseRenewal follows the keep-alive rounds."""

from __future__ import annotations

import logging
import os
import pwd
from collections.abc import Iterable
from pathlib import Path

import pytest

from epcore.classad import UNDEFINED, ClassAd
from epcore.interfaces import Locator, StartdLink
from epcore.schedd.jobqueue_model import JobId
from epcore.schedd.leases import JobLeases, claim_unknown, lease_seconds, startd_reachable
from epcore.schedd.results import ResultReceiver
from epcore.schedd.schedd import Schedd
from tests.links.negotiate_peers import NOW, make_schedd

CLAIM = "<127.0.0.9:9618>#1700000000#1#secret"
STARTD = "<127.0.0.9:9618>"
JOB = JobId(1, 0)


class _Startd:
    """A remote startd's link as the schedd sees it: ``down`` while its contact fails."""

    address = STARTD

    def __init__(self) -> None:
        self.down = False
        self.released: list[str] = []

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        pass

    def alive(self, claim_id: str) -> None:
        pass

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        self.released.append(claim_id)

    def slot_of(self, claim_id: str) -> str | None:
        return "slot1@exec.example.org"

    def claim_ready(self, claim_id: str) -> bool:
        return False

    def recent_results(self, claim_ids: Iterable[str]) -> list[ClassAd]:
        return []


def _running(directory: Path) -> tuple[Schedd, _Startd, JobLeases]:
    """A schedd whose job 1.0 (JobLeaseDuration 600) runs on CLAIM since NOW."""
    schedd = make_schedd(directory, {"alice": 1})
    schedd.queue.set_attributes(JOB, {"JobLeaseDuration": 600}, NOW)
    startd = _Startd()
    schedd.startds.register(STARTD, startd)  # type: ignore[arg-type]  # the calls it gets
    assert schedd.activate(JOB, schedd.queue.get(JOB), STARTD, CLAIM, "alice", NOW)
    leases = JobLeases(startd_reachable(schedd.startds), logging.getLogger("test.leases"))
    return schedd, startd, leases


def test_a_job_whose_startd_is_unreachable_past_its_lease_goes_back_to_idle(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Unreachable from the start, the job keeps running until its 600 s lease runs out,
    then is idle with HTCondor's reason, its claim forgotten without a release, and a
    negotiation wanted."""
    schedd, startd, leases = _running(tmp_path)
    caplog.set_level(logging.INFO, "test.leases")
    startd.down = True
    assert leases.check(schedd, NOW + 599) == []
    assert CLAIM in schedd.running
    assert schedd.queue.get(JOB).evaluate("JobStatus") == 2
    schedd.wants_negotiation = False
    assert leases.check(schedd, NOW + 601) == [CLAIM]
    job = schedd.queue.get(JOB)
    assert job.evaluate("JobStatus") == 1
    assert job.evaluate("VacateReason") == (
        "Job disconnected too long: JobLeaseDuration (600 seconds) expired"
    )
    assert CLAIM not in schedd.running
    assert startd.released == []
    assert schedd.wants_negotiation
    assert sum("cannot be reached" in r.getMessage() for r in caplog.records) == 1


def test_a_result_after_the_lease_ran_out_is_refused(tmp_path: Path) -> None:
    """The startd's result for the claim whose lease ran out is refused, and the requeued
    job stays idle (it does not finish)."""
    schedd, startd, leases = _running(tmp_path)
    startd.down = True
    leases.check(schedd, NOW + 601)
    receiver = ResultReceiver(schedd, schedd.job_result, logging.getLogger("test"))
    result = ClassAd({"ClusterId": 1, "ProcId": 0, "JobOutcome": "exited", "ExitCode": 0})
    acknowledged, why = receiver.receive(CLAIM, result, NOW + 700)
    assert not acknowledged
    assert "no claim" in why
    assert schedd.queue.get(JOB).evaluate("JobStatus") == 1


def test_a_startd_that_answers_again_in_time_keeps_its_job_as_a_reconnect(
    tmp_path: Path,
) -> None:
    """Unreachable for 500 s of a 600 s lease, then reachable: the job keeps running, marked
    disconnected meanwhile (JobDisconnectedDate, undefined again after), its
    NumJobReconnects is 1 and LastJobLeaseRenewal the time it answered; the lease counts
    again from there."""
    schedd, startd, leases = _running(tmp_path)
    startd.down = True
    leases.check(schedd, NOW + 500)
    assert schedd.queue.get(JOB).evaluate("JobDisconnectedDate") == int(NOW + 500)
    startd.down = False
    leases.check(schedd, NOW + 520)
    job = schedd.queue.get(JOB)
    assert job.evaluate("JobDisconnectedDate") is UNDEFINED
    assert job.evaluate("NumJobReconnects") == 1
    assert job.evaluate("LastJobLeaseRenewal") == int(NOW + 520)
    startd.down = True
    assert leases.check(schedd, NOW + 1100) == []
    assert leases.check(schedd, NOW + 1121) == [CLAIM]


def test_last_job_lease_renewal_is_written_once_per_keep_alive_round(tmp_path: Path) -> None:
    """With ALIVE_INTERVAL 300 (rounds of 100 s), checks every 10 s write
    LastJobLeaseRenewal only when a round has passed since the last write."""
    schedd, _, leases = _running(tmp_path)
    for offset in range(0, 160, 10):
        leases.check(schedd, NOW + offset)
    assert schedd.queue.get(JOB).evaluate("LastJobLeaseRenewal") == int(NOW + 100)


def test_a_check_within_a_second_of_the_last_does_nothing(tmp_path: Path) -> None:
    """The schedd ticks often: a second check within CHECK_EVERY looks at nothing."""
    schedd, startd, leases = _running(tmp_path)
    leases.check(schedd, NOW + 1000)
    startd.down = True
    assert leases.check(schedd, NOW + 1000.5) == []
    assert CLAIM not in leases.disconnected


def test_the_lease_is_the_jobs_or_six_alive_intervals() -> None:
    """JobLeaseDuration when positive; otherwise 6 x ALIVE_INTERVAL, the claim lease
    HTCondor's startd derives from the schedd's alive interval."""
    assert lease_seconds(ClassAd({"JobLeaseDuration": 2400}), 300) == 2400
    assert lease_seconds(ClassAd(), 300) == 1800
    assert lease_seconds(ClassAd({"JobLeaseDuration": 0}), 20) == 120


def test_an_address_without_a_link_is_unreachable() -> None:
    """A startd address nobody registered and no connector can reach is not reachable; a
    registered link without ``down`` (in this process) always is."""
    startds: Locator[StartdLink] = Locator("startd")
    reachable = startd_reachable(startds)
    assert not reachable("<127.0.0.9:1>")
    startds.register(STARTD, _Startd())  # type: ignore[arg-type]
    assert reachable(STARTD)


def _events(log: Path) -> list[tuple[int, str]]:
    """The events in the job's text log: (number, the first detail line)."""
    entries = log.read_text().split("...\n") if log.exists() else []
    found = []
    for entry in filter(None, entries):
        lines = entry.splitlines()
        found.append((int(lines[0][:3]), lines[1].strip() if len(lines) > 1 else ""))
    return found


def test_the_job_log_tells_of_each_disconnect_reconnect_and_the_lease_s_end(
    tmp_path: Path,
) -> None:
    """The job's event log gets 022 when its startd stops answering (once, however long),
    023 when it answers again, and 024 with the lease's reason when it runs out."""
    schedd, startd, leases = _running(tmp_path)
    log = tmp_path / "job.log"
    owner = pwd.getpwuid(os.getuid()).pw_name
    schedd.queue.set_attributes(JOB, {"UserLog": str(log), "Owner": owner}, NOW)
    startd.down = True
    leases.check(schedd, NOW + 10)
    leases.check(schedd, NOW + 20)
    assert _events(log) == [(22, "Socket between submit and execute hosts closed unexpectedly")]
    startd.down = False
    leases.check(schedd, NOW + 30)
    assert [number for number, _ in _events(log)] == [22, 23]
    startd.down = True
    leases.check(schedd, NOW + 40)
    assert leases.check(schedd, NOW + 631) == [CLAIM]
    assert _events(log)[2:] == [
        (22, "Socket between submit and execute hosts closed unexpectedly"),
        (24, "Job disconnected too long: JobLeaseDuration (600 seconds) expired"),
    ]


def test_a_startd_without_the_claim_has_the_job_requeued_at_once(tmp_path: Path) -> None:
    """A startd that answered an ALIVE that it has no such claim (its link's take_unknown):
    at the next check the job is idle again, long before its lease's end, the claim
    forgotten without a release, and the job's log says why (024)."""
    schedd, startd, _ = _running(tmp_path)
    log = tmp_path / "job.log"
    owner = pwd.getpwuid(os.getuid()).pw_name
    schedd.queue.set_attributes(JOB, {"UserLog": str(log), "Owner": owner}, NOW)
    gone: set[str] = set()
    leases = JobLeases(
        startd_reachable(schedd.startds),
        logging.getLogger("test.leases"),
        lambda address, claim_id: address == STARTD and claim_id in gone,
    )
    assert leases.check(schedd, NOW + 10) == []
    assert schedd.queue.get(JOB).evaluate("JobStatus") == 2
    gone.add(CLAIM)
    assert leases.check(schedd, NOW + 20) == [CLAIM]
    assert schedd.queue.get(JOB).evaluate("JobStatus") == 1
    assert CLAIM not in schedd.running
    assert startd.released == []
    assert _events(log) == [(24, "Claim not found at execution machine")]


def test_claim_unknown_takes_each_answer_of_a_link_once() -> None:
    """claim_unknown asks the address's link (take_unknown) and is False for a link
    without that question or an address without a link."""

    class _Told(_Startd):
        def __init__(self) -> None:
            super().__init__()
            self.unknown = {CLAIM}

        def take_unknown(self, claim_id: str) -> bool:
            if claim_id in self.unknown:
                self.unknown.discard(claim_id)
                return True
            return False

    startds: Locator[StartdLink] = Locator("startd")
    startds.register(STARTD, _Told())  # type: ignore[arg-type]  # the calls it gets
    startds.register("<127.0.0.8:9618>", _Startd())  # type: ignore[arg-type]  # no question
    unknown = claim_unknown(startds)
    assert unknown(STARTD, CLAIM)
    assert not unknown(STARTD, CLAIM)
    assert not unknown("<127.0.0.8:9618>", CLAIM)
    assert not unknown("<127.0.0.7:9618>", CLAIM)
