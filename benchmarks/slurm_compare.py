"""Short jobs through Slurm and through an epcore personal pool, side by side on this machine.

Run from the project root, as root, after ``apt-get install -y slurmctld slurmd slurm-client
munge`` (Debian's slurm-wlm) and ``python3 -m pip install -e '.[test]'``::

    python3 benchmarks/slurm_compare.py              # 1,000 jobs of /bin/true, 3 rounds a side
    python3 benchmarks/slurm_compare.py --quick      # 100 jobs, 1 round: a smoke test
    python3 benchmarks/slurm_compare.py --jobs 1000 --rounds 5

Slurm: a single-node cluster on this host, set up in a temporary directory for each round (its
own munge key and munged, a slurmctld and a slurmd in the foreground, as root, on free ports),
with the settings of Slurm's High Throughput Computing Administration Guide
(https://slurm.schedmd.com/high_throughput.html) that apply to one node; see SLURM_CONF. N
jobs of ``/bin/true`` are submitted as one job array by ``sbatch --array=0-(N-1) --wrap
/bin/true`` run as user nobody, and the clock runs from just before sbatch starts until squeue
shows no job left (looked at every 0.2 s). A job array is how a Slurm user submits N short
jobs, as one cluster of N jobs is for HTCondor; N separate sbatch calls would time sbatch
itself.

epcore: the same N jobs through an ``ep run`` personal pool, exactly as ``pool_bench.py``
times them (one cluster submitted through the pool's socket, jobs owned by nobody, cgroup
tracking, the queue looked at every 0.2 s).

The rounds alternate (Slurm, epcore, Slurm, epcore, ...) so that other work on the machine
weighs on both alike; each side's daemons are started afresh for each round, outside the
timed span. Each side's CPU time per job is measured too: its daemons are moved into a cpuacct
cgroup of their own once started, so that it counts them and everything they start (job steps,
starters, the jobs; epcore's jobs are counted in their own cgroups under BASE_CGROUP), not the
submitting command; on a shared machine it moves far less than the rate. Printed: each round,
the medians, the ratios epcore / Slurm, and a shell loop fork-and-exec of the same N jobs as
the floor. Everything is torn down at the end (daemons and
their job steps killed, temporary directories and the pool's BASE_CGROUP removed).

It is a measurement, not a test: it exits 0 whatever the rates (1 if Slurm is not installed).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import attrs
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pool import adopt, cpu_seconds, new_meter, personal_pool, remove_cgroup, wait
from pool_bench import (
    JOB_OWNER,
    POOL_EXTRA,
    THROUGHPUT_TARGET,
    check_history,
    shell_loop,
    submit_and_wait,
    wait_for_queue,
)

import epcore

#: What the Slurm side runs; ``runuser`` submits as nobody, as the epcore side's jobs are
#: nobody's.
SLURM_PROGRAMS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo")

# The High Throughput Computing Administration Guide's settings, where they apply to one node:
# - no accounting storage, no job accounting gathering, no job completion records;
# - PriorityType=priority/basic and SchedulerType=sched/builtin (FIFO, no backfill): "if most
#   jobs are short lived then use of the sched/builtin plugin is recommended";
# - SchedulerParameters: batch_sched_delay=0 (default 3 s) and sched_min_interval=0, so that
#   a submission and every job's end start the scheduler at once; no defer (sched/builtin
#   logs "Invalid SchedulerParameters interval: 0", harmless: it looks for "interval="
#   anywhere in the line, finds sched_min_interval's, and keeps its periodic pass at 30 s);
# - SlurmctldDebug and SlurmdDebug at error, logs on local storage;
# - MessageTimeout raised a little (the guide: slurmctld's responsiveness is load dependent);
# - no PrologSlurmctld/EpilogSlurmctld, no job submit plugin.
# MinJobAge stays at its default of 300 s rather than the guide's "few seconds": the ended
# jobs' records are what shows that every job completed (there is no accounting); 1,000 are
# a tenth of the default MaxJobCount. Epilog=/bin/true: without an epilog, Slurm 22.05 here does
# not refill a freed CPU when its job ends but at a later scheduling pass (about 2 jobs/s,
# --without-epilog shows it). ProctrackType=proctrack/linuxproc and
# TaskPlugin=task/none: no cgroup configuration needed (this host has cgroup v1 mounted by
# hand), the lightest tracking Slurm has that still finds a job's processes.
SLURM_CONF = """\
ClusterName=epbench
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
SlurmctldDebug=error
SlurmdDebug=error
MessageTimeout=30
ReturnToService=2
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
PriorityType=priority/basic
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
{epilog}{node} NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=bench Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


