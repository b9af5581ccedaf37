"""The cgroup backend on v2: against a fake tree (the kernel's files made by the test), and for
real on this hybrid host's controller-free /sys/fs/cgroup/unified (freeze, kill, procs)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.config import Config
from epcore.errors import ConfigError, IsolationError
from epcore.starter.cgroups import CgroupBackend, CgroupTracking, cpu_weight, read_layout
from epcore.testing.system import missing
from epcore.types import TrackingRequest

MB = 1024 * 1024
KEY = "/var/lib/condor/execute/dir_4242"
NAME = "_var_lib_condor_execute_dir_4242"
V2_ONLY = (
    "26 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n"
)
CORE_FILES = {
    "cgroup.procs": "",
    "cgroup.subtree_control": "",
    "cgroup.events": "populated 0\nfrozen 0\n",
    "cgroup.freeze": "0\n",
    "cgroup.kill": "",
    "cpu.stat": "usage_usec 0\nuser_usec 0\nsystem_usec 0\n",
}
CONTROLLER_FILES = {
    "memory": {
        "memory.max": "max\n",
        "memory.high": "max\n",
        "memory.swap.max": "max\n",
        "memory.current": "0\n",
        "memory.peak": "0\n",
        "memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n",
    },
    "cpu": {"cpu.weight": "100\n"},
    "pids": {"pids.max": "max\n"},
}


def _request(**changes: object) -> TrackingRequest:
    values: dict[str, object] = {
        "job_key": KEY,
        "slot_name": "slot1@host",
        "slot_id": 1,
        "cpus": 4.0,
        "memory_mb": 1024,
        "memory_policy": "hard",
        "startd_memory_mb": 8192,
        "swap_limit_mb": 512,
    }
    values.update(changes)
    return TrackingRequest(**values)  # type: ignore[arg-type]


class FakeV2:
    """A v2-only machine in a directory: mountinfo, the v2 root, and the job's groups made
    in advance with the files the kernel would give them."""

    def __init__(self, root: Path, controllers: str = "cpuset cpu io memory hugetlb pids"):
        self.root = root
        (root / "proc/self").mkdir(parents=True)
        (root / "proc/self/mountinfo").write_text(V2_ONLY)
        self.mount = root / "sys/fs/cgroup"
        self.controllers = controllers.split()
        self._fill(self.mount, self.controllers)
        self.base = self.mount / "htcondor"
        self.group = self.base / NAME
        self.leaf = self.group / "job"
        for path in (self.base, self.group, self.leaf):
            path.mkdir()
            self._fill(path, self.controllers)

    def _fill(self, path: Path, controllers: list[str]) -> None:
        path.mkdir(parents=True, exist_ok=True)
        (path / "cgroup.controllers").write_text(" ".join(controllers) + "\n")
        for name, text in CORE_FILES.items():
            (path / name).write_text(text)
        for controller in controllers:
            for name, text in CONTROLLER_FILES.get(controller, {}).items():
                (path / name).write_text(text)

    def read(self, path: Path, name: str) -> str:
        return (path / name).read_text().strip()

    def fake_process(self, pid: int, state: str) -> None:
        (self.root / "proc" / str(pid)).mkdir(parents=True, exist_ok=True)
        (self.root / "proc" / str(pid) / "stat").write_text(f"{pid} (my job) {state} 1 2 3\n")

    def kernel_removes_files(self) -> None:
        """What cgroupfs does at rmdir: the control files go with the directory."""
        for path in (self.leaf, self.group):
            for child in path.iterdir():
                if child.is_file():
                    child.unlink()


def _backend(fake: FakeV2, text: str = "", **kwargs: object) -> CgroupBackend:
    config = Config.from_text(text)
    return CgroupBackend(config, fake.root, wait_seconds=0.2, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def fake(tmp_path: Path) -> FakeV2:
    return FakeV2(tmp_path)


def test_hard_policy_maps_to_memory_max_high_and_swap_max(fake: FakeV2) -> None:
    """hard: memory.max = Memory, memory.high = 90 %, memory.swap.max = the swap limit;
    cpu.weight from Cpus x 100 shares; pids.max from CGROUP_PIDS_LIMIT."""
    backend = _backend(fake, "CGROUP_PIDS_LIMIT = 300")
    backend.track(_request())
    assert fake.read(fake.group, "memory.max") == str(1024 * MB)
    assert fake.read(fake.group, "memory.high") == str(1024 * MB * 9 // 10)
    assert fake.read(fake.group, "memory.swap.max") == str(512 * MB)
    assert fake.read(fake.group, "cpu.weight") == str(cpu_weight(400)) == "16"
    assert fake.read(fake.group, "pids.max") == "300"
    # Nothing is set on the leaf: the group's limits cover it.
    assert fake.read(fake.leaf, "memory.max") == "max"


def test_soft_policy_and_disabled_swap(fake: FakeV2) -> None:
    """soft: memory.high = Memory, memory.max = the startd's memory; no swap at all."""
    _backend(fake).track(_request(memory_policy="soft", disable_swap=True))
    assert fake.read(fake.group, "memory.max") == str(8192 * MB)
    assert fake.read(fake.group, "memory.high") == str(1024 * MB)
    assert fake.read(fake.group, "memory.swap.max") == "0"
    assert fake.read(fake.group, "pids.max") == "max"


