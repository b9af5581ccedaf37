"""Cycles in a thread (a central manager whose schedds are all remote): the loop's tick
starts a cycle and returns while the cycle talks to a slow schedd; a later tick takes the
outcome back; the collector is read in the loop only; condor_userprio's changes made
meanwhile survive the cycle; failures and shutdowns are handled as a cycle in the loop's."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from epcore.classad import ClassAd
from epcore.interfaces import Locator, Match, Significance, SubmitterJobs
from epcore.links.negotiate import SubmitterDirectory, remote_schedd_connector
from epcore.negotiator import Accountant
from epcore.negotiator.service import NegotiatorService
from tests.negotiator.negotiator_helpers import config

NOW = 1_800_000_000.0
WAIT = 10.0


class Slots:
    """A collector link holding fixed slot ads; records the threads that read it."""

    def __init__(self, count: int) -> None:
        self.slots = [
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
        self.readers: set[int] = set()
        self.updates: list[ClassAd] = []

    def query(self, my_type, constraint=None, projection=None, *, now):  # type: ignore[no-untyped-def]
        self.readers.add(threading.get_ident())
        return list(self.slots) if my_type == "Machine" else []

    def update(self, ads, now):  # type: ignore[no-untyped-def]
        self.readers.add(threading.get_ident())
        self.updates.extend(ads)


class SlowSchedd:
    """A remote schedd with one idle job of alice, whose offer waits for :attr:`go`."""

    def __init__(self, fail: bool = False) -> None:
        self.go = threading.Event()
        self.asked = threading.Event()
        self.fail = fail
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
        self.asked.set()
        assert self.go.wait(WAIT)
        if self.fail:
            raise RuntimeError("the schedd's answer made no sense")
        job = ClassAd({"ClusterId": 1, "ProcId": 0, "Owner": "alice", "JobPrio": 0})
        job["Requirements"] = True
        job["QDate"] = 1
        return [SubmitterJobs("alice@example.org", (job,))]

    def take_matches(self, matches: Sequence[Match], now: float) -> None:
        self.taken.append(list(matches))


def _service(tmp_path: Path, schedd: SlowSchedd, collector: Slots) -> NegotiatorService:
    settings = config("NEGOTIATOR_INTERVAL = 300\nNEGOTIATOR_MIN_INTERVAL = 0")
    schedds: Locator[SlowSchedd] = Locator("schedd", connect=lambda address: schedd)
    service = NegotiatorService(
        Accountant.empty(settings),
        config=lambda: settings,
        collector=collector,  # type: ignore[arg-type]
        schedds=schedds,  # type: ignore[arg-type]
        accountant_file=str(tmp_path / "accountant"),
        ad_name="cm",
        log=logging.getLogger("test.negotiator"),
        clock=lambda: NOW,
        schedd_addresses=lambda: ["<10.0.0.1:9618>"],
    )
    service.background = True
    service.open(None)  # type: ignore[arg-type]
    service.next_cycle = 0.0  # due now
    return service


def _until_taken(service: NegotiatorService) -> None:
    """Turn the service's ticks until its cycle's outcome is taken back."""
    assert service.worker.wait(WAIT)
    service.tick()
    assert not service.worker.running


def test_a_tick_starts_the_cycle_in_a_thread_and_a_later_one_takes_its_outcome(
    tmp_path: Path,
) -> None:
    """While the schedd has not answered, tick returns with the cycle running (the loop is
    free) and asks to be woken soon; the collector is read only in the loop's thread; once
    the schedd answers, the next tick hands back the match and advertises the cycle's
    figures."""
    schedd, collector = SlowSchedd(), Slots(2)
    service = _service(tmp_path, schedd, collector)
    service.tick()
    assert schedd.asked.wait(WAIT)
    assert service.worker.running and service.cycles == 0
    assert service.timeout() <= 0.05
    schedd.go.set()
    _until_taken(service)
    assert service.cycles == 1
    assert [[m.job_id for m in taken] for taken in schedd.taken] == [["1.0"]]
    assert service.last_cycle_stats.evaluate("LastNegotiationCycleMatches0") == 1
    assert collector.readers == {threading.get_ident()}
    # The negotiator's ad follows the cycle, with its figures.
    assert collector.updates[-1].evaluate("MyType") == "Negotiator"
    assert collector.updates[-1].evaluate("LastNegotiationCycleMatches0") == 1


def test_a_priority_factor_set_during_the_cycle_survives_it(tmp_path: Path) -> None:
    """A SetFactor while the cycle runs in its thread applies at once (what userprio shows)
    and again to the accountant the cycle gives back, which began before it."""
    schedd = SlowSchedd()
    service = _service(tmp_path, schedd, Slots(2))
    service.tick()
    assert schedd.asked.wait(WAIT)
    service.change_accountant(lambda accountant: accountant.set_factor("bob@x", 50.0, NOW))
    assert service.accountant.records["bob@x"].factor == 50.0
    schedd.go.set()
    _until_taken(service)
    assert service.accountant.records["bob@x"].factor == 50.0
    assert "alice@example.org" in service.accountant.records
    assert service.changes == []


def test_a_cycle_that_fails_in_its_thread_is_logged_and_the_next_waits_the_interval(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An exception in the cycle's thread reaches the loop's tick, which logs it and sets
    the next cycle NEGOTIATOR_INTERVAL away; the service keeps going."""
    schedd = SlowSchedd(fail=True)
    service = _service(tmp_path, schedd, Slots(1))
    service.tick()
    schedd.go.set()
    _until_taken(service)
    assert "the negotiation cycle failed" in caplog.text
    assert service.cycles == 0
    assert service.next_cycle - service.monotonic() > 250


