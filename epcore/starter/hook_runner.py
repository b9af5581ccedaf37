"""Running a job hook: as the job's user, in its own session, with a time limit.

The hook gets its stdin text, its stdout is captured (or discarded for advisory hooks), and
every line it writes to stderr goes to the StarterLog prefixed with the hook's name. A hook
past its time limit is killed with its whole process group; so is whatever a hook leaves
running in its group when it ends.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import IO, Final

import attrs

from epcore.errors import EpError

# How long a finished hook's pipes may stay open (held by a process that left its session)
# before the starter stops reading them.
_PIPE_GRACE: Final = 2.0
_READ_CHUNK: Final = 65536


class HookError(EpError):
    """A hook that is misconfigured or cannot be run; ``knob`` names the configuration knob."""

    def __init__(self, message: str, knob: str | None = None) -> None:
        self.reason = message
        self.knob = knob
        super().__init__(message)


@attrs.frozen
class HookResult:
    """How a hook ended: its exit code or the signal that killed it, and what it printed."""

    exit_code: int | None
    signal: int | None
    stdout: str
    stderr: str
    timed_out: bool

    def describe(self) -> str:
        """How the hook ended, in words, for logs and hold reasons."""
        if self.timed_out:
            return "ran past its time limit and was killed"
        if self.signal is not None:
            return f"was killed by signal {self.signal}"
        if self.exit_code is None:
            return "ended without an exit status"
        return f"exited with status {self.exit_code}"


def log_stderr_lines(
    log: logging.Logger, name: str, stderr: bytearray, logged: int, *, final: bool
) -> int:
    """Log the lines of a hook's ``stderr`` after its first ``logged`` bytes, each as one
    line of ``log``; only whole lines unless ``final`` (the hook has ended). Returns how many
    bytes are logged now."""
    end = len(stderr) if final else stderr.rfind(b"\n") + 1
    if end <= logged:
        return logged
    for line in stderr[logged:end].decode("utf-8", "replace").splitlines():
        log.info("%s hook stderr: %s", name, line)
    return end


class RunningHook:
    """A started hook in its own session: ``poll`` or ``wait`` for it, ``kill`` it.

    A hook past its deadline is killed (its whole process group) the next time it is polled.
    When the hook itself ends, whatever it left running in its process group is killed too,
    so no hook outlives its result.
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        name: str,
        stdin: bytes,
        log: logging.Logger,
        timeout: float,
    ) -> None:
        self.name = name
        self._process = process
        self._log = log
        self._deadline = time.monotonic() + timeout
        self._lock = threading.Lock()
        self._result: HookResult | None = None
        self._stdout = bytearray()
        self._stderr = bytearray()
        self._stderr_logged = 0
        self._stop = threading.Event()
        self._pump = threading.Thread(
            target=self._pump_pipes, args=(stdin,), name=f"hook {name}", daemon=True
        )
        self._pump.start()

    @property
    def pid(self) -> int:
        """The hook's process id (also its session and process group id)."""
        return self._process.pid

    def poll(self) -> HookResult | None:
        """The result if the hook has ended (or was just killed for its deadline), else None."""
        with self._lock:
            if self._result is not None:
                return self._result
            if self._leader_ended():
                return self._finish(timed_out=False)
            if time.monotonic() >= self._deadline:
                return self._finish(timed_out=True)
            return None

    def wait(self) -> HookResult:
        """Block until the hook ends or its deadline kills it."""
        delay = 0.005
        while (result := self.poll()) is None:
            time.sleep(max(0.001, min(delay, self._deadline - time.monotonic())))
            delay = min(delay * 2, 0.05)
        return result

    def kill(self) -> HookResult:
        """Kill the hook's process group now (the starter is leaving) and return its result."""
        with self._lock:
            if self._result is not None:
                return self._result
            return self._finish(timed_out=False)

    def _leader_ended(self) -> bool:
        # WNOWAIT leaves the hook a zombie: its pid, which is the group id, cannot be reused
        # until _finish reaps it, so killing the group there cannot hit a stranger.
        try:
            flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
            return os.waitid(os.P_PID, self._process.pid, flags) is not None
        except ChildProcessError:
            return True  # someone else reaped it

    def _finish(self, *, timed_out: bool) -> HookResult:
        # Also kills what the hook left behind in its group, so its pipes close.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)
        status = self._process.wait()
        self._pump.join(_PIPE_GRACE)
        if self._pump.is_alive():
            self._stop.set()
            self._pump.join()
        self._result = HookResult(
            exit_code=status if status >= 0 else None,
            signal=-status if status < 0 else None,
            stdout=self._stdout.decode("utf-8", "replace"),
            stderr=self._stderr.decode("utf-8", "replace"),
            timed_out=timed_out,
        )
        if timed_out:
            self._log.warning("%s hook (pid %d) %s", self.name, self.pid, self._result.describe())
        return self._result

    def _pump_pipes(self, stdin: bytes) -> None:
        process = self._process
        pending = memoryview(stdin)
        with selectors.DefaultSelector() as selector:
            if process.stdin is not None:
                if pending:
                    os.set_blocking(process.stdin.fileno(), False)
                    selector.register(process.stdin, selectors.EVENT_WRITE)
                else:
                    process.stdin.close()
            for stream, sink in ((process.stdout, self._stdout), (process.stderr, self._stderr)):
                if stream is not None:
                    selector.register(stream, selectors.EVENT_READ, sink)
            while selector.get_map() and not self._stop.is_set():
                for key, _ in selector.select(timeout=0.1):
                    stream_io: IO[bytes] = key.fileobj  # type: ignore[assignment]
                    if key.data is None:
                        pending = self._write_some(stream_io, pending)
                        if pending:
                            continue
                    else:
                        chunk = os.read(key.fd, _READ_CHUNK)
                        if chunk:
                            key.data.extend(chunk)
                            if key.data is self._stderr:
                                self._log_stderr(final=False)
                            continue
                    selector.unregister(stream_io)
                    stream_io.close()
            for key in list(selector.get_map().values()):
                key.fileobj.close()  # type: ignore[union-attr]
        self._log_stderr(final=True)

    @staticmethod
    def _write_some(stream: IO[bytes], pending: memoryview) -> memoryview:
        try:
            written = os.write(stream.fileno(), pending[:_READ_CHUNK])
        except BlockingIOError:
            return pending
        except BrokenPipeError:
            return pending[:0]  # the hook stopped reading its input: nothing more to give
        return pending[written:]

    def _log_stderr(self, *, final: bool) -> None:
        self._stderr_logged = log_stderr_lines(
            self._log, self.name, self._stderr, self._stderr_logged, final=final
        )