def test_no_swap_limit_leaves_swap_max_alone(fake: FakeV2) -> None:
    """swap_limit_mb None: swap is not limited."""
    _backend(fake).track(_request(swap_limit_mb=None))
    assert fake.read(fake.group, "memory.max") == str(1024 * MB)
    assert fake.read(fake.group, "memory.swap.max") == "max"


def test_none_policy_sets_no_memory_limit(fake: FakeV2) -> None:
    """none: memory.max, memory.high and memory.swap.max stay as the kernel made them."""
    _backend(fake).track(_request(memory_policy="none", disable_swap=True))
    for name in ("memory.max", "memory.high", "memory.swap.max"):
        assert fake.read(fake.group, name) == "max"


def test_controllers_are_enabled_in_every_ancestor_of_the_leaf(fake: FakeV2) -> None:
    """+memory +cpu +pids in the root's, the base's and the job group's subtree_control;
    none in the leaf, which holds the processes."""
    tracking = _backend(fake).track(_request())
    for path in (fake.mount, fake.base, fake.group):
        assert fake.read(path, "cgroup.subtree_control") == "+memory +cpu +pids"
    assert fake.read(fake.leaf, "cgroup.subtree_control") == ""
    assert tracking.child_setup().join_files == (str(fake.leaf / "cgroup.procs"),)
    assert tracking.directories == (fake.group,)


def test_controllers_already_enabled_are_not_written_again(fake: FakeV2) -> None:
    """A root that already hands out memory and cpu (systemd does) gets only +pids."""
    (fake.mount / "cgroup.subtree_control").write_text("cpuset cpu io memory\n")
    _backend(fake).track(_request())
    assert fake.read(fake.mount, "cgroup.subtree_control") == "+pids"


