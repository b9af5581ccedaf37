"""Starting a job's first process under a small supervisor process the starter owns.

``launch`` forks a *supervisor* (a plain fork of the starter, no new interpreter, so a job
starts in a few milliseconds). The supervisor makes itself a child subreaper, so daemons and
setsid escapees of the job are reparented to it rather than to PID 1, forks the job (or, with
a new PID namespace, forks the namespace's init, which forks the job as PID 2), tells the
starter whether the exec worked, reports the job's exit status and rusage when its first
process ends, forwards the signals it receives to the job's first process, and then stays
alive as the parent of any orphans until the starter kills the tree and calls
:meth:`LaunchedJob.close`.

Everything the starter learns comes through one pipe of short text lines (each written with
one ``write``, so they never interleave):

``S``                                   the job's executable runs
``E <stage> <errno> <index>``           the job's setup failed at ``stage`` (before exec)
``F <stage> <errno>``                   the supervisor or namespace init could not do its part
``X <code> <signal> <utime> <stime> <maxrss>``   the job's first process ended (``-`` = none)

A second pipe is the supervisor's *lifeline*: the starter holds its write end, never writes
to it and closes it only in :meth:`LaunchedJob.close`. When the starter dies (even of
SIGKILL) the kernel closes it, and the supervisor kills the job's whole tree and exits, so
nothing of a killed starter survives it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import time

import attrs

from epcore.errors import JobSetupError
from epcore.jobs.codes import HoldCode
from epcore.starter.launch_child import (
    FORWARDED_SIGNALS,
    SPECIAL_FILE,
    ExitStatus,
    Libc,
    frame_spec,
    set_subreaper,
    supervisor_main,
)
from epcore.types import ChildSetup

__all__ = [
    "FORWARDED_SIGNALS",
    "ExitStatus",
    "LaunchSpec",
    "LaunchedJob",
    "launch",
    "set_subreaper",
]


_SUPERVISOR_STEPS = {
    "setns": "enter the starter's mount namespace (its hidden scratch filesystem)",
    "subreaper": "make the job's supervisor a child subreaper",
    "unshare": "create a PID namespace for the job",
    "private": "make the mounts of the job's namespace private",
    "proc": "mount /proc in the job's PID namespace",
    "pipe": "create a pipe for the job",
    "fork": "fork the job",
}


@attrs.frozen
class LaunchSpec:
    """How to start a job's first process: what to run, as whom, where, with which files.

    ``argv[0]`` is the absolute path of the executable; ``environment`` is all the job gets
    (nothing is inherited from the starter). ``stdin``/``stdout``/``stderr`` are absolute paths;
    the outputs are created or truncated by the job's user, and when ``stderr`` equals
    ``stdout`` both share one open file, so their lines stay in order. ``uid``/``gid`` None keep
    the starter's identity; ``groups`` are supplementary groups besides ``setup.extra_groups``.
    """

    argv: tuple[str, ...]
    environment: tuple[tuple[str, str], ...]
    cwd: str
    stdin: str = "/dev/null"
    stdout: str = "/dev/null"
    stderr: str = "/dev/null"
    uid: int | None = None
    gid: int | None = None
    groups: tuple[int, ...] = ()
    setup: ChildSetup = attrs.field(factory=ChildSetup)
    umask: int = 0o022


# -- the starter's side ------------------------------------------------------------------------


class LaunchedJob:
    """The starter's handle on a launched job: its supervisor and the report pipe."""

    def __init__(self, supervisor_pid: int, report_fd: int, lifeline_fd: int) -> None:
        self.supervisor_pid = supervisor_pid
        self._fd = report_fd
        # Held open, never written, until close(): when this process dies, the supervisor
        # sees the pipe close and kills the job.
        self._lifeline = lifeline_fd
        self._buffer = b""
        self._status: ExitStatus | None = None
        self._reaped = False
        self._closed = False
        os.set_blocking(report_fd, False)

    def fileno(self) -> int:
        """The report pipe: readable once the job's first process has ended."""
        return self._fd

    def poll(self) -> ExitStatus | None:
        """The first process's exit status if it has ended, else None (never blocks)."""
        if self._status is None and not self._closed:
            self._read()
        return self._status

    def wait(self, timeout: float | None = None) -> ExitStatus | None:
        """Wait up to ``timeout`` seconds (None: for ever) for the first process to end."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None and not self._closed:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            select.select([self._fd], [], [], remaining)
        return self._status

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the job's first process (through the supervisor, which may do so
        whoever the job runs as and in whatever PID namespace). SIGKILL and SIGSTOP cannot be
        forwarded: the trackers' signal_all and freeze do those."""
        if signum not in FORWARDED_SIGNALS:
            raise ValueError(f"signal {signum} is not forwarded to jobs; use a tracker")
        if self._reaped:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.supervisor_pid, signum)

    def close(self) -> None:
        """Once the job's tree is gone: kill and reap the supervisor and close the pipe."""
        if self._closed:
            return
        self._closed = True
        if not self._reaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.supervisor_pid, signal.SIGKILL)
            self._reap(0)
        os.close(self._fd)
        os.close(self._lifeline)

    def _reap(self, flags: int) -> int | None:
        """The supervisor's wait status once reaped (None while it still runs)."""
        try:
            pid, status = os.waitpid(self.supervisor_pid, flags)
        except ChildProcessError:
            self._reaped = True
            return None
        if pid == 0:
            return None
        self._reaped = True
        return status

    def _read(self) -> None:
        try:
            chunk = os.read(self._fd, 4096)
        except BlockingIOError:
            return
        if chunk:
            self._buffer += chunk
            while b"\n" in self._buffer and self._status is None:
                line, self._buffer = self._buffer.split(b"\n", 1)
                if line.startswith(b"X "):
                    self._status = ExitStatus.from_report(line.decode())
            return
        # Every writer is gone without an exit report: the supervisor itself was killed.
        status = self._reap(0)
        killer = signal.SIGKILL
        if status is not None and os.WIFSIGNALED(status):
            killer = signal.Signals(os.WTERMSIG(status))
        self._status = ExitStatus(None, int(killer), 0.0, 0.0, 0)


