"""condor_defrag as a service of the central manager's loop.

Every DEFRAG_INTERVAL seconds it saves the time of the poll in DEFRAG_STATE_FILE (first, as
HTCondor does: a poll that crashes counts as done, so a restart drains too little rather
than too much), reads the slot ads from the collector, plans the poll
(:func:`epcore.defrag.poll.plan`) and sends the cancels and drains through the startds'
links, found by the slot ads' MyAddress. The first poll after a start waits out what is left
of the interval since the last one. The Defrag ad goes to the collector every
DEFRAG_UPDATE_INTERVAL seconds and after each poll, and is withdrawn at shutdown.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Callable

import attrs

from epcore.config import Config
from epcore.defrag.poll import Candidate, carry_out, plan
from epcore.defrag.settings import DefragSettings
from epcore.defrag.state import (
    DefragState,
    defrag_ad,
    first_poll_delay,
    forget_old,
    last_poll_of,
    state_text,
)
from epcore.errors import EpError
from epcore.interfaces import CollectorLink, Locator, StartdLink
from epcore.runtime.loop import LoopHandle, TimedService

DEFRAG_TYPE = "Defrag"


class DefragService(TimedService):
    """The defrag daemon in the loop (module docstring). ``config`` gives the configuration
    in force; a configuration it cannot use (an expression that does not parse, an unknown
    schedule) stops it at start (ConfigError) and is logged and ignored at a reconfig."""

    name = "defrag"

    def __init__(
        self,
        *,
        config: Callable[[], Config],
        collector: CollectorLink,
        startds: Locator[StartdLink],
        log: logging.Logger,
        clock: Callable[[], float],
        monotonic: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(config, log=log, clock=clock, monotonic=monotonic)
        self.settings = DefragSettings.from_config(self.config)
        self.collector = collector
        self.startds = startds
        self.rng = rng if rng is not None else random.Random()
        self.state = DefragState()
        self.next_poll = 0.0
        self.next_ad = 0.0
        #: The DaemonCore attributes of the ad (Machine, MyAddress...): the assembly sets them.
        self.contact: dict[str, str] = {}

    # -- the loop's calls -----------------------------------------------------------------

    def open(self, loop: LoopHandle) -> None:
        now = int(self.clock())
        last = self._load_last_poll()
        self.state = DefragState(started=now, last_poll=last)
        self._announce()
        delay = first_poll_delay(last, self.settings.interval, now)
        self.next_poll = self.monotonic() + delay
        self.next_ad = self.monotonic()

    def timeout(self) -> float:
        due = self.next_ad
        if self.settings.interval > 0 and not self.stopping:
            due = min(due, self.next_poll)
        return due - self.monotonic()

    def tick(self) -> None:
        tick = self.monotonic()
        if self.stopping:
            return
        if self.settings.interval > 0 and tick >= self.next_poll:
            self.next_poll = tick + self.settings.interval
            try:
                self.poll(int(self.clock()))
            except Exception:  # a failed poll must not take the central manager down
                self.log.exception("the defragmentation poll failed")
            self.next_ad = tick
        if tick >= self.next_ad:
            self.advertise(int(self.clock()))

    def reconfig(self) -> None:
        super().reconfig()
        old = self.settings
        try:
            self.settings = DefragSettings.from_config(self.config)
        except EpError as error:
            self.log.error("reconfig: %s; keeping the previous defrag configuration", error)
            return
        if self.settings.interval != old.interval and self.settings.interval > 0:
            self.next_poll = self.monotonic() + self.settings.interval
        self._announce()

    def shutdown(self, fast: bool) -> None:
        if not self.stopping:
            try:
                self.collector.invalidate_ads(DEFRAG_TYPE, [self.settings.name], self.clock())
            except EpError as error:
                self.log.error("cannot withdraw the Defrag ad: %s", error)
        super().shutdown(fast)

    # -- the work -------------------------------------------------------------------------

    def _announce(self) -> None:
        settings, rate = self.settings, self.settings.rate
        if settings.interval <= 0:
            self.log.info(
                "DEFRAG_INTERVAL=%d, so no pool defragmentation will be done.", settings.interval
            )
            return
        self.log.info(
            "polling interval %ds, DEFRAG_DRAINING_MACHINES_PER_HOUR = %f/hour = "
            "%d/interval + %d/hour + %d/day",
            settings.interval,
            rate.per_hour,
            rate.per_poll,
            rate.per_poll_hour,
            rate.per_poll_day,
        )

    def _load_last_poll(self) -> int:
        path = self.settings.state_file
        try:
            with open(path, encoding="utf-8") as file:
                text = file.read()
        except FileNotFoundError:
            self.log.info("State file %s does not yet exist.", path)
            return 0
        except OSError as error:
            self.log.error("failed to load state from %s: %s", path, error)
            return 0
        last = last_poll_of(text)
        if last is None:
            self.log.warning("failed to parse state from %s", path)
            return 0
        self.log.info("Last poll: %d", last)
        return last

    def _save_state(self, state: DefragState) -> None:
        path = self.settings.state_file
        new = f"{path}.new"
        try:
            with open(new, "w", encoding="utf-8") as file:
                file.write(state_text(state))
            os.replace(new, path)
        except OSError as error:
            self.log.error("failed to save state to %s: %s", path, error)

    def poll(self, now: int) -> None:
        """One poll (module docstring)."""
        settings = self.settings
        self._save_state(attrs.evolve(self.state, last_poll=now))
        slots = self.collector.query("Machine", now=now)
        context = self.config.eval_context.at(now)
        planned = plan(slots, self.state, settings, now, rng=self.rng, context=context)
        self.log.info(
            "There are currently %d draining and %d whole machines.",
            planned.state.machines_draining,
            planned.state.whole_machines,
        )
        state, drained = carry_out(planned, settings, now, drain=self._drain, cancel=self._cancel)
        self.state = forget_old(state, settings.interval, now)
        if planned.why:
            self.log.info("%s", planned.why)
        else:
            self.log.info(
                "Drained %d machines (wanted to drain %d machines).", drained, planned.to_drain
            )

    def _link(self, candidate: Candidate) -> StartdLink:
        return self.startds.link(candidate.address)

    def _drain(self, candidate: Candidate) -> bool:
        settings = self.settings
        self.log.info("Initiating %s draining of %s.", settings.schedule, candidate.name)
        try:
            self._link(candidate).drain(
                settings.schedule.lower(),
                candidate.check,
                settings.start_expr,
                reason=settings.drain_reason,
                resume=True,
            )
        except EpError as error:
            self.log.info("Failed to send request to drain %s: %s", candidate.name, error)
            return False
        return True

    def _cancel(self, candidate: Candidate) -> bool:
        self.log.info("Cancel draining of %s.", candidate.name)
        try:
            self._link(candidate).cancel_drain()
        except EpError as error:
            self.log.info("Unable to cancel draining on %s: %s", candidate.name, error)
            return False
        return True

    def advertise(self, now: int) -> None:
        """The Defrag ad, into the collector."""
        self.next_ad = self.monotonic() + max(self.settings.update_interval, 1)
        ad = defrag_ad(self.state, self.settings.name, self.settings.interval, now)
        for name, value in self.contact.items():
            ad[name] = value
        ad["DaemonStartTime"] = self.state.started
        self.collector.update([ad], now)
