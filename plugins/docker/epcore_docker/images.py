"""Job images: pulled when missing, and the pulled ones kept as a least-recently-used cache.

DOCKER_IMAGE_CACHE_SIZE (8 by default) is how many of the images *this execution point
pulled* stay on the machine; images an admin put there by other means are never removed. The
cache's record is a small file in SPOOL (``docker_image_cache``: one ``<last use> <image>``
line per pulled image), shared by every starter under an exclusive lock, so that jobs
starting at once agree on what was used last. When an image leaves the cache it is removed
from dockerd unless a container still uses it; it is then tried again at the next eviction.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Iterator

import attrs
import docker
import docker.errors
from docker.utils import parse_repository_tag

from epcore.errors import JobSetupError
from epcore_docker.container import DOCKER_ERRORS

#: HoldReasonCode 6: the job could not be started (its image could not be had).
HOLD_CANNOT_START = 6
CACHE_FILE = "docker_image_cache"


@attrs.frozen
class CacheEntry:
    """A pulled image and when a job last used it (epoch seconds)."""

    image: str
    last_used: float


def read_entries(text: str) -> list[CacheEntry]:
    """The cache file's entries; a line that is not ``<number> <image>`` is skipped (the
    file is epcore's own, and a torn line must not stop jobs)."""
    entries = []
    for line in text.splitlines():
        stamp, _, image = line.strip().partition(" ")
        try:
            used = float(stamp)
        except ValueError:
            continue
        if image:
            entries.append(CacheEntry(image.strip(), used))
    return entries


def write_entries(entries: list[CacheEntry]) -> str:
    return "".join(f"{entry.last_used:.3f} {entry.image}\n" for entry in entries)


def plan_eviction(entries: list[CacheEntry], size: int) -> tuple[list[CacheEntry], list[str]]:
    """The entries to keep (the ``size`` used most recently) and the images to evict."""
    ordered = sorted(entries, key=lambda e: e.last_used, reverse=True)
    return ordered[:size], [entry.image for entry in ordered[size:]]


class ImageCache:
    """The record of pulled images in ``spool`` (see the module docstring)."""

    def __init__(self, spool: str, size: int, log: logging.Logger) -> None:
        self.path = os.path.join(spool, CACHE_FILE)
        self.size = size
        self.log = log

    @contextlib.contextmanager
    def _locked(self) -> Iterator[tuple[int, list[CacheEntry]]]:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with os.fdopen(os.dup(fd), "r", encoding="utf-8", errors="replace") as reader:
                text = reader.read()
            yield fd, read_entries(text)
        finally:
            os.close(fd)

    @staticmethod
    def _rewrite(fd: int, entries: list[CacheEntry]) -> None:
        data = write_entries(entries).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)

    def ensure(self, api: docker.APIClient, image: str, now: float) -> None:
        """Make ``image`` available: use it when present, pull it when not; then note its use
        and evict what falls out of the cache. JobSetupError (hold code 6) when it cannot
        be pulled, with dockerd's reason."""
        with self._locked() as (fd, entries):
            known = {entry.image for entry in entries}
            present = _present(api, image)
            if not present:
                self._pull(api, image)
                known.add(image)
            if image in known:
                entries = [e for e in entries if e.image != image]
                entries.append(CacheEntry(image, now))
            keep, evict = plan_eviction(entries, self.size)
            for name in evict:
                if not self._remove(api, name):
                    keep.append(next(e for e in entries if e.image == name))
            self._rewrite(fd, keep)

    def size_mb(self, api: docker.APIClient) -> int:
        """Megabytes the pulled images that are still on dockerd take (DockerCachedImageSizeMb:
        images the plugin did not pull are not counted)."""
        with self._locked() as (_fd, entries):
            names = [entry.image for entry in entries]
        total = 0
        for name in names:
            try:
                size = api.inspect_image(name).get("Size")  # type: ignore[no-untyped-call]
            except docker.errors.NotFound:
                continue
            if isinstance(size, int):
                total += size
        return total // (1024 * 1024)

    def _pull(self, api: docker.APIClient, image: str) -> None:
        repository, tag = parse_repository_tag(image)
        self.log.info("pulling docker image %s", image)
        try:
            api.pull(repository, tag=tag or "latest")
        except DOCKER_ERRORS as error:
            reason = getattr(error, "explanation", None) or str(error)
            message = f"Cannot pull docker image {image}: {reason}"
            raise JobSetupError(message, HOLD_CANNOT_START) from error
        if not _present(api, image):
            message = f"Cannot pull docker image {image}: dockerd pulled it but does not list it"
            raise JobSetupError(message, HOLD_CANNOT_START)

    def _remove(self, api: docker.APIClient, image: str) -> bool:
        """Remove an evicted image; False when it is still in use (kept for later)."""
        try:
            api.remove_image(image)
        except docker.errors.NotFound:
            return True
        except docker.errors.APIError as error:
            if error.status_code == 409:
                self.log.info("docker image %s is in use; evicting it later", image)
                return False
            self.log.warning("cannot remove docker image %s: %s", image, error)
            return False
        except DOCKER_ERRORS as error:
            self.log.warning("cannot remove docker image %s: %s", image, error)
            return False
        self.log.info("removed docker image %s (DOCKER_IMAGE_CACHE_SIZE %d)", image, self.size)
        return True


def _present(api: docker.APIClient, image: str) -> bool:
    try:
        api.inspect_image(image)  # type: ignore[no-untyped-call]  # untyped in types-docker
    except docker.errors.ImageNotFound:
        return False
    except docker.errors.NotFound:
        return False
    return True
