"""Launching a job's first process under a supervisor (epcore.starter.launch), with real jobs."""

from __future__ import annotations

import errno
import os
import select
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st
from launch_support import PATIENCE, fake_starter, kill_starter_and_check_the_job_ends, shell

from epcore.errors import EpError, JobSetupError
from epcore.starter.launch import (
    FORWARDED_SIGNALS,
    ExitStatus,
    LaunchedJob,
    LaunchSpec,
    launch,
)
from epcore.starter.trackers import ProcessGroupTracking
from epcore.testing.system import SlotUser, wait_until
from epcore.types import ChildSetup

Launcher = Callable[[LaunchSpec], LaunchedJob]


def kill_tree(job: LaunchedJob) -> None:
    """Kill every process under the job's supervisor, then the supervisor itself."""
    tracking = ProcessGroupTracking()
    tracking.attach(job.supervisor_pid)
    tracking.signal_all(signal.SIGKILL)
    wait_until(lambda: not tracking.pids())
    job.close()


@pytest.fixture
def run_job() -> Iterator[Launcher]:
    """launch(), with every launched job's tree killed and its supervisor reaped afterwards."""
    launched: list[LaunchedJob] = []

    def start(spec: LaunchSpec) -> LaunchedJob:
        job = launch(spec)
        launched.append(job)
        return job

    yield start
    for job in launched:
        kill_tree(job)


@pytest.fixture
def user_dir(execute_dir: Path, slot_users: tuple[SlotUser, ...]) -> Path:
    """A sandbox owned by the first slot user, mode 0700."""
    path = execute_dir / "dir_1"
    path.mkdir()
    user = slot_users[0]
    os.chown(path, user.uid, user.gid)
    path.chmod(0o700)
    return path


def finished(job: LaunchedJob) -> ExitStatus:
    """The job's exit status, failing the test if it does not end in time."""
    status = job.wait(PATIENCE)
    assert status is not None, "the job did not end in time"
    return status


# -- the exit report ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "status",
    [
        ExitStatus(0, None, 0.0, 0.0, 0),
        ExitStatus(255, None, 1.5, 0.25, 1024),
        ExitStatus(None, 9, 1e-06, 3.0, 7),
    ],
)
def test_exit_report_round_trips(status: ExitStatus) -> None:
    """An exit status written as a report line reads back equal."""
    assert ExitStatus.from_report(status.to_report()) == status


@pytest.mark.parametrize(
    "line",
    ["", "X", "S", "X 1 - 0.0 0.0", "Y 1 - 0.0 0.0 0", "X one - 0.0 0.0 0", "X - - 0.0 0.0 0",
     "X 1 9 0.0 0.0 0", "X 1 - 0.0 0.0 0 extra", "X 1 - zero 0.0 0", "X 1 -  0.0 0.0 0"],
)  # fmt: skip
def test_malformed_exit_report_is_refused(line: str) -> None:
    """A line that is not exactly one exit report raises EpError naming the line."""
    with pytest.raises(EpError, match="exit report"):
        ExitStatus.from_report(line)


@given(
    code=st.one_of(st.none(), st.integers(0, 255)),
    sig=st.integers(1, 64),
    user=st.floats(0, 1e9, allow_nan=False),
    system=st.floats(0, 1e9, allow_nan=False),
    rss=st.integers(0, 2**40),
)
def test_exit_report_round_trip_fuzz(
    code: int | None, sig: int, user: float, system: float, rss: int
) -> None:
    """Any exit status survives the report line unchanged."""
    status = ExitStatus(code, None if code is not None else sig, user, system, rss)
    assert ExitStatus.from_report(status.to_report()) == status


@given(st.text(max_size=60))
def test_exit_report_parser_fuzz(line: str) -> None:
    """Arbitrary text either parses as an exit report or raises EpError, nothing else."""
    try:
        status = ExitStatus.from_report(line)
    except EpError:
        return
    assert ExitStatus.from_report(status.to_report()) == status


