"""Python cron jobs beside starters (issue 20): a plugin's cron jobs fire every 0.1 s in threads
of the startd, taking locks (a logger's, a file lock like the docker image cache's, a
threading.Lock held across a sleep) and allocating, while the same startd forks the starters
of 2,000 short jobs; every job must end and no starter may hang.

The startd runs in the test's process (the plugin is registered here), as an embedded startd
does, with the installed plugins too and cgroup tracking on, as in CI. A starter that has not
reported its job's end STARTER_BOUND seconds after the activation counts as hung: the test
fails naming its pid, with the kernel's view of it and of its children (state, wchan, kernel
stack) and its Python stacks (faulthandler, registered on SIGUSR2 before the first fork).

EPCORE_STRESS_REPEAT=20 runs the test 20 times in a row (the issue's "20 times in a row");
EPCORE_STRESS_JOBS changes the number of jobs (2,000 by default).
"""

from __future__ import annotations

import contextlib
import faulthandler
import fcntl
import logging
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import attrs
import psutil
import pytest

from epcore import hookimpl
from epcore.classad import ClassAd, parse_ad, parse_expr
from epcore.config import Config
from epcore.plugins import load_plugins
from epcore.startd.loop import StartdLoop
from epcore.startd.main import build_startd
from epcore.testing.startd import BASE_CONFIG
from epcore.types import PythonCronJob

pytestmark = pytest.mark.system

#: Jobs per run with a starter forked per job (the forks beside the cron threads are what
#: the test is about) and with kept starters (four forks; fewer jobs: the test's group runs
#: its tests one after the other in CI). EPCORE_STRESS_JOBS sets both.
JOBS = int(os.environ.get("EPCORE_STRESS_JOBS", "2000"))
KEPT_JOBS = int(os.environ.get("EPCORE_STRESS_JOBS", "500"))
REPEAT = int(os.environ.get("EPCORE_STRESS_REPEAT", "1"))
SLOTS = 4
#: The cron jobs' period, in seconds.
PERIOD = 0.1
#: Seconds from a job's activation to its result after which its starter counts as hung (a
#: /bin/true job takes about 50 ms; a loaded 2-core machine may stretch that many times).
STARTER_BOUND = 30.0
#: Seconds the whole run may take before the test gives up on it (it fails then too).
RUN_BOUND = 600.0


