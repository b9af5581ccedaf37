"""Waiting on a condition variable for a deadline: the worker pools' ``wait`` helpers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


def wait_while(condition: threading.Condition, busy: Callable[[], bool], timeout: float) -> bool:
    """Whether ``busy()`` turned false within ``timeout`` seconds. ``busy`` is read with
    ``condition`` held; the wait wakes at least every 50 ms, so a notify that a worker forgets
    costs no more than that."""
    deadline = time.monotonic() + timeout
    with condition:
        while busy():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            condition.wait(min(left, 0.05))
    return True