def _read_first_line(fd: int) -> str:
    """One line, byte by byte, so nothing after it (the exit report) is consumed here."""
    data = b""
    while not data.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            break
        data += byte
    return data.decode(errors="replace").strip()


def _setup_error(spec: LaunchSpec, line: str) -> JobSetupError:
    fields = line.split()
    try:
        kind, stage, number = fields[0], fields[1], int(fields[2])
        index = int(fields[3]) if kind == "E" else 0
    except (IndexError, ValueError):
        return JobSetupError(
            f"Failed to start '{spec.argv[0]}': its supervisor ended without a report",
            HoldCode.FAILED_TO_CREATE_PROCESS,
        )
    reason = f"{os.strerror(number)} (errno {number})"
    if kind == "F":
        what = _SUPERVISOR_STEPS.get(stage, stage)
        return JobSetupError(
            f"Failed to {what}: {reason}", HoldCode.FAILED_TO_CREATE_PROCESS, number
        )
    if stage == "cwd":
        message = f"Failed to change to initial working directory '{spec.cwd}': {reason}"
        return JobSetupError(message, HoldCode.IWD_ERROR, number)
    if stage in ("stdin", "stdout", "stderr") and index == SPECIAL_FILE:
        reason = "it is not a regular file (a FIFO, socket or other special file)"
    if stage == "stdin":
        message = f"Failed to open '{spec.stdin}' as standard input: {reason}"
        return JobSetupError(message, HoldCode.UNABLE_TO_OPEN_INPUT, number)
    if stage in ("stdout", "stderr"):
        path = spec.stdout if stage == "stdout" else spec.stderr
        which = "output" if stage == "stdout" else "error"
        message = f"Failed to open '{path}' as standard {which}: {reason}"
        return JobSetupError(message, HoldCode.UNABLE_TO_OPEN_OUTPUT, number)
    if stage == "join" and index < len(spec.setup.join_files):
        path = spec.setup.join_files[index]
        message = f"Failed to write the job's PID to '{path}': {reason}"
        return JobSetupError(message, HoldCode.FAILED_TO_CREATE_PROCESS, number)
    if stage == "identity":
        who = f"uid {spec.uid}, gid {spec.gid}"
        message = f"Failed to switch the job to {who}: {reason}"
        return JobSetupError(message, HoldCode.FAILED_TO_CREATE_PROCESS, number)
    return JobSetupError(
        f"Failed to execute '{spec.argv[0]}': {reason}", HoldCode.FAILED_TO_CREATE_PROCESS, number
    )


