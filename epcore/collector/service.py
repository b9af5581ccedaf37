"""The collector as a service of the runtime's loop, and as its peers reach it in-process.

It stores the ads the startds, schedds and negotiators send (the in-process
:class:`~epcore.interfaces.CollectorLink`: slot ads are stamped with the collector's own
clock, as a real collector records when *it* heard from a daemon), answers queries, and every
:data:`COLLECTOR_HOUSEKEEPING` seconds expires ads and writes the absent and offline ones to
COLLECTOR_PERSISTENT_AD_LOG (when they changed; again when the loop ends).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from epcore.classad import ClassAd
from epcore.collector.collector import Collector, CollectorSink
from epcore.collector.collector_log import write_persistent_ads
from epcore.collector.requests import HANDLERS
from epcore.config import Config
from epcore.interfaces import RequestHandlers
from epcore.interfaces.requests import bind_handlers
from epcore.runtime.loop import LoopHandle, TimedService

#: How often absent and expired ads are looked for, in seconds.
COLLECTOR_HOUSEKEEPING = 10.0


class CollectorService(TimedService):
    """A :class:`Collector` in the loop (module docstring); ``config`` gives the configuration
    in force (read again at each reconfig)."""

    name = "collector"

    def __init__(
        self,
        collector: Collector,
        *,
        config: Callable[[], Config],
        persistent_log: str,
        log: logging.Logger,
        clock: Callable[[], float],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(config, log=log, clock=clock, monotonic=monotonic)
        self.collector = collector
        self.persistent_log = persistent_log
        self.sink = CollectorSink(collector, clock)
        self.saved_generation = collector.persistent_generation
        self.next_housekeeping = 0.0

    # -- the in-process link ----------------------------------------------------------------

    def advertise(self, ads: Sequence[ClassAd], now: float) -> None:
        """A startd's slot ads (an ad without MyType is taken as a Machine ad)."""
        self.sink.advertise(ads, now)

    def invalidate(self, names: Sequence[str], now: float) -> None:
        """These slots are gone."""
        self.sink.invalidate(names, now)

    def update(self, ads: Sequence[ClassAd], now: float) -> None:
        """Daemon ads of any MyType (schedd, submitter, negotiator ads)."""
        self.collector.update(ads, now)

    def invalidate_ads(self, my_type: str, names: Sequence[str], now: float) -> None:
        """Daemon ads of ``my_type`` withdrawn by their daemon."""
        self.collector.invalidate(my_type, names, now)

    def query(
        self,
        my_type: str | None,
        constraint: str | None = None,
        projection: Sequence[str] | None = None,
        *,
        now: float,
        absent: bool = False,
    ) -> list[ClassAd]:
        return self.collector.query(my_type, constraint, projection, now=now, absent=absent)

    def query_stored(
        self, my_type: str | None, constraint: str | None = None, *, now: float
    ) -> list[ClassAd]:
        """The stored ads themselves, not to be changed (:meth:`Collector.query_stored`)."""
        return self.collector.query_stored(my_type, constraint, now=now)

    def handlers(self) -> RequestHandlers:
        """The collector's answers to the pool's requests, by Command."""
        return bind_handlers(self, HANDLERS)

    # -- the loop's calls -----------------------------------------------------------------

    def open(self, loop: LoopHandle) -> None:
        self.next_housekeeping = 0.0

    def timeout(self) -> float:
        return self.next_housekeeping - self.monotonic()

    def tick(self) -> None:
        tick = self.monotonic()
        if tick >= self.next_housekeeping:
            self.collector.expire(self.clock())
            self.save()
            self.next_housekeeping = tick + COLLECTOR_HOUSEKEEPING

    def reconfig(self) -> None:
        super().reconfig()
        self.collector.reconfig(self.config)

    def close(self) -> None:
        self.save()

    def save(self) -> None:
        """Write the absent and offline ads to COLLECTOR_PERSISTENT_AD_LOG when they changed."""
        generation = self.collector.persistent_generation
        if generation == self.saved_generation:
            return
        try:
            write_persistent_ads(Path(self.persistent_log), self.collector.persistent_ads())
            self.saved_generation = generation
        except OSError as error:
            self.log.error("cannot save the collector's ads to %s: %s", self.persistent_log, error)
