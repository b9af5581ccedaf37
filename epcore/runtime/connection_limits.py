"""How much a daemon's socket lets its connections hold, and log lines that cannot flood.

:class:`ConnectionLimits` are the bounds :class:`~epcore.runtime.connections.RequestServer`
keeps (epcore's own knobs: POOL_* for the pool's socket, STARTD_CONTROL_* for the startd's);
:class:`ThrottledLog` lets at most one warning of a kind through per period, so that no flood
of connections or requests can flood the log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final

import attrs

from epcore.config import Config

#: The least time between two log lines of the same kind, in seconds.
LOG_PERIOD: Final = 10.0


@attrs.frozen
class ConnectionLimits:
    """How much a socket's connections may hold (module docstring); sizes in bytes."""

    max_request: int = 256 * 1024
    max_unread: int = 32 * 1024 * 1024
    max_unsent: int = 1024 * 1024
    max_connections: int = 512
    max_connections_per_user: int = 32
    client_timeout: float = 60.0

    @classmethod
    def from_config(cls, config: Config, prefix: str = "POOL") -> ConnectionLimits:
        """The limits set by ``<prefix>_MAX_REQUEST_SIZE``, ``<prefix>_MAX_UNREAD_INPUT``,
        ``<prefix>_MAX_UNSENT_OUTPUT``, ``<prefix>_MAX_CONNECTIONS``,
        ``<prefix>_MAX_CONNECTIONS_PER_USER`` and ``<prefix>_CLIENT_TIMEOUT``."""
        default = cls()
        return cls(
            max_request=config.get_int(
                f"{prefix}_MAX_REQUEST_SIZE", default.max_request, minimum=1024
            ),
            max_unread=config.get_int(
                f"{prefix}_MAX_UNREAD_INPUT", default.max_unread, minimum=1024
            ),
            max_unsent=config.get_int(
                f"{prefix}_MAX_UNSENT_OUTPUT", default.max_unsent, minimum=1024
            ),
            max_connections=config.get_int(
                f"{prefix}_MAX_CONNECTIONS", default.max_connections, minimum=1
            ),
            max_connections_per_user=config.get_int(
                f"{prefix}_MAX_CONNECTIONS_PER_USER", default.max_connections_per_user, minimum=1
            ),
            client_timeout=config.get_float(
                f"{prefix}_CLIENT_TIMEOUT", default.client_timeout, minimum=1.0
            ),
        )

    def knob(self, field: str, prefix: str) -> str:
        """The knob that sets ``field`` for a socket whose knobs start with ``prefix``."""
        names = {
            "max_request": "MAX_REQUEST_SIZE",
            "max_unread": "MAX_UNREAD_INPUT",
            "max_unsent": "MAX_UNSENT_OUTPUT",
            "max_connections": "MAX_CONNECTIONS",
            "max_connections_per_user": "MAX_CONNECTIONS_PER_USER",
            "client_timeout": "CLIENT_TIMEOUT",
        }
        return f"{prefix}_{names[field]}"


class ThrottledLog:
    """A logger's warnings, at most one per kind per ``period`` seconds: a flood of the same
    event costs one line per period, which says how many were held back."""

    def __init__(
        self,
        log: logging.Logger,
        period: float = LOG_PERIOD,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = log
        self.period = period
        self.monotonic = monotonic
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def warning(self, kind: str, text: str, *args: object, exc_info: bool = False) -> None:
        """Log ``text % args`` unless a line of ``kind`` went out less than ``period`` ago
        (``exc_info``: with the exception being handled)."""
        now = self.monotonic()
        last = self._last.get(kind)
        if last is not None and now - last < self.period:
            self._held[kind] = self._held.get(kind, 0) + 1
            return
        if len(self._last) > 1000:
            self._last.clear()  # kinds name users; a long-lived daemon forgets old ones
        self._last[kind] = now
        held = self._held.pop(kind, 0)
        suffix = f" ({held} more like it in the last {self.period:.0f} s)" if held else ""
        self.log.warning(text + suffix, *args, exc_info=exc_info)
