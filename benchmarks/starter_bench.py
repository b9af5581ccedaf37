"""From activation to the job's first instruction, through a real startd and starter (must-show 5).

Run from the project root, as root (cgroups and slot users need it), after
``python3 -m pip install -e '.[test]'``::

    python3 benchmarks/starter_bench.py            # 41 jobs per side
    python3 benchmarks/starter_bench.py --quick    # 7 jobs per side: a smoke test

A startd runs in this process (the same :class:`~epcore.startd.startd.Startd` and
:class:`~epcore.startd.loop.StartdLoop` that ``ep startd`` runs), once with cgroup tracking on
(a BASE_CGROUP made for the run, the default CGROUP_MEMORY_LIMIT_POLICY) and once without.
Each round claims the partitionable slot for a one-core job, lets 0.1 s pass (a schedd
activates a claim a while after making it; the startd prepares the job's cgroups and a
supervisor inside them meanwhile, :mod:`epcore.startd.prepare`), and activates the claim; the
job is ``/bin/date +%s.%N`` writing its first reading of the clock to its output file. The
timed span is from just before ``activate`` to that reading: the fork of the starter, its
sandbox, the user switch and the exec from the prepared supervisor. The target is a median of
at most 25 ms with cgroups on. The cost of one cgroup migration, which the preparation moves
out of the span, is measured alone and printed.

The baseline, in the same run, is a bare ``subprocess.run`` of the same program (timed from the
call to the program's own reading), and each side's whole time per job (activation to the
startd's record of the result, against ``subprocess.run`` returning) gives the starter's
overhead per job. It is a measurement, not a test: it exits 0 whether or not the target is met.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from epcore.classad import parse_ad
from epcore.startd.loop import StartdLoop
from epcore.startd.main import build_startd
from epcore.startd.startd import Startd

CONFIG = """\
LOCAL_DIR = {local}
START = True
SUSPEND = False
PREEMPT = False
KILL = False
WANT_SUSPEND = False
IS_OWNER = False
RUNBENCHMARKS = False
NUM_CPUS = 2
BASE_CGROUP = {cgroup}
STARTER_INITIAL_UPDATE_INTERVAL = 300
"""

PROGRAM = "/bin/date"
#: Seconds between the claim and its activation.
CLAIM_TO_ACTIVATION = 0.1


def _job(out: Path) -> str:
    return (
        f'[ ClusterId = 1; ProcId = 0; Owner = "nobody"; Cmd = "{PROGRAM}"; Arguments = "+%s.%N";'
        f' Iwd = "{out.parent}"; Out = "{out.name}"; RequestCpus = 1; RequestMemory = 128;'
        " RequestDisk = 1024 ]"
    )


def _epcore_round(loop: StartdLoop, out: Path) -> tuple[float, float]:
    """(activation to first instruction, activation to the recorded result), in seconds."""
    startd = loop.startd
    done = len(startd.results)
    claim_id = startd.claim("slot1", parse_ad(_job(out)))
    # A schedd activates a claim some time after making it (at least a network round trip);
    # the startd prepares the job's cgroups and supervisor meanwhile (epcore.startd.prepare).
    pause = time.monotonic() + CLAIM_TO_ACTIVATION
    while (left := pause - time.monotonic()) > 0:
        loop.turn(left)
    started = time.time()
    startd.activate(claim_id)
    while len(startd.results) == done:
        loop.turn()
    finished = time.time()
    first = float(out.read_text().strip())
    startd.release(claim_id)
    # Turn until the slot is free again: a fixed count of turns could each wait the loop's
    # longest timeout when nothing is left to happen.
    while not _slot_free(startd):
        loop.turn()
    return first - started, finished - started


def _slot_free(startd: Startd) -> bool:
    record = startd.state.slot("slot1")
    return record is not None and record.claim is None and str(record.place).startswith("Unclaimed")


def _baseline_round(out: Path) -> tuple[float, float]:
    started = time.time()
    with open(out, "w") as handle:
        subprocess.run([PROGRAM, "+%s.%N"], stdout=handle, check=True)
    finished = time.time()
    return float(out.read_text().strip()) - started, finished - started


def _remove_cgroups(name: str) -> None:
    for controller in Path("/sys/fs/cgroup").iterdir():
        root = controller / name
        if root.is_dir():
            for sub in sorted(root.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                if sub.is_dir():
                    sub.rmdir()
            root.rmdir()


def _migration_ms(rounds: int) -> float:
    """Median time to move one process into a fresh memory cgroup, 0.2 s apart (the kernel's
    cost for the job's first cgroup join, paid inside the timed span)."""
    name = f"ep_bench_move_{uuid.uuid4().hex[:6]}"
    times = []
    for i in range(rounds):
        group = Path("/sys/fs/cgroup/memory") / name / str(i)
        group.mkdir(parents=True)
        sleeper = subprocess.Popen(["sleep", "5"])
        time.sleep(0.2)
        started = time.perf_counter()
        (group / "cgroup.procs").write_text(str(sleeper.pid))
        times.append(time.perf_counter() - started)
        sleeper.kill()
        sleeper.wait()
    time.sleep(0.2)
    _remove_cgroups(name)
    return statistics.median(times) * 1000


def _run_startd(rounds: int, cgroup: str) -> tuple[list[tuple[float, float]], str]:
    local = Path(tempfile.mkdtemp(prefix="ep_bench_"))
    local.chmod(0o755)
    config = local / "condor_config"
    config.write_text(CONFIG.format(local=local, cgroup=cgroup))
    outputs = local / "out"
    outputs.mkdir()
    outputs.chmod(0o777)
    loop = StartdLoop(build_startd(str(config)))
    loop.open()
    try:
        tracking = ", ".join(b.name for b in loop.startd.isolation)
        _epcore_round(loop, outputs / "warm")
        return [_epcore_round(loop, outputs / f"job{i}") for i in range(rounds)], tracking
    finally:
        loop.startd.shutdown(True)
        while not loop.finished:
            loop.turn()
        loop.close()
        if cgroup:
            _remove_cgroups(cgroup)
        shutil.rmtree(local, ignore_errors=True)


def _median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="7 jobs per side")
    parser.add_argument("--rounds", type=int, help="jobs per side (a smoke test uses 1)")
    args = parser.parse_args()
    rounds = args.rounds or (7 if args.quick else 41)
    if os.geteuid() != 0:
        print("starter_bench: needs root (cgroups, running jobs as nobody)")
        return 0
    ours, tracking = _run_startd(rounds, f"ep_bench_{uuid.uuid4().hex[:6]}")
    plain, plain_tracking = _run_startd(rounds, "")
    outputs = Path(tempfile.mkdtemp(prefix="ep_bench_bare_"))
    try:
        bare = [_baseline_round(outputs / f"bare{i}") for i in range(rounds)]
    finally:
        shutil.rmtree(outputs, ignore_errors=True)
    migration = _migration_ms(min(rounds, 9))
    first = _median_ms([t for t, _ in ours])
    total = _median_ms([t for _, t in ours])
    plain_first = _median_ms([t for t, _ in plain])
    bare_first = _median_ms([t for t, _ in bare])
    bare_total = _median_ms([t for _, t in bare])
    print(f"jobs per side: {rounds}")
    print(f"activation -> first instruction, {tracking}: median {first:.1f} ms (target <= 25 ms)")
    print(f"activation -> first instruction, {plain_tracking}: median {plain_first:.1f} ms")
    print(
        f"one cgroup migration (kernel, measured alone, paid before activation): {migration:.1f} ms"
    )
    print(f"subprocess.run -> first instruction: median {bare_first:.1f} ms")
    print(
        f"ratio (epcore with cgroups / subprocess.run), first instruction: {first / bare_first:.1f}"
    )
    print(f"whole job, activation -> result recorded: median {total:.1f} ms")
    print(f"whole job, subprocess.run: median {bare_total:.1f} ms")
    print(f"starter overhead per job: {total - bare_total:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
