"""On a machine without device-mapper (this host): the startd reports LVM unavailable with the
reason in every slot ad, and runs jobs in plain sandboxes without disk enforcement."""

from __future__ import annotations

import os
from pathlib import Path

import epcore_lvm.plugin
import pytest
from epcore_lvm.backend import device_mapper_problem

from epcore.classad import parse_ad
from epcore.plugins import Plugins, load_plugins
from epcore.startd.loop import StartdLoop
from epcore.startd.main import build_startd
from epcore.testing.scratch_contracts import ScratchFilesystemContract
from epcore.testing.system import open_up

no_device_mapper = pytest.mark.skipif(
    device_mapper_problem() is None, reason="this machine has device-mapper and lvm"
)


def lvm_plugins() -> Plugins:
    """The installed plugins, with epcore-lvm from this checkout if it is not installed."""
    plugins = load_plugins()
    if any(info.name == "lvm" for info in plugins.describe()):
        return plugins
    return load_plugins(extra=[("lvm", epcore_lvm.plugin)])


class TestLvmContract(ScratchFilesystemContract):
    """The contract kit on the LVM backend (its volumes only where device-mapper is)."""

    backend_name = "lvm"
    config_text = "STARTD_ENFORCE_DISK_LIMITS = True\nLVM_VOLUME_GROUP_NAME = contract_vg\n"

    @pytest.fixture
    def plugin(self) -> object:
        return epcore_lvm.plugin


@no_device_mapper
@pytest.mark.system
@pytest.mark.skipif(os.geteuid() != 0, reason="the startd runs the job as nobody")
def test_without_device_mapper_the_reason_is_advertised_and_jobs_run(tmp_path: Path) -> None:
    """STARTD_ENFORCE_DISK_LIMITS on a kernel without device-mapper: every slot ad says
    IsEnforcingDiskUsage = false and why, no backing file is made, and a job runs."""
    open_up(tmp_path)
    local = tmp_path / "local"
    local.mkdir()
    local.chmod(0o755)
    (local / "condor_config").write_text(
        f"LOCAL_DIR = {local}\nNUM_CPUS = 1\nBASE_CGROUP =\nRUNBENCHMARKS = False\n"
        "START = True\nSTARTD_ENFORCE_DISK_LIMITS = True\n"
    )
    startd = build_startd(str(local / "condor_config"), plugins=lvm_plugins())
    loop = StartdLoop(startd)
    loop.open()
    try:
        ads = startd.ads(startd.state, 0.0)
        assert ads
        for ad in ads.values():
            assert ad.evaluate("IsEnforcingDiskUsage") is False
            assert "no device-mapper" in str(ad.evaluate("LvmUnavailableReason"))
        assert not (local / "spool" / "startd_disk.img").exists()
        job = parse_ad(
            '[ ClusterId = 1; ProcId = 0; Owner = "nobody"; Cmd = "/bin/dd";'
            ' Args = "if=/dev/zero of=big bs=1000 count=100"; JobUniverse = 5;'
            " RequestCpus = 1; RequestMemory = 64; RequestDisk = 1 ]"
        )
        startd.activate(startd.claim("slot1", job))
        while not startd.results:
            loop.turn()
        result = startd.results[0]
        # 100 kB written against a request of 1 KiB: without enforcement, the job completes.
        assert result.evaluate("ExitCode") == 0, result
        assert result.evaluate("JobOutcome") == "exited"
    finally:
        startd.shutdown(fast=True)
        while not loop.finished:
            loop.turn()
        loop.close()
