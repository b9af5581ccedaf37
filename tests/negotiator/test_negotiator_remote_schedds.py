"""A cycle whose schedds include ones in other processes: the addresses come from where the
assembly says, and a schedd that fails (unreachable, or failing to take its matches) is
logged and reported while the others get their matches."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from epcore.classad import ClassAd
from epcore.interfaces import Locator, Match, PeerUnreachable, Significance, SubmitterJobs
from epcore.negotiator import Accountant
from epcore.negotiator.cedar import reschedule_handlers
from epcore.negotiator.service import NegotiatorService
from epcore.net import commands
from tests.negotiator.negotiator_helpers import config
from tests.net.drive import drive

NOW = 1_800_000_000.0


class Slots:
    """A collector link holding fixed slot ads."""

    def __init__(self, slots: list[ClassAd]) -> None:
        self.slots = slots

    def query(self, my_type, constraint=None, projection=None, *, now):  # type: ignore[no-untyped-def]
        return list(self.slots) if my_type == "Machine" else []

    def update(self, ads, now):  # type: ignore[no-untyped-def]
        pass


class Source:
    """A schedd with one idle job of ``owner``; ``broken`` says which call fails."""

    def __init__(self, owner: str, broken: str = "", schedd: str = "") -> None:
        self.owner = owner
        self.broken = broken
        self.schedd = schedd or f"ap-{owner}"  # GlobalJobId names the schedd
        self.taken: list[list[Match]] = []

    def wants_negotiation(self) -> bool:
        return False

    def cycle_started(self) -> None:
        pass

    def reserved_slots(self) -> set[str]:
        return set()

    def negotiable_jobs(
        self, slots: Sequence[ClassAd], significance: Significance, now: float
    ) -> list[SubmitterJobs]:
        if self.broken == "jobs":
            raise PeerUnreachable(f"schedd of {self.owner}: timed out")
        job = ClassAd({"ClusterId": 1, "ProcId": 0, "Owner": self.owner, "JobPrio": 0})
        job["Requirements"] = True
        job["QDate"] = 1
        job["GlobalJobId"] = f"{self.schedd}#1.0#1"
        return [SubmitterJobs(f"{self.owner}@example.org", (job,))]

    def take_matches(self, matches: Sequence[Match], now: float) -> None:
        if self.broken == "matches":
            raise PeerUnreachable(f"schedd of {self.owner}: sending its matches: closed")
        self.taken.append(list(matches))


def _slots(count: int) -> list[ClassAd]:
    return [
        ClassAd(
            {
                "MyType": "Machine",
                "Name": f"slot{n}@h",
                "Machine": "h",
                "MyAddress": "<127.0.0.9:9618>",
                "Cpus": 1,
                "Memory": 100,
                "State": "Unclaimed",
                "Activity": "Idle",
                "Requirements": True,
            }
        )
        for n in range(1, count + 1)
    ]


def _service(tmp_path: Path, sources: dict[str, Source]) -> NegotiatorService:
    settings = config()

    def connect(address: str) -> Source:
        if address not in sources:
            raise PeerUnreachable(f"no schedd at {address}")
        return sources[address]

    schedds: Locator[Source] = Locator("schedd", connect=connect)
    return NegotiatorService(
        Accountant.empty(settings),
        config=lambda: settings,
        collector=Slots(_slots(4)),  # type: ignore[arg-type]
        schedds=schedds,  # type: ignore[arg-type]
        accountant_file=str(tmp_path / "accountant"),
        ad_name="cm",
        log=logging.getLogger("test.negotiator"),
        clock=lambda: NOW,
        schedd_addresses=lambda: sorted(sources),
    )


@pytest.mark.parametrize("broken", ["jobs", "matches"])
def test_a_failing_schedd_is_named_and_the_others_get_their_matches(
    tmp_path: Path, broken: str, caplog: pytest.LogCaptureFixture
) -> None:
    """One remote schedd fails (asking for its jobs, or taking its matches): the cycle goes
    on, the good schedd's job is matched and handed over, the log and the negotiator's ad
    (LastNegotiationCycleScheddsFailed0) name the failed one's address."""
    good, bad = Source("alice"), Source("bob", broken)
    service = _service(tmp_path, {"<10.0.0.1:9618>": good, "<10.0.0.2:9618>": bad})
    service.negotiate(NOW)
    assert [[m.job_id for m in taken] for taken in good.taken] == [["1.0"]]
    assert service.last_cycle_stats.evaluate("LastNegotiationCycleScheddsFailed0") == (
        "<10.0.0.2:9618>"
    )
    assert "negotiation with the schedd at <10.0.0.2:9618> failed" in caplog.text
    assert set(service.failed_schedds) == {"<10.0.0.2:9618>"}


