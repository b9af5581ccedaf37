"""How fast the ``ep`` command starts, and ``ep submit`` of one job to its first instruction.

Run from the project root, as root (the pool's cgroups need it), after
``python3 -m pip install -e '.[test]'``::

    python3 benchmarks/cli_bench.py            # 10 fresh processes per row, 10 submissions
    python3 benchmarks/cli_bench.py --quick    # 5 of each: a smoke test
    python3 benchmarks/cli_bench.py --runs 21  # steadier numbers

Start-up: each row is a fresh ``python -m epcore.cli.main ARGS`` process (as the tests start
``ep``; the console script adds only its own launcher), timed from just before the process
starts to its exit, with the bytecode cache present: every process of the benchmark (the
pool's too) keeps its cache under a temporary PYTHONPYCACHEPREFIX, filled by one untimed run
of each row, whatever PYTHONDONTWRITEBYTECODE says. The rows take turns, so that the
machine's other work weighs on all alike. Printed per row: the median wall time and, steadier
on a shared machine, the median CPU time (user + system) of the process; and the one-minute
load average, since on a machine with more runnable processes than cores the wall times
stretch by about that ratio. The baselines,
timed in the same turns: the bare interpreter (``python -c pass``) and ``python -c "import
click"``. Target: ``ep --version`` at most 0.1 s (median wall time).

Submission: an ``ep run`` personal pool (its own LOCAL_DIR, a unique BASE_CGROUP,
RUNBENCHMARKS False, NEGOTIATOR_INTERVAL 2 and NEGOTIATOR_MIN_INTERVAL 0 as pool_bench.py
uses). Each round starts ``ep submit job.sub --config <the pool's>`` as a fresh process; the
job is ``/bin/date +%s.%N`` writing to its output, so the output holds the wall clock at the
job's first instruction, and the latency is that minus the wall clock read just before the
``ep submit`` process started. Printed: the median and p90 latency, the target (at most
150 ms, median), and the split: the ``ep submit`` process's own time (start to exit) and
the pool's (exit to the job's first instruction). A warm-up job comes first (the pool's first
negotiation and claim). The benchmark runs as root and the pool refuses a job owned by root,
so the submit file names ``+Owner = "nobody"``, which root as a QUEUE_SUPER_USER may do.

It is a measurement, not a test: it exits 0 whether or not the targets are met.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _pool import personal_pool, remove_cgroup, wait
from pool_bench import POOL_EXTRA

VERSION_TARGET = 0.100
SUBMIT_TARGET = 0.150

SUBMIT = """\
executable = /bin/date
arguments = +%s.%N
output = date.out
error = date.err
+Owner = "nobody"
request_cpus = 1
request_memory = 64
request_disk = 1024
queue
"""

EP = [sys.executable, "-m", "epcore.cli.main"]

#: The start-up rows: a label and the command line.
STARTUP_ROWS: tuple[tuple[str, list[str]], ...] = (
    ("python -c pass", [sys.executable, "-c", "pass"]),
    ('python -c "import click"', [sys.executable, "-c", "import click"]),
    ("ep --version", [*EP, "--version"]),
    ("ep --help", [*EP, "--help"]),
    ("ep submit --help", [*EP, "submit", "--help"]),
    ("ep q --help", [*EP, "q", "--help"]),
    ("ep status --help", [*EP, "status", "--help"]),
)


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def children_cpu() -> float:
    """CPU seconds (user and system) of this process's waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str]) -> tuple[float, float]:
    """Wall seconds from just before ``command`` starts to its exit, and its CPU seconds
    (it must succeed)."""
    cpu = children_cpu()
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started, children_cpu() - cpu


def startup(runs: int) -> dict[str, list[tuple[float, float]]]:
    """Each row's (wall, CPU) times over ``runs`` turns, after one untimed turn that fills
    the bytecode cache."""
    for _, command in STARTUP_ROWS:
        timed(command)
    times: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in STARTUP_ROWS}
    for _ in range(runs):
        for label, command in STARTUP_ROWS:
            times[label].append(timed(command))
    return times


