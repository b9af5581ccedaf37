"""A real startd in a subprocess (``ep startd``), for the daemon's end-to-end tests.

The startd gets a directory of its own (LOCAL_DIR), a configuration written from the test's
text on top of a permissive policy (START = True, no suspension or preemption), a unique
BASE_CGROUP, and is talked to through its real control socket. Every startd, starter and
job started here is killed when the test ends, whatever happened.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.daemon.control import ControlError, StartdClient
from epcore.daemon.persist import read_history

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


class StartdProcess:
    """One ``ep startd`` process and its files."""

    def __init__(self, directory: Path, config_text: str) -> None:
        self.directory = directory
        self.config_path = directory / "condor_config"
        self.config_path.write_text(config_text)
        self.control = str(directory / "log" / "startd_control")
        self.client = StartdClient(self.control, timeout=20)
        self.process: subprocess.Popen[bytes] | None = None
        self.output = directory / "startd.out"

    def start(self, wait: float = 30.0) -> None:
        """Start the startd and wait until its control socket answers."""
        with open(self.output, "ab") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "epcore.cli.main",
                    "startd",
                    "--config",
                    str(self.config_path),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.wait_for(self._answers, wait, "the startd to answer on its control socket")

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"the startd exited: {self.output.read_text()[-3000:]}")
        try:
            self.client.query()
        except ControlError:
            return False
        return True

    def wait_for(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            time.sleep(0.05)

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
        pids = []
        for process in psutil.process_iter(["pid", "cmdline"]):
            with contextlib.suppress(psutil.Error):
                if str(self.config_path) in " ".join(process.info["cmdline"] or []):
                    pids.append(process.info["pid"])
        return pids

    def kill9(self) -> None:
        """``kill -9`` the startd process alone (not its starters)."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        """Kill the startd, every starter of it and everything below them."""
        for pid in self.starter_pids():
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(pid).children(recursive=True):
                    child.kill()
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
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
