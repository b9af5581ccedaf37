"""What runs after :func:`epcore.starter.launch.launch` forks: the job's supervisor, the init
of its PID namespace, and its first process up to exec.

None of these functions returns: each process leaves through ``os._exit`` whatever happens,
so no starter code ever runs in a forked child. See :mod:`epcore.starter.launch` for the
report lines they write to the starter.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import gc
import os
import pickle
import resource
import signal
from typing import TYPE_CHECKING, NoReturn

import attrs

from epcore.errors import EpError
from epcore.transfer.userfs import NotARegularFile, open_user_file

if TYPE_CHECKING:
    from epcore.starter.launch import LaunchSpec

#: Signals the supervisor (and the namespace init) pass on to the job's first process.
#: SIGKILL and SIGSTOP cannot be caught, so the trackers deliver those to every process.
FORWARDED_SIGNALS: tuple[signal.Signals, ...] = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGHUP,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGCONT,
    signal.SIGALRM,
    signal.SIGWINCH,
    signal.SIGTSTP,
    signal.SIGTTIN,
    signal.SIGTTOU,
)

_PR_SET_CHILD_SUBREAPER = 36
_CLONE_NEWNS = 0x00020000
_CLONE_NEWPID = 0x20000000
_MS_REC = 0x4000
_MS_PRIVATE = 0x40000
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
#: How often a supervisor checks that its starter is still alive.
LIFELINE_SECONDS = 0.5
#: The index an ``E stdin|stdout|stderr`` report carries when the file is not a regular file.
SPECIAL_FILE = 1
#: Exit code of a job child whose setup failed (the starter never sees it: it gets an E line).
_SETUP_FAILED = 127


@attrs.frozen
class ExitStatus:
    """How the job's first process ended: its exit ``code`` or the ``signal`` that killed it,
    and its rusage (which covers the part of its tree it waited for)."""

    code: int | None
    signal: int | None
    user_cpu: float
    system_cpu: float
    max_rss_kb: int

    def to_report(self) -> str:
        """The ``X`` line the supervisor writes for this status (without the newline)."""
        code = "-" if self.code is None else str(self.code)
        sig = "-" if self.signal is None else str(self.signal)
        return f"X {code} {sig} {self.user_cpu!r} {self.system_cpu!r} {self.max_rss_kb}"

    @classmethod
    def from_report(cls, line: str) -> ExitStatus:
        """Read an ``X`` line back; EpError when it is not one."""
        fields = line.split(" ")
        if len(fields) != 6 or fields[0] != "X":
            raise EpError(f"malformed exit report from the job's supervisor: {line!r}")
        try:
            status = cls(
                None if fields[1] == "-" else int(fields[1]),
                None if fields[2] == "-" else int(fields[2]),
                float(fields[3]),
                float(fields[4]),
                int(fields[5]),
            )
        except ValueError as exc:
            raise EpError(f"malformed exit report from the job's supervisor: {line!r}") from exc
        if (status.code is None) == (status.signal is None):
            raise EpError(f"exit report needs exactly one of code and signal: {line!r}")
        return status


def _status_from_wait(status: int, usage: resource.struct_rusage) -> ExitStatus:
    code = os.waitstatus_to_exitcode(status)
    utime, stime, maxrss = usage.ru_utime, usage.ru_stime, usage.ru_maxrss
    if code < 0:
        return ExitStatus(None, -code, utime, stime, maxrss)
    return ExitStatus(code, None, utime, stime, maxrss)


class Libc:
    """The few libc calls Python 3.11 lacks; loaded before fork so children only call them.

    Each raises OSError with the errno when the call fails."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)

    def _check(self, result: int) -> None:
        if result != 0:
            number = ctypes.get_errno()
            raise OSError(number, os.strerror(number))

    def set_subreaper(self) -> None:
        self._check(self._libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))

    def unshare(self, flags: int) -> None:
        self._check(self._libc.unshare(flags))

    def mount(self, source: bytes, target: bytes, fstype: bytes | None, flags: int) -> None:
        self._check(self._libc.mount(source, target, fstype, ctypes.c_ulong(flags), None))

    def setns(self, fd: int, nstype: int) -> None:
        self._check(self._libc.setns(fd, nstype))