# -- refused before fork -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "environment", "needle"),
    [
        ((), (), "no executable"),
        (("",), (), "no executable"),
        (("/bin/true", "a\0b"), (), "NUL"),
        (("/bin/true",), (("A=B", "c"),), "'A=B'"),
        (("/bin/true",), (("", "c"),), "''"),
        (("/bin/true",), (("A", "c\0"),), "'A'"),
    ],
)
def test_spec_execve_cannot_take_is_refused(
    argv: tuple[str, ...], environment: tuple[tuple[str, str], ...], needle: str
) -> None:
    """A spec execve could not run is refused with hold code 6 and EINVAL, before any fork."""
    with pytest.raises(JobSetupError) as caught:
        launch(LaunchSpec(argv=argv, environment=environment, cwd="/"))
    assert (caught.value.hold_code, caught.value.hold_subcode) == (6, errno.EINVAL)
    assert needle in str(caught.value)


def test_uncatchable_signals_are_not_forwarded(tmp_path: Path, run_job: Launcher) -> None:
    """LaunchedJob.signal refuses SIGKILL and SIGSTOP, which only trackers can deliver."""
    job = run_job(shell("exit 0", tmp_path))
    for signum in (signal.SIGKILL, signal.SIGSTOP):
        with pytest.raises(ValueError, match="tracker"):
            job.signal(signum)
    assert finished(job).code == 0


# -- real jobs ---------------------------------------------------------------------------------


@pytest.mark.system
@pytest.mark.parametrize("namespace", [False, True], ids=["plain", "pidns"])
def test_job_runs_as_the_slot_user(
    as_root: None,
    slot_users: tuple[SlotUser, ...],
    user_dir: Path,
    run_job: Launcher,
    namespace: bool,
) -> None:
    """The job runs with the slot user's uid and gid, the extra groups, in its cwd."""
    user, other = slot_users[0], slot_users[1]
    spec = shell(
        "id -u; id -g; id -G; pwd",
        user_dir,
        stdout=str(user_dir / "out"),
        uid=user.uid,
        gid=user.gid,
        groups=(other.gid,),
        setup=ChildSetup(extra_groups=(61999,), new_pid_namespace=namespace),
    )
    assert finished(run_job(spec)).code == 0
    uid, gid, groups, cwd = (user_dir / "out").read_text().splitlines()
    assert (int(uid), int(gid)) == (user.uid, user.gid)
    assert {int(g) for g in groups.split()} == {user.gid, other.gid, 61999}
    assert cwd == str(user_dir)
    assert (user_dir / "out").stat().st_uid == user.uid


@pytest.mark.system
@pytest.mark.parametrize(
    "environment",
    [
        (),
        (("A", "1"),),
        (("EMPTY", ""), ("SPACES", "a b  c"), ("EQUALS", "x=y=z"), ("UNI", "é✓")),
    ],
)
def test_environment_is_exactly_the_specs(
    tmp_path: Path, run_job: Launcher, environment: tuple[tuple[str, str], ...]
) -> None:
    """The job's environment is the spec's, with nothing inherited from the starter."""
    out = tmp_path / "env.bin"
    spec = LaunchSpec(
        argv=("/usr/bin/python3", "-c", _DUMP_ENV, str(out)),
        environment=environment,
        cwd=str(tmp_path),
    )
    os.environ["EPCORE_STARTER_ONLY"] = "leak"
    try:
        assert finished(run_job(spec)).code == 0
    finally:
        del os.environ["EPCORE_STARTER_ONLY"]
    got = [entry for entry in out.read_bytes().split(b"\0") if entry]
    # Python's own startup may add LC_CTYPE when it coerces the C locale; nothing else.
    got = [entry for entry in got if not entry.startswith(b"LC_CTYPE=")]
    assert got == [f"{name}={value}".encode() for name, value in environment]


_DUMP_ENV = (
    "import os, sys\n"
    "with open(sys.argv[1], 'wb') as f:\n"
    "    f.write(b''.join(k + b'=' + v + b'\\0' for k, v in os.environb.items()))\n"
)


@pytest.mark.system
def test_stdin_comes_from_the_file(tmp_path: Path, run_job: Launcher) -> None:
    """The job reads the stdin file and writes what it read to the stdout file."""
    (tmp_path / "in").write_text("line one\nline two\n")
    spec = LaunchSpec(
        argv=("/bin/cat",),
        environment=(),
        cwd=str(tmp_path),
        stdin=str(tmp_path / "in"),
        stdout=str(tmp_path / "out"),
    )
    assert finished(run_job(spec)).code == 0
    assert (tmp_path / "out").read_text() == "line one\nline two\n"


