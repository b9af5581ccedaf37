"""The schedd's job queue: submissions and status changes per second, against bare SQLite.

Run from the project root after ``python3 -m pip install -e '.[test]'``::

    python3 benchmarks/jobqueue_bench.py            # median of 5 rounds per measurement
    python3 benchmarks/jobqueue_bench.py --quick    # 1 round: a smoke test

Each round opens a fresh ``epcore.schedd.jobqueue.JobQueue`` in a temporary directory (removed
afterwards) and times, with a job ad of about 60 attributes such as condor_submit makes:

* 1,000 submissions of one-job clusters, each ``next_cluster_id`` + ``submit`` in its own
  transactions (target: at least 1,000 per second);
* 10,000 status changes (idle -> running -> idle over the 1,000 jobs), each its own
  transaction (target: at least 10,000 per second), then the same grouped 100 per
  ``batch()`` as the schedd groups one loop turn's changes;
* ``jobs(statuses=[IDLE])`` over the 1,000 jobs just after reopening the file (every ad
  parsed) and again (ads already in memory).

The baseline, in the same run, is bare ``sqlite3`` in WAL mode with synchronous=NORMAL (the
queue also checkpoints less often) doing the same INSERTs and UPDATEs of ready-made ad text
into a table without secondary indexes, one commit each: the price of the storage alone. The
ratio epcore / SQLite is printed. It is a measurement, not a test: it exits 0 whether or not
the targets are met.
"""

from __future__ import annotations

import argparse
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from epcore.classad import ClassAd, parse_ad
from epcore.schedd.jobqueue import JobId, JobQueue, JobStatus

SUBMITS = 1000
CHANGES = 10_000
BATCH = 100
SUBMIT_TARGET = 1000.0
CHANGE_TARGET = 10_000.0
NOW = 1_700_000_000.0


def job_ad() -> ClassAd:
    """A cluster ad shaped like condor_submit's for a vanilla job."""
    ad = parse_ad(
        '[ Owner = "alice"; User = "alice@pool.example.org"; Cmd = "/home/alice/run.sh";'
        ' Args = "--input data.txt --iterations 100"; Iwd = "/home/alice/work";'
        " JobUniverse = 5; RequestCpus = 1; RequestDisk = DiskUsage;"
        " RequestMemory = ifThenElse(MemoryUsage =!= undefined, MemoryUsage, 128);"
        ' Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") &&'
        " (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) &&"
        " (TARGET.HasFileTransfer); Rank = 0.0; JobPrio = 0; QDate = 1700000000;"
        ' Out = "out.txt"; Err = "err.txt"; UserLog = "/home/alice/work/job.log";'
        ' ShouldTransferFiles = "YES"; WhenToTransferOutput = "ON_EXIT";'
        " LeaveJobInQueue = false; PeriodicHold = false; PeriodicRelease = false;"
        " PeriodicRemove = false; OnExitHold = false; OnExitRemove = true;"
        " DiskUsage = 1; ImageSize = 1; MemoryUsage = undefined ]"
    )
    for number in range(30):
        ad[f"CustomAttribute{number}"] = f"value number {number}" if number % 2 else number
    return ad


def rate(count: int, call: Callable[[], object]) -> float:
    """Operations per second of one call that performs ``count`` operations."""
    start = time.perf_counter()
    call()
    return count / (time.perf_counter() - start)


