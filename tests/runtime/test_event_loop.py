"""The runtime's event loop: services take their turns in order, signals reach them all,
a failing turn is logged once, and the loop ends when every service has finished."""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Sequence

import pytest

from epcore.errors import EpError
from epcore.runtime.loop import LONGEST_WAIT, EventLoop, LoopHandle, ReadyEvent


class RecordingService:
    """A service that writes each call it gets into a shared journal."""

    def __init__(self, name: str, journal: list[str], *, ticks_to_finish: int = 1) -> None:
        self.name = name
        self.journal = journal
        self.ticks_to_finish = ticks_to_finish
        self.ticks = 0
        self.stopping = False
        self.fail_ticks = 0

    def open(self, loop: LoopHandle) -> None:
        assert loop.selector is not None
        self.journal.append(f"{self.name}.open")

    def ready(self, events: Sequence[ReadyEvent]) -> None:
        self.journal.append(f"{self.name}.ready")

    def timeout(self) -> float:
        return 0.0

    def tick(self) -> None:
        self.ticks += 1
        self.journal.append(f"{self.name}.tick")
        if self.ticks <= self.fail_ticks:
            raise RuntimeError("a fault on one job's data")

    def flush(self) -> None:
        self.journal.append(f"{self.name}.flush")

    def reconfig(self) -> None:
        self.journal.append(f"{self.name}.reconfig")

    def shutdown(self, fast: bool) -> None:
        self.stopping = True
        self.journal.append(f"{self.name}.shutdown({'fast' if fast else 'peaceful'})")

    @property
    def finished(self) -> bool:
        return self.stopping and self.ticks >= self.ticks_to_finish

    def close(self) -> None:
        self.journal.append(f"{self.name}.close")

    def close_in_child(self) -> None:
        self.journal.append(f"{self.name}.close_in_child")


def _loop(*services: RecordingService, reload: list[str] | None = None) -> EventLoop:
    log = logging.getLogger("test.event_loop")
    reloader = None if reload is None else (lambda: reload.append("reload"))
    return EventLoop(list(services), log=log, name="test", reload=reloader)


def test_each_turn_calls_the_services_in_order_phase_by_phase() -> None:
    """A turn hands ready sockets to every service, then ticks every one, then flushes every
    one, each phase in the services' order."""
    journal: list[str] = []
    first, second = RecordingService("a", journal), RecordingService("b", journal)
    loop = _loop(first, second)
    loop.open()
    try:
        journal.clear()
        loop.turn()
    finally:
        loop.close()
    assert journal[:6] == ["a.ready", "b.ready", "a.tick", "b.tick", "a.flush", "b.flush"]
    assert journal[6:] == ["a.close", "b.close"]


def test_signals_reach_every_service_at_the_next_turn() -> None:
    """SIGHUP reloads the shared configuration once, then reconfigures each service; a first
    SIGTERM shuts them down peacefully, a second one fast."""
    journal: list[str] = []
    reloads: list[str] = []
    loop = _loop(RecordingService("a", journal), RecordingService("b", journal), reload=reloads)
    loop.open()
    try:
        loop.pending_signals += [signal.SIGHUP, signal.SIGTERM, signal.SIGTERM]
        journal.clear()
        loop.turn()
    finally:
        loop.close()
    assert reloads == ["reload"]
    assert journal[:6] == [
        "a.reconfig",
        "b.reconfig",
        "a.shutdown(peaceful)",
        "b.shutdown(peaceful)",
        "a.shutdown(fast)",
        "b.shutdown(fast)",
    ]


def test_a_failed_reload_keeps_every_service_on_the_old_configuration(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """When the configuration cannot be read again, no service is reconfigured and the
    error is logged."""
    journal: list[str] = []

    def broken() -> None:
        raise EpError("line 3: bad syntax")

    loop = EventLoop(
        [RecordingService("a", journal)],
        log=logging.getLogger("test.event_loop"),
        name="test",
        reload=broken,
    )
    loop.open()
    try:
        loop.pending_signals.append(signal.SIGHUP)
        journal.clear()
        with caplog.at_level(logging.ERROR, logger="test.event_loop"):
            loop.turn()
    finally:
        loop.close()
    assert "a.reconfig" not in journal
    assert "reconfig failed; the old configuration stays: line 3: bad syntax" in caplog.text


def test_the_loop_ends_once_every_service_has_finished() -> None:
    """After a shutdown the loop runs until the slowest service has finished, then closes
    every service."""
    journal: list[str] = []
    quick = RecordingService("quick", journal, ticks_to_finish=1)
    slow = RecordingService("slow", journal, ticks_to_finish=4)
    loop = _loop(quick, slow)
    loop.pending_signals.append(signal.SIGTERM)
    loop.run()
    assert slow.ticks == 4
    assert journal[-2:] == ["quick.close", "slow.close"]


def test_a_failing_turn_is_logged_once_and_the_loop_runs_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Three turns failing alike are logged once; the next turns run normally."""
    journal: list[str] = []
    service = RecordingService("a", journal, ticks_to_finish=5)
    service.fail_ticks = 3
    loop = _loop(service)
    loop.pending_signals.append(signal.SIGTERM)
    with caplog.at_level(logging.ERROR, logger="test.event_loop"):
        loop.run()
    assert service.ticks == 5
    assert caplog.text.count("a turn of the test's loop failed") == 1
    assert loop.repeated_failures == 2


class IdleService(RecordingService):
    """A service with nothing to do for a long time."""

    def timeout(self) -> float:
        return 60.0


def test_a_turn_waits_no_longer_than_its_driver_asks() -> None:
    """A turn with nothing to do returns after the ``longest`` wait its caller gives, not
    after the loop's own longest wait."""
    loop = _loop(IdleService("idle", []))
    loop.open()
    try:
        started = time.monotonic()
        loop.turn(0.01)
        waited = time.monotonic() - started
    finally:
        loop.close()
    assert waited < LONGEST_WAIT / 2