@pytest.mark.system
@pytest.mark.parametrize(
    ("same", "expected_out", "expected_err"),
    [(False, "out1\nout2\n", "err\n"), (True, "out1\nerr\nout2\n", None)],
    ids=["separate", "shared"],
)
def test_stdout_and_stderr_go_to_their_files(
    tmp_path: Path, run_job: Launcher, same: bool, expected_out: str, expected_err: str | None
) -> None:
    """Output goes to the stdout and stderr files, in order when both name the same file."""
    (tmp_path / "out").write_text("old content that must be truncated away\n" * 3)
    err = tmp_path / ("out" if same else "err")
    spec = shell(
        "echo out1; echo err >&2; echo out2",
        tmp_path,
        stdout=str(tmp_path / "out"),
        stderr=str(err),
    )
    assert finished(run_job(spec)).code == 0
    assert (tmp_path / "out").read_text() == expected_out
    if expected_err is not None:
        assert err.read_text() == expected_err


@pytest.mark.system
@pytest.mark.parametrize("namespace", [False, True], ids=["plain", "pidns"])
@pytest.mark.parametrize(
    ("script", "code", "signum"),
    [
        ("exit 0", 0, None),
        ("exit 3", 3, None),
        ("exit 255", 255, None),
        ("kill -TERM $$", None, signal.SIGTERM),
        ("kill -KILL $$", None, signal.SIGKILL),
        ("kill -USR1 $$", None, signal.SIGUSR1),
    ],
)
def test_exit_code_or_signal_is_reported(
    tmp_path: Path,
    run_job: Launcher,
    script: str,
    code: int | None,
    signum: int | None,
    namespace: bool,
) -> None:
    """The exit code, or the signal that killed the job's first process, is reported."""
    job = run_job(shell(script, tmp_path, setup=ChildSetup(new_pid_namespace=namespace)))
    status = finished(job)
    assert (status.code, status.signal) == (code, signum)


@pytest.mark.system
def test_fileno_becomes_readable_when_the_job_ends(tmp_path: Path, run_job: Launcher) -> None:
    """fileno() is not readable while the job runs and becomes readable once it has ended."""
    marker = tmp_path / "go"
    job = run_job(shell(f"while [ ! -e {marker} ]; do sleep 0.05; done", tmp_path))
    assert select.select([job], [], [], 0.3)[0] == []
    assert job.poll() is None
    marker.touch()
    assert select.select([job], [], [], PATIENCE)[0] == [job]
    assert finished(job).code == 0
    assert job.poll() == job.wait(0)


@pytest.mark.system
@pytest.mark.parametrize("as_user", [False, True], ids=["root", "slot_user"])
@pytest.mark.parametrize(
    ("case", "hold_code", "subcode", "message"),
    [
        ("missing_exe", 6, errno.ENOENT, "Failed to execute '{d}/no_such': No such file"),
        ("not_executable", 6, errno.EACCES, "Failed to execute '{d}/plain': Permission denied"),
        ("stdout_dir_missing", 7, errno.ENOENT, "Failed to open '{d}/nodir/out' as standard out"),
        ("stderr_dir_missing", 7, errno.ENOENT, "Failed to open '{d}/nodir/err' as standard err"),
        ("stdin_missing", 8, errno.ENOENT, "Failed to open '{d}/no_in' as standard input: No "),
        ("cwd_missing", 14, errno.ENOENT, "initial working directory '{d}/nodir': No such"),
    ],
)
def test_setup_failure_gives_hold_code(
    slot_users: tuple[SlotUser, ...],
    user_dir: Path,
    case: str,
    hold_code: int,
    subcode: int,
    message: str,
    as_user: bool,
) -> None:
    """A job that cannot start raises JobSetupError with HTCondor's hold code, errno and text."""
    plain = user_dir / "plain"
    plain.write_text("#!/bin/sh\n")
    plain.chmod(0o644)
    d = str(user_dir)
    fields: dict[str, object] = {
        "missing_exe": {"argv": (f"{d}/no_such",)},
        "not_executable": {"argv": (str(plain),)},
        "stdout_dir_missing": {"stdout": f"{d}/nodir/out"},
        "stderr_dir_missing": {"stderr": f"{d}/nodir/err"},
        "stdin_missing": {"stdin": f"{d}/no_in"},
        "cwd_missing": {"cwd": f"{d}/nodir"},
    }[case]
    spec_fields: dict[str, object] = {"argv": ("/bin/true",), "environment": (), "cwd": d}
    spec_fields.update(fields)
    if as_user:
        spec_fields.update(uid=slot_users[0].uid, gid=slot_users[0].gid)
    # Other tests of the session may own children (the oracle server): only new ones count.
    before = {p.pid for p in psutil.Process().children()}
    with pytest.raises(JobSetupError) as caught:
        launch(LaunchSpec(**spec_fields))
    assert (caught.value.hold_code, caught.value.hold_subcode) == (hold_code, subcode)
    assert message.format(d=d) in str(caught.value)
    assert f"(errno {subcode})" in str(caught.value)
    left = {p.pid for p in psutil.Process().children()} - before
    assert not left, "a failed launch left a process behind"


