"""A clock for tests and simulations: it moves only when told to.

Kept apart from :mod:`epcore.testing.fixtures` so that code that runs outside pytest (the
policy simulator behind ``ep simulate``, which a daemon process imports with the ``ep``
command group) can use it without importing pytest.
"""

from __future__ import annotations

import math

import attrs

#: Where a FakeClock starts: 2023-11-14 22:13:20 UTC, a Tuesday.
DEFAULT_START = 1_700_000_000.0


@attrs.define
class FakeClock:
    """A clock that only moves when told to.

    ``now()`` is wall-clock time in seconds since the epoch; ``monotonic()`` never goes back and
    is what timers should measure intervals with. ``advance`` moves both; ``set_time`` moves only
    the wall clock (as when the machine's clock is reset), which is how a test checks that
    intervals are not measured with the wall clock.
    """

    start: float = DEFAULT_START
    _wall_offset: float = attrs.field(default=0.0, init=False)
    _elapsed: float = attrs.field(default=0.0, init=False)

    def now(self) -> float:
        """Wall-clock time, in seconds since the epoch."""
        return self.start + self._wall_offset + self._elapsed

    def monotonic(self) -> float:
        """Seconds since the clock was made; never decreases."""
        return self._elapsed

    def advance(self, seconds: float) -> float:
        """Let ``seconds`` (>= 0) pass; returns the new ``now()``."""
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"a clock cannot advance by {seconds!r} seconds")
        self._elapsed += seconds
        return self.now()

    def sleep(self, seconds: float) -> None:
        """Like ``time.sleep``, without the waiting: the clock advances at once."""
        self.advance(seconds)

    def set_time(self, when: float) -> None:
        """Set the wall clock to ``when`` (epoch seconds); ``monotonic()`` is not affected."""
        if not math.isfinite(when):
            raise ValueError(f"{when!r} is not a time")
        self._wall_offset = when - self.start - self._elapsed


__all__ = ["DEFAULT_START", "FakeClock"]
