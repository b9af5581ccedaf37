"""One run of a startd cron or benchmark program: a real process in its own session whose
stdout and stderr are non-blocking pipes in the startd's selector.

Nothing here waits for the program: :meth:`CronProcess.read` takes what a pipe holds,
:meth:`CronProcess.exited` looks without reaping, :meth:`CronProcess.reap` collects an ended
program (killing whatever it left running in its session), and a program being killed gets
SIGTERM and, :data:`KILL_GRACE` seconds later, SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
from collections.abc import Mapping
from typing import IO, Final

from epcore.runtime import loop_pipes
from epcore.slots.cron_config import CronJobSpec

#: Seconds between SIGTERM and SIGKILL of a program being killed.
KILL_GRACE: Final = 2.0
#: The most output not yet used that is kept of one run (a runaway program must not fill the
#: startd's memory); a WaitForExit job's ads leave the buffer as they are taken.
MAX_OUTPUT: Final = 4 * 1024 * 1024


class CronProcess:
    """A started program and what it wrote so far (see the module docstring)."""

    def __init__(
        self, process: subprocess.Popen[bytes], started: float, max_output: int = MAX_OUTPUT
    ) -> None:
        self.process = process
        self.max_output = max_output
        self.started = started
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.pipes: list[IO[bytes]] = [p for p in (process.stdout, process.stderr) if p]
        self.killed_at: float | None = None
        self.hard_killed = False

    @classmethod
    def start(
        cls,
        spec: CronJobSpec,
        environment: Mapping[str, str],
        now: float,
        selector: selectors.BaseSelector | None,
        data: object,
        max_output: int = MAX_OUTPUT,
    ) -> CronProcess:
        """Start ``spec``'s program in a session of its own, its pipes registered in
        ``selector`` with ``data``; OSError when it cannot be started."""
        process = subprocess.Popen(
            [spec.executable, *spec.args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=spec.cwd,
            env=dict(environment),
            start_new_session=True,
        )
        run = cls(process, now, max_output)
        for pipe in run.pipes:
            if selector is not None:
                loop_pipes.register(selector, pipe, selectors.EVENT_READ, data)
            else:
                os.set_blocking(pipe.fileno(), False)
        return run

    @property
    def pid(self) -> int:
        return self.process.pid

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the program's process group (its session)."""
        loop_pipes.signal_group(self.process.pid, signum)

    def owns(self, fileobj: object) -> IO[bytes] | None:
        """The pipe of this program that ``fileobj`` is, if it is one."""
        return next((pipe for pipe in self.pipes if pipe is fileobj), None)

    def read(
        self,
        pipe: IO[bytes],
        selector: selectors.BaseSelector | None,
        *,
        until_blocked: bool = False,
    ) -> None:
        """Take one chunk of what ``pipe`` holds (``until_blocked``: all of it); at its end,
        unregister and close it.

        One chunk at a time while the program runs, so that the ads a WaitForExit job has
        finished are taken (and leave the buffer) between chunks: a fast printer never fills
        the buffer with ads that are still to be taken, and only an ad larger than
        ``max_output`` is cut short.
        """
        buffer = self.stdout if pipe is self.process.stdout else self.stderr
        while True:
            chunk = loop_pipes.read_chunk(pipe)
            if chunk is None:
                return
            if not chunk:
                self.close_pipe(pipe, selector)
                return
            if len(buffer) < self.max_output:
                buffer.extend(chunk[: self.max_output - len(buffer)])
            if not until_blocked:
                return

    def close_pipe(self, pipe: IO[bytes], selector: selectors.BaseSelector | None) -> None:
        loop_pipes.close(selector, pipe)
        if pipe in self.pipes:
            self.pipes.remove(pipe)

    def finished_ads_text(self) -> str:
        """The stdout up to its last ``-`` line (the ads a WaitForExit job has finished),
        taken out of the buffer (a job that runs for months keeps printing ads); empty when
        no ad was finished."""
        data = bytes(self.stdout)
        end = position = 0
        for line in data.splitlines(keepends=True):
            position += len(line)
            if line.endswith(b"\n") and line.lstrip().startswith(b"-"):
                end = position
        if not end:
            return ""
        del self.stdout[:end]
        return data[:end].decode("utf-8", "replace")

    def rest_of_stdout(self) -> str:
        """The stdout not taken yet."""
        return self.stdout.decode("utf-8", "replace")

    def terminate(self, now: float) -> None:
        """Start killing the program: SIGTERM now, SIGKILL after KILL_GRACE (:meth:`escalate`)."""
        if self.killed_at is None:
            self.killed_at = now
            self.signal(signal.SIGTERM)

    def escalate(self, now: float) -> None:
        """SIGKILL a program that outlived its SIGTERM by KILL_GRACE."""
        killed_at = self.killed_at
        if killed_at is not None and not self.hard_killed and now >= killed_at + KILL_GRACE:
            self.signal(signal.SIGKILL)
            self.hard_killed = True

    def exited(self) -> bool:
        """Whether the program has ended, without reaping it."""
        return self.process.returncode is not None or loop_pipes.leader_ended(self.process.pid)

    def reap(self, selector: selectors.BaseSelector | None) -> int:
        """Collect an ended program (:meth:`exited` said so): kill what it left in its session
        (not reaped yet, its group's number is still its own), take the rest of its output,
        close its pipes; its return code (negative: the signal that killed it)."""
        self.signal(signal.SIGKILL)
        for pipe in list(self.pipes):
            self.read(pipe, selector, until_blocked=True)
        for pipe in list(self.pipes):
            self.close_pipe(pipe, selector)
        return self.process.wait()

    def abandon(self, selector: selectors.BaseSelector | None) -> None:
        """Kill the program and its session at once and forget its output."""
        self.signal(signal.SIGKILL)
        for pipe in list(self.pipes):
            self.close_pipe(pipe, selector)
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.process.wait(timeout=1.0)
