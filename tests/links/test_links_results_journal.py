"""The journal of a startd's queued results: what was queued and not answered comes back,
in order, after the process that wrote it is gone; answered results do not."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from epcore.classad import ClassAd
from epcore.links import results_journal
from epcore.links.results_journal import ResultsJournal

LOG = logging.getLogger("test.journal")
SCHEDD = "<10.0.0.2:9618>"


def _result(proc: int, claim: str = "<10.0.0.3:9618>#1#1#secret") -> ClassAd:
    return ClassAd({"ClusterId": 1, "ProcId": proc, "ClaimId": claim, "ExitCode": proc})


def test_unanswered_results_come_back_in_order_and_answered_ones_do_not(tmp_path: Path) -> None:
    """Three results queued and the second answered: a new journal on the file gives the
    first and third, with their schedd's address and without the journal's attribute."""
    path = str(tmp_path / "results")
    journal = ResultsJournal(path, LOG)
    claim = str(_result(0).evaluate("ClaimId"))
    for proc in range(3):
        journal.queued(claim, f"1.{proc}", SCHEDD, _result(proc))
    journal.answered(claim, "1.1")
    loaded = ResultsJournal(path, LOG).load()
    found = [(address, ad.evaluate("ProcId")) for address, ad in loaded]
    assert found == [(SCHEDD, 0), (SCHEDD, 2)]
    assert all(results_journal.SCHEDD not in ad for _address, ad in loaded)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_result_queued_again_is_kept_once_as_its_latest(tmp_path: Path) -> None:
    """A result of the same claim and job queued twice comes back once, as queued last."""
    path = str(tmp_path / "results")
    journal = ResultsJournal(path, LOG)
    claim = str(_result(0).evaluate("ClaimId"))
    journal.queued(claim, "1.0", SCHEDD, _result(0))
    again = _result(0)
    again["ExitCode"] = 7
    journal.queued(claim, "1.0", SCHEDD, again)
    loaded = ResultsJournal(path, LOG).load()
    assert [ad.evaluate("ExitCode") for _address, ad in loaded] == [7]


def test_the_file_is_rewritten_with_only_the_unanswered_ones(tmp_path: Path) -> None:
    """Many answered results make the journal rewrite itself: its lines stay a few more
    than the unanswered results."""
    path = str(tmp_path / "results")
    journal = ResultsJournal(path, LOG)
    claim = str(_result(0).evaluate("ClaimId"))
    for proc in range(200):
        journal.queued(claim, f"1.{proc}", SCHEDD, _result(proc))
        if proc != 199:
            journal.answered(claim, f"1.{proc}")
    assert len(Path(path).read_text().splitlines()) <= 2 * 1 + 64 + 2
    assert [ad.evaluate("ProcId") for _a, ad in ResultsJournal(path, LOG).load()] == [199]


def test_a_torn_last_line_is_left_out(tmp_path: Path) -> None:
    """A line cut short by a full disk (no newline) is not read as a result."""
    path = tmp_path / "results"
    journal = ResultsJournal(str(path), LOG)
    journal.queued("c", "1.0", SCHEDD, _result(0, "c"))
    with path.open("a") as handle:
        handle.write('[ ClusterId = 1; ProcId = 1; ClaimId = "c"; EpResultSch')
    assert [ad.evaluate("ProcId") for _a, ad in ResultsJournal(str(path), LOG).load()] == [0]


def test_an_unreadable_journal_is_logged_and_gives_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A journal whose whole line is not a ClassAd is named in the log; nothing is re-sent."""
    path = tmp_path / "results"
    path.write_text("this is not an ad\n")
    caplog.set_level(logging.ERROR, LOG.name)
    assert ResultsJournal(str(path), LOG).load() == []
    assert any(str(path) in record.getMessage() for record in caplog.records)
