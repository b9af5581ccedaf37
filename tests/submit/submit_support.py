"""Fixtures for the submit-language tests: an in-memory SubmitHost and a one-call builder."""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Callable, Mapping

import attrs
import pytest

from epcore.config import Config, MemoryHost
from epcore.submit import SubmitContext, SubmittedCluster, build_jobs, parse_submit

SUBMIT_DIR = "/home/alice/work"
NOW = 1_700_000_000
CONFIG_TEXT = "UID_DOMAIN = example.org\nFILESYSTEM_DOMAIN = example.org\n"


@attrs.define
class MemorySubmitHost:
    """Files (path -> text), directories and closed paths held in memory."""

    files: dict[str, str] = attrs.field(factory=dict)
    dirs: set[str] = attrs.field(factory=set)
    #: Directories and logs the submitter may not enter or write.
    closed: set[str] = attrs.field(factory=set)

    def read_text(self, path: str) -> str:
        if path not in self.files:
            raise FileNotFoundError(2, "No such file or directory", path)
        return self.files[path]

    def glob(self, pattern: str) -> list[str]:
        names = [*self.files, *self.dirs]
        return [name for name in names if fnmatch.fnmatchcase(name, pattern)]

    def is_dir(self, path: str) -> bool:
        return path in self.dirs

    def file_size(self, path: str) -> int | None:
        return len(self.files[path].encode()) if path in self.files else None

    def directory_problem(self, path: str) -> str | None:
        if path in self.closed:
            return "Permission denied"
        return None if path in self.dirs else "No such file or directory"

    def log_problem(self, path: str) -> str | None:
        return "Permission denied" if path in self.closed else None


Builder = Callable[..., SubmittedCluster]


@pytest.fixture(scope="session")
def submit_config() -> Config:
    """A configuration with a known UID_DOMAIN, read without touching the real machine."""
    return Config.from_text(CONFIG_TEXT, host=MemoryHost())


def make_host(
    files: Mapping[str, str] | None = None, dirs: tuple[str, ...] = ()
) -> MemorySubmitHost:
    """A host holding ``/bin/true``, ``/bin/sh``, the directories SUBMIT_DIR, its ``run1``,
    ``/data`` and ``/tmp``, and ``files`` and ``dirs`` (relative to SUBMIT_DIR)."""
    held = {"/bin/true": "x" * 2048, "/bin/sh": "y"}
    for name, text in (files or {}).items():
        held[posixpath.join(SUBMIT_DIR, name)] = text
    held_dirs = {SUBMIT_DIR, f"{SUBMIT_DIR}/run1", "/data", "/tmp"}
    return MemorySubmitHost(held, held_dirs | {posixpath.join(SUBMIT_DIR, d) for d in dirs})


@pytest.fixture
def build(submit_config: Config) -> Builder:
    """Parse and build a submit text in one call (owner alice, cluster 12)."""

    def run(
        text: str,
        *,
        files: Mapping[str, str] | None = None,
        dirs: tuple[str, ...] = (),
        extra: tuple[tuple[str, str], ...] = (),
        environ: Mapping[str, str] | None = None,
        config: Config | None = None,
    ) -> SubmittedCluster:
        context = SubmitContext(
            owner="alice",
            submit_dir=SUBMIT_DIR,
            now=NOW,
            config=config or submit_config,
            extra_macros=extra,
            environ=dict(environ or {}),
        )
        description = parse_submit(text, source="job.sub")
        return build_jobs(description, context, make_host(files, dirs), cluster_id=12)

    return run