def submit_once(directory: Path, config_path: Path, round_: int) -> tuple[float, float, float]:
    """One ``ep submit``: seconds to the job's first instruction, seconds until the process
    exited, CPU seconds of the process."""
    output = directory / "date.out"
    output.unlink(missing_ok=True)
    cpu = children_cpu()
    asked = time.time()
    done = subprocess.run(
        [*EP, "submit", "job.sub", "--config", str(config_path)],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )
    exited = time.time()
    cpu = children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"ep submit failed in round {round_}: {done.stderr}")
    wait(lambda: output.exists() and output.read_text().strip() != "", 60, "the job's output", 0.01)
    first = float(output.read_text().split()[0])
    return first - asked, exited - asked, cpu


def submissions(runs: int, root: Path, cgroup: str) -> list[tuple[float, float, float]]:
    """:func:`submit_once`'s three times for each of ``runs`` jobs (after a warm-up)."""
    jobs = root / "jobs"
    jobs.mkdir()
    # The job runs as nobody and writes its output here.
    jobs.chmod(0o777)
    (jobs / "job.sub").write_text(SUBMIT)
    samples: list[tuple[float, float, float]] = []
    extra = POOL_EXTRA.format(cgroup=cgroup)
    with personal_pool(root / "pool", extra, root / "pool.out") as pool:
        for round_ in range(runs + 1):
            sample = submit_once(jobs, pool.config_path, round_)
            # Each job leaves the queue before the next is submitted, so that every round
            # finds the pool idle, as one user's one submission would.
            wait(lambda: not pool.client.query_jobs(projection=["ClusterId"]), 60, "the job")
            if round_:
                samples.append(sample)
    return samples


def median_ms(values: Iterable[float]) -> str:
    return f"{statistics.median(values) * 1000:7.1f} ms"


def report_startup(times: dict[str, list[tuple[float, float]]], runs: int) -> None:
    load = os.getloadavg()[0]
    print(f"ep start-up on {os.cpu_count()} cores (load average {load:.1f}), median of {runs} runs")
    print(f"  {'':<26} {'wall':>10} {'cpu':>10}")
    for label, values in times.items():
        wall = median_ms(w for w, _ in values)
        cpu = median_ms(c for _, c in values)
        print(f"  {label:<26} {wall} {cpu}")
    version = statistics.median(w for w, _ in times["ep --version"])
    verdict = "met" if version <= VERSION_TARGET else "NOT met"
    print(f"  ep --version target <= {VERSION_TARGET * 1000:.0f} ms (wall): {verdict}")


def report_submissions(samples: list[tuple[float, float, float]]) -> None:
    latencies = [latency for latency, _, _ in samples]
    median = statistics.median(latencies)
    p90 = percentile(latencies, 0.9) * 1000
    load = os.getloadavg()[0]
    print(f"ep submit of one job to its first instruction, {len(samples)} rounds (load {load:.1f})")
    print(f"  latency              median {median * 1000:7.1f} ms   p90 {p90:7.1f} ms")
    print(f"  ep submit, wall      median {median_ms(exited for _, exited, _ in samples)}")
    print(f"  ep submit, cpu       median {median_ms(cpu for _, _, cpu in samples)}")
    print(f"  pool after its exit  median {median_ms(a - e for a, e, _ in samples)}")
    verdict = "met" if median <= SUBMIT_TARGET else "NOT met"
    print(f"  target <= {SUBMIT_TARGET * 1000:.0f} ms (median latency): {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="5 runs of each row")
    parser.add_argument("--runs", type=int, default=10, help="runs of each row (default 10)")
    args = parser.parse_args()
    runs = 5 if args.quick else args.runs
    root = Path(tempfile.mkdtemp(prefix="ep_bench_cli_"))
    root.chmod(0o755)
    # The children (ep, the pool, its starters) inherit these: a bytecode cache of the
    # benchmark's own, written by the first run of each and read by every later one.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    cgroup = f"ep_bench_{uuid.uuid4().hex[:6]}"
    try:
        report_startup(startup(runs), runs)
        if os.geteuid() != 0:
            print("ep submit latency: skipped (the pool needs root for its cgroups)")
            return 0
        report_submissions(submissions(runs, root, cgroup))
    finally:
        shutil.rmtree(root, ignore_errors=True)
        remove_cgroup(cgroup)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
