"""Job images: pulled when missing, and the pulled ones kept as a least-recently-used cache.

DOCKER_IMAGE_CACHE_SIZE (8 by default) is how many of the images *this execution point
pulled* stay on the machine; images an admin put there by other means are never removed. The
cache's record is a small file in SPOOL (``docker_image_cache``: one ``<last use> <bytes>
<image>`` line per pulled image), changed by every starter under the exclusive lock of
``docker_image_cache.lock`` and replaced whole, so that jobs starting at once agree on what was
used last and a reader needs no lock; the sizes in it are what DockerCachedImageSizeMb adds up,
without asking dockerd. When an image leaves the cache it is removed
from dockerd unless a container still uses it; it is then tried again at the next eviction.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Iterator

import docker
import docker.errors
from docker.utils import parse_repository_tag

from epcore.api import HoldCode
from epcore.errors import JobSetupError
from epcore_docker.cache_record import (
    CACHE_FILE,
    CacheEntry,
    plan_eviction,
    read_entries,
    read_record,
    write_entries,
)
from epcore_docker.container import DOCKER_ERRORS

__all__ = [
    "CACHE_FILE",
    "CacheEntry",
    "ImageCache",
    "plan_eviction",
    "read_entries",
    "write_entries",
]


class ImageCache:
    """The record of pulled images in ``spool`` (see the module docstring)."""

    def __init__(self, spool: str, size: int, log: logging.Logger) -> None:
        self.path = os.path.join(spool, CACHE_FILE)
        self.size = size
        self.log = log

    def _read(self) -> list[CacheEntry]:
        return read_record(self.path)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[list[CacheEntry]]:
        """The entries, under the exclusive lock of a file of its own: the record itself is
        replaced whole (:meth:`_rewrite`), so that a reader needs no lock."""
        fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield self._read()
        finally:
            os.close(fd)

    def _rewrite(self, entries: list[CacheEntry]) -> None:
        temporary = f"{self.path}.{os.getpid()}"
        with open(temporary, "w", encoding="utf-8") as writer:
            writer.write(write_entries(entries))
        os.replace(temporary, self.path)

    def ensure(self, api: docker.APIClient, image: str, now: float) -> None:
        """Make ``image`` available: use it when present, pull it when not; then note its use
        and evict what falls out of the cache. JobSetupError (hold code 6) when it cannot
        be pulled, with dockerd's reason."""
        with self._locked() as entries:
            known = {entry.image: entry for entry in entries}
            found = _inspect(api, image)
            if found is None:
                self._pull(api, image)
                found = _inspect(api, image)
                if found is None:
                    message = f"Cannot pull docker image {image}: dockerd does not list it"
                    raise JobSetupError(message, HoldCode.FAILED_TO_CREATE_PROCESS)
                known[image] = CacheEntry(image, now)
            if image in known:
                size = found.get("Size")
                entries = [e for e in entries if e.image != image]
                entries.append(CacheEntry(image, now, size if isinstance(size, int) else 0))
            keep, evict = plan_eviction(entries, self.size)
            for name in evict:
                if not self._remove(api, name):
                    keep.append(next(e for e in entries if e.image == name))
            self._rewrite(keep)

    def _pull(self, api: docker.APIClient, image: str) -> None:
        repository, tag = parse_repository_tag(image)
        self.log.info("pulling docker image %s", image)
        try:
            api.pull(repository, tag=tag or "latest")
        except DOCKER_ERRORS as error:
            reason = getattr(error, "explanation", None) or str(error)
            message = f"Cannot pull docker image {image}: {reason}"
            raise JobSetupError(message, HoldCode.FAILED_TO_CREATE_PROCESS) from error

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


def _inspect(api: docker.APIClient, image: str) -> dict[str, object] | None:
    """dockerd's description of ``image``; None when it does not have it."""
    try:
        found: dict[str, object] = api.inspect_image(image)  # type: ignore[no-untyped-call]
    except docker.errors.NotFound:  # ImageNotFound is a NotFound
        return None
    return found
