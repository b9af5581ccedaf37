"""What the startd's programs that its loop watches share: cron programs
(:mod:`epcore.startd.cron_process`) and fetch-work hooks (:mod:`epcore.startd.hook_process`).

Each runs in a session of its own (its process group is its pid), and its pipes are
non-blocking and registered in the loop's selector, so nothing waits for it. Pipes registered
in the selector are closed in every starter the startd forks (``StartdLoop.close_in_child``).
"""

from __future__ import annotations

import contextlib
import os
import selectors
from typing import IO, Final

#: The most read from a pipe at once.
CHUNK: Final = 65536


def register(
    selector: selectors.BaseSelector, stream: IO[bytes], events: int, owner: object
) -> None:
    """Make ``stream`` non-blocking and register it; a closed connection still registered on
    its descriptor number (a starter's, closed this turn and swept only at the turn's end)
    makes way for it."""
    os.set_blocking(stream.fileno(), False)
    stale = selector.get_map().get(stream.fileno())
    if stale is not None and getattr(stale.fileobj, "closed", False) is True:
        selector.unregister(stale.fileobj)
    selector.register(stream, events, owner)


def close(selector: selectors.BaseSelector | None, stream: IO[bytes]) -> None:
    """Unregister and close ``stream`` (either may have happened already)."""
    if selector is not None:
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(stream)
    with contextlib.suppress(OSError):
        stream.close()


def read_chunk(stream: IO[bytes]) -> bytes | None:
    """One chunk of what ``stream`` holds; None when it holds nothing now, ``b""`` at its end
    (or when it cannot be read any more)."""
    try:
        return os.read(stream.fileno(), CHUNK)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def signal_group(pid: int, signum: int) -> None:
    """Send ``signum`` to the process group of the session leader ``pid``."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def leader_ended(pid: int) -> bool:
    """Whether the child ``pid`` has ended, without reaping it: WNOWAIT keeps it a zombie, so
    its pid (its group's id) cannot be reused before the group is killed."""
    try:
        found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return found is not None and found.si_pid == pid
