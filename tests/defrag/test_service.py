"""The defrag daemon in the loop: polls on its interval, sends drains and cancels through the
startds' links, keeps LastPoll across restarts, advertises and withdraws the Defrag ad."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from defrag_helpers import NAME, REASON, pslot

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.defrag.service import DefragService
from epcore.interfaces import CollectorLink, Locator, StartdLink
from epcore.runtime.control import ControlError
from epcore.runtime.loop import LoopHandle

NOW = 1_700_000_000


class FakeCollector:
    """The slot ads to answer with; the daemon ads stored and withdrawn."""

    def __init__(self, slots: list[ClassAd]) -> None:
        self.slots = slots
        self.ads: dict[str, ClassAd] = {}
        self.withdrawn: list[tuple[str, list[str]]] = []

    def query(self, my_type: str | None, *args: object, now: float, **kw: object) -> list[ClassAd]:
        return [ad.copy() for ad in self.slots] if my_type == "Machine" else []

    def update(self, ads: Sequence[ClassAd], now: float) -> None:
        for ad in ads:
            self.ads[str(ad.evaluate("Name"))] = ad

    def invalidate_ads(self, my_type: str, names: Sequence[str], now: float) -> None:
        self.withdrawn.append((my_type, list(names)))


class FakeStartd:
    """A startd link recording drains and cancels; refuses when told to."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.calls: list[tuple[object, ...]] = []

    def drain(
        self,
        how: str,
        check: str | None = None,
        start: str | None = None,
        *,
        reason: str | None = None,
        resume: bool = False,
    ) -> None:
        if self.refuse:
            raise ControlError("drain refused: check is not TRUE for slot1")
        self.calls.append(("drain", how, check, start, reason, resume))

    def cancel_drain(self) -> None:
        self.calls.append(("cancel",))


class Clock:
    def __init__(self) -> None:
        self.now = float(NOW)

    def __call__(self) -> float:
        return self.now


def _service(
    tmp_path: Path, collector: FakeCollector, startds: dict[str, FakeStartd], extra: str = ""
) -> tuple[DefragService, Clock]:
    text = (
        f"DEFRAG_NAME = {NAME}\nDEFRAG_INTERVAL = 60\nDEFRAG_DRAINING_MACHINES_PER_HOUR = 120\n"
        f"DEFRAG_STATE_FILE = {tmp_path}/defrag_state\n{extra}"
    )
    config = Config.from_text(text)
    locator: Locator[StartdLink] = Locator("startd")
    for address, link in startds.items():
        locator.register(address, cast(StartdLink, link))
    clock = Clock()
    service = DefragService(
        config=lambda: config,
        collector=cast(CollectorLink, collector),
        startds=locator,
        log=logging.getLogger("test.defrag"),
        clock=clock,
        monotonic=clock,
    )
    return service, clock


def test_poll_drains_through_the_startds_link_and_advertises(tmp_path: Path) -> None:
    """The first poll drains the fragmented machine gracefully with my DrainReason and
    resume-on-completion, skips the whole one, and the Defrag ad records the drain."""
    collector = FakeCollector([pslot("frag", 1, 8), pslot("whole", 8, 8)])
    frag, whole = FakeStartd(), FakeStartd()
    service, _ = _service(tmp_path, collector, {"<frag:9618>": frag, "<whole:9618>": whole})
    service.open(cast(LoopHandle, None))
    assert service.timeout() <= 0
    service.tick()
    assert [c[0] for c in frag.calls] == ["drain"] and whole.calls == []
    _, how, check, start, reason, resume = frag.calls[0]
    assert (how, start, reason, resume) == ("graceful", "FALSE", REASON, True)
    assert str(check).startswith("ExpectedMachineGracefulDrainingCompletion <= 1200")
    ad = collector.ads[NAME]
    assert ad.evaluate("MyType") == "Defrag" and ad.evaluate("DrainSuccesses") == 1
    assert ad.evaluate("WholeMachines") == 1
    assert (tmp_path / "defrag_state").read_text() == f"LastPoll = {NOW}\n"


def test_refused_drain_counts_a_failure(tmp_path: Path) -> None:
    """A startd that refuses the drain (or is not reachable) counts as a drain failure."""
    collector = FakeCollector([pslot("frag", 1, 8), pslot("gone", 1, 8)])
    service, _ = _service(tmp_path, collector, {"<frag:9618>": FakeStartd(refuse=True)})
    service.open(cast(LoopHandle, None))
    service.tick()
    ad = collector.ads[NAME]
    assert (ad.evaluate("DrainSuccesses"), ad.evaluate("DrainFailures")) == (0, 2)


def test_whole_machine_drain_is_cancelled(tmp_path: Path) -> None:
    """A machine I drain that became whole has its drain cancelled."""
    collector = FakeCollector([pslot("m", 8, 8, draining=True, reason=REASON)])
    startd = FakeStartd()
    service, _ = _service(tmp_path, collector, {"<m:9618>": startd})
    service.open(cast(LoopHandle, None))
    service.tick()
    assert startd.calls == [("cancel",)]
    cancels = collector.ads[NAME].evaluate("RecentCancelsList")
    assert isinstance(cancels, list) and cancels[0].evaluate("who") == "slot1@m"


def test_restart_waits_out_the_interval_since_the_last_poll(tmp_path: Path) -> None:
    """A daemon started 20 s after the last poll (LastPoll in the state file) polls 40 s
    later, not at once."""
    (tmp_path / "defrag_state").write_text(f"LastPoll = {NOW - 20}\n")
    collector = FakeCollector([pslot("frag", 1, 8)])
    startd = FakeStartd()
    service, clock = _service(tmp_path, collector, {"<frag:9618>": startd})
    service.open(cast(LoopHandle, None))
    service.tick()
    assert startd.calls == []
    clock.now += 40
    service.tick()
    assert [c[0] for c in startd.calls] == ["drain"]


def test_shutdown_withdraws_the_defrag_ad(tmp_path: Path) -> None:
    """At shutdown the Defrag ad is invalidated by its Name, and no poll runs after."""
    collector = FakeCollector([pslot("frag", 1, 8)])
    startd = FakeStartd()
    service, _ = _service(tmp_path, collector, {"<frag:9618>": startd})
    service.open(cast(LoopHandle, None))
    service.shutdown(fast=False)
    service.tick()
    assert collector.withdrawn == [("Defrag", [NAME])]
    assert startd.calls == [] and service.finished


def test_bad_reconfig_keeps_the_previous_settings(tmp_path: Path) -> None:
    """A reconfig with an unknown schedule is logged and the daemon keeps its settings."""
    collector = FakeCollector([])
    service, _ = _service(tmp_path, collector, {})
    bad = Config.from_text("DEFRAG_DRAINING_SCHEDULE = slow")
    service.current_config = lambda: bad
    service.reconfig()
    assert service.settings.schedule == "graceful" and service.settings.interval == 60
