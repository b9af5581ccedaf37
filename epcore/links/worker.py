"""The loop's side of a link that does its work in a thread of its own.

A remote link (:mod:`epcore.links.collector`, :mod:`epcore.links.results`) queues what the
daemon gives it and sends from a worker thread, so that a slow or absent peer never stalls
the loop. To the loop it is a service with no sockets, timers or children of its own: it
starts its worker when the loop opens, is finished at once when the daemon shuts down, and at
close lets the worker send what is queued, waiting ``close_wait`` seconds at most.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from epcore.runtime.loop import LoopHandle, ReadyEvent


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
