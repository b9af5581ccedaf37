"""One job's runtime process and everything it started: the job's handle and tracking.

The runtime (apptainer, or the stand-in over bubblewrap) is a child of the starter; the job's
processes are its descendants, in the container's own PID namespace but visible from the host
by their host PIDs. They are found by walking ``/proc`` from the runtime's PID, signalled one
by one (SIGSTOP and SIGCONT suspend and continue them), and measured from ``/proc`` while they
run and from the runtime's rusage once it has been reaped. A PID descriptor
(``pidfd_open``) lets the starter wait for the end with its other descriptors.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import threading
import time

from epcore.errors import JobSetupError
from epcore.types import ChildSetup, TrackedUsage
from epcore_apptainer.launcher import CONTAINER_ERROR, FAILED_TO_START

#: How long :meth:`ApptainerProcess.release` waits for the killed runtime to be reaped.
REAP_SECONDS = 10.0
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: Signals that go to every process of the job rather than through the runtime.
_TO_EVERY_PROCESS = frozenset({signal.SIGKILL, signal.SIGSTOP, signal.SIGCONT})
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first); None when the
    process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode(errors="replace")
    except OSError:
        return None
    # The command name is in parentheses and may itself hold spaces and parentheses.
    return text[text.rfind(")") + 2 :].split()


def descendants(root: int) -> set[int]:
    """``root`` and every live (not zombie) process below it."""
    children: dict[int, list[int]] = {}
    states: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        if fields is None or len(fields) < 2:
            continue
        pid = int(entry)
        states[pid] = fields[0]
        children.setdefault(int(fields[1]), []).append(pid)
    found: set[int] = set()
    pending = [root]
    while pending:
        pid = pending.pop()
        if pid in found:
            continue
        if pid in states or pid == root:
            found.add(pid)
        pending += children.get(pid, [])
    return {pid for pid in found if states.get(pid, "Z") != "Z"}


class ApptainerProcess:
    """A :class:`~epcore.types.RunningContainer` over the runtime's process tree."""

    def __init__(self, process: subprocess.Popen[bytes], marker: str | None = None) -> None:
        self.pid = process.pid
        #: The launcher's marker (SINGULARITY_USE_LAUNCHER), None without a launcher.
        self.marker = marker
        #: True once the job was told to end (a vacate, a removal): its end is not the
        #: runtime's failure, whatever the marker says.
        self.stopped = False
        self._process = process
        self._pidfd = os.pidfd_open(process.pid)
        self._status: int | None = None
        self._rusage: resource.struct_rusage | None = None
        self._peak = 0
        self._killer: threading.Timer | None = None
        self._lock = threading.Lock()

    def fileno(self) -> int:
        return self._pidfd

    def child_setup(self) -> ChildSetup:
        """Nothing: the runtime is started before this tracking exists."""
        return ChildSetup()

    def attach(self, pid: int) -> None:
        """Nothing to attach: the runtime's PID is known from the start."""

    def _reap(self, flags: int = os.WNOHANG) -> None:
        with self._lock:
            if self._status is not None:
                return
            try:
                pid, status, rusage = os.wait4(self.pid, flags)
            except ChildProcessError:
                # Someone else reaped it: its status is lost.
                self._status = 255 << 8
                return
            if pid == self.pid:
                self._status, self._rusage = status, rusage
                self._process.returncode = os.waitstatus_to_exitcode(status)

    def exit_status(self) -> tuple[int | None, int | None] | None:
        """(exit code, None) or (None, signal) once the runtime ended, else None."""
        self._reap()
        if self._status is None:
            return None
        code = os.waitstatus_to_exitcode(self._status)
        return (code, None) if code >= 0 else (None, -code)

    def pids(self) -> frozenset[int]:
        """Every live process of the job, the runtime included."""
        if self._status is not None:
            found = descendants(self.pid) - {self.pid}
        else:
            found = descendants(self.pid)
        return frozenset(found)

    def signal_all(self, signum: int) -> None:
        """``signum`` to the job: SIGKILL, SIGSTOP and SIGCONT to every process, any other
        signal to the runtime alone while it runs, which passes it on to the job (as
        apptainer does; the runtime's own processes would die of a SIGTERM themselves)."""
        if signum not in (signal.SIGSTOP, signal.SIGCONT) and self._status is None:
            # Told to end while it runs (the starter's sweep after the end does not count).
            self.stopped = True
        if signum in _TO_EVERY_PROCESS or self._status is not None:
            targets = self.pids()
        else:
            targets = frozenset({self.pid})
        for pid in targets:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)

    def freeze(self) -> bool:
        """Suspend with SIGSTOP, process by process (there is no group to freeze at once)."""
        self.signal_all(signal.SIGSTOP)
        return True

    def thaw(self) -> bool:
        self.signal_all(signal.SIGCONT)
        return True

    def usage(self) -> TrackedUsage:
        """CPU and memory of the processes now; the runtime's rusage once it was reaped."""
        if self._rusage is not None:
            peak = max(self._peak, self._rusage.ru_maxrss * 1024)
            return TrackedUsage(self._rusage.ru_utime, self._rusage.ru_stime, 0, peak)
        user = system = 0.0
        current = 0
        for pid in self.pids():
            fields = _stat_fields(pid)
            if fields is None or len(fields) < 22:
                continue
            # utime, stime (fields 14 and 15 of stat) and rss (24), counted from the state (3).
            user += int(fields[11]) / _CLOCK_TICKS
            system += int(fields[12]) / _CLOCK_TICKS
            current += int(fields[21]) * _PAGE
        self._peak = max(self._peak, current)
        return TrackedUsage(user, system, current, self._peak)

    def out_of_memory(self) -> bool:
        return False

    def stop(self, signum: int, grace_seconds: float) -> None:
        """``signum`` to every process now, SIGKILL to those left after ``grace_seconds``."""
        self.signal_all(signum)
        if self._killer is None:
            self._killer = threading.Timer(grace_seconds, self.signal_all, (signal.SIGKILL,))
            self._killer.daemon = True
            self._killer.start()

    def collect_output(self) -> str | None:
        """Nothing to collect (the job wrote its own stdout and stderr files); with the
        launcher, its marker is taken away (it is no output of the job's).

        Raises JobSetupError with a vacate code, which requeues the job, when the runtime
        ended by itself without the marker: it failed before the job's command, so its status
        is not the job's (HTCondor's starter EXCEPTs "Apptainer runtime failed to start")."""
        if self.marker is None:
            return None
        try:
            os.unlink(self.marker)
        except FileNotFoundError:
            if self._status is not None and not self.stopped:
                status = os.waitstatus_to_exitcode(self._status)
                message = f"{FAILED_TO_START} (it ended with status {status})"
                raise JobSetupError(message, CONTAINER_ERROR) from None
        except OSError:
            pass
        return None

    def release(self) -> None:
        """Kill whatever is left, reap the runtime and close the descriptor."""
        if self._killer is not None:
            self._killer.cancel()
        deadline = time.monotonic() + REAP_SECONDS
        while self._status is None and time.monotonic() < deadline:
            self.signal_all(signal.SIGKILL)
            self._reap()
            if self._status is None:
                time.sleep(0.01)
        self.signal_all(signal.SIGKILL)
        if self._pidfd >= 0:
            os.close(self._pidfd)
            self._pidfd = -1