@attrs.define
class LockingCron:
    """A plugin whose four Python cron jobs take locks and allocate, counting their runs."""

    spool: Path
    log: logging.Logger
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    runs: dict[str, int] = attrs.field(factory=dict)

    def _ran(self, name: str) -> None:
        # Only these threads write here, one run per job at a time: a dict item is enough.
        self.runs[name] = self.runs.get(name, 0) + 1

    def logging_job(self) -> list[ClassAd]:
        """Lines through the startd's own logger: its handler's lock and its file's buffer."""
        for n in range(20):
            self.log.info("stress cron line %d of run %d", n, self.runs.get("LOGGING", 0))
        self._ran("LOGGING")
        return [ClassAd({"StressLogging": self.runs["LOGGING"]})]

    def file_lock_job(self) -> list[ClassAd]:
        """A record rewritten whole under an exclusive lock file, as the docker image cache's
        is, with a sleep inside the lock."""
        record = self.spool / "stress_record"
        with open(self.spool / "stress_record.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                lines = record.read_text().splitlines() if record.exists() else []
                lines = [*lines[-50:], f"{time.time()} {len(lines)}"]
                partial = record.with_suffix(".new")
                partial.write_text("\n".join(lines) + "\n")
                time.sleep(0.02)
                os.replace(partial, record)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        self._ran("FILE_LOCK")
        return [ClassAd({"StressRecordLines": len(lines)})]

    def held_lock_job(self) -> list[ClassAd]:
        """A threading.Lock held across a sleep (the plugin's state, logged inside it)."""
        with self.lock:
            time.sleep(0.05)
            self.log.info("stress cron: held lock run %d", self.runs.get("HELD_LOCK", 0))
        self._ran("HELD_LOCK")
        return [ClassAd({"StressHeldLock": True})]

    def allocating_job(self) -> list[ClassAd]:
        """Many small objects and ClassAd evaluations (regular expressions included)."""
        ads = [ClassAd({"Name": f"machine{n}", "Memory": n}) for n in range(2000)]
        test = parse_expr('regexp("^machine1[0-9]*$", Name) && Memory > 100')
        matched = sum(1 for ad in ads if test.evaluate(ad) is True)
        blob = [bytes(1024) for _ in range(1000)]
        self._ran("ALLOCATING")
        return [ClassAd({"StressMatched": matched, "StressBlob": len(blob)})]

    @hookimpl
    def ep_cron_jobs(self, config: Config) -> list[PythonCronJob]:
        jobs = {
            "LOGGING": self.logging_job,
            "FILE_LOCK": self.file_lock_job,
            "HELD_LOCK": self.held_lock_job,
            "ALLOCATING": self.allocating_job,
        }
        return [
            PythonCronJob(name, run, mode="Periodic", period=PERIOD, publish=False)
            for name, run in jobs.items()
        ]


@attrs.define
class Running:
    """A job handed to a slot: its number, its claim and when it was activated."""

    number: int
    claim_id: str
    slot: str
    activated: float


def _job(number: int, iwd: Path, program: str = "/bin/true") -> ClassAd:
    command, _, arguments = program.partition(" ")
    return parse_ad(
        f'[ ClusterId = 1; ProcId = {number}; Owner = "nobody"; Cmd = "{command}";'
        f' Arguments = "{arguments}"; Iwd = "{iwd}"; RequestCpus = 1; RequestMemory = 64;'
        " RequestDisk = 1024 ]"
    )


def _describe(pid: int, dumps: Path) -> str:
    """What the kernel says of ``pid`` and its children, and the Python stacks it dumps."""
    lines = []
    try:
        processes = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return f"starter {pid} is gone (not reaped: it never reported)"
    for process in processes:
        proc = Path("/proc") / str(process.pid)
        parts = []
        for name in ("wchan", "stack"):
            try:
                parts.append(f"{name}: {(proc / name).read_text().strip()}")
            except OSError as error:
                parts.append(f"{name}: ({error.strerror})")
        try:
            what = f"{process.status()} {' '.join(process.cmdline())[:80]}"
        except psutil.Error:
            what = "gone"
        lines.append(f"pid {process.pid} ({what}) " + "; ".join(parts))
    before = dumps.stat().st_size
    os.kill(pid, signal.SIGUSR2)
    time.sleep(1.0)
    with open(dumps, "rb") as handle:
        handle.seek(before)
        stacks = handle.read().decode("utf-8", "replace")
    lines.append("Python stacks (faulthandler):\n" + (stacks or "(none written)"))
    return "\n".join(lines)


@contextlib.contextmanager
def _embedded(
    top: Path, cgroup: str, cron: LockingCron, *, keep: bool = True
) -> Iterator[tuple[StartdLoop, Path]]:
    """An opened startd of SLOTS slots with ``cron``'s jobs, in this process; the file its
    starters dump their Python stacks to on SIGUSR2. Shut down fast on the way out.
    ``keep``: STARTER_KEEP_FOR_CLAIM (False: a starter forked per job)."""
    local = top / "local"
    config = top / "condor_config"
    config.write_text(
        BASE_CONFIG.format(local=local, cpus=SLOTS, memory=SLOTS * 256, cgroup=cgroup)
        + f"NUM_SLOTS = {SLOTS}\nSTARTER_UPDATE_INTERVAL = 300\n"
        + "STARTER_INITIAL_UPDATE_INTERVAL = 300\n"
        + f"STARTER_KEEP_FOR_CLAIM = {keep}\n"
    )
    plugins = load_plugins(extra=[("stress", cron)], strict=True)
    dumps = top / "stacks"
    with open(dumps, "wb") as dump_file:
        # Inherited by every starter: its Python stacks on SIGUSR2 if it hangs.
        faulthandler.register(signal.SIGUSR2, file=dump_file, all_threads=True)
        try:
            loop = StartdLoop(build_startd(str(config), plugins=plugins))
            loop.open()
            try:
                yield loop, dumps
            finally:
                _shut_down(loop)
        finally:
            faulthandler.unregister(signal.SIGUSR2)


def _shut_down(loop: StartdLoop) -> None:
    """Shut the startd down fast, killing the starters that do not end (a hung one answers
    nothing), and wait for the cron threads' last runs (they write to the startd's files)."""
    loop.startd.shutdown(fast=True)
    for wait in (3.0, 10.0):
        deadline = time.monotonic() + wait
        while not loop.finished and time.monotonic() < deadline:
            loop.turn()
        for handle in loop.startd.starters.handles.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(handle.pid, signal.SIGKILL)
    loop.close()
    for thread in threading.enumerate():
        if thread.name.startswith("cron-"):
            thread.join(10)


@pytest.fixture
def stress_dirs(base_cgroup: str, slot_users: object) -> Iterator[tuple[Path, str, LockingCron]]:
    """A directory outside pytest's base directory (which a concurrent session makes 0700
    again) for the startd (``local``) and the jobs' Iwd (``iwd``), the startd's BASE_CGROUP
    and the cron plugin, whose files go to the startd's SPOOL."""
    top = Path(tempfile.mkdtemp(prefix="ep_cron_stress_"))
    top.chmod(0o755)
    (top / "local" / "spool").mkdir(parents=True)
    (top / "iwd").mkdir()
    (top / "iwd").chmod(0o777)
    cron = LockingCron(top / "local" / "spool", logging.getLogger("epcore.startd.cron.stress"))
    yield top, f"{base_cgroup}/cron_stress_{top.name[-8:]}", cron
    shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize("keep", [False, True], ids=["starter-per-job", "kept-starters"])
@pytest.mark.parametrize("run", range(1, REPEAT + 1))
def test_cron_threads_never_hang_a_starter(
    run: int, keep: bool, stress_dirs: tuple[Path, str, LockingCron]
) -> None:
    """With four Python cron jobs taking locks every 0.1 s, every /bin/true job on four
    slots ends with exit code 0 within STARTER_BOUND s of its activation, and the cron jobs
    really ran throughout (at least one run per job every 0.5 s on average): JOBS jobs with
    a starter forked per job (as many forks beside the cron threads), KEPT_JOBS with kept
    starters (four forks, then each claim's jobs sent to its starter)."""
    top, cgroup, cron = stress_dirs
    jobs = KEPT_JOBS if keep else JOBS
    with _embedded(top, cgroup, cron, keep=keep) as (loop, dumps):
        elapsed, hung = _run_jobs(loop, top / "iwd", dumps, jobs=jobs)
    assert hung is None, hung
    assert sorted(cron.runs) == ["ALLOCATING", "FILE_LOCK", "HELD_LOCK", "LOGGING"], cron.runs
    assert min(cron.runs.values()) >= elapsed / 0.5, (cron.runs, elapsed)
    print(f"run {run}: {jobs} jobs in {elapsed:.1f} s ({jobs / elapsed:.1f}/s), cron {cron.runs}")


def test_a_silent_starter_is_named_with_its_stacks(
    stress_dirs: tuple[Path, str, LockingCron],
) -> None:
    """A starter that does not report within the bound (its job sleeps) fails the check, which
    names the starter's pid, its kernel wait and its Python stack."""
    top, cgroup, cron = stress_dirs
    with _embedded(top, cgroup, cron) as (loop, dumps):
        _elapsed, silent = _run_jobs(
            loop, top / "iwd", dumps, jobs=1, bound=3.0, program="/bin/sleep 600"
        )
    assert silent is not None
    # Three seconds or a little more: the check runs between turns of a loaded loop.
    assert re.search(r"job 0 on slot\d: starter \d+ silent for \d+ s after 0 jobs ended", silent)
    assert "wchan: " in silent, silent
    assert re.search(r'File ".*/epcore/starter/\w+\.py", line \d+ in \w+', silent), silent


def _run_jobs(
    loop: StartdLoop,
    iwd: Path,
    dumps: Path,
    jobs: int = JOBS,
    bound: float = STARTER_BOUND,
    program: str = "/bin/true",
) -> tuple[float, str | None]:
    """Run ``jobs`` jobs of ``program`` through ``loop``'s startd, each claim reused for the
    next job; the time taken and, for a starter silent ``bound`` s after its activation, what
    it was doing (None when none was)."""
    startd = loop.startd
    waiting = deque(range(jobs))
    running: dict[int, Running] = {}
    idle: list[str] = []
    for n in range(1, SLOTS + 1):
        idle.append(startd.claim(f"slot{n}", _job(0, iwd)))
    started = time.monotonic()
    done = 0
    while done < jobs:
        now = time.monotonic()
        while idle and waiting:
            claim_id = idle.pop()
            if not startd.claim_ready(claim_id):
                idle.append(claim_id)
                break
            number = waiting.popleft()
            startd.activate(claim_id, _job(number, iwd, program))
            slot = startd.slot_of(claim_id) or "?"
            running[number] = Running(number, claim_id, slot, now)
        loop.turn()
        while startd.results:
            result = startd.results.popleft()
            number = int(str(result.evaluate("ProcId")))
            job = running.pop(number)
            assert result.evaluate("ExitCode") == 0, result
            done += 1
            idle.append(job.claim_id)
        now = time.monotonic()
        for job in running.values():
            if now - job.activated > bound:
                handle = startd.starters.handles.get(job.claim_id)
                if handle is None:
                    return now - started, f"job {job.number} on {job.slot}: no starter at all"
                return now - started, (
                    f"job {job.number} on {job.slot}: starter {handle.pid} silent for "
                    f"{now - job.activated:.0f} s after {done} jobs ended\n"
                    + _describe(handle.pid, dumps)
                )
        if now - started > RUN_BOUND:
            return now - started, f"only {done} of {jobs} jobs ended in {RUN_BOUND:.0f} s"
    return time.monotonic() - started, None
