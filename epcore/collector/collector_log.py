"""COLLECTOR_PERSISTENT_AD_LOG: the file that keeps absent and offline ads across restarts.

The format is ours (HTCondor's is a transaction log we have no need to share): a header line
naming the format, then one ad per line in new ClassAd syntax, which never spans lines
because string literals escape their newlines. Writes go to a temporary file in the same
directory that replaces the old one, so a crash leaves either the old or the new file whole.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from epcore.classad import ClassAd, parse_ad
from epcore.errors import ClassAdSyntaxError, PoolError

HEADER: Final = "# epcore collector persistent ads, format 1"


def write_persistent_ads(path: Path, ads: Iterable[ClassAd]) -> None:
    """Replace ``path`` atomically with these ads (mode 0600); PoolError naming the file when
    it cannot be written."""
    lines = [HEADER, *(str(ad) for ad in ads)]
    text = "\n".join(lines) + "\n"
    directory = path.parent
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    except OSError as error:
        raise PoolError(f"{path}: cannot write the persistent ad log: {error}") from error
    try:
        with os.fdopen(handle, "w", encoding="utf-8", errors="surrogateescape") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
        _sync_directory(directory)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise PoolError(f"{path}: cannot write the persistent ad log: {error}") from error


def _sync_directory(directory: Path) -> None:
    # The rename is durable only once the directory entry itself reaches the disk.
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def read_persistent_ads(path: Path) -> list[ClassAd]:
    """The ads stored in ``path``; none when the file does not exist yet. PoolError naming the
    file (and the line) when it cannot be read or is not such a log."""
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return []
    except OSError as error:
        raise PoolError(f"{path}: cannot read the persistent ad log: {error}") from error
    return parse_persistent_ads(text, str(path))


def parse_persistent_ads(text: str, source: str) -> list[ClassAd]:
    """The ads of a persistent ad log's text; PoolError naming ``source`` and the line."""
    lines = text.split("\n")
    if lines[0] != HEADER:
        raise PoolError(f"{source}, line 1: not an epcore persistent ad log (header {HEADER!r})")
    if lines[-1] != "":
        raise PoolError(f"{source}, line {len(lines)}: the log ends in a cut-off line")
    ads: list[ClassAd] = []
    for number, line in enumerate(lines[1:-1], start=2):
        if not line.strip():
            raise PoolError(f"{source}, line {number}: empty line where an ad should be")
        if not line.lstrip().startswith("["):
            raise PoolError(f"{source}, line {number}: not a ClassAd in new syntax")
        try:
            ads.append(parse_ad(line, source=source))
        except ClassAdSyntaxError as error:
            raise PoolError(f"{source}, line {number}: damaged ad: {error.reason}") from error
    return ads