def enter_mount_namespace(libc: Libc, path: str) -> None:
    """Enter the mount namespace ``path`` names (a ``/proc/.../ns/mnt`` file)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        libc.setns(fd, _CLONE_NEWNS)
    finally:
        os.close(fd)


def set_subreaper() -> None:
    """Make the calling process a child subreaper (orphaned descendants are reparented to it)."""
    Libc().set_subreaper()


# -- the processes after fork: only os._exit leaves these functions --------------------------


def _write_line(fd: int, line: str) -> None:
    # A failed write means the starter is gone; nobody is left to tell.
    with contextlib.suppress(OSError):
        os.write(fd, (line + "\n").encode())


def _ignored_signals() -> list[int]:
    """The signals this process ignores, as the kernel says (SigIgn in /proc/self/status;
    binary, as :func:`_write_pid` explains): of all dispositions only SIG_IGN survives exec
    (Python ignores SIGPIPE and SIGXFSZ; a parent may have ignored others). Every signal
    when the mask cannot be read."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"SigIgn:"):
                    mask = int(line.split()[1], 16)
                    return [n for n in range(1, 65) if mask >> (n - 1) & 1]
    except (OSError, ValueError, IndexError):
        pass
    return [int(s) for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)]


def _job_main(spec: LaunchSpec, err_w: int, ignored: list[int]) -> NoReturn:
    """The job's first process: set up, then exec; on failure tell the parent why.
    ``ignored``: the signals its parent ignores (reset here, the others reset at exec)."""
    stage, index, number = "exec", 0, 0
    try:
        for signum in ignored:
            with contextlib.suppress(OSError, ValueError):
                signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        stage = "setsid"
        os.setsid()
        for index, path in enumerate(spec.setup.join_files):  # noqa: B007
            stage = "join"
            _write_pid(path)
        index = 0
        stage = "identity"
        groups = [*spec.groups, *spec.setup.extra_groups]
        if spec.uid is None and spec.gid is None:
            groups = [*os.getgroups(), *groups] if groups else []
        if groups or spec.uid is not None or spec.gid is not None:
            os.setgroups(groups)
        if spec.gid is not None:
            os.setgid(spec.gid)
        if spec.uid is not None:
            os.setuid(spec.uid)
        os.umask(spec.umask)
        # Directory and files are reached as the job's user, so its permissions apply.
        stage = "cwd"
        os.chdir(spec.cwd)
        # Never blocking on a FIFO the job names (epcore.transfer.userfs): the starter waits.
        stage = "stdin"
        stdin = open_user_file(spec.stdin, os.O_RDONLY)
        stage = "stdout"
        output_flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        stdout = open_user_file(spec.stdout, output_flags)
        stage = "stderr"
        same = spec.stderr == spec.stdout
        stderr = stdout if same else open_user_file(spec.stderr, output_flags)
        for source, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(source, target)
        for fd in {stdin, stdout, stderr} - {0, 1, 2}:
            os.close(fd)
        stage = "exec"
        os.execve(spec.argv[0], spec.argv, dict(spec.environment))
    except NotARegularFile:
        number, index = errno.EINVAL, SPECIAL_FILE
    except OSError as exc:
        number = exc.errno or errno.EIO
    except BaseException:
        number = errno.EINVAL
    try:
        os.write(err_w, f"{stage} {number} {index}".encode())
    finally:
        os._exit(_SETUP_FAILED)


def _start_job(spec: LaunchSpec, report: int) -> int | None:
    """Fork the job and report S (returning its pid) or E/F (returning None)."""
    try:
        err_r, err_w = os.pipe()
    except OSError as exc:
        _write_line(report, f"F pipe {exc.errno or errno.EIO}")
        return None
    # Looked at before the fork: the child, a copy of this process, then makes one call per
    # ignored signal (usually two) instead of one per signal (64).
    ignored = _ignored_signals()
    try:
        pid = os.fork()
    except OSError as exc:
        _write_line(report, f"F fork {exc.errno or errno.EIO}")
        return None
    if pid == 0:
        os.close(err_r)
        _job_main(spec, err_w, ignored)
    os.close(err_w)
    failure = b""
    while chunk := os.read(err_r, 256):
        failure += chunk
    os.close(err_r)
    if failure:
        os.waitpid(pid, 0)
        _write_line(report, "E " + failure.decode(errors="replace"))
        return None
    _write_line(report, "S")
    return pid


