"""wait_while: a deadline on a condition variable."""

from __future__ import annotations

import threading

from epcore.runtime.waiting import wait_while


def test_it_returns_true_once_the_work_is_done_by_another_thread() -> None:
    """A worker that clears the busy flag (and notifies) ends the wait with True."""
    condition = threading.Condition()
    busy = [True]

    def worker() -> None:
        with condition:
            busy[0] = False
            condition.notify_all()

    threading.Timer(0.05, worker).start()
    assert wait_while(condition, lambda: busy[0], 5.0) is True


def test_it_returns_false_when_the_deadline_passes() -> None:
    """Work that never ends makes the wait give up with False after its timeout."""
    assert wait_while(threading.Condition(), lambda: True, 0.1) is False


def test_a_worker_that_forgets_to_notify_is_still_seen() -> None:
    """The wait wakes on its own (every 50 ms), so a flag cleared without a notify ends it."""
    condition = threading.Condition()
    busy = [True]
    threading.Timer(0.05, lambda: busy.__setitem__(0, False)).start()
    assert wait_while(condition, lambda: busy[0], 5.0) is True
