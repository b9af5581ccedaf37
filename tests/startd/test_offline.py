"""Universes the machine failed: a starter's report marks them offline on every slot ad
(HasVM = false, VMOfflineReason, VMOfflineTime, OfflineUniverses), until a reconfiguration."""

from __future__ import annotations

import threading
import time

import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.startd import starter_events
from epcore.startd.loop import recheck_offline
from epcore.startd.offline import OfflineMark, OfflineUniverses, reported
from epcore.startd.startd import Startd
from epcore.startd.starters import StarterHandle
from epcore.starter import protocol
from epcore.types import MachineAttribute


def _finished(**extra: object) -> ClassAd:
    message = ClassAd()
    message["Command"] = protocol.FINISHED
    message["JobOutcome"] = "requeued"
    message["ExitReason"] = "An internal error prevented HTCondor from starting the VM."
    for name, value in extra.items():
        message[name] = value
    return message


def _vm_offline() -> ClassAd:
    return _finished(
        **{
            protocol.OFFLINE_UNIVERSE: "VM",
            protocol.OFFLINE_UNIVERSE_NUMBER: 13,
            protocol.OFFLINE_REASON: "libvirt cannot start the domain",
        }
    )


def test_a_report_names_the_universe_its_number_and_reason() -> None:
    """reported reads the three attributes; a message without them, or with a name that is
    no attribute name, reports nothing."""
    assert reported(_vm_offline(), 50.0) == OfflineMark(
        "VM", 13, "libvirt cannot start the domain", 50.0
    )
    assert reported(_finished(), 50.0) is None
    bad = _finished(**{protocol.OFFLINE_UNIVERSE: "V M", protocol.OFFLINE_UNIVERSE_NUMBER: 13})
    assert reported(bad, 50.0) is None


def test_offline_universes_publish_htcondors_attributes_until_cleared() -> None:
    """A marked universe gives Has<U> = false, <U>OfflineReason, <U>OfflineTime and the
    OfflineUniverses list of names and numbers; clear takes them all away."""
    marks = OfflineUniverses()
    assert marks.attributes() == []
    marks.mark(OfflineMark("VM", 13, "no libvirtd", 1700000000.5))
    published = {a.name: (a.value, a.expression) for a in marks.attributes()}
    assert published == {
        "HasVM": (False, False),
        "VMOfflineReason": ("no libvirtd", False),
        "VMOfflineTime": (1700000000, False),
        "OfflineUniverses": ('{"VM", 13}', True),
    }
    marks.clear()
    assert marks.attributes() == []


def test_a_starter_s_report_turns_the_universe_off_on_every_slot(startd: Startd) -> None:
    """A starter's FINISHED with a VM offline report puts HasVM = false, VMOfflineReason and
    OfflineUniverses in every slot ad, keeps them out of the job's result, and a
    reconfiguration brings the universe back."""
    now = startd.clock()
    handle = StarterHandle("claim-1", "slot1", 999999, None, stage="running")
    starter_events.finished(startd, handle, _vm_offline(), now)
    for ad in startd.ads(startd.state, now).values():
        assert ad.evaluate("HasVM") is False
        assert ad.evaluate("VMOfflineReason") == "libvirt cannot start the domain"
        assert ad.evaluate("VMOfflineTime") == int(now)
        assert ad.evaluate("OfflineUniverses") == ["VM", 13]
    (result,) = startd.results
    assert result.lookup(protocol.OFFLINE_UNIVERSE) is None
    assert result.evaluate("JobOutcome") == "requeued"
    startd.reconfig()
    ads = startd.ads(startd.state, startd.clock())
    assert all(ad.lookup("VMOfflineReason") is None for ad in ads.values())


def _answered(offline: OfflineUniverses) -> None:
    running = offline.running
    assert running is not None and running.done.wait(5)