def test_missing_controllers_skip_their_limits_with_a_note(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """v2 without pids: pids is not enabled and CGROUP_PIDS_LIMIT is skipped, logged."""
    fake = FakeV2(tmp_path, controllers="cpu memory")
    with caplog.at_level(logging.INFO, "epcore.starter.cgroups"):
        _backend(fake, "CGROUP_PIDS_LIMIT = 50").track(_request())
    assert fake.read(fake.mount, "cgroup.subtree_control") == "+memory +cpu"
    assert not (fake.group / "pids.max").exists()
    assert "CGROUP_PIDS_LIMIT of /var/lib/condor/execute/dir_4242 skipped" in caplog.text


def test_the_groups_are_made_when_missing(tmp_path: Path) -> None:
    """Without the pre-made groups, track makes base, group and leaf (the writes to the
    fake group's files then fail as on a kernel without them: an error naming the file)."""
    fake = FakeV2(tmp_path, controllers="")
    for path in (fake.leaf, fake.group, fake.base):
        for child in path.iterdir():
            child.unlink()
        path.rmdir()
    tracking = _backend(fake).track(_request())
    assert fake.leaf.is_dir()
    tracking.release()
    assert not fake.group.exists() and fake.base.is_dir()


def test_a_group_that_cannot_be_made_is_an_error_naming_it(fake: FakeV2) -> None:
    """A file where the job's group should be: IsolationError naming that path."""
    for child in fake.leaf.iterdir():
        child.unlink()
    fake.leaf.rmdir()
    fake.leaf.write_text("")
    with pytest.raises(IsolationError, match=rf"cannot create cgroup {fake.leaf}"):
        _backend(fake).track(_request())


def test_a_refused_limit_is_an_error_naming_the_file(fake: FakeV2) -> None:
    """No memory.max in a group whose root lists memory: the write fails like the kernel's."""
    (fake.group / "memory.max").unlink()
    with pytest.raises(IsolationError, match=rf"cannot write {1024 * MB} to .*memory\.max"):
        _backend(fake).track(_request())


def test_an_unknown_policy_is_refused(fake: FakeV2) -> None:
    """The starter passes hard, soft or none; anything else is an error."""
    with pytest.raises(IsolationError, match="unknown memory limit policy 'custom'"):
        _backend(fake).track(_request(memory_policy="custom"))


def test_a_group_with_processes_in_it_is_not_taken(fake: FakeV2) -> None:
    """A stale group of the same name that still holds a live process."""
    (fake.leaf / "cgroup.procs").write_text("4242\n")
    fake.fake_process(4242, "S")
    with pytest.raises(IsolationError, match="already holds processes"):
        _backend(fake).track(_request())


def test_pids_skip_zombies_and_vanished_processes(fake: FakeV2) -> None:
    """Live processes of the leaf are listed; a zombie and a PID with no /proc entry not."""
    tracking = _backend(fake).track(_request())
    (fake.leaf / "cgroup.procs").write_text("100\n101\n102\n")
    fake.fake_process(100, "S")
    fake.fake_process(101, "Z")
    assert tracking.pids() == {100}


def test_freeze_waits_for_frozen_in_cgroup_events(fake: FakeV2) -> None:
    """cgroup.freeze 1, done when cgroup.events says frozen 1; thaw writes 0."""
    tracking = _backend(fake).track(_request())
    (fake.group / "cgroup.events").write_text("populated 1\nfrozen 1\n")
    assert tracking.freeze() is True
    assert fake.read(fake.group, "cgroup.freeze") == "1"
    assert tracking.thaw() is True
    assert fake.read(fake.group, "cgroup.freeze") == "0"


def test_freeze_that_never_completes_is_false(fake: FakeV2) -> None:
    """frozen stays 0 past the wait: the freeze did not happen."""
    tracking = _backend(fake).track(_request())
    started = time.monotonic()
    assert tracking.freeze() is False
    assert time.monotonic() - started < 2


def test_sigkill_writes_cgroup_kill(fake: FakeV2) -> None:
    """SIGKILL goes through cgroup.kill, no process is signalled one by one."""
    tracking = _backend(fake).track(_request())
    tracking.signal_all(signal.SIGKILL)
    assert fake.read(fake.group, "cgroup.kill") == "1"
    assert fake.read(fake.group, "cgroup.freeze") == "0"


def test_usage_and_oom_from_the_v2_files(fake: FakeV2) -> None:
    """cpu.stat in microseconds, memory.current and memory.peak in bytes, oom_kill."""
    tracking = _backend(fake).track(_request())
    (fake.group / "cpu.stat").write_text(
        "usage_usec 2000000\nuser_usec 1500000\nsystem_usec 500000\n"
    )
    (fake.group / "memory.current").write_text("4096\n")
    (fake.group / "memory.peak").write_text("8192\n")
    usage = tracking.usage()
    assert (usage.user_cpu, usage.system_cpu) == (1.5, 0.5)
    assert (usage.memory_current, usage.memory_peak) == (4096, 8192)
    assert tracking.out_of_memory() is False
    (fake.group / "memory.events").write_text("low 0\nhigh 3\nmax 9\noom 1\noom_kill 1\n")
    assert tracking.out_of_memory() is True
    (fake.group / "memory.peak").unlink()
    assert tracking.usage().memory_peak is None


def test_release_removes_leaf_then_group_once(fake: FakeV2) -> None:
    """Empty groups are removed, the base stays; a second release does nothing."""
    tracking = _backend(fake).track(_request())
    fake.kernel_removes_files()
    tracking.release()
    assert not fake.group.exists()
    assert fake.base.is_dir()
    tracking.release()


def test_release_of_a_group_that_cannot_go_names_it(fake: FakeV2) -> None:
    """Still populated after the wait, and rmdir refused: IsolationError with the path."""
    tracking = _backend(fake).track(_request())
    (fake.group / "cgroup.events").write_text("populated 1\nfrozen 0\n")
    with pytest.raises(IsolationError, match=rf"cannot remove cgroup {fake.leaf}"):
        tracking.release()


def test_hybrid_choice_per_controller(tmp_path: Path) -> None:
    """memory on v1, cpu and pids on v2: memory limits in the v1 group, cpu.weight and
    pids.max in the v2 group, whose subtree_control gets only +cpu +pids; the first
    process joins both."""
    fake = FakeV2(tmp_path, controllers="cpu pids")
    mountinfo = tmp_path / "proc/self/mountinfo"
    mountinfo.write_text(
        "35 31 0:32 / /sys/fs/memory rw,relatime - cgroup cgroup rw,memory\n" + V2_ONLY
    )
    v1 = tmp_path / "sys/fs/memory" / "htcondor" / NAME
    v1.mkdir(parents=True)
    for name in ("cgroup.procs", "memory.limit_in_bytes", "memory.soft_limit_in_bytes"):
        (v1 / name).write_text("")
    tracking = _backend(fake, "CGROUP_PIDS_LIMIT = 64").track(_request(swap_limit_mb=None))
    assert (v1 / "memory.limit_in_bytes").read_text() == str(1024 * MB)
    assert fake.read(fake.group, "cpu.weight") == "16"
    assert fake.read(fake.group, "pids.max") == "64"
    assert fake.read(fake.mount, "cgroup.subtree_control") == "+cpu +pids"
    assert tracking.child_setup().join_files == (
        str(v1 / "cgroup.procs"),
        str(fake.leaf / "cgroup.procs"),
    )
    assert isinstance(tracking, CgroupTracking)
    assert tracking.freezer_group is tracking.v2_group


def test_the_pids_knob_must_be_a_whole_number(fake: FakeV2) -> None:
    """A value that is not an integer is a ConfigError naming the knob and its line."""
    with pytest.raises(ConfigError, match=r"<string>, line 2: CGROUP_PIDS_LIMIT: 'many'"):
        _backend(fake, "X = 1\nCGROUP_PIDS_LIMIT = many\n")
    assert _backend(fake, "CGROUP_PIDS_LIMIT = 0").pids_limit is None


def test_wanted_follows_base_cgroup(fake: FakeV2) -> None:
    """BASE_CGROUP defaults to htcondor; empty turns the backend off."""
    assert _backend(fake).wanted() is True
    assert _backend(fake, "BASE_CGROUP =").wanted() is False
    with pytest.raises(ConfigError, match="BASE_CGROUP"):
        _backend(fake, "BASE_CGROUP = ../escape")


def test_available_needs_a_writable_hierarchy(fake: FakeV2, tmp_path: Path, as_root: None) -> None:
    """As root, with the fake v2 root present: available; with no cgroup mount: not."""
    assert _backend(fake).available() is True
    (fake.root / "proc/self/mountinfo").write_text("22 27 0:21 / /proc rw - proc proc rw\n")
    assert _backend(fake).available() is False


# -- real v2 on the hybrid host -----------------------------------------------------------

UNIFIED = Path("/sys/fs/cgroup/unified")


@pytest.fixture
def unified_base(base_cgroup: str) -> Iterator[str]:
    """The run's BASE_CGROUP in the real cgroup2 mount, removed afterwards."""
    if not (UNIFIED / "cgroup.procs").exists():
        missing(f"no cgroup2 mount at {UNIFIED}")
    yield base_cgroup
    base = UNIFIED / base_cgroup
    if base.exists():
        for sub in sorted(base.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if sub.is_dir():
                sub.rmdir()
        base.rmdir()


def _events(path: Path) -> dict[str, str]:
    return dict(line.split() for line in (path / "cgroup.events").read_text().splitlines())


def _cpu_usec(path: Path) -> int:
    stat = dict(line.split() for line in (path / "cpu.stat").read_text().splitlines())
    return int(stat["usage_usec"])


@pytest.mark.system
def test_forced_v2_on_the_real_unified_mount(
    unified_base: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Every controller forced to v2 on a v2 with no memory/cpu/pids: limits are skipped with
    a note, and the core files still track, freeze (a busy loop uses no CPU), thaw, kill and
    clean up a real process."""
    config = Config.from_text(f"BASE_CGROUP = {unified_base}\nCGROUP_PIDS_LIMIT = 10\n")
    backend = CgroupBackend(config, layout=read_layout().only_v2())
    with caplog.at_level(logging.INFO, "epcore.starter.cgroups"):
        tracking = backend.track(_request(job_key=f"{unified_base}/v2 forced"))
    assert "memory limits of" in caplog.text and "CGROUP_PIDS_LIMIT of" in caplog.text
    group = UNIFIED / unified_base / f"{unified_base}_v2_forced"
    assert tracking.directories == (group,)
    assert (group / "job").is_dir()
    join = tracking.child_setup().join_files
    assert join == (str(group / "job" / "cgroup.procs"),)

    def join_cgroups() -> None:
        for path in join:
            with open(path, "w") as handle:
                handle.write(str(os.getpid()))

    proc = subprocess.Popen(["sh", "-c", "while :; do :; done"], preexec_fn=join_cgroups)
    try:
        tracking.attach(proc.pid)
        assert tracking.pids() == {proc.pid}
        assert tracking.freeze() is True
        assert _events(group)["frozen"] == "1"
        frozen_at = _cpu_usec(group)
        time.sleep(0.5)
        assert _cpu_usec(group) == frozen_at
        assert tracking.thaw() is True
        assert _events(group)["frozen"] == "0"
        time.sleep(0.3)
        assert _cpu_usec(group) > frozen_at
        tracking.signal_all(signal.SIGKILL)
        assert proc.wait(timeout=5) == -signal.SIGKILL
        assert _events(group)["populated"] == "0"
        assert tracking.pids() == frozenset()
        assert tracking.usage().user_cpu is not None
    finally:
        proc.kill()
        proc.wait()
    tracking.release()
    assert not group.exists()
    tracking.release()


@pytest.mark.system
def test_the_hybrid_host_uses_v1_and_leaves_v2_alone(unified_base: str) -> None:
    """Auto layout here: memory, cpu, cpuacct, freezer and pids on v1, no v2 group."""
    config = Config.from_text(f"BASE_CGROUP = {unified_base}\n")
    tracking = CgroupBackend(config).track(_request(job_key="hybrid"))
    try:
        assert tracking.v2_group is None
        assert not (UNIFIED / unified_base).exists()
        joined = tracking.child_setup().join_files
        assert {Path(p).parent.parent.parent.name for p in joined} >= {
            "memory",
            "cpu",
            "cpuacct",
            "freezer",
            "pids",
        }
    finally:
        tracking.release()
