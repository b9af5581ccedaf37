"""A job's end as the startd takes it (epcore.startd.starter_events.finished): the steps are
ordered so that a startd that dies between any two of them neither loses the result nor
has its job run again; the next startd sends the recorded end."""

from __future__ import annotations

import logging

import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.links.results import RemoteJobResults
from epcore.links.results_journal import ResultsJournal
from epcore.runtime import persist
from epcore.startd import starter_events
from epcore.startd.startd import Startd
from epcore.startd.starters import StarterHandle
from epcore.starter import protocol
from epcore.state.restore import SavedClaim

JOB = parse_ad('[ Owner = "alice"; ClusterId = 12; ProcId = 3; RequestCpus = 1 ]')
SCHEDD = "<10.77.0.2:9618>"
CLAIM = "<10.77.0.9:9618>#100#1#cafe"


class _Crash(BaseException):
    """The startd dies here (nothing after it runs)."""


def _saved() -> SavedClaim:
    return SavedClaim(
        slot_id=1,
        partitionable=False,
        claim_id=CLAIM,
        job=JOB,
        rank=0.0,
        made_at=900.0,
        lease=1200,
        client_machine=SCHEDD,
        job_start=950.0,
        run_time=0.0,
        suspend_time=0.0,
    )


def _results(startd: Startd) -> RemoteJobResults:
    """The results link of a startd whose schedd is elsewhere, its journal in SPOOL (its
    worker never started: nothing is sent)."""
    return RemoteJobResults(
        lambda: startd.config,
        schedd_of=lambda claim_id: SCHEDD,
        log=logging.getLogger("test.results"),
        journal=ResultsJournal(startd.paths.results_file, logging.getLogger("test.journal")),
    )


def _running(startd: Startd) -> StarterHandle:
    """CLAIM's starter runs JOB: the claims file has it (its process, 999999, is gone when
    the next startd looks), the results go to SCHEDD."""
    startd.claims_file.add(persist.SavedStarter(_saved(), 999_999))
    startd.job_results = _results(startd)
    return StarterHandle(CLAIM, "slot1", 999_999, None, stage="running")


def _finished_message() -> ClassAd:
    message = ClassAd({"Command": protocol.FINISHED, "JobOutcome": "exited", "ExitCode": 0})
    message["ClusterId"] = 12
    message["ProcId"] = 3
    return message


def _after_restart(startd: Startd) -> list[ClassAd]:
    """What the next startd's results link has to send once it has restored the claims."""
    link = _results(startd)
    startd.job_results = link
    startd.restore(startd.clock())
    assert persist.read_claims(startd.paths.claims_file) == []
    return [delivery.result for delivery in link._pending.values()]


def test_the_result_is_journaled_before_the_claims_file_forgets_the_job(
    startd: Startd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dying as the claims file forgets the job: the result is already in the journal, and
    the next startd sends the job's recorded end, not an eviction."""
    handle = _running(startd)

    def crash(claim_id: str) -> None:
        assert ResultsJournal(startd.paths.results_file, logging.getLogger("t")).load()
        raise _Crash

    monkeypatch.setattr(startd.claims_file, "drop", crash)
    with pytest.raises(_Crash):
        starter_events.finished(startd, handle, _finished_message(), startd.clock())
    monkeypatch.undo()
    (sent,) = _after_restart(startd)
    assert sent.evaluate("JobOutcome") == "exited"
    assert sent.evaluate("ClaimId") == CLAIM


def test_dying_before_the_journal_keeps_the_claim_and_sends_the_recorded_end(
    startd: Startd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dying as the result goes to the journal: the claims file still has the job, whose end
    the history has: the next startd sends that end, once, not an eviction."""
    handle = _running(startd)

    def crash(result: ClassAd, now: float) -> None:
        raise _Crash

    monkeypatch.setattr(startd.job_results, "job_result", crash)
    with pytest.raises(_Crash):
        starter_events.finished(startd, handle, _finished_message(), startd.clock())
    assert [entry.claim.claim_id for entry in persist.read_claims(startd.paths.claims_file)] == [
        CLAIM
    ]
    monkeypatch.undo()
    (sent,) = _after_restart(startd)
    assert sent.evaluate("JobOutcome") == "exited"
    history = list(persist.read_history(startd.paths.history_file))
    assert [ad.evaluate("JobOutcome") for ad in history] == ["exited"]


def test_a_starter_gone_with_no_recorded_end_is_still_lost(startd: Startd) -> None:
    """A claim whose starter died and whose end nobody recorded is reported evicted, as
    before."""
    _running(startd)
    (sent,) = _after_restart(startd)
    assert sent.evaluate("JobOutcome") == "evicted"
