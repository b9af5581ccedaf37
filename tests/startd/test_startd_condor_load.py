"""A real job's CPU in its slot's CondorLoadAvg, through an in-process startd and its loop."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.builtin.host import LocalHost
from epcore.classad import ClassAd, parse_ad
from epcore.startd.loop import StartdLoop
from epcore.startd.main import build_startd

CONFIG = """
LOCAL_DIR = {local}
START = True
SUSPEND = False
PREEMPT = False
KILL = False
WANT_VACATE = True
BASE_CGROUP =
RUNBENCHMARKS = False
IS_OWNER = False
NUM_CPUS = 2
NUM_SLOTS = 2
MEMORY = 512
POLLING_INTERVAL = 1
"""


class QuietHost(LocalHost):
    """The local machine, with a load average of one busy core (the job's) and no other."""

    def load_average(self) -> float:
        return 1.0


@pytest.fixture
def loop() -> Iterator[StartdLoop]:
    """An opened in-process startd of two one-core slots (its directory open to nobody)."""
    top = Path(tempfile.mkdtemp(prefix="ep_condor_load_"))
    top.chmod(0o711)
    local = top / "local"
    local.mkdir()
    (top / "condor_config").write_text(CONFIG.format(local=local))
    startd = build_startd(str(top / "condor_config"), host=QuietHost())
    opened = StartdLoop(startd)
    opened.open()
    try:
        yield opened
    finally:
        startd.shutdown(fast=True)
        deadline = time.monotonic() + 30
        while not opened.finished and time.monotonic() < deadline:
            opened.turn()
        opened.close()
        shutil.rmtree(top, ignore_errors=True)


def _ads(loop: StartdLoop) -> dict[str, ClassAd]:
    startd = loop.startd
    return startd.ads(startd.state, startd.clock())


def test_a_cpu_burning_job_loads_its_own_slot_only(loop: StartdLoop) -> None:
    """A job spinning one core raises slot1's CondorLoadAvg and TotalCondorLoadAvg, slot2's
    stays 0, and slot1's NonCondorLoadAvg does not count the job's own load."""
    startd = loop.startd
    job = parse_ad('[ Cmd = "/usr/bin/sha256sum"; Args = "/dev/zero"; Owner = "nobody" ]')
    startd.activate(startd.claim("slot1", job))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        loop.turn()
        if _ads(loop)["slot1"].evaluate("CondorLoadAvg") >= 0.1:  # 6 s of one core
            break
    ads = _ads(loop)
    busy, idle = ads["slot1"], ads["slot2"]
    condor = busy.evaluate("CondorLoadAvg")
    assert isinstance(condor, float) and 0.1 <= condor <= 1.0
    assert idle.evaluate("CondorLoadAvg") == 0.0
    assert busy.evaluate("TotalCondorLoadAvg") == condor
    # The default policy's NonCondorLoadAvg: the owner load the slot sees, without the job's.
    non_condor = busy.evaluate("LoadAvg") - condor
    assert 0.0 <= non_condor <= 1.0 - condor + 0.01