@pytest.mark.system
@pytest.mark.parametrize(
    ("field", "hold_code", "needle"),
    [
        ("stdout", 7, "as standard output: Permission denied"),
        ("stdin", 8, "as standard input: Permission denied"),
        ("cwd", 14, "initial working directory '{root}': Permission denied"),
    ],
)
def test_files_are_opened_with_the_users_permissions(
    slot_users: tuple[SlotUser, ...],
    execute_dir: Path,
    field: str,
    hold_code: int,
    needle: str,
) -> None:
    """Files and the cwd the slot user may not use are refused, though the starter is root."""
    root_only = execute_dir / "root_only"
    root_only.mkdir(mode=0o700)
    (root_only / "in").write_text("secret\n")
    user = slot_users[0]
    spec_fields: dict[str, object] = {
        "argv": ("/bin/true",),
        "environment": (),
        "cwd": str(execute_dir),
        "uid": user.uid,
        "gid": user.gid,
        field: str(
            root_only if field == "cwd" else root_only / ("in" if field == "stdin" else "o")
        ),
    }
    with pytest.raises(JobSetupError) as caught:
        launch(LaunchSpec(**spec_fields))
    assert caught.value.hold_code == hold_code
    assert caught.value.hold_subcode == errno.EACCES
    assert needle.format(root=root_only) in str(caught.value)


@pytest.mark.system
@pytest.mark.parametrize("namespace", [False, True], ids=["plain", "pidns"])
def test_failed_join_file_is_a_setup_error(tmp_path: Path, namespace: bool) -> None:
    """A join file the job cannot write is reported with hold code 6 naming the file."""
    missing = tmp_path / "nodir" / "cgroup.procs"
    spec = shell(
        "exit 0",
        tmp_path,
        setup=ChildSetup(join_files=(str(missing),), new_pid_namespace=namespace),
    )
    with pytest.raises(JobSetupError) as caught:
        launch(spec)
    assert (caught.value.hold_code, caught.value.hold_subcode) == (6, errno.ENOENT)
    assert f"'{missing}'" in str(caught.value)


@pytest.mark.system
def test_job_writes_its_pid_to_join_files(tmp_path: Path, run_job: Launcher) -> None:
    """The job's first process writes its own PID to every join file before exec."""
    joins = (tmp_path / "a.procs", tmp_path / "b.procs")
    for path in joins:
        path.touch()
    marker = tmp_path / "go"
    job = run_job(
        shell(
            f"while [ ! -e {marker} ]; do sleep 0.05; done",
            tmp_path,
            setup=ChildSetup(join_files=tuple(str(p) for p in joins)),
        )
    )
    children = psutil.Process(job.supervisor_pid).children()
    assert [p.read_text() for p in joins] == [str(children[0].pid)] * 2
    marker.touch()
    assert finished(job).code == 0


@pytest.mark.system
@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_umask_applies_to_created_files(
    slot_users: tuple[SlotUser, ...], user_dir: Path, run_job: Launcher, umask: int, mode: int
) -> None:
    """Output files are created by the job's user with modes the spec's umask allows."""
    user = slot_users[0]
    spec = shell(
        "echo hi",
        user_dir,
        stdout=str(user_dir / "out"),
        stderr=str(user_dir / "err"),
        uid=user.uid,
        gid=user.gid,
        umask=umask,
    )
    assert finished(run_job(spec)).code == 0
    for name in ("out", "err"):
        info = (user_dir / name).stat()
        assert stat.S_IMODE(info.st_mode) == mode
        assert (info.st_uid, info.st_gid) == (user.uid, user.gid)


