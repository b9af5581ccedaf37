"""The real file system behind :class:`~epcore.pool.submit.model.SubmitHost`."""

from __future__ import annotations

import glob
import os
import stat

import attrs


@attrs.frozen
class LocalSubmitHost:
    """Reads files and expands wildcards on this machine."""

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