def test_an_address_nobody_can_reach_is_reported_too(tmp_path: Path) -> None:
    """An address the Locator cannot make a link for fails that schedd only."""
    good = Source("alice")
    service = _service(tmp_path, {"<10.0.0.1:9618>": good})
    service.schedd_addresses = lambda: ["<10.0.0.1:9618>", "<unix:/nowhere>"]
    service.negotiate(NOW)
    assert len(good.taken) == 1
    assert service.failed_schedds.keys() == {"<unix:/nowhere>"}


def test_a_schedd_that_offered_jobs_but_got_no_match_is_told_the_cycle_ended(
    tmp_path: Path,
) -> None:
    """Every schedd that offered jobs gets take_matches, with no matches when the cycle
    made none for it (a remote schedd ends its negotiation then)."""
    first, second = Source("alice"), Source("bob")
    settings = config()
    schedds: Locator[Source] = Locator("schedd")
    schedds.register("a", first)
    schedds.register("b", second)
    service = NegotiatorService(
        Accountant.empty(settings),
        config=lambda: settings,
        collector=Slots(_slots(1)),  # type: ignore[arg-type]
        schedds=schedds,  # type: ignore[arg-type]
        accountant_file=str(tmp_path / "accountant"),
        ad_name="cm",
        log=logging.getLogger("test.negotiator"),
        clock=lambda: NOW,
    )
    service.negotiate(NOW)
    assert sorted(len(taken[0]) for taken in (first.taken, second.taken)) == [0, 1]


def test_a_user_at_two_schedds_has_each_match_sent_where_its_job_is(tmp_path: Path) -> None:
    """The same submitter's job 1.0 at two schedds: each schedd gets the match of its own
    job (told apart by GlobalJobId), not both the first one's."""
    first, second = Source("alice", schedd="ap1"), Source("alice", schedd="ap2")
    service = _service(tmp_path, {"<10.0.0.1:9618>": first, "<10.0.0.2:9618>": second})
    service.negotiate(NOW)
    got = [
        [m.job.evaluate("GlobalJobId") for m in taken[0]] for taken in (first.taken, second.taken)
    ]
    assert got == [["ap1#1.0#1"], ["ap2#1.0#1"]]


def test_reschedule_from_a_remote_schedd_asks_for_a_cycle_soon(tmp_path: Path) -> None:
    """RESCHEDULE at the negotiator (DAEMON level, kept apart from the schedd's WRITE one)
    makes a cycle due once NEGOTIATOR_MIN_INTERVAL has passed, not NEGOTIATOR_INTERVAL; the
    cycle clears it."""
    assert commands.NEGOTIATOR_RESCHEDULE.level == commands.DAEMON
    assert commands.BY_NUMBER[421].level == commands.WRITE
    service = _service(tmp_path, {"<10.0.0.1:9618>": Source("alice")})
    service.negotiate(NOW)
    assert not service._wanted()
    [handler] = reschedule_handlers(service).values()
    drive(handler, commands.NEGOTIATOR_RESCHEDULE.number, [], user="condor")
    assert service._wanted()
    service.negotiate(NOW)
    assert not service._wanted()
