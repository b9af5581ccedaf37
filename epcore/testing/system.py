"""Real system components for the starter and daemon tests: root, slot users, cgroups.

Tests that run real jobs carry the ``system`` marker and use these fixtures. Outside CI a
missing component (not root, no writable cgroup v1 hierarchy, no ``useradd``) skips the test
with the reason; under ``CI=true`` it fails, because CI is where they must run. Names are
unique per test run (users ``ept<run><n>``, cgroups ``ep_test_<run>``), so runs sharing the
machine do not collide, and everything made here is removed afterwards.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import psutil
import pytest

V1_ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("memory", "cpu", "cpuacct", "freezer", "pids")
#: How many slot users a test run makes (one per slot of the tests' machines).
SLOT_USER_COUNT = 4


def missing(reason: str) -> None:
    """Skip the calling test for ``reason``, or fail it under CI=true."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"required system component missing under CI: {reason}")
    pytest.skip(reason)


def _cgroup_v1_problem() -> str | None:
    for controller in V1_CONTROLLERS:
        path = V1_ROOT / controller
        if not (path / "cgroup.procs").exists():
            return f"no cgroup v1 {controller} hierarchy at {path}"
        if not os.access(path, os.W_OK):
            return f"cgroup v1 {controller} hierarchy at {path} is not writable"
    return None


@pytest.fixture(scope="session")
def run_tag() -> str:
    """A short tag unique to this test run, for naming shared machine resources."""
    return uuid.uuid4().hex[:6]


@pytest.fixture(scope="session")
def as_root() -> None:
    """Require root (jobs run as other users, cgroups are made)."""
    if os.geteuid() != 0:
        missing("needs root to start jobs as slot users and make cgroups")


@pytest.fixture(scope="session")
def cgroup_v1(as_root: None) -> None:
    """Require writable cgroup v1 hierarchies for memory, cpu, cpuacct, freezer and pids."""
    problem = _cgroup_v1_problem()
    if problem is not None:
        missing(problem)


@pytest.fixture(scope="session")
def base_cgroup(cgroup_v1: None, run_tag: str) -> Iterator[str]:
    """A BASE_CGROUP name unique to this run; every group left under it is removed at the end."""
    name = f"ep_test_{run_tag}"
    yield name
    for controller in V1_CONTROLLERS:
        root = V1_ROOT / controller / name
        if root.exists():
            # Deepest first: rmdir needs empty groups.
            groups = [p for p in root.rglob("*") if p.is_dir()]
            for group in [*sorted(groups, key=lambda p: len(p.parts), reverse=True), root]:
                _remove_group(group)


def _remove_group(group: Path) -> None:
    """Remove a cgroup, killing what is left in it (a process killed with its daemon may
    take a moment to leave the group) and retrying for up to 5 s."""
    deadline = time.monotonic() + 5
    while True:
        with contextlib.suppress(OSError, ValueError):
            for pid in (group / "cgroup.procs").read_text().split():
                os.kill(int(pid), signal.SIGKILL)
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@attrs.frozen
class SlotUser:
    """An unprivileged account made for the tests."""

    name: str
    uid: int
    gid: int


@pytest.fixture(scope="session")
def slot_users(as_root: None, run_tag: str) -> Iterator[tuple[SlotUser, ...]]:
    """SLOT_USER_COUNT real unprivileged accounts (no home, no shell), deleted afterwards."""
    if shutil.which("useradd") is None:
        missing("useradd is not installed")
    made: list[SlotUser] = []
    try:
        for n in range(1, SLOT_USER_COUNT + 1):
            name = f"ept{run_tag}{n}"
            subprocess.run(
                [
                    "useradd",
                    "-r",
                    "-M",
                    "-U",
                    "-s",
                    "/usr/sbin/nologin",
                    "-d",
                    "/nonexistent",
                    name,
                ],
                check=True,
                capture_output=True,
            )
            entry = pwd.getpwnam(name)
            made.append(SlotUser(name, entry.pw_uid, entry.pw_gid))
        yield tuple(made)
    finally:
        for user in made:
            subprocess.run(["userdel", user.name], check=False, capture_output=True)


@pytest.fixture(scope="session")
def tracking_gids(as_root: None) -> tuple[int, int]:
    """A MIN_TRACKING_GID..MAX_TRACKING_GID range no group and no process on this machine uses."""
    used = {g.gr_gid for g in grp.getgrall()}
    for low in range(61000, 64000, 16):
        if not used & set(range(low, low + 8)):
            return low, low + 7
    missing("no free range of 8 group ids between 61000 and 64000")
    raise AssertionError("unreachable")


@pytest.fixture
def execute_dir(tmp_path: Path) -> Path:
    """An EXECUTE directory as HTCondor wants it: root-owned, world-searchable (0755)."""
    path = tmp_path / "execute"
    path.mkdir()
    path.chmod(0o755)
    open_up(tmp_path)
    return path


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` passes; its last answer."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def user_processes(name: str) -> list[int]:
    """Live processes of account ``name`` (zombies left out: PID 1 reaps them late here)."""
    return [
        p.pid
        for p in psutil.process_iter(["username", "status"])
        if p.info["username"] == name and p.info["status"] != psutil.STATUS_ZOMBIE
    ]


def open_up(path: Path) -> None:
    """Let other users reach ``path``: it and its parents up to /tmp become searchable
    (pytest's tmp_path parents are 0700, and slot users must reach what is below them)."""
    for parent in (path, *path.parents):
        if parent in (Path("/tmp"), Path("/")):
            break
        parent.chmod(parent.stat().st_mode | 0o711)