def test_a_peaceful_shutdown_waits_for_the_running_cycle_and_a_fast_one_does_not(
    tmp_path: Path,
) -> None:
    """Peacefully, the negotiator is not finished while its cycle runs (the matches still go
    out), and is once it has been taken back; a fast shutdown is finished at once."""
    schedd = SlowSchedd()
    service = _service(tmp_path, schedd, Slots(1))
    service.tick()
    assert schedd.asked.wait(WAIT)
    service.shutdown(fast=False)
    assert not service.finished
    schedd.go.set()
    _until_taken(service)
    assert service.finished and len(schedd.taken) == 1
    other = SlowSchedd()
    fast = _service(tmp_path, other, Slots(1))
    fast.tick()
    assert other.asked.wait(WAIT)
    fast.shutdown(fast=True)
    assert fast.finished
    other.go.set()


def test_the_links_read_the_submitters_the_loop_read_as_the_cycle_began() -> None:
    """With a SubmitterDirectory, addresses() reads the collector (in the loop) and the
    link's submitters are that reading's, the collector not read again (the link runs in
    the cycle's thread)."""
    ads = [
        ClassAd({"MyType": "Submitter", "Name": "alice@x", "ScheddIpAddr": "<10.0.0.1:1>"}),
        ClassAd({"MyType": "Submitter", "Name": "bob@x", "ScheddIpAddr": "<10.0.0.2:1>"}),
    ]
    reads: list[str | None] = []

    class Collector:
        def query(self, my_type, constraint=None, projection=None, *, now, absent=False):  # type: ignore[no-untyped-def]
            reads.append(my_type)
            return list(ads)

    directory = SubmitterDirectory(Collector(), lambda: NOW)  # type: ignore[arg-type]
    assert directory.addresses() == ["<10.0.0.1:1>", "<10.0.0.2:1>"]
    connect = remote_schedd_connector(
        Collector(),  # type: ignore[arg-type]
        lambda: config(),
        name="cm",
        log=logging.getLogger("test"),
        clock=lambda: NOW,
        directory=directory,
    )
    link = connect("<10.0.0.2:1>")
    ads.append(ClassAd({"MyType": "Submitter", "Name": "carol@x", "ScheddIpAddr": "<10.0.0.2:1>"}))
    assert [ad.evaluate("Name") for ad in link.submitters()] == ["bob@x"]
    assert reads == ["Submitter"]
