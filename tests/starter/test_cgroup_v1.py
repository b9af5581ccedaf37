"""The cgroup backend on real cgroup v1 hierarchies (limits read back, a fork bomb, an OOM kill,
the freezer, usage, cleanup), plus the v1 rules that a fake tree shows (memsw tolerance)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from epcore.config import Config
from epcore.errors import IsolationError
from epcore.starter.cgroups import CgroupBackend, CgroupTracking, cgroup_name
from epcore.starter.cgroups.v1 import UNLIMITED, V1Group
from epcore.types import TrackingRequest

MB = 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")
PIDS_LIMIT = 20


def _request(key: str, **changes: object) -> TrackingRequest:
    values: dict[str, object] = {
        "job_key": key,
        "slot_name": "slot1@host",
        "slot_id": 1,
        "cpus": 1.0,
        "memory_mb": 512,
        "memory_policy": "hard",
        "startd_memory_mb": 2048,
    }
    values.update(changes)
    return TrackingRequest(**values)  # type: ignore[arg-type]


def _group(tracking: CgroupTracking, controller: str) -> Path:
    return next(g.path for g in tracking.v1_groups if controller in g.controllers)


def _read(tracking: CgroupTracking, controller: str, name: str) -> str:
    return (_group(tracking, controller) / name).read_text().strip()


def _keyed(tracking: CgroupTracking, controller: str, name: str) -> dict[str, int]:
    lines = _read(tracking, controller, name).splitlines()
    return {key: int(value) for key, value in (line.split() for line in lines)}


class Jobs:
    """Tracks made for one test and the processes started in them; all killed and released
    at the end."""

    def __init__(self, backend: CgroupBackend, prefix: str) -> None:
        self.backend = backend
        self.prefix = prefix
        self.trackings: list[CgroupTracking] = []
        self.procs: list[subprocess.Popen[bytes]] = []

    def track(self, **changes: object) -> CgroupTracking:
        key = f"{self.prefix}/job{len(self.trackings)}"
        tracking = self.backend.track(_request(key, **changes))
        self.trackings.append(tracking)
        return tracking

    def start(self, tracking: CgroupTracking, argv: list[str]) -> subprocess.Popen[bytes]:
        """Start ``argv`` as the starter will: it joins the groups between fork and exec."""
        files = tracking.child_setup().join_files

        def join() -> None:
            for path in files:
                with open(path, "w") as handle:
                    handle.write(str(os.getpid()))

        proc = subprocess.Popen(argv, preexec_fn=join, stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        tracking.attach(proc.pid)
        return proc

    def close(self) -> None:
        for tracking in self.trackings:
            tracking.signal_all(signal.SIGKILL)
        for proc in self.procs:
            proc.kill()
            proc.wait()
        for tracking in self.trackings:
            tracking.release()


@pytest.fixture
def jobs(base_cgroup: str, request: pytest.FixtureRequest) -> Iterator[Jobs]:
    config = Config.from_text(f"BASE_CGROUP = {base_cgroup}\nCGROUP_PIDS_LIMIT = {PIDS_LIMIT}\n")
    made = Jobs(CgroupBackend(config), request.node.name)
    try:
        yield made
    finally:
        made.close()


def _wait_for(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# -- limits -------------------------------------------------------------------------------


@pytest.mark.system
def test_hard_policy_limits_read_back(jobs: Jobs) -> None:
    """hard: limit = Memory, soft = 90 %, memsw = limit + swap; shares = Cpus x 100; pids."""
    tracking = jobs.track(memory_mb=512, swap_limit_mb=100, cpus=2.5)
    assert int(_read(tracking, "memory", "memory.limit_in_bytes")) == 512 * MB
    soft = 512 * MB * 9 // 10
    assert int(_read(tracking, "memory", "memory.soft_limit_in_bytes")) == soft // PAGE * PAGE
    assert int(_read(tracking, "memory", "memory.memsw.limit_in_bytes")) == 612 * MB
    assert _read(tracking, "cpu", "cpu.shares") == "250"
    assert _read(tracking, "pids", "pids.max") == str(PIDS_LIMIT)
    # Every controller got its directory, named after the job key.
    for controller in ("memory", "cpu", "cpuacct", "freezer", "pids"):
        assert _group(tracking, controller).name == cgroup_name(f"{jobs.prefix}/job0")


@pytest.mark.system
def test_soft_policy_limits_read_back(jobs: Jobs) -> None:
    """soft: soft = Memory, hard = the startd's memory; no swap limit leaves memsw alone."""
    tracking = jobs.track(memory_policy="soft", memory_mb=256, startd_memory_mb=1024)
    assert int(_read(tracking, "memory", "memory.soft_limit_in_bytes")) == 256 * MB
    assert int(_read(tracking, "memory", "memory.limit_in_bytes")) == 1024 * MB
    assert int(_read(tracking, "memory", "memory.memsw.limit_in_bytes")) == UNLIMITED


