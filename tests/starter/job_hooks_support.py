"""Helpers shared by the job hook tests: hook scripts, runners, a sample job, process checks."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from epcore.classad import ClassAd, parse_ad
from epcore.config import Config, MemoryHost
from epcore.starter.hooks import HookRunner

ENVIRONMENT = (("PATH", "/usr/bin:/bin"),)
LOGGER = "test.starterlog"


def config(text: str) -> Config:
    """A starter configuration read from ``text``."""
    return Config.from_text(text, host=MemoryHost(), subsystem="STARTER")


def write_hook(directory: Path, name: str, body: str, mode: int = 0o755) -> str:
    """A /bin/sh hook script with ``body``, made with ``mode``; returns its path."""
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(mode)
    return str(path)


def runner(
    cwd: Path,
    timeout: float = 30.0,
    uid: int | None = None,
    gid: int | None = None,
    groups: tuple[int, ...] = (),
) -> HookRunner:
    """A runner in ``cwd`` with a PATH-only environment, logging to LOGGER."""
    return HookRunner(
        uid=uid,
        gid=gid,
        groups=groups,
        cwd=str(cwd),
        environment=ENVIRONMENT,
        log=logging.getLogger(LOGGER),
        timeout=timeout,
    )


def sample_job() -> ClassAd:
    """A small job ad with a HookKeyword."""
    return parse_ad(
        'ClusterId = 12\nProcId = 3\nCmd = "/bin/sleep"\nOwner = "alice"\n'
        'HookKeyword = "JAVA"\nRequestMemory = 128\n'
    )


def gone(pid: int) -> bool:
    """True once ``pid`` no longer exists or is only a zombie awaiting its parent."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return status.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def eventually_gone(pids: list[int]) -> bool:
    """True once every pid is gone, waiting at most 5 s (a generous bound on a noisy VM)."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        if all(gone(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False
