"""What the pool benchmarks share: an ``ep`` daemon in a subprocess, waiting, and cleaning up.

Not a benchmark itself (its name starts with an underscore); ``pool_bench.py`` and
``docker_bench.py`` import it. Every daemon is started with ``--config <file>`` in a session of
its own, and :func:`kill_tree` kills every process whose command line names that file (the
daemon and the starters it forked), whatever happened to the benchmark.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from epcore.pool.personal import personal_config_text
from epcore.pool.requests import PoolClient
from epcore.runtime.control import ControlError


def wait(check: Callable[[], bool], timeout: float, what: str, poll: float = 0.05) -> None:
    """Until ``check()`` is true, looking every ``poll`` seconds; exit after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(poll)


def kill_tree(process: subprocess.Popen[bytes], marker: str) -> None:
    """Kill every process whose command line holds ``marker``, then ``process`` itself."""
    for found in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if marker in " ".join(found.info["cmdline"] or []):
                found.kill()
    if process.poll() is None:
        process.kill()
        process.wait(10)


def start_ep(args: list[str], out: Path) -> subprocess.Popen[bytes]:
    """``ep <args>`` in a session of its own, its output (both streams) into ``out``."""
    with open(out, "wb") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "epcore.cli.main", *args],
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@attrs.frozen
class RunningPool:
    """A personal pool started by :func:`personal_pool`: its client, files and process."""

    client: PoolClient
    config_path: Path
    local_dir: Path
    process: subprocess.Popen[bytes]


@contextlib.contextmanager
def personal_pool(local: Path, extra_config: str, out: Path) -> Iterator[RunningPool]:
    """An ``ep run`` whose LOCAL_DIR is ``local`` (made here), with the personal pool's
    configuration followed by ``extra_config``, once it answers a query of its slots; stopped
    (SIGTERM, then every process of it killed) at the end."""
    local.mkdir()
    config_path = local / "condor_config"
    config_path.write_text(personal_config_text(str(local)) + extra_config)
    process = start_ep(["run", "--config", str(config_path)], out)
    client = PoolClient(str(local / "spool" / "pool_control"), timeout=60)
    try:

        def answers() -> bool:
            if process.poll() is not None:
                raise SystemExit(out.read_text()[-2000:])
            try:
                return bool(client.query_ads("Machine"))
            except ControlError:
                return False

        wait(answers, 60, "the pool")
        yield RunningPool(client, config_path, local, process)
    finally:
        process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(30)
        kill_tree(process, str(config_path))


def remove_cgroup(name: str) -> None:
    """Remove the cgroup ``name`` (and what is under it) from every v1 controller."""
    for controller in ("memory", "cpu", "cpuacct", "freezer", "pids"):
        with contextlib.suppress(OSError):
            for path in sorted(
                Path(f"/sys/fs/cgroup/{controller}/{name}").glob("**/"), reverse=True
            ):
                path.rmdir()


#: Where the v1 cpuacct controller is mounted (as on this machine); without it the CPU time
#: per job is not measured.
CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def cpuacct_of(pid: int) -> str | None:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            return path
    return None


def new_meter() -> str | None:
    """A new cpuacct cgroup to count one side's CPU time, or None without cpuacct v1."""
    if not CPUACCT.is_dir():
        return None
    name = f"ep_bench_cpu_{uuid.uuid4().hex[:6]}"
    (CPUACCT / name).mkdir()
    return name


def adopt(meter: str | None, pid: int) -> None:
    """Move ``pid`` and its descendants into ``meter``, so that its usage counts them and
    whatever they start from then on. Descendants already moved elsewhere (a job's own
    cgroup) stay where they are."""
    if meter is None:
        return
    mine = cpuacct_of(os.getpid())
    process = psutil.Process(pid)
    for each in [process, *process.children(recursive=True)]:
        with contextlib.suppress(OSError, psutil.Error):
            if cpuacct_of(each.pid) == mine:
                (CPUACCT / meter / "cgroup.procs").write_text(str(each.pid))


def cpu_seconds(*names: str | None) -> float:
    """The CPU time charged so far to the cpuacct cgroups ``names`` and their descendants
    (v1 charges every ancestor, so a removed job cgroup's time stays in its parent)."""
    total = 0
    for name in names:
        if name is not None:
            with contextlib.suppress(OSError):
                total += int((CPUACCT / name / "cpuacct.usage").read_text())
    return total / 1e9