@pytest.mark.system
def test_disabled_swap_makes_memsw_the_hard_limit(jobs: Jobs) -> None:
    """DISABLE_SWAP_FOR_JOB: memory+swap may not exceed memory."""
    tracking = jobs.track(memory_mb=128, swap_limit_mb=1000, disable_swap=True)
    assert int(_read(tracking, "memory", "memory.memsw.limit_in_bytes")) == 128 * MB


@pytest.mark.system
def test_none_policy_sets_no_memory_limit(jobs: Jobs) -> None:
    """none: no memory limits (swap neither); cpu shares and pids still apply."""
    tracking = jobs.track(memory_policy="none", swap_limit_mb=10, disable_swap=True, cpus=3)
    for name in ("limit_in_bytes", "soft_limit_in_bytes", "memsw.limit_in_bytes"):
        assert int(_read(tracking, "memory", f"memory.{name}")) == UNLIMITED
    assert _read(tracking, "cpu", "cpu.shares") == "300"
    assert _read(tracking, "pids", "pids.max") == str(PIDS_LIMIT)


@pytest.mark.system
def test_raising_the_limit_writes_memsw_first(jobs: Jobs) -> None:
    """memsw may never be below the limit: raising both works in either direction."""
    tracking = jobs.track(memory_mb=64, disable_swap=True)
    group = tracking.memory_group
    assert isinstance(group, V1Group)
    group.set_memory(256 * MB, None, 300 * MB)
    assert int(_read(tracking, "memory", "memory.limit_in_bytes")) == 256 * MB
    assert int(_read(tracking, "memory", "memory.memsw.limit_in_bytes")) == 300 * MB
    group.set_memory(32 * MB, None, 32 * MB)
    assert int(_read(tracking, "memory", "memory.limit_in_bytes")) == 32 * MB
    assert int(_read(tracking, "memory", "memory.memsw.limit_in_bytes")) == 32 * MB


# -- processes ----------------------------------------------------------------------------


@pytest.mark.system
def test_pids_max_caps_a_fork_bomb_and_sigkill_empties_the_group(jobs: Jobs) -> None:
    """A shell forking forever stays at CGROUP_PIDS_LIMIT; SIGKILL then leaves nothing.

    bash, unlike dash, does not give up when fork fails: it retries, so the bomb is still
    forking when it is killed.
    """
    tracking = jobs.track()
    bomb = jobs.start(tracking, ["bash", "-c", "while :; do sleep 30 & done"])
    assert _wait_for(lambda: _keyed(tracking, "pids", "pids.events")["max"] > 0)
    for _ in range(5):
        assert len(tracking.pids()) <= PIDS_LIMIT
        assert int(_read(tracking, "pids", "pids.current")) <= PIDS_LIMIT
        time.sleep(0.1)
    assert len(tracking.pids()) >= PIDS_LIMIT - 2
    tracking.signal_all(signal.SIGKILL)
    assert tracking.pids() == frozenset()
    assert bomb.wait(timeout=5) == -signal.SIGKILL
    tracking.release()
    assert not _group(tracking, "pids").exists()


@pytest.mark.system
def test_a_job_over_its_hard_limit_is_oom_killed(jobs: Jobs) -> None:
    """200 MB written under a 64 MB hard limit (no swap): killed, and out_of_memory()."""
    tracking = jobs.track(memory_mb=64, disable_swap=True)
    assert tracking.out_of_memory() is False
    hog = jobs.start(tracking, [sys.executable, "-c", "b = b'x' * (200 << 20)"])
    assert hog.wait(timeout=30) == -signal.SIGKILL
    assert tracking.out_of_memory() is True
    peak = tracking.usage().memory_peak
    assert peak is not None and 32 * MB < peak <= 64 * MB