def epcore_round(directory: Path) -> dict[str, float]:
    """One round of every epcore measurement in a fresh queue under ``directory``."""
    path = directory / "job_queue.db"
    queue = JobQueue.open(path)
    cluster_ad = job_ad()
    proc = ClassAd({"ProcId": 0})
    jobs: list[JobId] = []

    def submit_all() -> None:
        for _ in range(SUBMITS):
            jobs.extend(queue.submit(queue.next_cluster_id(), cluster_ad, [proc]))

    def change_all() -> None:
        for turn in range(CHANGES // (2 * SUBMITS)):
            for job in jobs:
                queue.change_status(job, JobStatus.RUNNING, NOW + turn)
                queue.change_status(job, JobStatus.IDLE, NOW + turn)

    def change_batched() -> None:
        for start in range(0, SUBMITS, BATCH // 2):
            with queue.batch():
                for job in jobs[start : start + BATCH // 2]:
                    for _ in range(CHANGES // (2 * SUBMITS)):
                        queue.change_status(job, JobStatus.RUNNING, NOW)
                        queue.change_status(job, JobStatus.IDLE, NOW)

    found: dict[str, float] = {}
    found["submit"] = rate(SUBMITS, submit_all)
    found["change"] = rate(CHANGES, change_all)
    found["batched"] = rate(CHANGES, change_batched)
    queue.close()
    queue = JobQueue.open(path)
    found["cold query"] = rate(SUBMITS, lambda: queue.jobs(statuses=[JobStatus.IDLE]))
    found["warm query"] = rate(SUBMITS, lambda: queue.jobs(statuses=[JobStatus.IDLE]))
    queue.close()
    return found


def sqlite_round(directory: Path) -> dict[str, float]:
    """The same writes with bare sqlite3: ready-made text, one commit each."""
    db = sqlite3.connect(str(directory / "plain.db"), isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute(
        "CREATE TABLE jobs (cluster INTEGER, proc INTEGER, status INTEGER, owner TEXT,"
        " ad TEXT, PRIMARY KEY (cluster, proc)) WITHOUT ROWID"
    )
    text = str(job_ad())

    def insert_all() -> None:
        for cluster in range(1, SUBMITS + 1):
            db.execute("BEGIN")
            db.execute("INSERT INTO jobs VALUES (?, 0, 1, 'alice', ?)", (cluster, text))
            db.execute("COMMIT")

    def update_all() -> None:
        for number in range(CHANGES):
            db.execute("BEGIN")
            db.execute(
                "UPDATE jobs SET status = ?, ad = ? WHERE cluster = ? AND proc = 0",
                (number % 2 + 1, text, number % SUBMITS + 1),
            )
            db.execute("COMMIT")

    found = {"submit": rate(SUBMITS, insert_all), "change": rate(CHANGES, update_all)}
    db.close()
    return found


def medians(rounds: Sequence[dict[str, float]]) -> dict[str, float]:
    """The median of each measurement over the rounds."""
    return {key: statistics.median(found[key] for found in rounds) for key in rounds[0]}


def main(argv: Sequence[str] | None = None) -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    options.add_argument("--rounds", type=int, default=5, help="rounds per side")
    options.add_argument("--quick", action="store_true", help="1 round per side: a smoke test")
    args = options.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    ours_rounds: list[dict[str, float]] = []
    plain_rounds: list[dict[str, float]] = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as directory:
            ours_rounds.append(epcore_round(Path(directory)))
            plain_rounds.append(sqlite_round(Path(directory)))
    ours, plain = medians(ours_rounds), medians(plain_rounds)
    print(
        f"python {platform.python_version()}, {platform.machine()}, SQLite {sqlite3.sqlite_version}"
    )
    print(f"job ad of {len(job_ad())} attributes, {len(str(job_ad()))} bytes of text")
    for key, target in (("submit", SUBMIT_TARGET), ("change", CHANGE_TARGET)):
        verdict = "met" if ours[key] >= target else "NOT met"
        print(
            f"{key:>7}: epcore {ours[key]:9.0f}/s, target >= {target:.0f}/s: {verdict}; "
            f"bare SQLite {plain[key]:9.0f}/s; ratio epcore / SQLite time "
            f"{plain[key] / ours[key]:.2f}"
        )
    print(f"status changes in batches of {BATCH}: {ours['batched']:.0f}/s")
    print(
        f"jobs(statuses=[IDLE]) over {SUBMITS} jobs: {ours['cold query']:.0f} jobs/s just after "
        f"reopening, {ours['warm query']:.0f} jobs/s once read"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
