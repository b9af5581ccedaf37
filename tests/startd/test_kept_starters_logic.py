"""The startd's bookkeeping of kept starters: READY, NEXT, RETIRE, without processes."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import attrs
import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.startd import kept_starters
from epcore.startd.starters import StarterHandle, StarterPool
from epcore.starter import protocol
from epcore.starter.starter import StarterOrder
from epcore.state.restore import SavedClaim

CLAIM = "<10.0.0.1:9618>#1#1#1"
ORDER = StarterOrder(
    slot_name="slot1_1",
    slot_id=1,
    claim_id=CLAIM,
    job=parse_ad("[ ClusterId = 1; ProcId = 0 ]"),
    machine_text="",
    execute_dir="/var/lib/condor/execute",
    startd_socket="/var/lock/condor/startd_starters",
    startd_address="<10.0.0.1:9618>",
    cpus=1.0,
    memory_mb=512,
    startd_memory_mb=4096,
    starter_log="/var/log/condor/StarterLog.slot1_1",
    keeps=True,
)
SAVED = SavedClaim(
    slot_id=1,
    partitionable=True,
    claim_id=CLAIM,
    job=ORDER.job,
    rank=0.0,
    made_at=0.0,
    lease=0,
    client_machine="",
    job_start=0.0,
    run_time=0.0,
    suspend_time=0.0,
)


class FakeChannel:
    """What the startd sent a starter."""

    def __init__(self) -> None:
        self.sent: list[ClassAd] = []
        self.closed = False

    def send(self, ad: ClassAd) -> None:
        self.sent.append(ad)

    def commands(self) -> list[object]:
        return [ad.evaluate("Command") for ad in self.sent]


class FakeClaimsFile:
    def __init__(self, fail: bool = False) -> None:
        self.entries: list[object] = []
        self.fail = fail

    def add(self, entry: object) -> None:
        if self.fail:
            raise OSError("disk full")
        self.entries.append(entry)


def _startd(claim_alive: bool = True, *, fail: bool = False) -> SimpleNamespace:
    """As much of a startd as kept_starters uses: one slot whose claim is CLAIM."""
    record = SimpleNamespace(claim=SimpleNamespace(claim_id=CLAIM) if claim_alive else None)
    state = SimpleNamespace(slot=lambda name: record, shutting_down=False)
    return SimpleNamespace(
        starters=StarterPool("/nowhere", logging.getLogger("test")),
        state=state,
        claims_file=FakeClaimsFile(fail),
        saved={},
        log=logging.getLogger("test"),
        backfill=SimpleNamespace(owns=lambda handle: False),
        isolation=(),
    )


def _kept(startd: SimpleNamespace, stage: str = kept_starters.ACKNOWLEDGED) -> StarterHandle:
    handle = StarterHandle(CLAIM, "slot1_1", 4242, parent=1, stage=stage, keeps=True, order=ORDER)
    handle.channel = FakeChannel()
    startd.starters.handles[CLAIM] = handle
    return handle


def _commands(handle: StarterHandle) -> list[object]:
    """The commands the startd sent the starter of ``handle``."""
    assert isinstance(handle.channel, FakeChannel)
    return handle.channel.commands()


def _ready(key: str | None = "condor_x_slot1_1_4242r1") -> ClassAd:
    ad = ClassAd()
    if key is not None:
        ad[protocol.NEXT_TRACKING_KEY] = key
    return ad


def test_a_job_activated_before_ready_waits_for_it_and_is_recorded_first() -> None:
    """An activation that comes before READY is kept in the handle; READY hands it back to be
    given, which records it in the claims file (with READY's groups) before NEXT goes out."""
    startd = _startd()
    handle = _kept(startd)
    following = attrs.evolve(ORDER, job=parse_ad("[ ClusterId = 1; ProcId = 1 ]"))
    assert kept_starters.takes(startd, handle, following)
    assert kept_starters.give_next(startd, handle, following, SAVED)
    assert handle.pending is following and _commands(handle) == []
    pending = kept_starters.ready(startd, handle, _ready())
    assert pending is following and handle.stage == kept_starters.READY
    assert kept_starters.give_next(startd, handle, following, SAVED)
    (entry,) = startd.claims_file.entries
    assert entry.tracking_key == "condor_x_slot1_1_4242r1" and entry.pid == 4242
    assert _commands(handle) == [protocol.NEXT]
    assert handle.stage == "setup" and handle.pending is None and handle.next_key is None
    assert startd.saved[CLAIM] is entry


def test_a_next_job_that_cannot_be_recorded_is_not_sent() -> None:
    """When the claims file cannot take the next job, give_next says so and sends nothing."""
    startd = _startd(fail=True)
    handle = _kept(startd, kept_starters.READY)
    assert not kept_starters.give_next(startd, handle, ORDER, SAVED)
    assert _commands(handle) == []


def test_ready_for_a_claim_that_is_over_is_answered_retire() -> None:
    """READY from a starter whose claim has ended meanwhile gets RETIRE."""
    startd = _startd(claim_alive=False)
    handle = _kept(startd)
    assert kept_starters.ready(startd, handle, _ready()) is None
    assert handle.stage == kept_starters.RETIRED
    assert _commands(handle) == [protocol.RETIRE]


def test_a_starter_retired_before_its_ready_hears_retire_only_after_it() -> None:
    """Retiring a starter that has not said READY sends nothing yet (it would read it while
    waiting for its ACK); its READY is then answered RETIRE."""
    startd = _startd()
    handle = _kept(startd)
    kept_starters.retire(startd, handle, "a container job")
    assert _commands(handle) == []
    assert not kept_starters.takes(startd, handle, ORDER)
    assert kept_starters.ready(startd, handle, _ready()) is None
    assert _commands(handle) == [protocol.RETIRE]


def test_idle_starters_of_ended_claims_are_retired_once() -> None:
    """retire_idle retires a READY starter whose claim is gone, once; a live claim's stays."""
    startd = _startd()
    handle = _kept(startd, kept_starters.READY)
    kept_starters.retire_idle(startd)
    assert handle.stage == kept_starters.READY
    startd.state.slot("slot1_1").claim = None
    kept_starters.retire_idle(startd)
    kept_starters.retire_idle(startd)
    assert _commands(handle) == [protocol.RETIRE]
    assert CLAIM not in kept_starters.keeping(startd)


@pytest.mark.parametrize(
    ("change", "takes"),
    [
        ({}, True),
        ({"starter_log": "/elsewhere/StarterLog"}, False),
        ({"execute_dir": "/scratch"}, False),
    ],
)
def test_a_kept_starter_takes_only_jobs_for_its_log_and_execute(
    change: dict[str, str], takes: bool
) -> None:
    """A next job on another StarterLog or EXECUTE needs a starter of its own."""
    startd = _startd()
    handle = _kept(startd, kept_starters.READY)
    assert kept_starters.takes(startd, handle, attrs.evolve(ORDER, **change)) is takes


@pytest.mark.parametrize("stage", ["setup", "running", kept_starters.RETIRED])
def test_a_starter_that_runs_a_job_or_was_retired_takes_none(stage: str) -> None:
    """Only a kept starter between jobs, not retired, can take the claim's next job."""
    startd = _startd()
    assert not kept_starters.takes(startd, _kept(startd, stage), ORDER)


def test_a_reconfiguration_retires_kept_starters_and_they_take_no_more_jobs() -> None:
    """After a reconfiguration a kept starter (forked with the old configuration) takes no
    next job: one waiting is retired at once, one running a job when it says READY."""
    startd = _startd()
    waiting = _kept(startd, kept_starters.READY)
    kept_starters.reconfigured(startd)
    assert _commands(waiting) == [protocol.RETIRE]
    assert not kept_starters.takes(startd, waiting, ORDER)
    running = _kept(startd, "running")
    kept_starters.reconfigured(startd)
    assert _commands(running) == []
    running.stage = kept_starters.ACKNOWLEDGED
    assert kept_starters.ready(startd, running, _ready()) is None
    assert _commands(running) == [protocol.RETIRE]


def test_an_order_that_does_not_keep_its_starter_is_not_given_to_one() -> None:
    """A next job whose order says its starter must not keep (STARTER_KEEP_FOR_CLAIM turned
    off since) goes to a starter of its own."""
    startd = _startd()
    handle = _kept(startd, kept_starters.READY)
    assert not kept_starters.takes(startd, handle, attrs.evolve(ORDER, keeps=False))