class HookRunner:
    """Runs hooks as the job's user, in their own session, with a time limit.

    ``uid``/``gid``/``groups`` are the job user's identity (None: the starter's own; the
    supplementary groups are exactly ``groups``); ``environment`` is the whole environment;
    ``log`` is the StarterLog, which receives every stderr line of every hook.
    """

    def __init__(
        self,
        *,
        uid: int | None,
        gid: int | None,
        groups: tuple[int, ...],
        cwd: str,
        environment: tuple[tuple[str, str], ...],
        log: logging.Logger,
        timeout: float,
    ) -> None:
        if uid is not None and gid is None:
            raise HookError(f"hooks run as uid {uid} need that user's gid too")
        if not (math.isfinite(timeout) and timeout > 0):
            raise HookError(f"hook time limit must be a positive number of seconds, not {timeout}")
        self._uid = uid
        self._gid = gid
        self._groups = groups
        self._cwd = cwd
        self._environment = dict(environment)
        self._log = log
        self._timeout = timeout

    def run(
        self, path: str, args: Sequence[str], stdin: str, *, name: str | None = None
    ) -> HookResult:
        """Run the hook at ``path`` to its end (or its time limit) and return how it ended.

        ``name`` prefixes its stderr lines in the log (default: the file's name).
        """
        return self._spawn(path, args, stdin, name, capture_stdout=True).wait()

    def start(
        self, path: str, args: Sequence[str], stdin: str, *, name: str | None = None
    ) -> RunningHook:
        """Start an advisory hook without waiting; its stdout is discarded."""
        return self._spawn(path, args, stdin, name, capture_stdout=False)

    def _spawn(
        self,
        path: str,
        args: Sequence[str],
        stdin: str,
        name: str | None,
        *,
        capture_stdout: bool,
    ) -> RunningHook:
        label = name if name is not None else os.path.basename(path)
        try:
            process = subprocess.Popen(
                [path, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=self._cwd,
                env=self._environment,
                start_new_session=True,
                user=self._uid,
                group=self._gid if self._uid is not None else None,
                extra_groups=list(self._groups) if self._uid is not None else None,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise HookError(f"cannot run the {label} hook {path} in {self._cwd}: {exc}") from exc
        self._log.info("started the %s hook %s (pid %d)", label, path, process.pid)
        return RunningHook(process, label, stdin.encode("utf-8"), self._log, self._timeout)