def _waited_signals() -> set[int]:
    return {int(s) for s in FORWARDED_SIGNALS} | {int(signal.SIGCHLD)}


def _starter_gone(lifeline: int | None) -> bool:
    """True once the starter's end of ``lifeline`` is closed: the starter has died."""
    if lifeline is None:
        return False
    try:
        return os.read(lifeline, 64) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _kill_tree(child: int) -> NoReturn:
    """The starter died: kill ``child`` and every descendant (which, this process being a
    subreaper, end up as its children), reap them all, and exit."""
    with contextlib.suppress(OSError):
        os.kill(child, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.killpg(child, signal.SIGKILL)
    while True:
        for pid in _children():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        try:
            os.wait4(-1, 0)
        except ChildProcessError:
            os._exit(0)
        except OSError:
            continue


def _children() -> list[int]:
    """This process's children, from /proc (a supervisor has one thread)."""
    path = f"/proc/self/task/{os.getpid()}/children"
    try:
        with open(path, encoding="ascii") as listing:
            return [int(pid) for pid in listing.read().split()]
    except (OSError, ValueError):
        return []


def _supervise(report: int, child: int, mode: str, lifeline: int | None = None) -> NoReturn:
    """Forward signals to ``child`` and reap every child until the process's role ends.

    ``mode`` "supervisor": report the job's end, then stay as the parent of orphans;
    "init": report the job's end and exit (which empties the namespace);
    "outer": ``child`` is the namespace init, which reports; exit once it is gone, reporting
    for it when it was killed before it could. With a ``lifeline``, the job's whole tree is
    killed as soon as the starter that holds its other end dies (checked every
    LIFELINE_SECONDS): nothing of a killed starter outlives it.
    """
    waited = _waited_signals()
    alive = True
    while True:
        if _starter_gone(lifeline):
            _kill_tree(child)
        info = signal.sigtimedwait(waited, LIFELINE_SECONDS)
        if info is None:
            continue
        if info.si_signo != signal.SIGCHLD:
            if alive:
                with contextlib.suppress(OSError):
                    os.kill(child, info.si_signo)
            continue
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid != child:
                continue
            alive = False
            if mode == "outer":
                if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
                    _write_line(report, _status_from_wait(status, usage).to_report())
                os._exit(0)
            _write_line(report, _status_from_wait(status, usage).to_report())
            if mode == "init":
                os._exit(0)


def _init_main(spec: LaunchSpec, libc: Libc, report: int) -> NoReturn:
    """PID 1 of the job's namespace: its own /proc, then the job as PID 2."""
    try:
        try:
            libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
        except OSError as exc:
            _write_line(report, f"F proc {exc.errno or errno.EIO}")
            os._exit(0)
        job = _start_job(spec, report)
        if job is None:
            os._exit(0)
        _supervise(report, job, "init")
    except BaseException:
        os._exit(3)


def _isolate_fds(report: int, max_fd: int, keep: int | None = None) -> int:
    """Keep only the report pipe (moved above 2), ``keep`` (already above 2) and /dev/null
    as 0, 1, 2."""
    moved = fcntl.fcntl(report, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(report)
    null = os.open("/dev/null", os.O_RDWR)
    for target in (0, 1, 2):
        if null != target:
            os.dup2(null, target)
    if null > 2 and null not in (moved, keep):
        os.close(null)
    kept = sorted({moved} | ({keep} if keep is not None else set()))
    start = 3
    for fd in kept:
        os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, max(max_fd, start))
    return moved


def frame_spec(spec: LaunchSpec) -> bytes:
    """``spec`` as a prepared supervisor reads it: its length (8 bytes), then the pickle. The
    pipe stays open after it, as the supervisor's lifeline to its starter."""
    payload = pickle.dumps(spec)
    return len(payload).to_bytes(8, "big") + payload


def _read_exactly(fd: int, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, min(size - len(data), 65536))
        if not chunk:
            return None
        data += chunk
    return data


def _read_spec(spec_fd: int) -> LaunchSpec | None:
    """The launch spec the starter sends a prepared supervisor (None: it gave the job up,
    or whoever held the pipe died)."""
    header = _read_exactly(spec_fd, 8)
    data = None if header is None else _read_exactly(spec_fd, int.from_bytes(header, "big"))
    if not data:
        return None
    from epcore.starter.launch import LaunchSpec  # loaded already: this is a fork

    spec = pickle.loads(data)
    return spec if isinstance(spec, LaunchSpec) else None


def _write_pid(path: str) -> None:
    """Write this process's PID into the ``cgroup.procs`` file ``path`` (OSError as the
    kernel answers). Plain descriptors: a text file would make each supervisor, forked from
    a server that never opened one, import the ascii codec first."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, str(os.getpid()).encode())
    finally:
        os.close(fd)


def _move_to(files: tuple[str, ...]) -> None:
    for path in files:
        with contextlib.suppress(OSError):
            _write_pid(path)


def prepared_main(
    join_files: tuple[str, ...],
    leave_files: tuple[str, ...],
    libc: Libc,
    report: int,
    spec_fd: int,
    max_fd: int,
) -> NoReturn:
    """A supervisor made ahead of its job: it joins the job's cgroups now (so that the job,
    forked from it later, starts inside them without moving), waits for the spec, and once
    the job runs moves back to ``leave_files`` (its first cgroups): the job's groups then
    hold the job alone, and can be removed whoever reaps this process."""
    try:
        gc.disable()
        spec_fd = fcntl.fcntl(spec_fd, fcntl.F_DUPFD_CLOEXEC, 3)
        report = _isolate_fds(report, max_fd, keep=spec_fd)
        for index, path in enumerate(join_files):
            try:
                _write_pid(path)
            except OSError as exc:
                _write_line(report, f"E join {exc.errno or errno.EIO} {index}")
                os._exit(0)
        spec = _read_spec(spec_fd)
        if spec is None:
            os._exit(0)
        _supervisor_body(spec, libc, report, leave_files, lifeline=spec_fd)
    except BaseException:
        os._exit(2)


def supervisor_main(
    spec: LaunchSpec, libc: Libc, report: int, max_fd: int, lifeline: int
) -> NoReturn:
    """The supervisor, right after fork: keep only ``report`` and ``lifeline`` open, become a
    subreaper, start the job (in a new PID namespace when asked) and supervise it until
    killed, or until the starter dies."""
    try:
        # The starter's objects must never be finalized here (they could close our fds).
        gc.disable()
        lifeline = fcntl.fcntl(lifeline, fcntl.F_DUPFD_CLOEXEC, 3)
        report = _isolate_fds(report, max_fd, keep=lifeline)
        _supervisor_body(spec, libc, report, lifeline=lifeline)
    except BaseException:
        os._exit(2)


def _supervisor_body(
    spec: LaunchSpec,
    libc: Libc,
    report: int,
    leave_files: tuple[str, ...] = (),
    *,
    lifeline: int,
) -> NoReturn:
    """What every supervisor does once its file descriptors are its own (``leave_files``:
    the cgroups it moves to once the job runs; ``lifeline``: the pipe whose other end only
    the starter holds)."""
    try:
        os.set_blocking(lifeline, False)
        signal.pthread_sigmask(signal.SIG_BLOCK, _waited_signals())
        for signum in _waited_signals():
            # SIGCHLD ignored would make the kernel reap children before wait4 sees them.
            signal.signal(signum, signal.SIG_DFL)
        step = "subreaper"
        try:
            if spec.setup.mount_namespace:
                # Before anything else: the job's cwd and files are under the scratch
                # filesystem, mounted only in the starter's private namespace.
                step = "setns"
                enter_mount_namespace(libc, spec.setup.mount_namespace)
                step = "subreaper"
            libc.set_subreaper()
            if spec.setup.new_pid_namespace:
                step = "unshare"
                libc.unshare(_CLONE_NEWPID | _CLONE_NEWNS)
                step = "private"
                libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE)
                step = "fork"
                init = os.fork()
                if init == 0:
                    _init_main(spec, libc, report)
                _move_to(leave_files)
                _supervise(report, init, "outer", lifeline)
        except OSError as exc:
            _write_line(report, f"F {step} {exc.errno or errno.EIO}")
            os._exit(0)
        job = _start_job(spec, report)
        if job is None:
            os._exit(0)
        _move_to(leave_files)
        _supervise(report, job, "supervisor", lifeline)
    except BaseException:
        os._exit(2)