def _check_spec(spec: LaunchSpec) -> None:
    """Refuse what execve could not take, before anything is forked."""
    problem = None
    if not spec.argv or not spec.argv[0]:
        problem = "the job has no executable"
    elif any("\0" in arg for arg in spec.argv):
        problem = "an argument contains a NUL character"
    for name, value in spec.environment:
        if not name or "=" in name or "\0" in name or "\0" in value:
            problem = f"invalid environment variable name or value {name!r}"
    if problem is not None:
        target = spec.argv[0] if spec.argv else ""
        raise JobSetupError(
            f"Failed to execute '{target}': {problem}",
            HoldCode.FAILED_TO_CREATE_PROCESS,
            errno.EINVAL,
        )


def launch(spec: LaunchSpec) -> LaunchedJob:
    """Start the job under a new supervisor; returns once its executable runs.

    Raises JobSetupError with HTCondor's hold code when the job cannot be started (6: the
    executable, 7: stdout/stderr, 8: stdin, 14: the working directory; subcode: errno).
    """
    _check_spec(spec)
    libc = Libc()
    max_fd = os.sysconf("SC_OPEN_MAX")
    report_r, report_w = os.pipe()
    lifeline_r, lifeline_w = os.pipe()
    try:
        pid = os.fork()
    except OSError as exc:
        for fd in (report_r, report_w, lifeline_r, lifeline_w):
            os.close(fd)
        number = exc.errno or errno.EIO
        raise JobSetupError(
            f"Failed to fork a supervisor for '{spec.argv[0]}': {exc.strerror} (errno {number})",
            HoldCode.FAILED_TO_CREATE_PROCESS,
            number,
        ) from exc
    if pid == 0:
        os.close(report_r)
        os.close(lifeline_w)
        supervisor_main(spec, libc, report_w, max_fd, lifeline_r)
    os.close(report_w)
    os.close(lifeline_r)
    try:
        first = _read_first_line(report_r)
    except BaseException:
        os.close(report_r)
        os.close(lifeline_w)
        raise
    if first == "S":
        return LaunchedJob(pid, report_r, lifeline_w)
    os.close(report_r)
    os.close(lifeline_w)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise _setup_error(spec, first)


class PreparedSupervisor:
    """A supervisor forked before its job is known, already inside the job's cgroups.

    Moving a process into a cgroup makes the kernel wait for an RCU grace period (several
    milliseconds); a supervisor made when the slot is claimed pays that before activation,
    and the job it forks at :meth:`launch` starts inside the cgroups without moving.
    Whoever forked it (the supervisor server) reaps it; :meth:`abandon` gives it up unused.
    """

    def __init__(self, pid: int, spec_fd: int, report_fd: int) -> None:
        self.pid = pid
        self._spec_fd = spec_fd
        self._report_fd = report_fd
        self.used = False

    def launch(self, spec: LaunchSpec) -> LaunchedJob:
        """Start ``spec``'s job from this supervisor (its join files were joined already)."""
        _check_spec(spec)
        if self.used:
            raise JobSetupError(
                "this supervisor has started its job already", HoldCode.FAILED_TO_CREATE_PROCESS
            )
        self.used = True
        try:
            view = memoryview(frame_spec(spec))
            while view:
                view = view[os.write(self._spec_fd, view) :]
        except OSError as exc:
            self._close_spec()
            number = exc.errno or errno.EIO
            raise JobSetupError(
                f"Failed to hand '{spec.argv[0]}' to its supervisor: {exc.strerror}",
                HoldCode.FAILED_TO_CREATE_PROCESS,
                number,
            ) from exc
        first = _read_first_line(self._report_fd)
        if first == "S":
            # The spec pipe stays open: it is the supervisor's lifeline to this starter.
            lifeline, self._spec_fd = self._spec_fd, -1
            return LaunchedJob(self.pid, self._report_fd, lifeline)
        self._close_spec()
        os.close(self._report_fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        raise _setup_error(spec, first)

    def _close_spec(self) -> None:
        if self._spec_fd >= 0:
            os.close(self._spec_fd)
            self._spec_fd = -1

    def abandon(self) -> None:
        """Give the supervisor up: it exits when it reads no spec; kill it to be sure."""
        if self.used:
            return
        self.used = True
        self._close_spec()
        os.close(self._report_fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def forget(self) -> None:
        """Close this process's copies of the pipes (another process owns the supervisor)."""
        self._close_spec()
        if self._report_fd >= 0:
            os.close(self._report_fd)
            self._report_fd = -1