def test_an_offline_universe_is_tested_again_each_recheck_interval() -> None:
    """The re-test runs only once VM_RECHECK_INTERVAL has passed since the mark or the last
    test, in a worker whose answer the next call takes; a failing test keeps the mark for
    another interval, a passing one clears it."""
    config = Config.from_text("VM_RECHECK_INTERVAL = 60\n")
    offline = OfflineUniverses()
    offline.mark(OfflineMark("VM", 13, "libvirt failed", 100.0))
    answers: list[list[MachineAttribute]] = []

    def test() -> list[MachineAttribute]:
        return answers.pop(0)

    assert offline.recheck(config, 159.0, test) == []  # not due: the test is not run
    assert offline.running is None
    answers.append([MachineAttribute("HasVM", False)])
    assert offline.recheck(config, 160.0, test) == []
    _answered(offline)
    assert not answers and offline.collect() == [] and "VM" in offline.marks
    assert offline.recheck(config, 219.0, test) == [] and offline.running is None
    answers.append([MachineAttribute("HasVM", True)])
    assert offline.recheck(config, 220.0, test) == []
    _answered(offline)
    assert offline.recheck(config, 221.0, test) == ["VM"]
    assert offline.attributes() == [] and offline.due(config, 1e9) == []


def test_a_universe_marked_again_during_its_test_stays_off() -> None:
    """A pass that began before a newer mark does not clear it, and a reconfiguration
    forgets a test under way."""
    config = Config.from_text("VM_RECHECK_INTERVAL = 60\n")
    offline = OfflineUniverses()
    offline.mark(OfflineMark("VM", 13, "libvirt failed", 100.0))
    go = threading.Event()

    def test() -> list[MachineAttribute]:
        go.wait(5)
        return [MachineAttribute("HasVM", True)]

    offline.recheck(config, 160.0, test)
    offline.mark(OfflineMark("VM", 13, "failed again", 170.0))
    go.set()
    _answered(offline)
    assert offline.collect() == [] and offline.marks["VM"].reason == "failed again"
    offline.recheck(config, 230.0, test)
    offline.clear()
    assert offline.running is None and offline.collect() == []


def test_a_hung_test_does_not_hold_up_the_startd(
    startd: Startd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plugins' answer that never comes (a libvirtd that hangs) leaves the startd's
    re-test call returning at once, the mark in place, and no second test started while
    it waits; once the answer comes, the next call advertises the universe again."""
    now = startd.clock()
    handle = StarterHandle("claim-1", "slot1", 999999, None, stage="running")
    starter_events.finished(startd, handle, _vm_offline(), now - 601)
    release = threading.Event()
    calls: list[float] = []

    def hangs(config: Config, inventory: object) -> list[MachineAttribute]:
        calls.append(time.monotonic())
        release.wait(30)
        return [MachineAttribute("HasVM", True)]

    monkeypatch.setattr(startd.plugins, "machine_attributes", hangs)
    started = time.monotonic()
    for step in range(3):
        recheck_offline(startd, now + 700 * step)
    assert time.monotonic() - started < 1.0
    deadline = time.monotonic() + 5
    while not calls and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(calls) == 1 and "VM" in startd.offline.marks
    release.set()
    _answered(startd.offline)
    recheck_offline(startd, now + 2100)
    ads = startd.ads(startd.state, startd.clock()).values()
    assert all(ad.lookup("VMOfflineReason") is None for ad in ads)


@pytest.mark.parametrize("works", [True, False])
def test_the_startd_advertises_a_universe_again_when_its_recheck_passes(
    startd: Startd, monkeypatch: pytest.MonkeyPatch, works: bool
) -> None:
    """Once the default 600 s have passed, the startd asks the plugins again: HasVM true
    clears VMOfflineReason and OfflineUniverses from every slot ad, HasVM false keeps them."""
    now = startd.clock()
    handle = StarterHandle("claim-1", "slot1", 999999, None, stage="running")
    starter_events.finished(startd, handle, _vm_offline(), now - 601)
    monkeypatch.setattr(
        startd.plugins,
        "machine_attributes",
        lambda config, inventory: [MachineAttribute("HasVM", works)],
    )
    recheck_offline(startd, now)
    _answered(startd.offline)
    recheck_offline(startd, now + 1)
    ads = startd.ads(startd.state, startd.clock()).values()
    assert all((ad.lookup("VMOfflineReason") is None) is works for ad in ads)
    assert all((ad.lookup("OfflineUniverses") is None) is works for ad in ads)
