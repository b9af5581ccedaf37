"""Real system components for the starter and daemon tests: root, slot users, cgroups.

Tests that run real jobs carry the ``system`` marker and use these fixtures. Outside CI a
missing component (not root, no writable cgroup v1 hierarchy, no ``useradd``) skips the test
with the reason; under ``CI=true`` it fails, because CI is where they must run. Names are
unique per test process (users ``ept<run><n>``, cgroups ``ep_test_<run>``; each pytest-xdist
worker is a process with a run tag of its own), so workers and runs sharing the machine do not
collide, and everything made here is removed afterwards by the process that made it.
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
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
#: Where the tracking-gid ranges' locks live: one directory for every test process on the machine.
TRACKING_GID_LOCKS = Path(tempfile.gettempdir())
#: The prefix of a run's own base temporary directory (in the system's temporary directory).
BASE_TEMP_PREFIX = "epcore-tests-"
_OWN_BASE_TEMP = pytest.StashKey[str]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Give the run a base temporary directory of its own unless --basetemp names one.

    pytest's default one lives in /tmp/pytest-of-<user>, which every pytest session that
    starts on the machine makes private again (0700): the slot users of a running session's
    jobs would lose their way to their directories under tmp_path. pytest-xdist's workers get
    theirs inside the controller's.
    """
    if config.option.basetemp is None and not hasattr(config, "workerinput"):
        config.option.basetemp = config.stash[_OWN_BASE_TEMP] = tempfile.mkdtemp(
            prefix=BASE_TEMP_PREFIX
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remove the run's own base temporary directory after a passing run (kept for a look
    after a failing one)."""
    own = session.config.stash.get(_OWN_BASE_TEMP, None)
    if own is not None and exitstatus == 0:
        shutil.rmtree(own, ignore_errors=True)


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
    """A short tag unique to this test process (one per xdist worker), for naming shared
    machine resources."""
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
    remove_cgroup_tree(name)


def remove_cgroup_tree(name: str) -> None:
    """Remove the cgroup ``name`` of every v1 controller and every group under it, killing
    what is left in them."""
    # A job group left frozen (its starter killed between freezing and killing it) holds its
    # processes past SIGKILL, and every controller's group with them: thaw them all first.
    for state in (V1_ROOT / "freezer" / name).rglob("freezer.state"):
        with contextlib.suppress(OSError):
            state.write_text("THAWED")
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
def tracking_gids(as_root: None) -> Iterator[tuple[int, int]]:
    """A MIN_TRACKING_GID..MAX_TRACKING_GID range no group on this machine and no other test
    process uses: each range is claimed with a file lock held for the session, so that parallel
    workers and concurrent runs, whose trackers find processes by these ids, take different ones."""
    used = {g.gr_gid for g in grp.getgrall()}
    for low in range(61000, 64000, 16):
        if used & set(range(low, low + 8)):
            continue
        with (TRACKING_GID_LOCKS / f"epcore-tracking-gids-{low}.lock").open("a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            yield low, low + 7
            return
    missing("no free range of 8 group ids between 61000 and 64000")


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