@pytest.mark.system
@pytest.mark.parametrize("namespace", [False, True], ids=["plain", "pidns"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP])
def test_signals_are_forwarded_to_the_job(
    slot_users: tuple[SlotUser, ...],
    user_dir: Path,
    run_job: Launcher,
    namespace: bool,
    signum: signal.Signals,
) -> None:
    """A signal sent through LaunchedJob reaches a job running as another user (trap: exit 42)."""
    ready = user_dir / "ready"
    name = signum.name.removeprefix("SIG")
    user = slot_users[0]
    spec = shell(
        f"trap 'exit 42' {name}; touch {ready}; while :; do sleep 0.05; done",
        user_dir,
        uid=user.uid,
        gid=user.gid,
        setup=ChildSetup(new_pid_namespace=namespace),
    )
    job = run_job(spec)
    assert wait_until(ready.exists)
    assert job.poll() is None
    job.signal(signum)
    assert finished(job).code == 42


def test_every_forwarded_signal_is_catchable() -> None:
    """The forwarded signals never include SIGKILL, SIGSTOP or SIGCHLD."""
    assert not {signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD} & set(FORWARDED_SIGNALS)


@pytest.mark.system
def test_job_in_a_pid_namespace_is_pid_2_under_init(tmp_path: Path, run_job: Launcher) -> None:
    """In its own PID namespace the job is PID 2, its parent is PID 1, and /proc is its own."""
    spec = shell(
        "echo $$; echo $PPID; ls /proc | grep -c '^[0-9]'",
        tmp_path,
        stdout=str(tmp_path / "out"),
        setup=ChildSetup(new_pid_namespace=True),
    )
    assert finished(run_job(spec)).code == 0
    pid, ppid, count = (tmp_path / "out").read_text().split()
    assert (pid, ppid) == ("2", "1")
    # init, the shell, ls and grep at most: the machine's other processes are invisible.
    assert int(count) <= 5


@pytest.mark.system
@pytest.mark.parametrize("namespace", [False, True], ids=["plain", "pidns"])
def test_rusage_of_a_cpu_burning_job(tmp_path: Path, run_job: Launcher, namespace: bool) -> None:
    """The reported user CPU time covers a job that burned CPU in a child it waited for."""
    spec = shell(
        "sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'",
        tmp_path,
        setup=ChildSetup(new_pid_namespace=namespace),
    )
    status = finished(run_job(spec))
    assert status.code == 0
    assert status.user_cpu + status.system_cpu > 0.05
    assert status.max_rss_kb > 0


@pytest.mark.system
def test_no_starter_fd_leaks_into_the_job(tmp_path: Path, run_job: Launcher) -> None:
    """The job holds only its stdin, stdout and stderr, even where the starter had an
    inheritable fd open."""
    leaked = os.open("/dev/null", os.O_RDONLY)
    os.dup2(leaked, 77, inheritable=True)
    try:
        spec = LaunchSpec(
            argv=("/bin/ls", "-1", "/proc/self/fd"),
            environment=(),
            cwd=str(tmp_path),
            stdout=str(tmp_path / "fds"),
        )
        assert finished(run_job(spec)).code == 0
    finally:
        os.close(77)
        os.close(leaked)
    # ls itself holds one more: the directory it lists.
    assert set((tmp_path / "fds").read_text().split()) == {"0", "1", "2", "3"}


@pytest.mark.system
def test_supervisor_adopts_daemons_of_the_job(tmp_path: Path, run_job: Launcher) -> None:
    """A double-forked daemon of the job is reparented to the supervisor, not to PID 1."""
    pidfile = tmp_path / "daemon.pid"
    job = run_job(shell(f"(sleep 1000 & echo $! > {pidfile}); exit 0", tmp_path))
    assert finished(job).code == 0
    assert wait_until(lambda: pidfile.exists() and pidfile.read_text().strip() != "")
    daemon = psutil.Process(int(pidfile.read_text()))
    assert wait_until(lambda: daemon.ppid() == job.supervisor_pid)
    daemon.kill()
    # The supervisor reaps its adopted children: no zombie remains under it.
    assert wait_until(lambda: not psutil.Process(job.supervisor_pid).children())


