"""The event loop every epcore process runs: services in one selector, in a fixed order.

A process is a list of :class:`Service` objects (a startd, a collector, a negotiator, a
schedd, the pool's request socket...). Each turn of :meth:`EventLoop.turn` does, in this
order: wait for a socket, a signal or the soonest service's timer; take the signals (SIGHUP:
reconfigure every service; SIGTERM or SIGINT: a peaceful shutdown, a second one: fast;
SIGQUIT: fast; SIGCHLD only wakes the loop); hand the ready sockets to the services, in their
order; let each service do its timed work (:meth:`Service.tick`), in their order; flush what
the sockets did not take; unregister the connections that closed. A turn that fails for the
machine's sake (a full disk, no descriptor or process left) or on one request's data is
logged, once for as long as it repeats (then counted), and the next turn tries again; the
loop ends when every service has finished. Signals are recorded by their handlers and
handled at the next turn, never inside the handler.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import socket
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from epcore.config import Config
from epcore.errors import EpError
from epcore.runtime import framing

#: A failure that repeats turn after turn is logged again every this many turns.
REPEATED_FAILURE_NOTE = 1000
#: The longest wait for an event when no service asks for less (signals wake it anyway).
LONGEST_WAIT = 60.0
_SIGNALS = (signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT, signal.SIGINT, signal.SIGCHLD)

#: A socket ready this turn: the object registered and the data it was registered with.
ReadyEvent = tuple[object, object]


def register_channel(
    selector: selectors.BaseSelector, channel: framing.Channel, data: object
) -> None:
    """Register a new connection for reading; a closed one still registered on its
    descriptor number (closed by a failed send this turn, not yet swept) makes way."""
    stale = selector.get_map().get(channel.fileno())
    if stale is not None and isinstance(stale.fileobj, framing.Channel):
        selector.unregister(stale.fileobj)
    selector.register(channel, selectors.EVENT_READ, data)


class LoopHandle(Protocol):
    """What a service sees of the loop it runs in."""

    @property
    def selector(self) -> selectors.BaseSelector: ...

    def close_in_child(self) -> None: ...


class Service(Protocol):
    """One daemon's work in a shared loop.

    :meth:`open` registers the service's sockets in ``loop.selector`` (with data of its own, so
    that :meth:`ready` can tell its events from the others'); :meth:`ready` gets every socket
    ready this turn and takes those it registered; :meth:`tick` does the timed work;
    :meth:`timeout` says how many seconds the loop may wait for it; :meth:`flush` sends what
    its sockets did not take. :meth:`reconfig` takes the configuration again (SIGHUP),
    :meth:`shutdown` begins a peaceful or fast shutdown, and :attr:`finished` says that the
    service may end (the loop ends when all may); :meth:`close` runs when the loop ends,
    :meth:`close_in_child` in a child forked by any service (it closes the descriptors only).
    """

    name: str

    def open(self, loop: LoopHandle) -> None: ...

    def ready(self, events: Sequence[ReadyEvent]) -> None: ...

    def timeout(self) -> float: ...

    def tick(self) -> None: ...

    def flush(self) -> None: ...

    def reconfig(self) -> None: ...

    def shutdown(self, fast: bool) -> None: ...

    @property
    def finished(self) -> bool: ...

    def close(self) -> None: ...

    def close_in_child(self) -> None: ...


class TimedService:
    """The common part of a service that works on timers and has no sockets of its own (the
    collector, negotiator and schedd in the loop): ``config`` gives the configuration in
    force, taken again at each reconfig; the first shutdown ends it; it has nothing to flush,
    and nothing to close in a forked child. A subclass gives :meth:`timeout` and
    :meth:`tick`, and extends :meth:`open`, :meth:`reconfig` and :meth:`close` as it needs."""

    name = "service"

    def __init__(
        self,
        config: Callable[[], Config],
        *,
        log: logging.Logger,
        clock: Callable[[], float],
        monotonic: Callable[[], float],
    ) -> None:
        self.current_config = config
        self.config = config()
        self.log = log
        self.clock = clock
        self.monotonic = monotonic
        self.stopping = False

    def open(self, loop: LoopHandle) -> None:
        pass

    def ready(self, events: Sequence[ReadyEvent]) -> None:
        pass

    def flush(self) -> None:
        pass

    def reconfig(self) -> None:
        self.config = self.current_config()

    def shutdown(self, fast: bool) -> None:
        self.stopping = True

    @property
    def finished(self) -> bool:
        return self.stopping

    def close(self) -> None:
        pass

    def close_in_child(self) -> None:
        pass


class EventLoop:
    """Runs ``services`` until each has finished (module docstring). ``reload``, when given,
    reads the configuration the services share before each SIGHUP's reconfig; ``log`` gets
    the loop's own messages, which name the process ``name`` ("the startd's loop")."""

    def __init__(
        self,
        services: Sequence[Service],
        *,
        log: logging.Logger,
        name: str,
        reload: Callable[[], None] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.services = tuple(services)
        self.log = log
        self.name = name
        self.reload = reload
        self.monotonic = monotonic
        self._selector = selectors.DefaultSelector()
        self.pending_signals: list[int] = []
        self.terms = 0
        self._wake_read: socket.socket | None = None
        self._wake_write: socket.socket | None = None
        self._old_handlers: dict[int, object] = {}
        # The last failed turn's (type, message, place), and how often it repeated since.
        self.last_failure: tuple[str, str, tuple[str, int] | None] | None = None
        self.repeated_failures = 0

    @property
    def selector(self) -> selectors.BaseSelector:
        return self._selector

    # -- setup ----------------------------------------------------------------------------

    def _record_signal(self, signum: int, _frame: object) -> None:
        self.pending_signals.append(signum)

    def open(self) -> None:
        """Install the signal handlers, then open every service in order."""
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        self._selector.register(self._wake_read, selectors.EVENT_READ, self)
        signal.set_wakeup_fd(self._wake_write.fileno(), warn_on_full_buffer=False)
        for signum in _SIGNALS:
            self._old_handlers[signum] = signal.signal(signum, self._record_signal)
        for service in self.services:
            service.open(self)

    def close_in_child(self) -> None:
        """In a forked child: drop every descriptor of the loop and of its services."""
        for key in list(self._selector.get_map().values()):
            if isinstance(key.fileobj, framing.Channel) and key.fileobj.closed:
                continue  # its number may be reused by now (a prepared supervisor's pipe)
            with contextlib.suppress(OSError):
                os.close(key.fd)
        if self._wake_write is not None:
            with contextlib.suppress(OSError):
                os.close(self._wake_write.fileno())
        for service in self.services:
            service.close_in_child()

    def close(self) -> None:
        """Close every service in order, restore the signal handlers, close the selector."""
        for service in self.services:
            with contextlib.suppress(OSError, EpError):
                service.close()
        signal.set_wakeup_fd(-1)
        for signum, handler in self._old_handlers.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        for key in list(self._selector.get_map().values()):
            with contextlib.suppress(OSError):
                key.fileobj.close()  # type: ignore[union-attr]
        self._selector.close()
        if self._wake_write is not None:
            self._wake_write.close()

    # -- one turn -------------------------------------------------------------------------

    def _timeout(self, longest: float) -> float:
        wait = longest
        for service in self.services:
            wait = min(wait, service.timeout())
        return max(0.0, wait)

    def turn(self, longest: float = LONGEST_WAIT) -> None:
        """One turn of the loop, in the fixed order of the module docstring, waiting at most
        ``longest`` seconds for something to happen (a driver with its own deadline)."""
        ready = self._selector.select(self._timeout(longest))
        if any(key.data is self for key, _ in ready):
            self._drain_wakeups()
        self._signals()
        events = [(key.fileobj, key.data) for key, _ in ready if key.data is not self]
        for service in self.services:
            service.ready(events)
        for service in self.services:
            service.tick()
        for service in self.services:
            service.flush()
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
                self._reconfig()
            elif signum in (signal.SIGTERM, signal.SIGINT):
                self.terms += 1
                self._shutdown(fast=self.terms > 1)
            elif signum == signal.SIGQUIT:
                self._shutdown(fast=True)

    def _reconfig(self) -> None:
        try:
            if self.reload is not None:
                self.reload()
            for service in self.services:
                service.reconfig()
        except EpError as error:  # a bad file must not stop the daemons
            self.log.error("reconfig failed; the old configuration stays: %s", error)

    def _shutdown(self, fast: bool) -> None:
        self.log.info("shutting down (%s)", "fast" if fast else "peaceful")
        for service in self.services:
            service.shutdown(fast)

    def _sweep(self) -> None:
        """Unregister every connection that closed (by its peer or by being forgotten)."""
        for key in list(self._selector.get_map().values()):
            if isinstance(key.fileobj, framing.Channel) and key.fileobj.closed:
                self.unregister(key.fileobj)
                key.fileobj.close()

    def unregister(self, channel: framing.Channel) -> None:
        """Unregister ``channel`` if it (not a newer connection on its old fd) is registered."""
        key = self._selector.get_map().get(channel.fileno())
        if key is not None and key.fileobj is channel:
            self._selector.unregister(channel)

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
            self.log.exception("a turn of the %s's loop failed", self.name)
            return
        self.repeated_failures += 1
        if self.repeated_failures % REPEATED_FAILURE_NOTE == 0:
            self.log.error(
                "a turn of the %s's loop failed again (%d times in a row): %s",
                self.name,
                self.repeated_failures + 1,
                error,
            )

    # -- running --------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        return all(service.finished for service in self.services)

    def run(self) -> None:
        """Open, turn until every service has finished, close."""
        self.open()
        try:
            while not self.finished:
                try:
                    self.turn()
                except Exception as error:
                    # A full disk, no more descriptors or processes, or a fault on one job's
                    # or request's data must not end the daemons and the jobs they watch;
                    # the next turn tries again.
                    self._turn_failed(error)
        finally:
            self.close()
