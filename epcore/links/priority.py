"""A negotiator in another process, as a schedd without one asks it about its submitters:
the :class:`PriorityQuery` that reads the accountant over CEDAR (GET_PRIORITY).

The negotiator is found as HTCondor's tools find it: its Negotiator ad in the collector
gives its MyAddress. The answers are the last report read: a question finds it at once (the
loop never waits for the network); a report older than REFRESH seconds is read again by a
worker thread, and until the first one arrives a submitter's priority is HTCondor's
starting priority (0.5). Why a job waited is known only to a negotiator in the process
(HTCondor's protocol carries no such answer): :meth:`waiting_reason` is None.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final

from epcore.config import Config
from epcore.errors import EpError
from epcore.interfaces import AdQuery
from epcore.links.connection import FAILURES
from epcore.net import tools
from epcore.net.sinful import SinfulError, parse_sinful

#: Seconds a priority report is used before it is read again.
REFRESH: Final = 30.0
#: A submitter's priority before the accountant has said otherwise (HTCondor's minimum).
STARTING_PRIORITY: Final = 0.5


class RemotePriorities:
    """The accountant of the negotiator the ``collector`` knows (module docstring)."""

    def __init__(
        self,
        config: Callable[[], Config],
        collector: AdQuery,
        *,
        log: logging.Logger,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.collector = collector
        self.log = log
        self.clock = clock
        self.monotonic = monotonic
        self._lock = threading.Lock()
        self._priorities: dict[str, float] = {}
        self._read_at: float | None = None
        self._reading: threading.Thread | None = None
        self._failed = False

    def effective_priority(self, submitter: str) -> float:
        self._refresh_if_stale()
        with self._lock:
            return self._priorities.get(submitter, STARTING_PRIORITY)

    def waiting_reason(self, submitter: str, job_id: str) -> str | None:
        return None

    def _refresh_if_stale(self) -> None:
        now = self.monotonic()
        with self._lock:
            fresh = self._read_at is not None and now - self._read_at < REFRESH
            if fresh or (self._reading is not None and self._reading.is_alive()):
                return
            self._read_at = now  # a failure too waits REFRESH before the next attempt
            self._reading = threading.Thread(target=self.read, name="priorities", daemon=True)
            self._reading.start()

    def read(self) -> None:
        """Read the report now (blocking; the worker's work)."""
        try:
            address = self._negotiator()
            report = tools.priorities(address, self.config())
        except FAILURES as error:
            if not self._failed:
                self._failed = True
                self.log.warning("cannot read the submitters' priorities: %s", error)
            return
        found: dict[str, float] = {}
        for ad in report:
            name, priority = ad.evaluate("Name"), ad.evaluate("Priority")
            if isinstance(name, str) and isinstance(priority, (int, float)):
                found[name] = float(priority)
        with self._lock:
            self._priorities = found
        if self._failed:
            self._failed = False
            self.log.info("the submitters' priorities are read again")

    def _negotiator(self) -> tuple[str, int]:
        for ad in self.collector.query("Negotiator", None, ["MyAddress"], now=self.clock()):
            address = ad.evaluate("MyAddress")
            if isinstance(address, str):
                try:
                    where = parse_sinful(address)
                except SinfulError:
                    continue
                return where.host, where.port
        raise EpError("the collector knows no negotiator with an address")
