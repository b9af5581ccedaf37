"""The schedd tells the startd why it gives a running job's claim back: ``ep rm`` releases it
as a removal (the starter then keeps nothing of the job, such as a VM checkpoint); a hold
releases it plainly, as the job may run again."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from epcore.classad import ClassAd
from epcore.schedd.jobqueue_model import JobId
from epcore.schedd.schedd import Schedd
from tests.links.negotiate_peers import NOW, make_schedd

CLAIM = "<127.0.0.9:9618>#1700000000#1#secret"
STARTD = "<127.0.0.9:9618>"
JOB = JobId(1, 0)


class _Startd:
    """A startd's link that notes each release and whether it was for a removal."""

    address = STARTD

    def __init__(self) -> None:
        self.released: list[tuple[str, bool]] = []

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        pass

    def alive(self, claim_id: str) -> None:
        pass

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        self.released.append((claim_id, removed))

    def slot_of(self, claim_id: str) -> str | None:
        return "slot1@exec.example.org"

    def claim_ready(self, claim_id: str) -> bool:
        return False

    def recent_results(self, claim_ids: Iterable[str]) -> list[ClassAd]:
        return []


def _running(directory: Path) -> tuple[Schedd, _Startd]:
    schedd = make_schedd(directory, {"alice": 1})
    startd = _Startd()
    schedd.startds.register(STARTD, startd)  # type: ignore[arg-type]  # the calls it gets
    assert schedd.activate(JOB, schedd.queue.get(JOB), STARTD, CLAIM, "alice", NOW)
    return schedd, startd


def test_removing_a_running_job_releases_its_claim_as_a_removal(tmp_path: Path) -> None:
    """condor_rm of the running job releases its claim with removed = True."""
    schedd, startd = _running(tmp_path)
    schedd.remove(JOB, "by the test", NOW + 1)
    assert startd.released == [(CLAIM, True)]


def test_holding_a_running_job_releases_its_claim_plainly(tmp_path: Path) -> None:
    """condor_hold of the running job releases its claim with removed = False."""
    schedd, startd = _running(tmp_path)
    schedd.hold(JOB, "by the test", NOW + 1)
    assert startd.released == [(CLAIM, False)]
