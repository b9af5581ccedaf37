"""The results a startd has queued for schedds elsewhere, kept on disk until each is answered,
so that a startd killed or restarted meanwhile sends them after its restart
(:class:`~epcore.links.results.RemoteJobResults` reads the journal when it is made).

The file is a journal, as the startd's claims file is (:class:`epcore.runtime.persist.
ClaimsFile`): a line for each result queued (the result ad with the schedd's address in
``EpResultSchedd``), a line ``[ AnsweredClaimId = "..."; AnsweredJobId = "..." ]`` for each
result its schedd answered, and from time to time the whole file rewritten with only the
unanswered ones (atomically). It is mode 0600: the ads carry their claims' whole ids.

The schedd applies each result once by claim id and job id (:mod:`epcore.schedd.results`),
so a result re-sent after a restart that its schedd had already applied is acknowledged and
not applied again.
"""

from __future__ import annotations

import logging
from typing import Final

from epcore.classad import ClassAd
from epcore.errors import DaemonError
from epcore.runtime.persist import append_private, read_ad_lines, replace_private

#: The attribute of a queued result's line naming the schedd it goes to.
SCHEDD: Final = "EpResultSchedd"
#: The attributes of the line that says a result was answered.
ANSWERED_CLAIM: Final = "AnsweredClaimId"
ANSWERED_JOB: Final = "AnsweredJobId"


def _job_id(result: ClassAd) -> str:
    return f"{result.evaluate('ClusterId')}.{result.evaluate('ProcId')}"


class ResultsJournal:
    """The journal at ``path`` (module docstring). Writing errors are logged, never raised:
    a result that cannot be kept on disk is still sent (the startd's history has it)."""

    def __init__(self, path: str, log: logging.Logger) -> None:
        self.path = path
        self.log = log
        #: The line of each unanswered result, by (claim id, job id).
        self.live: dict[tuple[str, str], str] = {}
        self.lines = 0

    def load(self) -> list[tuple[str, ClassAd]]:
        """The unanswered results (schedd address, result ad), oldest first; the file is
        rewritten with only those. An unreadable file is logged and left for a person."""
        try:
            entries = read_ad_lines(self.path, "the queued results", torn_tail=True)
        except DaemonError as error:
            self.log.error("%s; its results are not re-sent", error)
            return []
        found: dict[tuple[str, str], tuple[str, ClassAd]] = {}
        for _number, ad in entries:
            claim = ad.evaluate(ANSWERED_CLAIM)
            if isinstance(claim, str):
                found.pop((claim, str(ad.evaluate(ANSWERED_JOB))), None)
                continue
            address, claim_id = ad.evaluate(SCHEDD), ad.evaluate("ClaimId")
            if not isinstance(address, str) or not isinstance(claim_id, str):
                continue
            result = ad.copy()
            del result[SCHEDD]
            found.pop((claim_id, _job_id(result)), None)
            found[(claim_id, _job_id(result))] = (address, result)
        self.live = {}
        for (claim_id, job_id), (address, result) in found.items():
            self.live[(claim_id, job_id)] = self._line(address, result)
        self._rewrite()
        return list(found.values())

    def queued(self, claim_id: str, job_id: str, address: str, result: ClassAd) -> None:
        """Keep ``result`` until it is answered."""
        line = self._line(address, result)
        self.live[(claim_id, job_id)] = line
        self._append(line)

    def answered(self, claim_id: str, job_id: str) -> None:
        """The result of ``job_id`` under ``claim_id`` was answered: it is not sent again."""
        if self.live.pop((claim_id, job_id), None) is None:
            return
        if self.lines > 2 * len(self.live) + 64:
            self._rewrite()
            return
        marker = ClassAd()
        marker[ANSWERED_CLAIM] = claim_id
        marker[ANSWERED_JOB] = job_id
        self._append(str(marker))

    @staticmethod
    def _line(address: str, result: ClassAd) -> str:
        ad = result.copy()
        ad[SCHEDD] = address
        return str(ad)

    def _append(self, line: str) -> None:
        try:
            append_private(self.path, f"{line}\n".encode())
        except OSError as error:
            self.log.error("cannot keep a queued result in %s: %s", self.path, error.strerror)
            return
        self.lines += 1

    def _rewrite(self) -> None:
        text = "".join(f"{line}\n" for line in self.live.values())
        try:
            replace_private(self.path, text.encode("utf-8"))
        except OSError as error:
            self.log.error("cannot rewrite the queued results %s: %s", self.path, error.strerror)
            return
        self.lines = len(self.live)
