"""The remote JobResults link against a real schedd's EP_JOB_RESULT handler on loopback: a
result is applied once, a re-sent one acknowledged only, a stale one refused and dropped, and
one for a schedd that is down waits (never the startd's loop) until the schedd answers."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError
from epcore.links import results as results_module
from epcore.links.results import RemoteJobResults
from epcore.links.results_journal import ResultsJournal
from epcore.net import commands
from epcore.schedd.cedar import result_handlers
from epcore.schedd.jobqueue_model import JobId
from epcore.schedd.results import ResultReceiver
from epcore.schedd.schedd import Schedd
from tests.links.negotiate_peers import NOW, SCHEDD_CONFIG, make_schedd, serving

CLAIM = "<127.0.0.9:9618>#1700000000#1#secret"
STARTD = "<127.0.0.9:9618>"
#: The schedd's side: startds anywhere on loopback may hand back results.
SERVER_CONFIG = SCHEDD_CONFIG + "ALLOW_DAEMON = *\n"
CLIENT = Config.from_text("SEC_DEFAULT_AUTHENTICATION_METHODS = CLAIMTOBE\n", subsystem="STARTD")


class _Startd:
    """The claim's startd as the schedd's activation sees it: takes the job, holds slot1."""

    address = STARTD

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        pass

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        pass

    def slot_of(self, claim_id: str) -> str | None:
        return "slot1@exec.example.org"

    def claim_ready(self, claim_id: str) -> bool:
        return False

    def recent_results(self, claim_ids: Iterable[str]) -> list[ClassAd]:
        return []


def _running_schedd(directory: Path) -> Schedd:
    """A schedd whose job 1.0 runs on CLAIM."""
    schedd = make_schedd(directory, {"alice": 1})
    schedd.startds.register(STARTD, _Startd())  # type: ignore[arg-type]  # the calls it gets
    job_id = JobId(1, 0)
    assert schedd.activate(job_id, schedd.queue.get(job_id), STARTD, CLAIM, "alice", NOW)
    return schedd


def _result(claim_id: str = CLAIM, proc: int = 0) -> ClassAd:
    return ClassAd(
        {
            "ClusterId": 1,
            "ProcId": proc,
            "ClaimId": claim_id,
            "JobOutcome": "exited",
            "ExitCode": 0,
            "ExitBySignal": False,
        }
    )


class _Counted:
    """The schedd's job_result, counting the results it applies."""

    def __init__(self, schedd: Schedd) -> None:
        self.schedd = schedd
        self.applied: list[ClassAd] = []

    def __call__(self, result: ClassAd, now: float) -> None:
        self.applied.append(result)
        self.schedd.job_result(result, now)


def _link(log_name: str = "test.results") -> RemoteJobResults:
    return RemoteJobResults(
        lambda: CLIENT, schedd_of=lambda claim_id: None, log=logging.getLogger(log_name)
    )


def test_ep_job_result_is_epcores_own_number_at_daemon_level() -> None:
    """EP_JOB_RESULT is 90001 (beyond every base of condor_commands.h, whose last is
    CREDD_BASE 81000) and needs DAEMON."""
    assert (commands.EP_JOB_RESULT.number, commands.EP_JOB_RESULT.level) == (90001, "DAEMON")


def test_a_result_is_applied_once_and_a_resent_one_only_acknowledged(tmp_path: Path) -> None:
    """The result of the claim's running job completes it in the schedd's queue; the same
    result sent again is acknowledged by the schedd and not applied a second time."""
    schedd = _running_schedd(tmp_path)
    apply = _Counted(schedd)
    receiver = ResultReceiver(schedd, apply, logging.getLogger("test.schedd"))
    handlers = result_handlers(receiver, log=logging.getLogger("test.schedd"), clock=lambda: NOW)
    link = _link()
    with serving(handlers, SERVER_CONFIG) as served:
        link.claimed(CLAIM, served.address)
        link.open(None)  # type: ignore[arg-type]  # the link registers nothing in the loop
        try:
            link.job_result(_result(), NOW)
            assert served.call(lambda: link.wait_sent(15))
            link.job_result(_result(), NOW)
            assert served.call(lambda: link.wait_sent(15))
        finally:
            link.close()
    assert link.applied == 2
    assert link.refused == 0
    assert len(apply.applied) == 1
    assert JobId(1, 0) not in schedd.queue  # completed: gone to the history
    assert CLAIM not in schedd.running


