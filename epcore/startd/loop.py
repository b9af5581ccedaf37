"""The startd as a service of the runtime's event loop, and the loop of a startd alone.

:class:`StartdService` is the startd's share of each turn of
:class:`~epcore.runtime.loop.EventLoop`, in this order: answer control requests; read the
starters' messages; take the zygote's notes (starters that exited, preparations that failed;
a new zygote if it died); notice starters that exited (and prepare their claims' next jobs);
hand its parts (the cron jobs and benchmarks, the fetching of work) their ready pipes; then,
at its tick, fire the timers (the policy at POLLING_INTERVAL and at the engine's next timer),
publish the ads when something changed or UPDATE_INTERVAL passed, and tick its parts; flush
what the sockets did not take. A startd that is shutting down has finished once no job runs
and no starter is left; it then invalidates its ads. :class:`StartdLoop` runs a startd
alone (``ep startd``).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from epcore.errors import EpError
from epcore.runtime import framing
from epcore.runtime.connection_limits import ConnectionLimits
from epcore.runtime.connections import RequestServer
from epcore.runtime.control import listen
from epcore.runtime.forkserver import ForkServer
from epcore.runtime.loop import EventLoop, LoopHandle, ReadyEvent, register_channel
from epcore.startd.control import dispatch
from epcore.startd.startd import Startd
from epcore.starter import protocol
from epcore.types import MachineAttribute

_STARTERS = "starters"
_STARTER = "starter"
_ZYGOTE = "zygote"


class LoopCompanion(Protocol):
    """A part of the startd's service: its cron jobs and benchmarks, its fetching of work.

    :meth:`open` registers the part's pipes in the loop's selector with the part itself as
    the key's data; :meth:`ready` is called, after the startd's own sockets, for each of them
    that is ready; :meth:`tick` once per turn after the startd's timers (so it sees the ads
    published in the same turn); :meth:`timeout` says how many seconds it may wait;
    :meth:`close` runs when the loop ends.
    """

    def open(self, selector: selectors.BaseSelector) -> None: ...

    def ready(self, fileobj: object) -> None: ...

    def timeout(self) -> float: ...

    def tick(self) -> None: ...

    def close(self) -> None: ...


class StartdService:
    """A :class:`Startd` as a :class:`~epcore.runtime.loop.Service` (module docstring);
    ``monotonic`` times the timers; ``parts`` are added to the startd's own (a test's)."""

    name = "startd"

    def __init__(
        self,
        startd: Startd,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        parts: Sequence[LoopCompanion] = (),
    ) -> None:
        self.startd = startd
        self.parts: tuple[LoopCompanion, ...] = (
            startd.cron,
            startd.fetch_work,
            startd.hibernation,
            startd.backfill,
            startd.cleanup,
            *parts,
        )
        self.monotonic = monotonic
        self.selector: selectors.BaseSelector | None = None
        self.control: socket.socket | None = None
        # The control socket is root's only (mode 0600), and still bounded like the pool's.
        self.control_server: RequestServer[None] = RequestServer(
            lambda _who, request: dispatch(self.startd, request),
            lambda sock: 0,
            lambda uid: None,
            limits=ConnectionLimits.from_config(startd.config, "STARTD_CONTROL"),
            log=startd.log,
            prefix="STARTD_CONTROL",
            monotonic=monotonic,
        )
        self.next_poll = 0.0
        self.next_update = 0.0
        self._zygote_registered: ForkServer | None = None

    # -- setup ----------------------------------------------------------------------------

    def open(self, loop: LoopHandle) -> None:
        """Listen on both sockets, take back surviving starters, publish, open the parts."""
        startd = self.startd
        self.selector = loop.selector
        self.control = listen(startd.paths.control_socket)
        self.control_server.open(self.control, self.selector, self.control_server)
        starters = startd.starters.listen()
        self.selector.register(starters, selectors.EVENT_READ, _STARTERS)
        self._register_zygote()
        startd.close_in_child = loop.close_in_child
        now = startd.clock()
        startd.restore(now)
        startd.take(startd.engine.poll(startd.state, now), now)
        startd.publish(now)
        for part in self.parts:
            part.open(self.selector)
        self.next_poll = self.monotonic() + self._interval("POLLING_INTERVAL", 5.0)
        self.next_update = self.monotonic() + self._interval("UPDATE_INTERVAL", 300.0)
        startd.log.info("startd ready: control socket %s", startd.paths.control_socket)

    def close_in_child(self) -> None:
        self.control_server.close_in_child()

    def close(self) -> None:
        """At a normal end, invalidate the slots' ads; close the parts and the sockets."""
        startd = self.startd
        if self.finished:
            now = startd.clock()
            ads = startd.ads(startd.state, now).values()
            startd.sink.invalidate([str(ad.evaluate("Name")) for ad in ads], now)
            startd.log.info("startd exiting")
        startd.close()
        for part in self.parts:
            with contextlib.suppress(OSError, EpError):
                part.close()
        self.control_server.close_in_child()
        for path in (startd.paths.control_socket, startd.paths.starter_socket):
            with contextlib.suppress(OSError):
                os.unlink(path)

    def _interval(self, knob: str, default: float) -> float:
        return max(self.startd.config.get_float(knob, default), 1.0)

    # -- the loop's calls -----------------------------------------------------------------

    def timeout(self) -> float:
        startd = self.startd
        now = self.monotonic()
        soonest = min(self.next_poll, self.next_update)
        timer = startd.engine.next_timer(startd.state, startd.clock())
        if timer is not None:
            soonest = min(soonest, now + max(timer - startd.clock(), 0.0))
        for part in self.parts:
            soonest = min(soonest, now + part.timeout())
        soonest = min(soonest, now + self.control_server.timeout())
        if startd.zygote.server.notes_waiting:
            return 0.0
        # Starters are checked at least every second (an adopted one is not our child).
        return max(0.0, min(soonest - now, 1.0))

    def ready(self, events: Sequence[ReadyEvent]) -> None:
        startd = self.startd
        # A connection closed while serving another frees its descriptor number for the next
        # accepted one, so connections are told apart by the object registered, not the fd.
        for fileobj, data in events:
            if data is self.control_server:
                self.control_server.ready(fileobj)
        self.control_server.work()
        if any(data == _STARTERS for _, data in events):
            assert self.selector is not None
            for channel in startd.starters.accept():
                register_channel(self.selector, channel, _STARTER)
        for fileobj, data in events:
            if data == _STARTER and isinstance(fileobj, framing.Channel):
                self._read_starter(fileobj)
        now = startd.clock()
        zygote = startd.zygote
        heard = any(data == _ZYGOTE for _, data in events)
        if heard or zygote.server.notes_waiting or not zygote.alive:
            startd.zygote_notes(now)
            self._register_zygote()
        gone = startd.starters.exited()
        for handle in gone:
            startd.starter_exited(handle, now)
        if gone:
            startd.sync_preparations()
        for fileobj, data in events:
            if data in self.parts:
                data.ready(fileobj)

    def tick(self) -> None:
        self._timers()
        for part in self.parts:
            part.tick()

    def flush(self) -> None:
        self.control_server.flush()
        for channel in self.startd.starters.channels():
            if channel.pending:
                channel.flush()

    def reconfig(self) -> None:
        self.startd.reconfig()

    def shutdown(self, fast: bool) -> None:
        self.startd.shutdown(fast)

    @property
    def finished(self) -> bool:
        return self.startd.shutting_down and self.startd.idle()

    # -- the work -------------------------------------------------------------------------

    def _register_zygote(self) -> None:
        """Watch the zygote's socket for its notes (again, once a new zygote was started)."""
        server = self.startd.zygote.server
        if self._zygote_registered is server or self.selector is None:
            return
        if self._zygote_registered is not None:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(self._zygote_registered)
        if server.alive:
            self.selector.register(server, selectors.EVENT_READ, _ZYGOTE)
            self._zygote_registered = server

    def _unregister(self, channel: framing.Channel) -> None:
        """Unregister ``channel`` if it (not a newer connection on its old fd) is registered."""
        assert self.selector is not None
        key = self.selector.get_map().get(channel.fileno())
        if key is not None and key.fileobj is channel:
            self.selector.unregister(channel)

    def _read_starter(self, channel: framing.Channel) -> None:
        if channel.closed:
            self._unregister(channel)
            return
        startd = self.startd
        now = startd.clock()
        for message in startd.starters.messages(channel):
            if message.evaluate("Command") == protocol.HELLO:
                handle = startd.starters.introduce(channel, message)
                if handle is None:
                    if message.evaluate("StarterStage") == "finished":
                        # Its result was recorded before the startd went down, or is lost
                        # with it: either way the starter may go.
                        channel.send(framing.message(protocol.ACK))
                    else:
                        channel.close()
                continue
            handle = next(
                (h for h in startd.starters.handles.values() if h.channel is channel), None
            )
            if handle is not None:
                startd.starter_message(handle, message, now)
        if channel.closed:
            self._unregister(channel)

    def _timers(self) -> None:
        startd = self.startd
        if startd.hibernation.asleep:
            # A sleeping machine neither evaluates its policy nor publishes: the collector
            # keeps its offline ads until it wakes.
            return
        now = startd.clock()
        tick = self.monotonic()
        timer = startd.engine.next_timer(startd.state, now)
        if tick >= self.next_poll or (timer is not None and timer <= now):
            if tick >= self.next_poll:
                startd.sample_load(now)
            startd.take(startd.engine.poll(startd.state, now), now)
            self.next_poll = tick + self._interval("POLLING_INTERVAL", 5.0)
            if startd.offline.marks:
                recheck_offline(startd, now)
        if tick >= self.next_update or startd.publish_wanted:
            startd.publish(now)
            if tick >= self.next_update:
                self.next_update = tick + self._interval("UPDATE_INTERVAL", 300.0)


def recheck_offline(startd: Startd, now: float) -> None:
    """Test the offline universes again when their ``<U>_RECHECK_INTERVAL`` has passed (in
    a worker thread: the plugins may ask a daemon that hangs), and advertise again those the
    plugins now say work (HTCondor re-tests VM support so) once the test has answered."""
    config, inventory, log = startd.config, startd.inventory, startd.log

    def test() -> list[MachineAttribute]:
        try:
            return startd.plugins.machine_attributes(config, inventory)
        except Exception:
            log.exception("re-testing the offline universes failed")
            return []

    cleared = startd.offline.recheck(startd.config, now, test)
    for universe in cleared:
        startd.log.info("the %s universe works again: no longer offline", universe)
    if cleared:
        startd.attributes_changed(now, publish=True)


class StartdLoop(EventLoop):
    """A startd alone in its loop (``ep startd``), until it has shut down; ``monotonic``
    times the timers; ``companions`` are extra parts of the startd's service."""

    def __init__(
        self,
        startd: Startd,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        companions: Sequence[LoopCompanion] = (),
    ) -> None:
        self.startd = startd
        self.service = StartdService(startd, monotonic=monotonic, parts=companions)
        super().__init__([self.service], log=startd.log, name="startd", monotonic=monotonic)
