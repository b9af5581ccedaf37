"""The fakes of epcore.testing: a machine described by attributes and a small file tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from epcore.config import Config
from epcore.config.host import CommandOutput, HostFacts
from epcore.testing import FakeMachineHost, FakeSysfs


def test_defaults_describe_a_small_idle_machine() -> None:
    """4 cores, 8192 MB, 100 GiB free on /, no load and no devices."""
    host = FakeMachineHost()
    assert host.cpu_counts() == (4, 4)
    assert (host.memory_mb(), host.disk_free_kb("/"), host.load_average()) == (
        8192,
        100 * 1024 * 1024,
        0.0,
    )
    assert host.device_access_times() == {}


def test_configuration_facts_follow_the_counts() -> None:
    """$(DETECTED_CORES) and $(DETECTED_MEMORY) agree with the hardware attributes."""
    host = FakeMachineHost(logical_cpus=64, physical_cpus=32, physical_memory_mb=262144)
    config = Config.from_text("", host=host)
    assert config.get("DETECTED_CORES") == "64"
    assert config.get("DETECTED_PHYSICAL_CPUS") == "32"
    assert config.get("DETECTED_MEMORY") == "262144"


def test_explicit_facts_win() -> None:
    """Facts given by the test are used as they are."""
    facts = HostFacts(hostname="h", full_hostname="h.example", detected={"DETECTED_CORES": "2"})
    assert FakeMachineHost(host_facts=facts).facts() is facts


def test_readings_change_when_the_test_changes_them() -> None:
    """Attributes are mutable: the next reading reflects them."""
    host = FakeMachineHost()
    host.one_minute_load = 3.5
    host.device_atimes["/dev/pts/0"] = 42.0
    host.free_disk_kb["/scratch"] = 7
    assert (host.load_average(), host.device_access_times(), host.disk_free_kb("/scratch")) == (
        3.5,
        {"/dev/pts/0": 42.0},
        7,
    )


def test_unknown_disk_paths_and_chosen_failures_raise_oserror() -> None:
    """A path without a free-space entry, or a reading listed in fail, raises OSError."""
    host = FakeMachineHost(fail={"cpu_counts"})
    with pytest.raises(FileNotFoundError):
        host.disk_free_kb("/elsewhere")
    with pytest.raises(OSError, match="cpu_counts"):
        host.cpu_counts()


def test_files_and_commands_work_as_in_memoryhost() -> None:
    """The configuration side is MemoryHost's: files, commands and the environment."""
    host = FakeMachineHost(
        files={"/etc/condor/condor_config": "NUM_CPUS = 2\n"},
        commands={"/bin/gen": CommandOutput("X = 1\n", 0)},
        environment={"CONDOR_CONFIG": "/etc/condor/condor_config"},
    )
    assert host.read_text("/etc/condor/condor_config") == "NUM_CPUS = 2\n"
    assert host.run_command("/bin/gen").stdout == "X = 1\n"
    with pytest.raises(FileNotFoundError):
        host.run_command("/bin/other")
    assert Config.load("/etc/condor/condor_config", host=host).get("NUM_CPUS") == "2"


def test_sysfs_writes_files_with_chosen_times(tmp_path: Path) -> None:
    """write() puts a file under the root at the imitated path, with the given times."""
    sysfs = FakeSysfs(tmp_path)
    path = sysfs.write("/proc/loadavg", "0.50 0.40 0.30 1/99 42\n", atime=1000.0, mtime=2000.0)
    assert path == tmp_path / "proc" / "loadavg"
    # Checked before reading: reading the file may move its access time (relatime).
    assert (os.stat(path).st_atime, os.stat(path).st_mtime) == (1000.0, 2000.0)
    assert path.read_text() == "0.50 0.40 0.30 1/99 42\n"


def test_sysfs_set_times_keeps_the_time_not_given(tmp_path: Path) -> None:
    """Changing only the access time leaves the modification time alone."""
    sysfs = FakeSysfs(tmp_path)
    path = sysfs.write("/dev/pts/0", atime=10.0, mtime=20.0)
    sysfs.set_times("/dev/pts/0", atime=30.0)
    assert (os.stat(path).st_atime, os.stat(path).st_mtime) == (30.0, 20.0)


def test_sysfs_builds_trees(tmp_path: Path) -> None:
    """write_all, mkdir, symlink and devices create what they say and return real paths."""
    sysfs = FakeSysfs(tmp_path)
    dev = sysfs.devices({"/dev/tty1": 5.0})
    assert dev == tmp_path / "dev" and os.stat(dev / "tty1").st_atime == 5.0
    written = sysfs.write_all({"/sys/fs/cgroup/cpu.max": "max 100000\n", "/a/b": "x"})
    assert [p.read_text() for p in written] == ["max 100000\n", "x"]
    assert sysfs.mkdir("/sys/fs/cgroup/ep").is_dir()
    link = sysfs.symlink("/dev/input/mouse0", "/nowhere")
    assert link.is_symlink() and not link.exists()
