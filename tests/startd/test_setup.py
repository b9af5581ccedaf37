"""What the startd reads at startup: its paths, and the knobs that wait for a restart."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from epcore.config import Config
from epcore.errors import DaemonError
from epcore.startd.setup import StartdPaths, make_state_private, needs_restart, restart_changes


@pytest.mark.parametrize(
    ("name", "restart"),
    [
        ("NUM_SLOTS", True),
        ("num_slots", True),
        ("NUM_SLOTS_TYPE_1", True),
        ("NUM_SLOTS_TYPE_12", True),
        ("SLOT_TYPE_1", True),
        ("SLOT_TYPE_2_PARTITIONABLE", True),
        ("NUM_CPUS", True),
        ("MEMORY", True),
        ("RESERVED_MEMORY", True),
        ("RESERVED_DISK", True),
        ("MACHINE_RESOURCE_GPUS", True),
        ("MACHINE_RESOURCE_INVENTORY_GPUs", True),
        ("COUNT_HYPERTHREAD_CPUS", True),
        ("EXECUTE", True),
        ("SLOT3_EXECUTE", True),
        ("BASE_CGROUP", True),
        ("USE_PID_NAMESPACES", True),
        ("USE_GID_PROCESS_TRACKING", True),
        ("MIN_TRACKING_GID", True),
        ("MAX_TRACKING_GID", True),
        ("STARTD_ENFORCE_DISK_LIMITS", True),
        ("START", False),
        ("PREEMPT", False),
        ("SUSPEND", False),
        ("UPDATE_INTERVAL", False),
        ("POLLING_INTERVAL", False),
        ("STARTD_ATTRS", False),
        ("SLOT_TYPE_1_START", False),
        ("NUM_SLOTS_TYPE_X", False),
        ("MEMORY_LIMIT", False),
        ("SLOT_TYPE_", False),
        ("EXECUTE_DIR", False),
        ("SLOTX_EXECUTE", False),
    ],
)
def test_needs_restart(name: str, restart: bool) -> None:
    """Slot layout, resources, EXECUTE and process tracking wait for a restart; policy does not."""
    assert needs_restart(name) is restart


@pytest.mark.parametrize(
    ("old", "new", "changed"),
    [
        ("NUM_CPUS = 2", "NUM_CPUS = 4", ["NUM_CPUS"]),
        ("", "NUM_SLOTS = 3", ["NUM_SLOTS"]),
        ("MEMORY = 1024", "", ["MEMORY"]),
        ("START = True", "START = False", []),
        ("PREEMPT = False\nUPDATE_INTERVAL = 5", "PREEMPT = True\nUPDATE_INTERVAL = 60", []),
        ("NUM_CPUS = 2", "NUM_CPUS = 2\nSTART = False", []),
        (
            "SLOT_TYPE_1 = cpus=1\nBASE_CGROUP = a\nSTART = 1",
            "SLOT_TYPE_1 = cpus=2\nBASE_CGROUP = b\nSTART = 0",
            ["BASE_CGROUP", "SLOT_TYPE_1"],
        ),
        ("base_cgroup = a", "BASE_CGROUP = a", []),
        # What matters is the expanded value, not the text.
        ("X = 2\nNUM_CPUS = $(X)", "X = 3\nNUM_CPUS = $(X)", ["NUM_CPUS"]),
        ("X = 2\nNUM_CPUS = $(X)", "NUM_CPUS = 2", []),
    ],
    ids=[
        "num-cpus",
        "added",
        "removed",
        "start",
        "policy-and-interval",
        "unchanged",
        "several-sorted",
        "case",
        "macro-changed",
        "macro-same-value",
    ],
)
def test_restart_changes(old: str, new: str, changed: list[str]) -> None:
    """restart_changes lists, sorted, the startup-only knobs whose value the new file changes."""
    assert restart_changes(Config.from_text(old), Config.from_text(new)) == changed


def test_paths_default_from_log_spool_execute() -> None:
    """Unset STARTD_LOG, STARTER_LOG, LOCK and STARTD_CONTROL_SOCKET come from LOG and SPOOL."""
    paths = StartdPaths.from_config(
        Config.from_text("LOG = /l\nSPOOL = /s\nEXECUTE = /e\nSTARTD_LOG =\nSTARTER_LOG =\nLOCK =")
    )
    assert paths == StartdPaths(
        log_dir="/l",
        startd_log="/l/StartLog",
        starter_log="/l/StarterLog",
        execute="/e",
        spool="/s",
        lock="/l",
        control_socket="/l/startd_control",
        starter_socket="/l/startd_starters",
        claims_file="/s/startd_claims",
        history_file="/s/startd_history",
        results_file="/s/startd_results",
    )


def test_paths_follow_their_knobs() -> None:
    """STARTD_LOG, STARTER_LOG, LOCK and STARTD_CONTROL_SOCKET move their files."""
    paths = StartdPaths.from_config(
        Config.from_text(
            "LOG = /l\nSPOOL = /s\nEXECUTE = /e\nLOCK = /k\nSTARTD_LOG = /x/SL\n"
            "STARTER_LOG = /x/TL\nSTARTD_CONTROL_SOCKET = /c/sock"
        )
    )
    assert (paths.startd_log, paths.starter_log, paths.lock) == ("/x/SL", "/x/TL", "/k")
    assert (paths.control_socket, paths.starter_socket) == ("/c/sock", "/k/startd_starters")


def test_htcondor_defaults_from_local_dir() -> None:
    """With only LOCAL_DIR set, HTCondor's defaults put everything below it."""
    paths = StartdPaths.from_config(Config.from_text("LOCAL_DIR = /var/ep"))
    assert paths.log_dir == "/var/ep/log"
    assert paths.spool == "/var/ep/spool"
    assert paths.execute == "/var/ep/execute"


