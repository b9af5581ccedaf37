"""The schedd's keep-alives run on each claim's lease clock: every min(ALIVE_INTERVAL,
JobLeaseDuration / 3), the first one interval after the activation (at once for a claim
taken back after a restart), none after the claim ended; the schedd service's loop wakes
for the next one due."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.schedd.alives import alive_every
from epcore.schedd.jobqueue_model import JobId
from epcore.schedd.schedd import Schedd
from epcore.schedd.service import ScheddService
from tests.links.negotiate_peers import NOW, make_schedd

CLAIM = "<127.0.0.9:9618>#1700000000#1#secret"
STARTD = "<127.0.0.9:9618>"
JOB = JobId(1, 0)


class _Startd:
    """A startd elsewhere that counts the keep-alives it gets."""

    address = STARTD

    def __init__(self) -> None:
        self.alives: list[str] = []

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        pass

    def alive(self, claim_id: str) -> None:
        self.alives.append(claim_id)

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        pass

    def slot_of(self, claim_id: str) -> str | None:
        return "slot1@exec.example.org"

    def claim_ready(self, claim_id: str) -> bool:
        return False

    def recent_results(self, claim_ids: Iterable[str]) -> list[ClassAd]:
        return []


@pytest.mark.parametrize(
    ("alive_interval", "lease", "expected"),
    [(300, 30, 10.0), (300, 2400, 300.0), (300, None, 300.0), (3, 60, 3.0), (300, 1, 1.0)],
)
def test_a_claim_s_interval_is_the_alive_interval_or_a_third_of_its_lease(
    alive_interval: int, lease: int | None, expected: float
) -> None:
    """min(ALIVE_INTERVAL, JobLeaseDuration / 3), never under a second; without a lease,
    ALIVE_INTERVAL."""
    config = Config.from_text(f"ALIVE_INTERVAL = {alive_interval}\n", subsystem="SCHEDD")
    job = ClassAd() if lease is None else ClassAd({"JobLeaseDuration": lease})
    assert alive_every(config, job) == expected


def _running(directory: Path, lease: int) -> tuple[Schedd, _Startd]:
    schedd = make_schedd(directory, {"alice": 1})
    schedd.queue.set_attributes(JOB, {"JobLeaseDuration": lease}, NOW)
    startd = _Startd()
    schedd.startds.register(STARTD, startd)  # type: ignore[arg-type]  # the calls it gets
    assert schedd.activate(JOB, schedd.queue.get(JOB), STARTD, CLAIM, "alice", NOW)
    return schedd, startd


def test_keep_alives_go_every_third_of_the_lease_and_stop_with_the_claim(tmp_path: Path) -> None:
    """A job with a 30 s lease (ALIVE_INTERVAL 300) gets its first keep-alive 10 s after its
    activation and one every 10 s after; its result ends them."""
    schedd, startd = _running(tmp_path, 30)
    assert schedd.alives.next_due() == NOW + 10
    for offset in (1, 5, 9.9):
        schedd.tick(NOW + offset)
    assert startd.alives == []
    schedd.tick(NOW + 10)
    schedd.tick(NOW + 15)
    assert startd.alives == [CLAIM]
    schedd.tick(NOW + 20)
    assert startd.alives == [CLAIM, CLAIM]
    result = ClassAd({"ClusterId": 1, "ProcId": 0, "ClaimId": CLAIM, "JobOutcome": "exited"})
    result["ExitCode"] = 0
    schedd.job_result(result, NOW + 21)
    schedd.tick(NOW + 40)
    assert startd.alives == [CLAIM, CLAIM]
    assert schedd.alives.next_due() is None


def test_the_schedd_service_wakes_for_the_next_keep_alive(tmp_path: Path) -> None:
    """The service's loop timeout reaches no further than the next keep-alive due, though
    nothing else is to be done before (advertising is a minute away)."""
    schedd, _ = _running(tmp_path, 30)
    service = ScheddService(
        schedd,
        config=lambda: schedd.config,
        address="<unix:/x>",
        collector=None,  # type: ignore[arg-type]  # not reached: no advertisement is due
        slots=None,  # type: ignore[arg-type]  # not asked
        priorities=None,
        log=logging.getLogger("test.schedd"),
        clock=lambda: NOW + 4,
        monotonic=lambda: 0.0,
    )
    service.next_ads = 60.0
    service.tick()  # the periodic policy's first run: its next is PERIODIC_EXPR_INTERVAL away
    assert service.timeout() == pytest.approx(6.0)
