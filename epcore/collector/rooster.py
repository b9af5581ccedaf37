"""The rooster (condor_rooster): wakes sleeping machines that work is waiting for.

It runs beside the collector when DAEMON_LIST names ROOSTER (it only needs to query the
collector, as HTCondor's may run anywhere that can). Every ROOSTER_INTERVAL seconds (0,
which the parameter table's minimum also makes of a negative value: never) it asks the
collector for the machine ads ROOSTER_UNHIBERNATE selects (``Offline && Unhibernate``: a
sleeping machine whose offline ad a job matched), orders them by ROOSTER_UNHIBERNATE_RANK
(higher first; evaluated with a rank ad as MY and the machine's ad as TARGET), and runs
ROOSTER_WAKEUP_CMD once per machine (by ``Machine``) with the machine's ad on standard
input, until ROOSTER_MAX_UNHIBERNATE commands (0: no limit) succeeded. The command's output
goes to the RoosterLog. epcore's waker is ``ep power wake -i``; HTCondor's default names
``$(BIN)/condor_power``.
"""

from __future__ import annotations

import logging
import shlex
import subprocess
import time
from collections.abc import Callable, Sequence

from epcore.classad import ClassAd, ClassAdSyntaxError, format_old, parse_expr, rank
from epcore.collector.collector_policy import MACHINE_TYPE
from epcore.config import Config
from epcore.errors import PoolError
from epcore.interfaces import AdQuery
from epcore.runtime.loop import LoopHandle, TimedService

DEFAULT_UNHIBERNATE = "Offline && Unhibernate"
#: How long one wake-up command may run (the loop waits for it).
COMMAND_TIMEOUT = 30.0

#: Runs a command with ``stdin``: its exit code and output.
Runner = Callable[[Sequence[str], str], tuple[int, str]]


def run_command(argv: Sequence[str], stdin: str) -> tuple[int, str]:
    """Run ``argv`` with ``stdin`` to its end; OSError when it cannot start or hangs."""
    try:
        done = subprocess.run(
            list(argv),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise OSError(f"{argv[0]} ran for more than {COMMAND_TIMEOUT:.0f} s") from error
    return done.returncode, done.stdout + done.stderr


def wakeup_command(text: str) -> list[str]:
    """ROOSTER_WAKEUP_CMD as arguments: HTCondor's V2 syntax (the whole value in double
    quotes, words split as a shell splits them); PoolError when it is empty or unbalanced."""
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] == '"':
        stripped = stripped[1:-1]
    try:
        words = shlex.split(stripped)
    except ValueError as error:
        raise PoolError(f"ROOSTER_WAKEUP_CMD {text!r} is invalid: {error}") from None
    if not words:
        raise PoolError("ROOSTER_WAKEUP_CMD is empty")
    return words


class Rooster(TimedService):
    """The rooster (module docstring) as a service of the loop."""

    name = "rooster"

    def __init__(
        self,
        collector: AdQuery,
        *,
        config: Callable[[], Config],
        log: logging.Logger,
        clock: Callable[[], float],
        monotonic: Callable[[], float] = time.monotonic,
        run: Runner = run_command,
    ) -> None:
        super().__init__(config, log=log, clock=clock, monotonic=monotonic)
        self.collector = collector
        self.run = run
        self.next_poll = 0.0
        #: Every machine (by ``Machine``) a command was run for, in order, for tests.
        self.woken: list[str] = []

    def _interval(self) -> float:
        return float(self.config.get_int("ROOSTER_INTERVAL", 300))

    def open(self, loop: LoopHandle) -> None:
        interval = self._interval()
        self.next_poll = self.monotonic() + max(interval, 0.0)

    def timeout(self) -> float:
        if self._interval() <= 0:
            return 3600.0
        return max(self.next_poll - self.monotonic(), 0.0)

    def tick(self) -> None:
        interval = self._interval()
        if interval <= 0 or self.monotonic() < self.next_poll:
            return
        self.next_poll = self.monotonic() + interval
        try:
            self.poll(self.clock())
        except PoolError as error:
            self.log.error("rooster: %s", error)

    def poll(self, now: float) -> list[str]:
        """One cycle; the machines a command succeeded for. PoolError for a bad knob."""
        config = self.config
        constraint = config.get("ROOSTER_UNHIBERNATE") or DEFAULT_UNHIBERNATE
        try:
            check = parse_expr(constraint, source="ROOSTER_UNHIBERNATE")
        except ClassAdSyntaxError as error:
            raise PoolError(f"ROOSTER_UNHIBERNATE is invalid: {error}") from None
        command = wakeup_command(config.get("ROOSTER_WAKEUP_CMD") or "")
        limit = config.get_int("ROOSTER_MAX_UNHIBERNATE", 0, minimum=0)
        ads = self.collector.query(MACHINE_TYPE, constraint, now=now)
        ranked = self._ranked(ads, config.get("ROOSTER_UNHIBERNATE_RANK"))
        tried: set[str] = set()
        woken: list[str] = []
        for ad in ranked:
            machine = ad.evaluate("Machine")
            key = machine if isinstance(machine, str) else str(ad.evaluate("Name"))
            if key in tried:
                continue
            tried.add(key)
            # The ad may have changed since the query (HTCondor checks again, too).
            if check.evaluate(ad) is not True:
                continue
            if self._wake(key, command, ad):
                woken.append(key)
                if limit and len(woken) >= limit:
                    break
        return woken

    def _ranked(self, ads: list[ClassAd], rank_text: str | None) -> list[ClassAd]:
        if not rank_text or not rank_text.strip():
            return ads
        rank_ad = ClassAd()
        try:
            rank_ad["Rank"] = parse_expr(rank_text, source="ROOSTER_UNHIBERNATE_RANK")
        except ClassAdSyntaxError as error:
            self.log.error("ROOSTER_UNHIBERNATE_RANK is invalid (%s): not ranking", error)
            return ads
        return sorted(ads, key=lambda ad: -rank(rank_ad, ad))

    def _wake(self, machine: str, command: list[str], ad: ClassAd) -> bool:
        self.log.info("Sending wake request for %s: %s", machine, shlex.join(command))
        try:
            code, output = self.run(command, format_old(ad))
        except OSError as error:
            self.log.error("cannot run ROOSTER_WAKEUP_CMD for %s: %s", machine, error)
            return False
        for line in output.splitlines():
            self.log.info("%s: %s", command[0], line)
        if code != 0:
            self.log.error("ROOSTER_WAKEUP_CMD for %s exited with %d", machine, code)
            return False
        self.woken.append(machine)
        return True
