"""The loop's side of a link that does its work in a thread of its own, and the worker
thread of the startd links' unanswered commands (:class:`Background`).

A remote link (:mod:`epcore.links.collector`, :mod:`epcore.links.results`) queues what the
daemon gives it and sends from a worker thread, so that a slow or absent peer never stalls
the loop. To the loop it is a service with no sockets, timers or children of its own: it
starts its worker when the loop opens, is finished at once when the daemon shuts down, and at
close lets the worker send what is queued, waiting ``close_wait`` seconds at most.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Final

from epcore.runtime.loop import LoopHandle, ReadyEvent
from epcore.runtime.waiting import wait_while

#: Seconds of quiet after which the startd links' worker runs its sweepers.
SWEEP_EVERY: Final = 30.0


class WorkerService:
    """The common service part of a link with a worker thread (module docstring). A subclass
    sets the attributes below in its ``__init__`` (``_thread`` None, ``_stopping`` False),
    gives :meth:`_work` (which ends once ``_stopping`` is set and its queue is empty) and
    :meth:`reconfig`, and says what :meth:`close` logs when work is left."""

    #: The worker thread's name.
    thread_name = "link"
    #: Seconds :meth:`close` waits for the worker.
    close_wait = 5.0
    #: What :meth:`close` logs when the worker was still busy after ``close_wait``.
    left_behind = "work was left undone"

    log: logging.Logger
    _lock: threading.Condition
    _stopping: bool
    _thread: threading.Thread | None

    def _work(self) -> None:
        raise NotImplementedError

    def open(self, loop: LoopHandle) -> None:
        self._thread = threading.Thread(target=self._work, name=self.thread_name, daemon=True)
        self._thread.start()

    def ready(self, events: Sequence[ReadyEvent]) -> None:
        pass

    def timeout(self) -> float:
        return 3600.0

    def tick(self) -> None:
        pass

    def flush(self) -> None:
        pass

    def shutdown(self, fast: bool) -> None:
        pass

    @property
    def finished(self) -> bool:
        return True

    def close(self) -> None:
        """Let the worker send what is queued, waiting ``close_wait`` at most."""
        with self._lock:
            self._stopping = True
            self._lock.notify()
        if self._thread is not None:
            self._thread.join(self.close_wait)
            if self._thread.is_alive():
                self.log.warning(self.left_behind)
        self._thread = None

    def close_in_child(self) -> None:
        pass


class Background:
    """One worker thread sending the unanswered commands of every link that shares it, in
    the order they were asked (a startd that does not answer holds the others back for its
    timeout once per pause, see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._queue: deque[Callable[[], None]] = deque()
        self._thread: threading.Thread | None = None
        self._busy = False
        #: What the worker runs when it has had nothing to do for SWEEP_EVERY seconds.
        self.sweepers: list[Callable[[], None]] = []

    def submit(self, work: Callable[[], None]) -> None:
        """Run ``work`` in the worker thread (started on first use)."""
        with self._lock:
            self._queue.append(work)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="startd-link", daemon=True)
                self._thread.start()
            self._lock.notify()

    def wait_idle(self, timeout: float) -> bool:
        """Whether everything submitted so far was done within ``timeout`` seconds."""
        return wait_while(self._lock, lambda: bool(self._queue or self._busy), timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._lock.wait(SWEEP_EVERY)
                # Quiet: the links give back the claims nobody picked up.
                work = self._queue.popleft() if self._queue else self._sweep
                self._busy = True
            try:
                work()
            finally:
                with self._lock:
                    self._busy = False
                    self._lock.notify_all()

    def _sweep(self) -> None:
        for sweeper in list(self.sweepers):
            sweeper()
