"""A real personal pool in a subprocess (``ep run``), for end-to-end tests of the pool and of
plugins (``pytest_plugins = ["epcore.testing.system", "epcore.testing.pool"]`` in a root
conftest.py gives the ``pool_factory`` and ``shared_dir`` fixtures).

The pool gets a directory of its own (LOCAL_DIR) with the personal pool's configuration and
the test's additions, a unique BASE_CGROUP, and quick intervals. ``ep`` commands run as real
users: the test process forks, the child becomes the user (setgid, setuid) and runs the
``ep`` command in-process, so the pool knows it from the socket, as it would a user's shell
(the interpreter itself lives where other users cannot exec it on this machine). Everything
the pool started is killed when the test ends.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import click
import pytest
from click.testing import CliRunner

# Imported here, not in the child: once it is another user, the interpreter's own
# site-packages (under /root on this machine) are out of its reach.
from epcore.classad import ClassAd
from epcore.cli.main import ep
from epcore.pool.personal import personal_config_text
from epcore.pool.requests import PoolClient
from epcore.runtime.control import ControlError
from epcore.testing.process import DaemonProcess
from epcore.testing.system import SlotUser, open_up, remove_cgroup_tree

TEST_CONFIG = """\
NUM_CPUS = {cpus}
MEMORY = {memory}
BASE_CGROUP = {cgroup}
RUNBENCHMARKS = False
POLLING_INTERVAL = 1
UPDATE_INTERVAL = 5
NEGOTIATOR_INTERVAL = 2
NEGOTIATOR_MIN_INTERVAL = 0
STARTER_INITIAL_UPDATE_INTERVAL = 1
STARTER_UPDATE_INTERVAL = 2
"""

#: The trust domain of a pool of separate ``ep run`` processes (tests/pool, epcore.testing.netns).
POOL_DOMAIN = "epcore.test"
#: What every host of such a pool adds to its configuration: the pool's names, and
#: DAEMON-level commands proven by a token alone (made by :func:`pool_token`).
POOL_SECURITY = f"""
UID_DOMAIN = {POOL_DOMAIN}
TRUST_DOMAIN = {POOL_DOMAIN}
SEC_DAEMON_AUTHENTICATION_METHODS = TOKEN
ALLOW_DAEMON = condor@{POOL_DOMAIN}
"""


def pool_token(config_path: Path, identity: str = f"condor@{POOL_DOMAIN}") -> str:
    """A token for ``identity`` signed with the pool key of the central manager configured
    by ``config_path`` (``ep token create``; the key exists once that manager has started)."""
    made = CliRunner().invoke(
        ep, ["token", "create", "--config", str(config_path), "--identity", identity]
    )
    assert made.exit_code == 0, made.output
    return made.stdout.strip()


def install_token(local_dir: Path, token: str) -> None:
    """Put ``token`` where the daemons of the pool kept in ``local_dir`` look for theirs
    (SEC_TOKEN_SYSTEM_DIRECTORY of the personal configuration), private to root."""
    directory = local_dir / "tokens.d"
    directory.mkdir(mode=0o700, exist_ok=True)
    (directory / "daemon").write_text(token + "\n")
    (directory / "daemon").chmod(0o600)


@attrs.frozen
class CommandResult:
    """What an ``ep`` command printed, and its exit status."""

    status: int
    stdout: str
    stderr: str


def run_ep(
    args: list[str],
    *,
    uid: int = 0,
    gid: int = 0,
    cwd: str | None = None,
    enter: Callable[[], None] | None = None,
) -> CommandResult:
    """Run ``ep args`` in a forked child as ``uid``/``gid`` (root when 0); ``enter`` runs in
    the child first, as root (epcore.testing.netns enters a host's network namespace)."""
    # ep imports a sub-command when it is invoked; import it here, before the child becomes
    # a user who cannot read the interpreter's site-packages.
    if args:
        ep.get_command(click.Context(ep), args[0])
    if "-pool" in args:
        # A CEDAR client's first connection looks its host name up through the idna codec,
        # which Python imports on first use; and it runs the key exchange.
        importlib.import_module("encodings.idna")
        importlib.import_module("epcore.net.tools")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            status = 70
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                # pytest's capture replaced sys.stdout; click writes there.
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                if enter is not None:
                    enter()
                if uid:
                    os.setgroups([])
                    os.setgid(gid)
                    os.setuid(uid)
                    os.environ["HOME"] = cwd or "/nonexistent"
                if cwd:
                    os.chdir(cwd)
                try:
                    ep.main(args=args, prog_name="ep", standalone_mode=True)
                    status = 0
                except SystemExit as exit_:
                    status = exit_.code if isinstance(exit_.code, int) else 1
            except BaseException as error:
                os.write(2, f"child failed: {error!r}\n".encode())
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        _, raw = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return CommandResult(
            os.waitstatus_to_exitcode(raw), out.read().decode(), err.read().decode()
        )


class PoolProcess(DaemonProcess):
    """One ``ep run`` process and its files."""

    command = "run"

    def __init__(self, directory: Path, config_text: str) -> None:
        super().__init__(directory, config_text)
        self.socket = str(directory / "spool" / "pool_control")
        self.client = PoolClient(self.socket, timeout=30)

    def start(self, wait: float = 60.0) -> None:
        """Start ``ep run`` and wait until the pool answers on its socket."""
        self.launch()
        self.wait_for(self._answers, wait, "the pool to answer on its socket")

    def _answers(self) -> bool:
        self.check_alive()
        try:
            self.client.query_ads("Machine")
        except ControlError:
            return False
        return True

    def hint(self) -> str:
        """The ends of the pool's logs, SchedLog first, for a failed wait's message."""
        directory = self.directory / "log"
        others = sorted(p.name for p in directory.glob("*Log*") if p.name != "SchedLog")
        return "".join(f"; {name}:\n{self.log(name)[-2000:]}" for name in ("SchedLog", *others))

    def ep(self, *args: str, user: object | None = None, cwd: str | None = None) -> CommandResult:
        """Run ``ep ARGS --config <the pool's>`` as ``user`` (a SlotUser; root when None)."""
        uid = int(getattr(user, "uid", 0))
        gid = int(getattr(user, "gid", 0))
        return run_ep([*args, "--config", str(self.config_path)], uid=uid, gid=gid, cwd=cwd)

    def jobs(self, constraint: str | None = None, *, history: bool = False) -> list[ClassAd]:
        return self.client.query_jobs(constraint, history=history)

    def log(self, name: str) -> str:
        path = self.directory / "log" / name
        return path.read_text(errors="replace") if path.exists() else ""

    def terminate(self, timeout: float = 60.0) -> int:
        """SIGTERM, then a second SIGTERM (fast shutdown); the exit status."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.process.wait(timeout / 2)
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout / 2)


def submit_as(pool: PoolProcess, user: SlotUser, root: Path, text: str) -> Path:
    """Write ``text`` as job.sub in ``user``'s directory under ``root`` (made on first use)
    and submit it as ``user`` from there; the directory."""
    home = user_home(root, user)
    path = home / "job.sub"
    path.write_text(text)
    os.chown(path, user.uid, user.gid)
    result = pool.ep("submit", "job.sub", user=user, cwd=str(home))
    assert result.status == 0, result.stderr
    return home


def user_home(root: Path, user: SlotUser) -> Path:
    """``user``'s own directory under ``root`` (made on first use), reachable by the user."""
    home = root / f"home_{user.name}"
    home.mkdir(exist_ok=True)
    os.chown(home, user.uid, user.gid)
    open_up(home)
    return home


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory other users can reach, outside pytest's 0700 temporary root (which
    another pytest run on the machine may close again at any time); removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="ep_test_pool_"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def pool_factory(
    shared_dir: Path, base_cgroup: str, request: pytest.FixtureRequest
) -> Iterator[Callable[..., PoolProcess]]:
    """``pool_factory(extra_config, cpus=4, memory=4096)``: a started real pool."""
    made: list[PoolProcess] = []
    tmp_path = shared_dir

    def make(
        extra: str = "", *, cpus: int = 4, memory: int = 4096, start: bool = True
    ) -> PoolProcess:
        local = tmp_path / f"pool{len(made)}"
        local.mkdir()
        local.chmod(0o755)
        cgroup = f"{base_cgroup}/{request.node.name[:40]}_{len(made)}"
        text = (
            personal_config_text(str(local))
            + TEST_CONFIG.format(cpus=cpus, memory=memory, cgroup=cgroup)
            + extra
        )
        pool = PoolProcess(local, text)
        made.append(pool)
        if start:
            pool.start()
        return pool

    yield make
    for number, pool in enumerate(made):
        pool.stop()
        # A job whose daemons a test killed (restart tests) outlives them by design; it must
        # not outlive the test, where a later test of the same slot user would see it.
        remove_cgroup_tree(f"{base_cgroup}/{request.node.name[:40]}_{number}")
