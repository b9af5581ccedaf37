"""The limits of a daemon's socket, read from the knobs, and the throttled log."""

from __future__ import annotations

import logging

import pytest

from epcore.config import Config
from epcore.runtime.connection_limits import ConnectionLimits, ThrottledLog


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_limits_are_read_from_the_pool_knobs_with_their_minimums() -> None:
    """ConnectionLimits.from_config reads the POOL_* knobs, and a value below a knob's
    minimum is raised to it."""
    config = Config.from_text(
        "POOL_MAX_REQUEST_SIZE = 2048\nPOOL_MAX_CONNECTIONS_PER_USER = 0\n"
        "POOL_CLIENT_TIMEOUT = 7.5\nPOOL_MAX_UNSENT_OUTPUT = 10\n"
    )
    limits = ConnectionLimits.from_config(config)
    assert limits.max_request == 2048
    assert limits.max_connections_per_user == 1
    assert limits.client_timeout == 7.5
    assert limits.max_unsent == 1024
    assert limits.max_connections == ConnectionLimits().max_connections
    assert ConnectionLimits.from_config(Config.from_text("")) == ConnectionLimits()


def test_throttled_log_says_once_per_period_how_many_it_held_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Repeated warnings of one kind give one line per period, the next one counting those
    held back; another kind is not held back by the first."""
    clock = Clock()
    log = logging.getLogger("test_connections.throttled")
    throttled = ThrottledLog(log, period=10.0, monotonic=clock)
    with caplog.at_level(logging.WARNING, logger=log.name):
        for _ in range(1000):
            throttled.warning("flood", "refused %d", 1)
        throttled.warning("other", "something else")
        clock.now += 11
        throttled.warning("flood", "refused %d", 2)
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        "refused 1",
        "something else",
        "refused 2 (999 more like it in the last 10 s)",
    ]
