"""Opening a file a job names (its event log, input, output, error) without ever blocking.

Opening a FIFO blocks until its other end is opened too, and opening some devices may wait
as well; a user who names such a file for a job would hold the starter (or the job's setup,
which the starter waits for) indefinitely. Every such file is opened with ``O_NONBLOCK``,
checked with ``fstat`` to be a regular file or a character device (``/dev/null`` is a
common output), and only then made blocking again for the writes and reads that follow.
"""

from __future__ import annotations

import errno
import os
import stat


class NotARegularFile(OSError):
    """A job's file that is a FIFO, socket, directory or block device; names the file."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(errno.EINVAL, f"it is a {kind}, not a regular file", path)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISBLK(mode):
        return "block device"
    return "special file"


def open_user_file(path: str, flags: int, mode: int = 0o666) -> int:
    """Open ``path`` with ``flags`` without blocking; a blocking descriptor of a regular file
    or a character device. Raises OSError, :class:`NotARegularFile` for anything else (a FIFO
    no process reads included)."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, mode)
    except OSError as error:
        if error.errno == errno.ENXIO:
            # What a write-only, non-blocking open of a FIFO without a reader (or of a
            # socket) fails with.
            raise NotARegularFile(path, "FIFO or socket") from error
        raise
    try:
        kind = os.fstat(fd).st_mode
        if not (stat.S_ISREG(kind) or stat.S_ISCHR(kind)):
            raise NotARegularFile(path, _kind(kind))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