@pytest.mark.parametrize("missing", ["LOG", "SPOOL", "EXECUTE"])
@pytest.mark.parametrize("value", ["", "   "])
def test_missing_path_knob_is_named(missing: str, value: str) -> None:
    """An unset (or blank) LOG, SPOOL or EXECUTE is a DaemonError naming the knob."""
    text = "\n".join(
        f"{name} = {value if name == missing else '/' + name.lower()}"
        for name in ("LOG", "SPOOL", "EXECUTE")
    )
    with pytest.raises(DaemonError, match=f"needs {missing} to be set"):
        StartdPaths.from_config(Config.from_text(text))


def test_make_directories(tmp_path: Path) -> None:
    """make_directories makes LOG, SPOOL, EXECUTE 0755 and LOCK 0700, and may run again."""
    old_umask = os.umask(0o022)
    try:
        config = Config.from_text(
            f"LOG = {tmp_path}/log\nSPOOL = {tmp_path}/spool\nEXECUTE = {tmp_path}/a/execute\n"
            f"LOCK = {tmp_path}/lock"
        )
        paths = StartdPaths.from_config(config)
        paths.make_directories()
        paths.make_directories()
    finally:
        os.umask(old_umask)
    modes = {
        name: stat.S_IMODE(os.stat(tmp_path / name).st_mode)
        for name in ("log", "spool", "a/execute", "lock")
    }
    assert modes == {"log": 0o755, "spool": 0o755, "a/execute": 0o755, "lock": 0o700}


def test_make_directories_names_the_one_that_fails(tmp_path: Path) -> None:
    """A directory that cannot be made is a DaemonError naming it."""
    (tmp_path / "file").write_text("")
    config = Config.from_text(
        f"LOG = {tmp_path}/log\nSPOOL = {tmp_path}/file/spool\nEXECUTE = {tmp_path}/e"
    )
    with pytest.raises(DaemonError, match=f"cannot make directory {tmp_path}/file/spool"):
        StartdPaths.from_config(config).make_directories()


def test_state_files_an_older_version_left_open_are_made_private(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Files in SPOOL and LOG readable by all (an older version's) become mode 0600, each
    named in the log; a file already private is left unnamed."""
    spool, log_dir = tmp_path / "spool", tmp_path / "log"
    for directory in (spool, log_dir):
        directory.mkdir()
    (spool / "startd_history").write_text("x")
    (spool / "startd_history").chmod(0o644)
    (log_dir / "StartLog").write_text("x")
    (log_dir / "StartLog").chmod(0o600)
    paths = StartdPaths.from_config(
        Config.from_text(f"LOG = {log_dir}\nSPOOL = {spool}\nEXECUTE = {tmp_path}/e\n")
    )
    caplog.set_level(logging.INFO, "test.private")
    make_state_private(paths, logging.getLogger("test.private"))
    assert stat.S_IMODE((spool / "startd_history").stat().st_mode) == 0o600
    named = [r.getMessage() for r in caplog.records]
    assert named == [f"{spool}/startd_history was readable by others: now mode 0600"]
