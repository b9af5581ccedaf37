"""A per-job scratch filesystem through a real startd and starter: mounted on the sandbox
before the job's ads are written, checked while the job runs (over its Disk: held with the
backend's code), removed after the job; an unwanted backend changes nothing."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.plugins import load_plugins
from epcore.startd.loop import StartdLoop
from epcore.startd.main import build_startd
from epcore.testing.scratch_contracts import TmpfsScratchPlugin
from epcore.testing.system import open_up

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root"),
]

#: EXECUTE is a tmpfs of this many KiB, so that the slot's Disk (and the job's volume) is small.
EXECUTE_KIB = 64 * 1024
#: The job's RequestDisk (KiB): its dynamic slot's Disk, so its volume's size.
REQUEST_KIB = 4096


@pytest.fixture
def execute(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs as EXECUTE."""
    path = tmp_path / "execute"
    path.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={EXECUTE_KIB}k", "tmpfs", str(path)], check=True
    )
    path.chmod(0o755)
    yield path
    subprocess.run(["umount", "-l", str(path)], check=False)


def _run(
    tmp_path: Path, execute: Path, plugin: TmpfsScratchPlugin, script: str, wanted: bool = True
) -> ClassAd:
    local = tmp_path / "local"
    local.mkdir()
    local.chmod(0o755)
    (local / "condor_config").write_text(
        f"LOCAL_DIR = {local}\nEXECUTE = {execute}\nNUM_CPUS = 1\nBASE_CGROUP =\n"
        f"RUNBENCHMARKS = False\nSTART = True\nRESERVED_DISK = 0\n"
        f"TMPFS_SCRATCH = {wanted}\nSTARTER_UPDATE_INTERVAL = 1\n"
    )
    open_up(tmp_path)
    iwd = tmp_path / "iwd"
    iwd.mkdir()
    iwd.chmod(0o777)
    (iwd / "job.sh").write_text("#!/bin/sh\n" + script)
    (iwd / "job.sh").chmod(0o755)
    plugins = load_plugins(extra=[("tmpfs-scratch", plugin)])
    startd = build_startd(str(local / "condor_config"), plugins=plugins)
    loop = StartdLoop(startd)
    loop.open()
    try:
        job = parse_ad(
            f'[ ClusterId = 1; ProcId = 0; Owner = "nobody"; Cmd = "{iwd}/job.sh";'
            f' Iwd = "{iwd}"; Out = "out"; Err = "err"; JobUniverse = 5;'
            f" RequestCpus = 1; RequestMemory = 64; RequestDisk = {REQUEST_KIB} ]"
        )
        startd.activate(startd.claim("slot1", job))
        while not startd.results:
            loop.turn()
        return startd.results[0]
    finally:
        startd.shutdown(fast=True)
        while not loop.finished:
            loop.turn()
        loop.close()


def _mounts_under(path: Path) -> list[str]:
    with open("/proc/self/mounts") as mounts:
        return [line.split()[1] for line in mounts if line.split()[1].startswith(f"{path}/")]


#: What the job reports about its sandbox: the filesystem type, its size, the ads it holds.
LOOK = (
    'cd "$_CONDOR_SCRATCH_DIR"\n'
    'echo "fs=$(stat -f -c %T .) blocks=$(stat -f -c %b .) owner=$(stat -c %U .)"'
    ' >> "$IWD/out"\n'
    'ls -A >> "$IWD/out"\n'
)


def _out(tmp_path: Path, result: ClassAd) -> str:
    path = tmp_path / "iwd" / "out"
    assert path.exists(), f"the job wrote nothing: {result}"
    return path.read_text()


def _write(kib: int) -> str:
    return f"dd if=/dev/zero of=$_CONDOR_SCRATCH_DIR/f bs=1k count={kib} 2>/dev/null\n"


def test_a_job_within_its_disk_runs_on_its_own_filesystem(tmp_path: Path, execute: Path) -> None:
    """The job's sandbox is its own filesystem (owned by the job's user, sized from the slot's
    Disk, the job's ads in it), the job completes, and nothing is left mounted or in EXECUTE."""
    plugin = TmpfsScratchPlugin()
    result = _run(
        tmp_path,
        execute,
        plugin,
        f"IWD={tmp_path}/iwd\n{LOOK}{_write(REQUEST_KIB // 4)}",
    )
    out = _out(tmp_path, result)
    assert result.evaluate("ExitCode") == 0, out
    assert "fs=tmpfs" in out and "owner=nobody" in out and ".job.ad" in out, out
    assert f"blocks={REQUEST_KIB // 4}" in out, out
    assert _mounts_under(execute) == []
    assert os.listdir(execute) == []


def test_a_job_over_its_disk_is_held_with_the_backends_code(tmp_path: Path, execute: Path) -> None:
    """A job that fills its volume is killed and held with the verdict's code and reason."""
    plugin = TmpfsScratchPlugin()
    script = f"IWD={tmp_path}/iwd\n{LOOK}{_write(2 * REQUEST_KIB)}sleep 60\n"
    result = _run(tmp_path, execute, plugin, script)
    assert result.evaluate("HoldReasonCode") == 34, result
    assert "exceeded allocated disk" in str(result.evaluate("HoldReason"))
    assert _mounts_under(execute) == []
    assert os.listdir(execute) == []


def test_an_unwanted_backend_leaves_the_sandbox_plain(tmp_path: Path, execute: Path) -> None:
    """With the backend not turned on, the sandbox is a directory of EXECUTE's filesystem."""
    plugin = TmpfsScratchPlugin()
    result = _run(tmp_path, execute, plugin, f"IWD={tmp_path}/iwd\n{LOOK}", wanted=False)
    out = _out(tmp_path, result)
    assert result.evaluate("ExitCode") == 0, out
    assert f"blocks={EXECUTE_KIB // 4}" in out, out
    assert not plugin.built[0].started
