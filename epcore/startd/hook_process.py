"""A hook process the startd's loop watches: no thread, no wait, a time limit.

The startd runs its fetch-work hooks (:mod:`epcore.startd.fetch_work`) while it keeps serving,
so a hook is one more thing its selector watches. :meth:`LoopHook.spawn` starts the hook in its
own session, writes its stdin (what the pipe does not take at once is written when the
selector says it can be) and registers its pipes in the loop's selector; the loop hands ready
pipes back through :meth:`LoopHook.on_ready`; :meth:`LoopHook.check`, once per turn, kills a
hook past its deadline and, once the hook has ended and its pipes are closed, returns its
:class:`~epcore.starter.hook_runner.HookResult`. Each stderr line goes to the startd's log.

Why not :class:`~epcore.starter.hook_runner.HookRunner`, which the starter uses: its pipes are
pumped by a thread, and the startd forks starters. A starter forked between the hook's start
and the thread closing the hook's stdin would keep that pipe open for as long as the job runs,
and a hook reading its stdin to the end would hang until its time limit. Pipes registered in
the loop's selector are closed in every forked starter (``StartdLoop.close_in_child``), and
everything here happens on the loop's own thread, before any fork.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import IO, Final

from epcore.runtime import loop_pipes
from epcore.starter.hook_runner import HookError, HookResult, log_stderr_lines

#: The most a hook may print on stdout; a hook printing more is killed (a job ad is small).
MAX_OUTPUT: Final = 1 << 20
#: How long a hook's pipes may stay open after the hook ended (held by a process that left
#: its session) before the startd stops reading them.
PIPE_GRACE: Final = 2.0

Monotonic = Callable[[], float]


class LoopHook:
    """One running hook (see the module docstring); built by :meth:`spawn`."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        name: str,
        stdin: bytes,
        *,
        selector: selectors.BaseSelector,
        owner: object,
        log: logging.Logger,
        deadline: float,
        monotonic: Monotonic,
    ) -> None:
        self.name = name
        self.process = process
        self._selector = selector
        self._owner = owner
        self._log = log
        self._deadline = deadline
        self._monotonic = monotonic
        self._pending = memoryview(stdin)
        self._stdout = bytearray()
        self._stderr = bytearray()
        self._logged = 0
        self._ended_at: float | None = None
        self._status: int | None = None
        self._timed_out = False
        self._overflow = False
        self._result: HookResult | None = None
        self._open: list[IO[bytes]] = []
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                self._open.append(stream)
                loop_pipes.register(selector, stream, selectors.EVENT_READ, owner)
        if process.stdin is not None:
            os.set_blocking(process.stdin.fileno(), False)
            self._write_stdin(process.stdin)
            if not process.stdin.closed:
                self._open.append(process.stdin)
                loop_pipes.register(selector, process.stdin, selectors.EVENT_WRITE, owner)

    @classmethod
    def spawn(
        cls,
        path: str,
        args: Sequence[str],
        stdin: str,
        *,
        name: str,
        selector: selectors.BaseSelector,
        owner: object,
        log: logging.Logger,
        timeout: float,
        capture_stdout: bool = True,
        monotonic: Monotonic = time.monotonic,
    ) -> LoopHook:
        """Start the hook at ``path`` with ``args`` and ``stdin``, with the startd's own
        identity and environment, in its own session; its pipes are registered in
        ``selector`` with ``owner`` as the key's data. HookError when it cannot be started."""
        try:
            process = subprocess.Popen(
                [path, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd="/",
                start_new_session=True,
            )
        except (OSError, subprocess.SubprocessError) as error:
            raise HookError(f"cannot run the {name} hook {path}: {error}") from error
        log.info("started the %s hook %s (pid %d)", name, path, process.pid)
        return cls(
            process,
            name,
            stdin.encode("utf-8"),
            selector=selector,
            owner=owner,
            log=log,
            deadline=monotonic() + timeout,
            monotonic=monotonic,
        )

    @property
    def files(self) -> tuple[IO[bytes], ...]:
        """The pipes still open (registered in the selector)."""
        return tuple(self._open)

    @property
    def result(self) -> HookResult | None:
        """How the hook ended, once :meth:`check` has seen it end."""
        return self._result

    # -- the loop's calls ----------------------------------------------------------------

    def on_ready(self, stream: IO[bytes]) -> None:
        """The selector says ``stream`` (one of :attr:`files`) can be read or written."""
        if stream is self.process.stdin:
            self._write_stdin(stream)
            return
        sink = self._stdout if stream is self.process.stdout else self._stderr
        chunk = loop_pipes.read_chunk(stream)
        if chunk is None:
            return
        if not chunk:
            self._close(stream)
            return
        if sink is self._stdout and len(sink) + len(chunk) > MAX_OUTPUT:
            if not self._overflow:
                self._overflow = True
                self._log.warning(
                    "%s hook (pid %d) printed more than %d bytes: killed",
                    self.name,
                    self.process.pid,
                    MAX_OUTPUT,
                )
                self._kill_group()
            return
        sink.extend(chunk)
        if sink is self._stderr:
            self._log_stderr(final=False)

    def check(self) -> HookResult | None:
        """Kill the hook past its deadline; its result once it has ended and its pipes are
        closed (or stayed open :data:`PIPE_GRACE` seconds after its end), else None."""
        if self._result is not None:
            return self._result
        now = self._monotonic()
        if self._ended_at is None:
            if self._leader_ended():
                # Whatever the hook left in its group goes too, so no hook outlives its result.
                self._kill_group()
                self._status = self.process.wait()
                self._ended_at = now
            elif now >= self._deadline and not self._timed_out:
                self._timed_out = True
                self._kill_group()
                return None
            else:
                return None
        if self._open and now - self._ended_at < PIPE_GRACE:
            return None
        for stream in list(self._open):
            self._close(stream)
        return self._finish()

    def kill(self) -> None:
        """Kill the hook's process group and forget its pipes (the startd is leaving)."""
        if self._result is not None:
            return
        self._kill_group()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        for stream in list(self._open):
            self._close(stream)

    # -- inside ------------------------------------------------------------------------------

    def _finish(self) -> HookResult:
        status = self._status if self._status is not None else -int(signal.SIGKILL)
        self._log_stderr(final=True)
        self._result = HookResult(
            exit_code=status if status >= 0 else None,
            signal=-status if status < 0 else None,
            stdout=self._stdout.decode("utf-8", "replace"),
            stderr=self._stderr.decode("utf-8", "replace"),
            timed_out=self._timed_out,
        )
        if self._timed_out:
            self._log.warning(
                "%s hook (pid %d) %s", self.name, self.process.pid, self._result.describe()
            )
        return self._result

    def _leader_ended(self) -> bool:
        return loop_pipes.leader_ended(self.process.pid)

    def _kill_group(self) -> None:
        loop_pipes.signal_group(self.process.pid, signal.SIGKILL)

    def _write_stdin(self, stream: IO[bytes]) -> None:
        while self._pending:
            try:
                written = os.write(stream.fileno(), self._pending[: loop_pipes.CHUNK])
            except BlockingIOError:
                return
            except OSError:
                break  # the hook closed its stdin: it wants no more
            self._pending = self._pending[written:]
        self._close(stream)

    def _close(self, stream: IO[bytes]) -> None:
        loop_pipes.close(self._selector, stream)
        if stream in self._open:
            self._open.remove(stream)

    def _log_stderr(self, *, final: bool) -> None:
        self._logged = log_stderr_lines(
            self._log, self.name, self._stderr, self._logged, final=final
        )

    @property
    def overflowed(self) -> bool:
        """Whether the hook was killed for printing more than :data:`MAX_OUTPUT` bytes."""
        return self._overflow
