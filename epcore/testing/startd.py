"""A real startd for end-to-end tests: in a subprocess (``ep startd``) or in the test's process.

:class:`StartdProcess` (the ``startd_factory`` fixture) runs ``ep startd`` in a directory of its
own (LOCAL_DIR), with a configuration written from the test's text on top of a permissive
policy (:data:`BASE_CONFIG`: START = True, no suspension or preemption) and a unique
BASE_CGROUP, and is talked to through its real control socket. Every startd, starter and job
started there is killed when the test ends, whatever happened.

:class:`InProcessStartd` opens a startd with every installed plugin in the test's own process,
its event loop turned by the test, to claim, activate and vacate directly and read its results.

A plugin's tests get the fixture with ``pytest_plugins = ["epcore.testing.system",
"epcore.testing.startd"]`` in their top conftest.py.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.plugins import load_plugins
from epcore.runtime.control import ControlError
from epcore.runtime.persist import SavedStarter, read_claims, read_history
from epcore.startd.control import StartdClient
from epcore.startd.loop import StartdLoop
from epcore.startd.main import build_startd
from epcore.startd.startd import Startd
from epcore.testing.process import DaemonProcess
from epcore.testing.system import open_up

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

    def saved_claims(self) -> list[SavedStarter]:
        """The claims the startd saved (with its starters' PIDs), as a restarted one reads
        them."""
        return read_claims(str(self.directory / "spool" / "startd_claims"))

    def run_job(self, job_text: str, slot: str = "slot1") -> str:
        """Claim ``slot`` for the job and activate it; the ClaimId."""
        claim_id = self.client.claim(slot, parse_ad(job_text))
        self.client.activate(claim_id)
        return claim_id

    def starter_pids(self) -> list[int]:
        """The startd's starters (its children) and any starter still running from the log."""
        return self.processes()

    def kill9(self, *, with_zygote: bool = False) -> None:
        """``kill -9`` the startd process alone (not its starters), or with its zygote (as
        when the machine's OOM killer or an admin's ``kill -9`` of the group takes both)."""
        assert self.process is not None
        zygotes = self.zygote_pids() if with_zygote else []
        # Both stopped first: neither may see the other die and clean up before its own end.
        for pid in [self.process.pid, *zygotes]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        for pid in [self.process.pid, *zygotes]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait(10)

    def log(self) -> str:
        path = self.directory / "log" / "StartLog"
        return path.read_text() if path.exists() else ""


@attrs.frozen
class InProcessStartd:
    """A startd opened in the test's process, and the event loop the test turns."""

    startd: Startd
    loop: StartdLoop

    @classmethod
    def open(cls, config_file: str) -> InProcessStartd:
        """Build the startd of ``config_file`` with every installed plugin and open its loop."""
        startd = build_startd(config_file, plugins=load_plugins())
        loop = StartdLoop(startd)
        loop.open()
        return cls(startd, loop)

    def turn_until(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        """Turn the loop until ``check`` holds; AssertionError naming ``what`` after
        ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            self.loop.turn()

    def run(self, job_text: str, slot: str = "slot1") -> None:
        """Claim ``slot`` for the job and activate it."""
        self.startd.activate(self.startd.claim(slot, parse_ad(job_text)))

    def result(self, timeout: float = 60.0) -> ClassAd:
        """The first job result (the loop turned until there is one)."""
        self.turn_until(lambda: len(self.startd.results) > 0, timeout, "a job result")
        return self.startd.results[0]

    def close(self, timeout: float = 30.0) -> None:
        """Shut the startd down fast (its jobs killed), turning the loop until it is done."""
        self.startd.shutdown(fast=True)
        deadline = time.monotonic() + timeout
        while not self.loop.finished and time.monotonic() < deadline:
            self.loop.turn()
        self.loop.close()


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
        open_up(tmp_path)
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
