"""The real file system behind :class:`~epcore.submit.model.SubmitHost`."""

from __future__ import annotations

import errno
import glob
import os
import stat

import attrs


@attrs.frozen
class LocalSubmitHost:
    """Reads files and expands wildcards on this machine, as the user running it."""

    #: Logs found writable already (many jobs of a submission share one log).
    _writable_logs: set[str] = attrs.field(factory=set, init=False, eq=False, repr=False)

    def read_text(self, path: str) -> str:
        """The text of ``path`` (undecodable bytes replaced); OSError when unreadable."""
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def glob(self, pattern: str) -> list[str]:
        """Paths matching ``pattern``; like the shell, names starting with a dot are hidden."""
        return glob.glob(pattern)

    def is_dir(self, path: str) -> bool:
        """True when ``path`` is a directory (following links)."""
        return os.path.isdir(path)

    def file_size(self, path: str) -> int | None:
        """The size of the regular file ``path``, or None when it is missing or not a file."""
        try:
            info = os.stat(path)
        except OSError:
            return None
        return info.st_size if stat.S_ISREG(info.st_mode) else None

    def directory_problem(self, path: str) -> str | None:
        """Why ``path`` cannot be entered (condor_submit's access(X_OK) of the Iwd), or None."""
        try:
            info = os.stat(path)
        except OSError as error:
            return error.strerror or str(error)
        if not stat.S_ISDIR(info.st_mode):
            return os.strerror(errno.ENOTDIR)
        if not os.access(path, os.X_OK):
            return os.strerror(errno.EACCES)
        return None

    def log_problem(self, path: str) -> str | None:
        """Why ``path`` cannot be opened for appending (made when missing, as condor_submit
        does), or None. It is opened without blocking: a FIFO nobody reads is refused, not
        waited for."""
        if path in self._writable_logs:
            return None
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY
        try:
            fd = os.open(path, flags, 0o664)
        except OSError as error:
            return error.strerror or str(error)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return "not a regular file"
        finally:
            os.close(fd)
        self._writable_logs.add(path)
        return None