@pytest.mark.system
def test_a_frozen_job_uses_no_cpu_until_thawed(jobs: Jobs) -> None:
    """A busy loop: cpuacct.usage does not grow over 1 s while frozen, grows after thaw."""
    tracking = jobs.track()
    jobs.start(tracking, ["sh", "-c", "while :; do :; done"])
    time.sleep(0.2)
    assert tracking.freeze() is True
    assert _read(tracking, "freezer", "freezer.state") == "FROZEN"
    before = int(_read(tracking, "cpuacct", "cpuacct.usage"))
    time.sleep(1)
    assert int(_read(tracking, "cpuacct", "cpuacct.usage")) == before
    assert tracking.thaw() is True
    assert _read(tracking, "freezer", "freezer.state") == "THAWED"
    assert _wait_for(lambda: int(_read(tracking, "cpuacct", "cpuacct.usage")) > before)


@pytest.mark.system
def test_sigkill_thaws_a_group_whose_freeze_did_not_complete(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group left FROZEN whose freeze then reports a timeout is thawed by SIGKILL anyway,
    so the killed processes die and the group empties."""
    tracking = jobs.track()
    sleeper = jobs.start(tracking, ["sleep", "60"])
    assert tracking.freeze() is True
    monkeypatch.setattr(tracking, "freeze", lambda: False)
    tracking.signal_all(signal.SIGKILL)
    assert tracking.pids() == frozenset()
    assert sleeper.wait(timeout=5) == -signal.SIGKILL
    assert _read(tracking, "freezer", "freezer.state") == "THAWED"


@pytest.mark.system
def test_usage_reports_cpu_and_memory(jobs: Jobs) -> None:
    """A job that burns 0.5 s of CPU and holds 50 MB: usage() shows both."""
    tracking = jobs.track()
    program = (
        "import time\n"
        "b = b'x' * (50 << 20)\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < 0.5: pass\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", program],
        preexec_fn=_joiner(tracking),
        stdout=subprocess.PIPE,
    )
    jobs.procs.append(proc)
    tracking.attach(proc.pid)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    usage = tracking.usage()
    assert usage.user_cpu is not None and usage.system_cpu is not None
    assert usage.user_cpu + usage.system_cpu >= 0.4
    assert usage.memory_current is not None and usage.memory_current >= 45 * MB
    assert usage.memory_peak is not None and usage.memory_peak >= usage.memory_current


def _joiner(tracking: CgroupTracking) -> Callable[[], None]:
    files = tracking.child_setup().join_files

    def join() -> None:
        for path in files:
            with open(path, "w") as handle:
                handle.write(str(os.getpid()))

    return join


@pytest.mark.system
def test_attach_moves_a_running_process_in(jobs: Jobs) -> None:
    """A process started outside the groups is moved into every one by attach()."""
    tracking = jobs.track()
    proc = subprocess.Popen(["sleep", "60"])
    jobs.procs.append(proc)
    assert tracking.pids() == frozenset()
    tracking.attach(proc.pid)
    assert tracking.pids() == {proc.pid}
    for group in tracking.v1_groups:
        assert proc.pid in group.procs()


@pytest.mark.system
def test_other_signals_reach_every_process(jobs: Jobs) -> None:
    """SIGTERM is sent to each process, without freezing."""
    tracking = jobs.track()
    proc = jobs.start(tracking, ["sleep", "60"])
    tracking.signal_all(signal.SIGTERM)
    assert proc.wait(timeout=5) == -signal.SIGTERM
    assert _read(tracking, "freezer", "freezer.state") == "THAWED"


@pytest.mark.system
def test_release_removes_every_directory_once(jobs: Jobs) -> None:
    """After the job ends every hierarchy's directory is gone; release again is a no-op."""
    tracking = jobs.track()
    proc = jobs.start(tracking, ["true"])
    proc.wait()
    directories = tracking.directories
    assert len(directories) == 5 and all(path.is_dir() for path in directories)
    tracking.release()
    assert not any(path.exists() for path in directories)
    assert all(path.parent.is_dir() for path in directories)
    tracking.release()


@pytest.mark.system
def test_a_group_left_with_a_process_in_it_is_not_taken(jobs: Jobs) -> None:
    """Tracking a job under the key of a group that is still there with a live process is
    refused, naming the group; the group and its process are left alone."""
    tracking = jobs.track()
    jobs.start(tracking, ["sleep", "60"])
    key = f"{jobs.prefix}/job0"
    with pytest.raises(IsolationError, match="already holds processes"):
        jobs.backend.track(_request(key))
    assert all(path.is_dir() for path in tracking.directories)
    assert len(tracking.pids()) == 1


@pytest.mark.system
def test_release_waits_for_a_process_still_exiting(jobs: Jobs) -> None:
    """A group whose last process ends a moment after release is asked for is removed once
    it is empty, not refused."""
    tracking = jobs.track()
    proc = jobs.start(tracking, ["sleep", "0.3"])
    reaper = threading.Thread(target=proc.wait)
    reaper.start()
    directories = tracking.directories
    tracking.release()
    reaper.join()
    assert not any(path.exists() for path in directories)


@pytest.mark.system
def test_release_of_a_busy_group_names_it(base_cgroup: str) -> None:
    """A live process keeps its group: release waits, then raises naming the path."""
    config = Config.from_text(f"BASE_CGROUP = {base_cgroup}\n")
    backend = CgroupBackend(config, wait_seconds=0.3)
    jobs = Jobs(backend, "busy")
    try:
        tracking = jobs.track()
        jobs.start(tracking, ["sleep", "60"])
        with pytest.raises(
            IsolationError, match=r"cannot remove cgroup /sys/fs/cgroup/\w+/ep_test_\w+/busy_job0: "
        ):
            tracking.release()
    finally:
        jobs.close()
    assert not any(path.exists() for path in tracking.directories)


# -- v1 rules on a fake tree --------------------------------------------------------------

MEMORY_FILES = ("cgroup.procs", "memory.limit_in_bytes", "memory.soft_limit_in_bytes")


def _fake_v1(tmp_path: Path, files: tuple[str, ...]) -> Path:
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountinfo").write_text(
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    )
    group = tmp_path / "sys/fs/cgroup/memory/htcondor" / cgroup_name("a/job")
    group.mkdir(parents=True)
    for name in files:
        (group / name).write_text(f"{UNLIMITED}\n" if "limit" in name else "")
    return group


