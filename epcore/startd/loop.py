"""The startd's event loop: one selector, a fixed order of work per turn, signals as events.

Each turn of :meth:`StartdLoop.turn` does, in this order: wait for a socket, a signal or the
next timer; take the signals (SIGHUP: reconfigure; SIGTERM: peaceful shutdown, a second one:
fast; SIGQUIT: fast; SIGCHLD only wakes the loop); answer control requests; read the starters'
messages; notice starters that exited (and prepare their claims' next jobs) and reap the job
supervisors the startd prepared; fire the timers (the policy at POLLING_INTERVAL and at the
engine's next timer); publish the ads when something changed or UPDATE_INTERVAL passed; flush
what the sockets did not take; unregister the connections that closed. A turn that fails
for the machine's sake (a full disk, no descriptor or process left) is logged and the next
one tries again. A startd that is shutting down leaves the loop once no
job runs and no starter is left. Signals are recorded by their handlers and handled at the
next turn, never inside the handler.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from epcore.errors import EpError
from epcore.runtime import framing
from epcore.runtime.connection_limits import ConnectionLimits
from epcore.runtime.connections import RequestServer
from epcore.runtime.control import dispatch, listen
from epcore.startd.startd import Startd
from epcore.starter import protocol

#: A failure that repeats turn after turn is logged again every this many turns.
REPEATED_FAILURE_NOTE = 1000
_SIGNALS = (signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT, signal.SIGINT, signal.SIGCHLD)


def register_channel(
    selector: selectors.BaseSelector, channel: framing.Channel, data: object
) -> None:
    """Register a new connection for reading; a closed one still registered on its
    descriptor number (closed by a failed send this turn, not yet swept) makes way."""
    stale = selector.get_map().get(channel.fileno())
    if stale is not None and isinstance(stale.fileobj, framing.Channel):
        selector.unregister(stale.fileobj)
    selector.register(channel, selectors.EVENT_READ, data)


class LoopCompanion(Protocol):
    """Work that shares a startd's loop, as the personal pool's central manager does.

    :meth:`open` registers the companion's sockets in the loop's selector with the companion
    itself as the key's data; :meth:`ready` is called, after the startd's own sockets, for each
    of them that is ready; :meth:`tick` once per turn after the startd's timers (so it sees the
    ads published in the same turn); :meth:`timeout` says how many seconds it may wait;
    :meth:`close` runs when the loop ends.
    """

    def open(self, selector: selectors.BaseSelector) -> None: ...

    def ready(self, fileobj: object) -> None: ...

    def timeout(self) -> float: ...

    def tick(self) -> None: ...

    def close(self) -> None: ...


class StartdLoop:
    """Runs a :class:`Startd` until it has shut down; ``monotonic`` times the timers."""

    def __init__(
        self,
        startd: Startd,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        companions: Sequence[LoopCompanion] = (),
    ) -> None:
        self.startd = startd
        # The startd's cron jobs and benchmarks, and its fetching of work, share the loop
        # like any companion.
        self.companions: tuple[LoopCompanion, ...] = (
            startd.cron,
            startd.fetch_work,
            *companions,
        )
        self.monotonic = monotonic
        self.selector = selectors.DefaultSelector()
        self.pending_signals: list[int] = []
        self.terms = 0
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
        self._wake_read: socket.socket | None = None
        self._wake_write: socket.socket | None = None
        self._old_handlers: dict[int, object] = {}
        self.next_poll = 0.0
        self.next_update = 0.0
        # The last failed turn's (type, message, place), and how often it repeated since.
        self.last_failure: tuple[str, str, tuple[str, int] | None] | None = None
        self.repeated_failures = 0

    # -- setup ----------------------------------------------------------------------------

    def _record_signal(self, signum: int, _frame: object) -> None:
        self.pending_signals.append(signum)

    def open(self) -> None:
        """Listen on both sockets, install the signal handlers, take back surviving starters."""
        startd = self.startd
        self.control = listen(startd.paths.control_socket)
        self.control_server.open(self.control, self.selector, self.control_server)
        starters = startd.starters.listen()
        self.selector.register(starters, selectors.EVENT_READ, "starters")
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        self.selector.register(self._wake_read, selectors.EVENT_READ, "signal")
        signal.set_wakeup_fd(self._wake_write.fileno(), warn_on_full_buffer=False)
        for signum in _SIGNALS:
            self._old_handlers[signum] = signal.signal(signum, self._record_signal)
        startd.close_in_child = self.close_in_child
        now = startd.clock()
        startd.restore(now)
        startd.take(startd.engine.poll(startd.state, now), now)
        startd.publish(now)
        for companion in self.companions:
            companion.open(self.selector)
        self.next_poll = self.monotonic() + self._interval("POLLING_INTERVAL", 5.0)
        self.next_update = self.monotonic() + self._interval("UPDATE_INTERVAL", 300.0)
        startd.log.info("startd ready: control socket %s", startd.paths.control_socket)

    def close_in_child(self) -> None:
        """In a forked starter: drop every descriptor of the startd's loop."""
        for key in list(self.selector.get_map().values()):
            if isinstance(key.fileobj, framing.Channel) and key.fileobj.closed:
                continue  # its number may be reused by now (a prepared supervisor's pipe)
            with contextlib.suppress(OSError):
                os.close(key.fd)
        for sock in (self._wake_write,):
            if sock is not None:
                with contextlib.suppress(OSError):
                    os.close(sock.fileno())
        self.control_server.close_in_child()

    def close(self) -> None:
        """Stop listening and restore the signal handlers."""
        for companion in self.companions:
            with contextlib.suppress(OSError, EpError):
                companion.close()
        signal.set_wakeup_fd(-1)
        for signum, handler in self._old_handlers.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        for key in list(self.selector.get_map().values()):
            with contextlib.suppress(OSError):
                key.fileobj.close()  # type: ignore[union-attr]
        self.selector.close()
        self.control_server.close_in_child()
        if self._wake_write is not None:
            self._wake_write.close()
        for path in (self.startd.paths.control_socket, self.startd.paths.starter_socket):
            with contextlib.suppress(OSError):
                os.unlink(path)

    def _interval(self, knob: str, default: float) -> float:
        return max(self.startd.config.get_float(knob, default), 1.0)

    # -- one turn -------------------------------------------------------------------------

    def _timeout(self) -> float:
        startd = self.startd
        now = self.monotonic()
        soonest = min(self.next_poll, self.next_update)
        timer = startd.engine.next_timer(startd.state, startd.clock())
        if timer is not None:
            soonest = min(soonest, now + max(timer - startd.clock(), 0.0))
        for companion in self.companions:
            soonest = min(soonest, now + companion.timeout())
        soonest = min(soonest, now + self.control_server.timeout())
        # Starters are checked at least every second (an adopted one is not our child).
        return max(0.0, min(soonest - now, 1.0))

    def turn(self) -> None:
        """One turn of the loop, in the fixed order of the module docstring."""
        startd = self.startd
        ready = self.selector.select(self._timeout())
        labels = {key.data for key, _ in ready}
        if "signal" in labels:
            self._drain_wakeups()
        self._signals()
        # A connection closed while serving another frees its descriptor number for the next
        # accepted one, so connections are told apart by the object registered, not the fd.
        for key, _ in ready:
            if key.data is self.control_server:
                self.control_server.ready(key.fileobj)
        self.control_server.work()
        if "starters" in labels:
            for channel in startd.starters.accept():
                self._register(channel, "starter")
        for key, _ in ready:
            if key.data == "starter" and isinstance(key.fileobj, framing.Channel):
                self._read_starter(key.fileobj)
        now = startd.clock()
        gone = startd.starters.exited()
        for handle in gone:
            startd.starter_exited(handle, now)
        if gone:
            startd.sync_preparations()
        startd.preparations.reap()
        for key, _ in ready:
            if key.data in self.companions:
                key.data.ready(key.fileobj)
        self._timers()
        for companion in self.companions:
            companion.tick()
        self._flush()
        self._sweep()

    def _drain_wakeups(self) -> None:
        assert self._wake_read is not None
        with contextlib.suppress(BlockingIOError):
            while self._wake_read.recv(4096):
                pass

    def _signals(self) -> None:
        taken, self.pending_signals = self.pending_signals, []
        for signum in taken:
            if signum == signal.SIGHUP:
                try:
                    self.startd.reconfig()
                except EpError as error:  # a bad file must not stop the startd
                    self.startd.log.error("reconfig failed; the old configuration stays: %s", error)
            elif signum in (signal.SIGTERM, signal.SIGINT):
                self.terms += 1
                fast = self.terms > 1
                self.startd.log.info("shutting down (%s)", "fast" if fast else "peaceful")
                self.startd.shutdown(fast)
            elif signum == signal.SIGQUIT:
                self.startd.log.info("shutting down (fast)")
                self.startd.shutdown(True)

    def _register(self, channel: framing.Channel, kind: str) -> None:
        register_channel(self.selector, channel, kind)

    def _unregister(self, channel: framing.Channel) -> None:
        """Unregister ``channel`` if it (not a newer connection on its old fd) is registered."""
        key = self.selector.get_map().get(channel.fileno())
        if key is not None and key.fileobj is channel:
            self.selector.unregister(channel)

    def _drop(self, channel: framing.Channel) -> None:
        self._unregister(channel)
        channel.close()

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
        now = startd.clock()
        tick = self.monotonic()
        timer = startd.engine.next_timer(startd.state, now)
        if tick >= self.next_poll or (timer is not None and timer <= now):
            startd.take(startd.engine.poll(startd.state, now), now)
            self.next_poll = tick + self._interval("POLLING_INTERVAL", 5.0)
        if tick >= self.next_update or startd.publish_wanted:
            startd.publish(now)
            if tick >= self.next_update:
                self.next_update = tick + self._interval("UPDATE_INTERVAL", 300.0)

    def _flush(self) -> None:
        self.control_server.flush()
        for channel in self.startd.starters.channels():
            if channel.pending:
                channel.flush()

    def _sweep(self) -> None:
        """Unregister every connection that closed (by its peer or by being forgotten)."""
        for key in list(self.selector.get_map().values()):
            if isinstance(key.fileobj, framing.Channel) and key.fileobj.closed:
                self._drop(key.fileobj)

    def _turn_failed(self, error: Exception) -> None:
        """Log a failed turn; the same failure turn after turn is logged once, then counted."""
        where = error.__traceback__
        while where is not None and where.tb_next is not None:
            where = where.tb_next
        signature = (
            type(error).__name__,
            str(error),
            None if where is None else (where.tb_frame.f_code.co_filename, where.tb_lineno),
        )
        if signature != self.last_failure:
            self.last_failure, self.repeated_failures = signature, 0
            self.startd.log.exception("a turn of the startd's loop failed")
            return
        self.repeated_failures += 1
        if self.repeated_failures % REPEATED_FAILURE_NOTE == 0:
            self.startd.log.error(
                "a turn of the startd's loop failed again (%d times in a row): %s",
                self.repeated_failures + 1,
                error,
            )

    # -- running --------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        return self.startd.shutting_down and self.startd.idle()

    def run(self) -> None:
        """Open, turn until shut down and idle, close."""
        self.open()
        try:
            while not self.finished:
                try:
                    self.turn()
                except Exception as error:
                    # A full disk, no more descriptors or processes, or a fault on one job's
                    # or request's data must not end the startd (and the pool sharing its
                    # loop) and the jobs it watches; the next turn tries again.
                    self._turn_failed(error)
            now = self.startd.clock()
            ads = self.startd.ads(self.startd.state, now).values()
            self.startd.sink.invalidate([str(ad.evaluate("Name")) for ad in ads], now)
            self.startd.log.info("startd exiting")
        finally:
            self.startd.preparations.close()
            self.close()
