"""A daemon of epcore in a subprocess (``ep startd``, ``ep run``), for end-to-end tests.

The daemon gets a directory with its configuration file; every process whose command line
names that file (the daemon and the starters it forked) is killed by :meth:`stop`, whatever
happened in the test. Daemons are started as ``python -m`` :data:`EP_MODULE`, the ``ep``
command, so they run from the same epcore as the tests whatever ``ep`` is on the PATH.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from epcore.starter.supervisor_server import SERVER_MARK

#: The module whose ``python -m`` is the ``ep`` command, the one name to change if it moves.
EP_MODULE = "epcore.cli.main"


class DaemonProcess:
    """One daemon process (``ep <command> --config <directory>/condor_config``)."""

    command = ""

    def __init__(self, directory: Path, config_text: str) -> None:
        self.directory = directory
        self.config_path = directory / "condor_config"
        self.config_path.write_text(config_text)
        self.process: subprocess.Popen[bytes] | None = None
        self.output = directory / f"{self.command}.out"

    def launch(self) -> None:
        """Start the daemon (its output goes to ``self.output``)."""
        with open(self.output, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", EP_MODULE, self.command, "--config", str(self.config_path)],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def check_alive(self) -> None:
        """AssertionError with the daemon's last output when it has exited."""
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"ep {self.command} exited: {self.output.read_text()[-3000:]}")

    def wait_for(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}{self.hint()}")
            time.sleep(0.05)

    def hint(self) -> str:
        """What a timeout message adds (a daemon's log, say)."""
        return ""

    def processes(self) -> list[int]:
        """The daemon, its starters and anything of theirs still running."""
        pids = []
        for process in psutil.process_iter(["pid", "cmdline"]):
            with contextlib.suppress(psutil.Error):
                if str(self.config_path) in " ".join(process.info["cmdline"] or []):
                    pids.append(process.info["pid"])
        return pids

    def zygote_pids(self) -> list[int]:
        """The startd's zygotes: its children that run the same program (forked, not
        exec'd, as cron and hook programs are)."""
        assert self.process is not None
        startd = psutil.Process(self.process.pid)
        found = []
        with contextlib.suppress(psutil.Error):
            command = startd.cmdline()
            for child in startd.children():
                with contextlib.suppress(psutil.Error):
                    if child.cmdline() == command:
                        found.append(child.pid)
        return found

    def supervisor_server_pids(self) -> list[int]:
        """The supervisor servers of the daemon's zygotes (they live as long as those)."""
        found = []
        for zygote in self.zygote_pids():
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(zygote).children():
                    with contextlib.suppress(psutil.Error):
                        if SERVER_MARK in child.cmdline():
                            found.append(child.pid)
        return found

    def starters_left(self) -> list[int]:
        """The daemon's starters and anything of theirs still running (not the daemon, its
        zygotes or their supervisor servers)."""
        if self.process is None:
            return self.processes()
        own = {self.process.pid, *self.zygote_pids(), *self.supervisor_server_pids()}
        return [pid for pid in self.processes() if pid not in own]

    def stop(self) -> None:
        """Kill the daemon, every starter of it and everything below them."""
        for pid in self.processes():
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(pid).children(recursive=True):
                    child.kill()
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
