"""A real startd in a subprocess (``ep startd``), for the daemon's end-to-end tests.

The startd gets a directory of its own (LOCAL_DIR), a configuration written from the test's
text on top of a permissive policy (START = True, no suspension or preemption), a unique
BASE_CGROUP, and is talked to through its real control socket. Every startd, starter and
job started here is killed when the test ends, whatever happened.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.daemon.control import ControlError, StartdClient
from epcore.daemon.persist import read_history
from epcore.testing.process import DaemonProcess

BASE_CONFIG = """\
LOCAL_DIR = {local}
START = True
SUSPEND = False
CONTINUE = True
PREEMPT = False
KILL = False
WANT_SUSPEND = False
WANT_VACATE = True
IS_OWNER = False
RUNBENCHMARKS = False
NUM_CPUS = {cpus}
MEMORY = {memory}
BASE_CGROUP = {cgroup}
POLLING_INTERVAL = 1
UPDATE_INTERVAL = 5
STARTER_INITIAL_UPDATE_INTERVAL = 1
STARTER_UPDATE_INTERVAL = 2
"""


class StartdProcess(DaemonProcess):
    """One ``ep startd`` process and its files."""

    command = "startd"

    def __init__(self, directory: Path, config_text: str) -> None:
        super().__init__(directory, config_text)
        self.control = str(directory / "log" / "startd_control")
        self.client = StartdClient(self.control, timeout=20)

    def start(self, wait: float = 30.0) -> None:
        """Start the startd and wait until its control socket answers."""
        self.launch()
        self.wait_for(self._answers, wait, "the startd to answer on its control socket")

    def _answers(self) -> bool:
        self.check_alive()
        try:
            self.client.query()
        except ControlError:
            return False
        return True

    def places(self) -> dict[str, str]:
        """State/Activity of every slot, by short name."""
        found = {}
        for ad in self.client.query():
            name = str(ad.evaluate("Name")).split("@", 1)[0]
            found[name] = f"{ad.evaluate('State')}/{ad.evaluate('Activity')}"
        return found

    def history(self) -> list[ClassAd]:
        return list(read_history(str(self.directory / "spool" / "startd_history")))

    def run_job(self, job_text: str, slot: str = "slot1") -> str:
        """Claim ``slot`` for the job and activate it; the ClaimId."""
        claim_id = self.client.claim(slot, parse_ad(job_text))
        self.client.activate(claim_id)
        return claim_id

    def starter_pids(self) -> list[int]:
        """The startd's starters (its children) and any starter still running from the log."""
        return self.processes()

    def kill9(self) -> None:
        """``kill -9`` the startd process alone (not its starters)."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def log(self) -> str:
        path = self.directory / "log" / "StartLog"
        return path.read_text() if path.exists() else ""


@pytest.fixture
def startd_factory(
    tmp_path: Path, base_cgroup: str, request: pytest.FixtureRequest
) -> Iterator[Callable[..., StartdProcess]]:
    """``startd_factory(extra_config, cpus=4, memory=4096)``: a started real startd."""
    made: list[StartdProcess] = []

    def make(
        extra: str = "", *, cpus: int = 4, memory: int = 4096, start: bool = True
    ) -> StartdProcess:
        local = tmp_path / f"startd{len(made)}"
        local.mkdir()
        local.chmod(0o755)
        for parent in (tmp_path, *tmp_path.parents):
            if parent in (Path("/tmp"), Path("/")):
                break
            parent.chmod(parent.stat().st_mode | 0o711)
        cgroup = f"{base_cgroup}/{request.node.name[:40]}_{len(made)}"
        text = BASE_CONFIG.format(local=local, cpus=cpus, memory=memory, cgroup=cgroup) + extra
        startd = StartdProcess(local, text)
        made.append(startd)
        if start:
            startd.start()
        return startd

    yield make
    for startd in made:
        startd.stop()