def test_a_missing_memsw_file_is_tolerated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Without swap accounting there is no memory.memsw.limit_in_bytes: limits are set, the
    swap limit is skipped with a note."""
    group = _fake_v1(tmp_path, MEMORY_FILES)
    backend = CgroupBackend(Config.from_text(""), tmp_path)
    with caplog.at_level(logging.INFO, "epcore.starter.cgroups"):
        tracking = backend.track(_request("a/job", swap_limit_mb=10))
    assert (group / "memory.limit_in_bytes").read_text() == str(512 * MB)
    assert "swap limit not set" in caplog.text
    assert tracking.child_setup().join_files == (str(group / "cgroup.procs"),)
    # Only memory is mounted: no freezer, no cpu accounting.
    assert tracking.freeze() is False and tracking.thaw() is False
    assert tracking.usage().user_cpu is None


def test_usage_ignores_page_cache_by_default(tmp_path: Path) -> None:
    """CGROUP_IGNORE_CACHE_MEMORY (default true): RSS + swap from memory.stat; false: the
    usage_in_bytes counter, cache included."""
    files = (*MEMORY_FILES, "memory.memsw.limit_in_bytes")
    group = _fake_v1(tmp_path, files)
    (group / "memory.stat").write_text(
        "cache 900\nrss 10\ntotal_cache 1000\ntotal_rss 300\ntotal_swap 20\n"
    )
    (group / "memory.usage_in_bytes").write_text("1320\n")
    (group / "memory.max_usage_in_bytes").write_text("2000\n")
    (group / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    tracking = CgroupBackend(Config.from_text(""), tmp_path).track(_request("a/job"))
    usage = tracking.usage()
    assert (usage.memory_current, usage.memory_peak) == (320, 2000)
    config = Config.from_text("CGROUP_IGNORE_CACHE_MEMORY = false")
    assert CgroupBackend(config, tmp_path).track(_request("a/job")).usage().memory_current == 1320
    assert tracking.out_of_memory() is False
    (group / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert tracking.out_of_memory() is True


@pytest.mark.parametrize(
    ("key", "name"),
    [
        ("/var/lib/condor/execute/dir_1", "_var_lib_condor_execute_dir_1"),
        ("slot1_1@host", "slot1_1@host"),
        ("..", "job_.."),
        ("", "job_"),
        ("tasks", "job_tasks"),
        ("memory.limit_in_bytes", "job_memory.limit_in_bytes"),
        ("a b\nc\x00d", "a_b_c_d"),
    ],
)
def test_job_keys_become_safe_names(key: str, name: str) -> None:
    """One path component, never a control file's name."""
    assert cgroup_name(key) == name


def test_long_job_keys_stay_unique() -> None:
    """Over 200 characters: cut, with a hash of the whole key."""
    first, second = cgroup_name("x" * 300 + "1"), cgroup_name("x" * 300 + "2")
    assert len(first) == 200 and first != second