@attrs.frozen
class Round:
    """One side's round: its rate, and the CPU time its daemons and everything they started
    (the jobs included, not the submitting command) used per job in the timed span."""

    rate: float
    cpu_ms: float


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def run(args: list[str], env: dict[str, str]) -> str:
    """The output of ``args``; exit with what it said if it fails."""
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def daemon(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log, "wb") as handle:
        return subprocess.Popen(
            args, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM each daemon (and what it started), then SIGKILL whatever is still there."""
    left: list[psutil.Process] = []
    for process in processes:
        with contextlib.suppress(psutil.Error):
            left += psutil.Process(process.pid).children(recursive=True)
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
    for child in left:
        with contextlib.suppress(psutil.Error):
            child.kill()


@contextlib.contextmanager
def slurm_cluster(root: Path, epilog: bool, meter: str | None) -> Iterator[dict[str, str]]:
    """A running one-node Slurm cluster under ``root`` (with ``Epilog=/bin/true`` if
    ``epilog``); yields the environment of its commands (SLURM_CONF), once the node is idle,
    its daemons in the cpuacct cgroup ``meter``."""
    root.mkdir()
    root.chmod(0o755)  # sbatch runs as nobody and reads slurm.conf and the munge socket
    for sub in ("state", "spool", "run", "log"):
        (root / sub).mkdir()
    munge = root / "munge"
    munge.mkdir(mode=0o700)
    env = dict(os.environ, SLURM_CONF=str(root / "slurm.conf"))
    run(["mungekey", "--create", f"--keyfile={munge / 'munge.key'}"], env)
    host = socket.gethostname().split(".")[0]
    # slurmd -C describes this machine exactly (CPUs, sockets, cores, memory), so the node
    # line matches what slurmd finds and the node is not drained for a mismatch.
    node = run(["slurmd", "-C"], env).splitlines()[0]
    (root / "slurm.conf").write_text(
        SLURM_CONF.format(
            host=host,
            ctld_port=free_port(),
            slurmd_port=free_port(),
            munge_socket=root / "run" / "munge.sock",
            root=root,
            node=node,
            epilog="Epilog=/bin/true\n" if epilog else "",
        )
    )
    processes: list[subprocess.Popen[bytes]] = []
    try:
        processes.append(
            daemon(
                [
                    "munged",
                    "--foreground",
                    "--force",  # as root, with the key in a directory of our own
                    "--num-threads=10",  # the guide's advice for high throughput
                    f"--key-file={munge / 'munge.key'}",
                    f"--socket={root / 'run' / 'munge.sock'}",
                    f"--pid-file={munge / 'munged.pid'}",
                    f"--seed-file={munge / 'munged.seed'}",
                    f"--log-file={root / 'log' / 'munged.log'}",
                ],
                root / "log" / "munged.out",
                env,
            )
        )
        wait(lambda: (root / "run" / "munge.sock").exists(), 30, "munged")
        conf = str(root / "slurm.conf")
        processes.append(
            daemon(["slurmctld", "-D", "-i", "-f", conf], root / "log" / "slurmctld.out", env)
        )
        processes.append(
            daemon(["slurmd", "-D", "-N", host, "-f", conf], root / "log" / "slurmd.out", env)
        )

        def idle() -> bool:
            for process in processes:
                if process.poll() is not None:
                    logs = "".join(
                        path.read_text(errors="replace")[-1500:]
                        for path in sorted((root / "log").iterdir())
                    )
                    raise SystemExit(f"a Slurm daemon ended:\n{logs}")
            done = subprocess.run(
                ["sinfo", "-h", "-N", "-o", "%t"], env=env, capture_output=True, text=True
            )
            return done.returncode == 0 and done.stdout.strip() == "idle"

        wait(idle, 60, "the Slurm node to be idle", 0.2)
        for process in processes:
            adopt(meter, process.pid)
        yield env
    finally:
        stop(processes)


def slurm_round(count: int, root: Path, epilog: bool) -> Round:
    """``count`` /bin/true jobs as one Slurm job array."""
    meter = new_meter()
    try:
        with slurm_cluster(root, epilog, meter) as env:
            return slurm_jobs(count, env, meter)
    finally:
        if meter is not None:
            remove_cgroup(meter)


def slurm_jobs(count: int, env: dict[str, str], meter: str | None) -> Round:
    """Submit ``count`` jobs as one array to a running cluster and wait until all have left
    its queue."""
    before = cpu_seconds(meter)
    started = time.perf_counter()
    job_id = (
        run(
            [
                "runuser",
                "-u",
                JOB_OWNER,
                "--",
                "sbatch",
                "--parsable",
                f"--array=0-{count - 1}",
                "--output=/dev/null",
                "--chdir=/",
                "--wrap=/bin/true",
            ],
            env,
        )
        .split(";")[0]
        .strip()
    )
    # Without --states, squeue shows pending, running and completing jobs only; -r one line
    # per array element. Looked at as seldom as epcore's queue (pool_bench.wait_for_queue).
    wait_for_queue(
        lambda: len(run(["squeue", "-h", "-r", "-o", "%i"], env).split()), count, started
    )
    elapsed = time.perf_counter() - started
    used = cpu_seconds(meter) - before
    states = collections.Counter(
        run(["squeue", "-h", "-r", "-t", "all", f"-j{job_id}", "-o", "%T"], env).split()
    )
    if states.get("COMPLETED", 0) != count:
        print(f"  (Slurm's jobs ended as {dict(states)}, not {count} COMPLETED)")
    return Round(count / elapsed, used * 1000 / count)


def show(what: str, result: Round) -> None:
    print(
        f"  {what:<20}{result.rate:7.1f} jobs/s   {result.cpu_ms:5.1f} ms CPU per job"
        f"   (load {load()})",
        flush=True,
    )


def load() -> str:
    """The machine's load average over the last minute: the rounds share it with whatever
    else runs."""
    return f"{os.getloadavg()[0]:.1f}"


def epcore_round(count: int, root: Path) -> Round:
    """``count`` /bin/true jobs as one cluster through ``ep run``, as pool_bench.py runs them;
    the CPU time is the pool's and its starters' (in the meter) plus the jobs' (in their
    cgroups under BASE_CGROUP)."""
    root.mkdir()
    root.chmod(0o755)  # the jobs are nobody's; their submit directory must be readable
    cgroup = f"ep_bench_{uuid.uuid4().hex[:6]}"
    meter = new_meter()
    extra = POOL_EXTRA.format(cgroup=cgroup)
    try:
        with personal_pool(root / "pool", extra, root / "pool.out") as pool:
            adopt(meter, pool.process.pid)
            before = cpu_seconds(meter, cgroup)
            elapsed = submit_and_wait(pool, count, root)
            used = cpu_seconds(meter, cgroup) - before
            check_history(pool, count)
        return Round(count / elapsed, used * 1000 / count)
    finally:
        remove_cgroup(cgroup)
        if meter is not None:
            remove_cgroup(meter)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="100 jobs, 1 round")
    parser.add_argument("--jobs", type=int, default=1000, help="jobs per round (1,000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side (3)")
    parser.add_argument(
        "--without-epilog",
        action="store_true",
        help="Slurm without Epilog=/bin/true (to see why it is there; use few jobs)",
    )
    args = parser.parse_args()
    count, rounds = (100, 1) if args.quick else (args.jobs, args.rounds)
    if os.geteuid() != 0:
        print("slurm_compare needs root (Slurm's daemons, cgroups)", file=sys.stderr)
        return 1
    missing = [name for name in (*SLURM_PROGRAMS, "runuser") if shutil.which(name) is None]
    if missing:
        print(
            f"Slurm is not installed here (no {', '.join(missing)}): "
            "apt-get install -y slurmctld slurmd slurm-client munge",
            file=sys.stderr,
        )
        return 1
    version = run(["slurmctld", "-V"], dict(os.environ)).strip()
    root = Path(tempfile.mkdtemp(prefix="ep_bench_slurm_"))
    root.chmod(0o755)
    print(f"{count} jobs of /bin/true, {rounds} round(s) a side, {os.cpu_count()} cores")
    print(f"  {version}; epcore from {Path(epcore.__file__).parent}")
    print(f"  load average at the start: {load()}")
    slurm: list[Round] = []
    ours: list[Round] = []
    try:
        floor = shell_loop(count)
        for n in range(1, rounds + 1):
            slurm.append(slurm_round(count, root / f"slurm{n}", not args.without_epilog))
            show(f"round {n}  Slurm:", slurm[-1])
            ours.append(epcore_round(count, root / f"epcore{n}"))
            show(f"round {n}  ep run:", ours[-1])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    s = statistics.median(r.rate for r in slurm)
    e = statistics.median(r.rate for r in ours)
    s_cpu = statistics.median(r.cpu_ms for r in slurm)
    e_cpu = statistics.median(r.cpu_ms for r in ours)
    tuning = "without epilog" if args.without_epilog else "tuned"
    print(f"medians of {rounds} round(s)")
    print(f"  {'Slurm (' + tuning + '):':<22}{s:7.1f} jobs/s   {s_cpu:5.1f} ms CPU per job")
    print(f"  {'ep run:':<22}{e:7.1f} jobs/s   {e_cpu:5.1f} ms CPU per job")
    print(f"  ratio ep run / Slurm: {e / s:.2f} (rate), {e_cpu / s_cpu:.2f} (CPU per job)")
    print(f"  ep run target (issue 20): >= {THROUGHPUT_TARGET:.0f} jobs/s")
    print(f"  shell loop:           {floor:7.1f} jobs/s   (fork and exec of /bin/true)")
    print(f"  load average at the end: {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