@pytest.mark.system
def test_close_reaps_the_supervisor(tmp_path: Path) -> None:
    """close() leaves no supervisor behind, and calling it twice does nothing more."""
    job = launch(shell("exit 0", tmp_path))
    assert finished(job).code == 0
    supervisor = job.supervisor_pid
    job.close()
    job.close()
    assert not psutil.pid_exists(supervisor) or psutil.Process(supervisor).ppid() != os.getpid()
    assert job.poll() is not None


@pytest.mark.system
@pytest.mark.parametrize("namespace", [False, True], ids=["plain", "pidns"])
def test_job_starts_with_default_signal_handling(
    tmp_path: Path, run_job: Launcher, namespace: bool
) -> None:
    """The job blocks and ignores no signal, though the starter ignores some (SIGPIPE, SIGHUP)."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        spec = LaunchSpec(
            argv=("/bin/cat", "/proc/self/status"),
            environment=(),
            cwd=str(tmp_path),
            stdout=str(tmp_path / "status"),
            setup=ChildSetup(new_pid_namespace=namespace),
        )
        assert finished(run_job(spec)).code == 0
    finally:
        signal.signal(signal.SIGHUP, previous)
    fields = dict(line.split(":", 1) for line in (tmp_path / "status").read_text().splitlines())
    assert int(fields["SigIgn"], 16) == 0
    assert int(fields["SigBlk"], 16) == 0


# -- files that would block, and starters that die ---------------------------------------------


@pytest.mark.parametrize(
    ("field", "hold_code", "needle"),
    [
        ("stdin", 8, "as standard input: it is not a regular file"),
        ("stdout", 7, "as standard output: it is not a regular file"),
        ("stderr", 7, "as standard error: it is not a regular file"),
    ],
)
@pytest.mark.parametrize("reader", [False, True], ids=["nobody-reads", "someone-reads"])
def test_a_fifo_for_a_standard_stream_is_refused_without_blocking(
    tmp_path: Path, field: str, hold_code: int, needle: str, reader: bool
) -> None:
    """A FIFO named as the job's stdin, stdout or stderr fails the launch at once with
    HTCondor's hold code (8 input, 7 output) and a reason naming it, instead of blocking."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    held = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK) if reader else None
    try:
        started = time.monotonic()
        with pytest.raises(JobSetupError) as caught:
            launch(shell("exit 0", tmp_path, **{field: str(fifo)}))
        assert time.monotonic() - started < PATIENCE / 2
    finally:
        if held is not None:
            os.close(held)
    assert caught.value.hold_code == hold_code
    assert f"'{fifo}' {needle}" in str(caught.value)


@pytest.mark.system
@pytest.mark.parametrize("namespace", [False, True], ids=["plain", "pidns"])
def test_a_killed_starter_leaves_no_supervisor_and_no_job(tmp_path: Path, namespace: bool) -> None:
    """When the starter is killed with SIGKILL, its supervisor kills the job's whole tree
    (its first process and a daemon it left) and exits, within a few seconds."""

    def start(spec: LaunchSpec) -> LaunchedJob:
        return launch(attrs.evolve(spec, setup=ChildSetup(new_pid_namespace=namespace)))

    kill_starter_and_check_the_job_ends(tmp_path, fake_starter(tmp_path, start))


@pytest.mark.system
@pytest.mark.parametrize("namespace", [False, True], ids=["plain", "pidns"])
def test_the_job_enters_the_mount_namespace_its_setup_names(
    tmp_path: Path, run_job: Launcher, as_root: None, namespace: bool
) -> None:
    """With ``mount_namespace`` the job runs in that mount namespace (a hidden scratch
    filesystem's): it sees a mount made only there, which this process does not."""
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    ready = tmp_path / "ready"
    holder = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         f"mount -t tmpfs none {hidden} && touch {hidden}/marker {ready} && sleep 60"]
    )  # fmt: skip
    try:
        assert wait_until(ready.exists, PATIENCE), "the namespace's mount was not made"
        assert not (hidden / "marker").exists()
        setup = ChildSetup(
            new_pid_namespace=namespace, mount_namespace=f"/proc/{holder.pid}/ns/mnt"
        )
        found = tmp_path / "found"
        spec = shell(f"ls {hidden} > {found}", tmp_path, setup=setup)
        assert finished(run_job(spec)).code == 0
        assert found.read_text().split() == ["marker"]
    finally:
        holder.kill()
        holder.wait()
