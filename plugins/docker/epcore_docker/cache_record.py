"""The record of the images the docker plugin pulled: one line per image, replaced whole.

Kept apart from :mod:`epcore_docker.images` so that reading it (the startd's
DockerCachedImageSizeMb cron job) imports neither the docker SDK nor anything of a
connection to dockerd.
"""

from __future__ import annotations

import os

import attrs

CACHE_FILE = "docker_image_cache"


@attrs.frozen
class CacheEntry:
    """A pulled image, when a job last used it (epoch seconds) and its size in bytes."""

    image: str
    last_used: float
    size: int = 0


def read_entries(text: str) -> list[CacheEntry]:
    """The cache file's entries; a line that is not ``<number> [<bytes>] <image>`` is skipped
    (the file is epcore's own, and a torn line must not stop jobs)."""
    entries = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) not in (2, 3):
            continue
        try:
            used = float(fields[0])
            size = int(fields[1]) if len(fields) == 3 else 0
        except ValueError:
            continue
        entries.append(CacheEntry(fields[-1], used, max(size, 0)))
    return entries


def write_entries(entries: list[CacheEntry]) -> str:
    return "".join(f"{e.last_used:.3f} {e.size} {e.image}\n" for e in entries)


def plan_eviction(entries: list[CacheEntry], size: int) -> tuple[list[CacheEntry], list[str]]:
    """The entries to keep (the ``size`` used most recently) and the images to evict."""
    ordered = sorted(entries, key=lambda e: e.last_used, reverse=True)
    return ordered[:size], [entry.image for entry in ordered[size:]]


def read_record(path: str) -> list[CacheEntry]:
    """The entries of the record at ``path`` (none when there is no record yet)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as reader:
            return read_entries(reader.read())
    except FileNotFoundError:
        return []


def cached_size_mb(spool: str) -> int:
    """Megabytes the images recorded in ``spool`` take, read without a lock: the record is
    replaced whole, and a reader in a startd's cron thread must hold nothing a forked child
    could inherit."""
    entries = read_record(os.path.join(spool, CACHE_FILE))
    return sum(entry.size for entry in entries) // (1024 * 1024)