def test_a_result_of_a_claim_the_schedd_does_not_run_is_refused_and_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A result whose claim id is not the running claim's (a wrong secret) is refused: the
    link drops it, and the job still runs at the schedd."""
    schedd = _running_schedd(tmp_path)
    receiver = ResultReceiver(schedd, schedd.job_result, logging.getLogger("test.schedd"))
    handlers = result_handlers(receiver, log=logging.getLogger("test.schedd"), clock=lambda: NOW)
    link = _link("test.refused")
    caplog.set_level(logging.INFO, "test.refused")
    forged = CLAIM.rsplit("#", 1)[0] + "#guessed"
    with serving(handlers, SERVER_CONFIG) as served:
        link.claimed(forged, served.address)
        link.open(None)  # type: ignore[arg-type]
        try:
            link.job_result(_result(forged), NOW)
            assert served.call(lambda: link.wait_sent(15))
        finally:
            link.close()
    assert (link.applied, link.refused, link.pending()) == (0, 1, 0)
    assert any("refused the result of job 1.0" in r.getMessage() for r in caplog.records)
    assert schedd.queue.get(JobId(1, 0)).evaluate("JobStatus") == 2
    assert CLAIM in schedd.running


def test_a_result_for_a_schedd_that_is_down_waits_and_goes_when_it_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With nothing listening at the schedd's address the call returns at once, the result
    stays queued through failed attempts (logged once), and it is applied when a schedd
    listens there."""
    monkeypatch.setattr(results_module, "FIRST_BACKOFF", 0.2)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    schedd = _running_schedd(tmp_path)
    receiver = ResultReceiver(schedd, schedd.job_result, logging.getLogger("test.schedd"))
    handlers = result_handlers(receiver, log=logging.getLogger("test.schedd"), clock=lambda: NOW)
    link = _link("test.down")
    caplog.set_level(logging.INFO, "test.down")
    link.claimed(CLAIM, f"<127.0.0.1:{port}>")
    link.open(None)  # type: ignore[arg-type]
    try:
        started = time.perf_counter()
        link.job_result(_result(), NOW)
        assert time.perf_counter() - started < 0.01
        deadline = time.monotonic() + 10
        while link.failures < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert link.failures >= 3
        assert link.pending() == 1
        # While it waits, the claim's result counts as on its way (an ALIVE gets no -1).
        assert link.holds_result_of(CLAIM) and not link.holds_result_of(CLAIM + "x")
        warnings = [r for r in caplog.records if "cannot deliver" in r.getMessage()]
        assert len(warnings) == 1
        with serving(handlers, SERVER_CONFIG, port=port) as served:
            assert served.call(lambda: link.wait_sent(15))
    finally:
        link.close()
    assert (link.applied, link.pending()) == (1, 0)
    assert not link.holds_result_of(CLAIM)
    assert any("answers again" in r.getMessage() for r in caplog.records)
    assert JobId(1, 0) not in schedd.queue  # completed: gone to the history


def test_a_claim_whose_schedd_is_unknown_sends_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """A result whose claim has no schedd address (nor a sinful client) is logged and not
    queued."""
    link = RemoteJobResults(
        lambda: CLIENT, schedd_of=lambda claim_id: "submit.example.org", log=logging.getLogger("t")
    )
    caplog.set_level(logging.INFO, "t")
    link.job_result(_result(), NOW)
    assert link.pending() == 0
    assert any("no schedd address" in r.getMessage() for r in caplog.records)


def test_a_result_queued_when_the_startd_died_is_sent_by_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result queued for a schedd that is down is kept in the journal; a link made from
    that journal (the restarted startd's) delivers it once the schedd answers, and the
    journal is then empty."""
    monkeypatch.setattr(results_module, "FIRST_BACKOFF", 0.2)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = str(tmp_path / "startd_results")
    first = RemoteJobResults(
        lambda: CLIENT,
        schedd_of=lambda claim_id: None,
        log=logging.getLogger("test.first"),
        journal=ResultsJournal(path, logging.getLogger("test.first")),
    )
    first.claimed(CLAIM, f"<127.0.0.1:{port}>")
    first.job_result(_result(), NOW)  # never opened: the startd is killed before it sends
    schedd = _running_schedd(tmp_path)
    receiver = ResultReceiver(schedd, schedd.job_result, logging.getLogger("test.schedd"))
    handlers = result_handlers(receiver, log=logging.getLogger("test.schedd"), clock=lambda: NOW)
    second = RemoteJobResults(
        lambda: CLIENT,
        schedd_of=lambda claim_id: None,
        log=logging.getLogger("test.second"),
        journal=ResultsJournal(path, logging.getLogger("test.second")),
    )
    assert second.pending() == 1
    with serving(handlers, SERVER_CONFIG, port=port) as served:
        second.open(None)  # type: ignore[arg-type]
        try:
            assert served.call(lambda: second.wait_sent(15))
        finally:
            second.close()
    assert (second.applied, second.pending()) == (1, 0)
    assert JobId(1, 0) not in schedd.queue  # completed: gone to the history
    assert ResultsJournal(path, logging.getLogger("test.third")).load() == []


class _SilentStartd(_Startd):
    """A startd that does not answer any more (restarting, or cut off) after the job ended."""

    def claim_ready(self, claim_id: str) -> bool:
        raise EpError(f"the startd at {STARTD} does not answer")

    def slot_of(self, claim_id: str) -> str | None:
        raise EpError(f"the startd at {STARTD} does not answer")


def test_a_result_completes_its_job_when_the_startd_no_longer_answers(tmp_path: Path) -> None:
    """The schedd asks the claim's startd whether the claim can run the next job; a startd
    that does not answer leaves the claim to its lease, and the job's end recorded with the
    result stands (before, a failing startd call undid it and the job stayed running)."""
    schedd = _running_schedd(tmp_path)
    schedd.startds.register(STARTD, _SilentStartd())  # type: ignore[arg-type]
    receiver = ResultReceiver(schedd, schedd.job_result, logging.getLogger("test.schedd"))
    assert receiver.receive(CLAIM, _result(), NOW) == (True, "applied")
    assert JobId(1, 0) not in schedd.queue  # completed: gone to the history
    assert CLAIM not in schedd.running
