"""epcore's configuration reader against HTCondor's own (htcondor2), on one large generated file.

Run from the project root after ``python3 -m pip install -e '.[test]'``::

    python3 benchmarks/config_bench.py              # 21 runs per side, about 20 seconds
    python3 benchmarks/config_bench.py --quick      # 5 runs per side, a smoke test
    python3 benchmarks/config_bench.py --keep cfg   # also save the generated file as ./cfg

The generated configuration has 2,000 lines: 500 macros that refer to one another (plain
``$(NAME)`` references, ``$(NAME:default)`` with defined and undefined names, nested defaults,
self-references that extend a knob's earlier value), 100 ``use`` lines of templates that both
libraries know, comments, continued lines and ``if``/``else``/``endif`` blocks.

It prints the median time of each side and the ratio epcore / htcondor2 (lower is better for
epcore) for:

- loading: ``Config.load(path)`` against ``htcondor2.reload_config()`` with ``CONDOR_CONFIG``
  pointing at the file (the project's target: ratio <= 3);
- expanding every knob the file, the environment and detection define: ``Config.get`` on each
  against ``htcondor2.param.get`` on the same names.

htcondor2 runs in a child process of its own (started from this file with ``--htcondor-child``):
its configuration state is process-wide and it exits the process on a configuration error, and
epcore's side is then timed in a process that never imported it. Both sides run on the same
machine in the same run. Before the timings, the expanded value of every knob is compared
between the two; disagreements are listed (they are epcore bugs) but do not stop the benchmark.
It is a measurement, not a test: it exits 0 whether or not the target is met.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

LINES = 2000
MACROS = 500
USES = 100
LEAVES = 50  # the first macros hold plain text; every later one refers to earlier ones
BLOCK = 20  # lines per generated block: 5 macros, 1 use line, an if block, comments
TARGET_LOAD_RATIO = 3.0

#: ``use`` lines that HTCondor 25.14.1 and epcore both accept, cycled through in order.
USE_LINES = (
    "use POLICY : Desktop",
    "use FEATURE : PartitionableSlot(1, cpus=100%)",
    "use FEATURE : StartdCronPeriodic(BENCH{n}, 5m, /bin/true)",
    "use POLICY : Limit_Job_Runtimes(3600)",
    "use ROLE : Execute",
    "use POLICY : Hold_If_Memory_Exceeded",
    "use FEATURE : StartdCronOneShot(ONCE{n}, /bin/true)",
    "use SECURITY : Strong",
    "use POLICY : Preempt_If_Runtime_Exceeds(7200)",
    "use FEATURE : POLICY_HOURS_TO_START(8, 17)",
    "use POLICY : UWCS_Desktop",
    "use FEATURE : GPUs",
    "use SECURITY : Host_Based",
    "use POLICY : Hold_If_Cpus_Exceeded",
    "use FEATURE : JobsHaveInstanceIDs",
    "use FEATURE : StaticSlots(2, 1)",
    "use POLICY : Always_Run_Jobs",
    "use FEATURE : StartdCronContinuous(CONT{n}, /bin/true)",
    "use SECURITY : With_Authentication",
    "use FEATURE : PelicanRetryPolicy",
)

_PROBE = "EPCORE_BENCH_PROBE"


def macro(index: int) -> str:
    return f"BENCH_M{index:03d}"


def generate(seed: int = 25141) -> str:
    """The benchmark configuration: LINES lines, MACROS macros, USES use lines."""
    rng = random.Random(seed)
    lines: list[str] = []

    def earlier(i: int) -> str:
        return macro(rng.randrange(i))

    def leaf() -> str:
        return macro(rng.randrange(LEAVES))

    for block in range(MACROS // 5):
        first = block * 5
        refs = [first + k for k in range(5)]

        def body(i: int) -> str:
            if i < LEAVES:
                return f"value{i} {rng.randrange(1000)}"
            choice = i % 4
            if choice == 0:
                return f"$({earlier(i)}) + $({leaf()})"
            if choice == 1:
                return f"$({earlier(i)}:unused) * $(BENCH_UNDEF_{i}:{i})"
            if choice == 2:
                return (
                    f"ifThenElse($({leaf()}) > 0, $({earlier(i)}), $(BENCH_NONE_{i}:$({leaf()})))"
                )
            return f"$(BENCH_UNDEF_{i}:$({earlier(i)})) && $({leaf()}:x)"

        lines += [
            f"# Block {block}: macros {macro(refs[0])} .. {macro(refs[-1])}",
            "#   (generated for benchmarks/config_bench.py; values mean nothing)",
            f"{macro(refs[0])} = {body(refs[0])}",
            f"{macro(refs[1])} = {body(refs[1])} \\",
            f"    || ({body(refs[1])}) \\",
            "    || false",
            f"{macro(refs[2])} = {body(refs[2])}",
            USE_LINES[block % len(USE_LINES)].format(n=block),
            f"if defined {macro(refs[0])}",
            f"  {macro(refs[3])} = {body(refs[3])}",
            "else",
            f"  {macro(refs[3])} = never",
            "endif",
            f"{macro(refs[4])} = {body(refs[4])}",
            f"{macro(refs[2])} = $({macro(refs[2])}) extended",
            f"# {macro(refs[2])} now refers to its own earlier value",
            "",
            "#" + "-" * 70,
            f"# end of block {block}",
            "",
        ]
    text = "\n".join(lines) + "\n"
    assert len(lines) == LINES, len(lines)
    assert sum(line.startswith("use ") for line in lines) == USES
    return text


# -- htcondor2, in its own process ------------------------------------------------------------


def htcondor_child(request_path: str) -> None:
    """The child: time htcondor2 on the file and answer with JSON on stdout."""
    request = json.loads(Path(request_path).read_text())
    for key in [k for k in os.environ if k.upper().startswith("_CONDOR_")]:
        del os.environ[key]
    os.environ["CONDOR_CONFIG"] = request["config"]
    import htcondor2

    htcondor2.set_subsystem("STARTD")
    names: list[str] = request["names"]
    runs: int = request["runs"]
    param = htcondor2.param

    def read_all() -> None:
        for name in names:
            param.get(name)

    htcondor2.reload_config()
    values: dict[str, str | None] = {}
    for name in names:
        if param.get(name) is None:
            values[name] = None
            continue
        param[_PROBE] = f"$({name})"
        values[name] = param.get(_PROBE) or ""
    del param[_PROBE]
    load = median_time(htcondor2.reload_config, runs)
    read = median_time(read_all, runs)
    json.dump({"values": values, "load": load, "read": read}, sys.stdout)


def run_htcondor(config: Path, names: Sequence[str], runs: int) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as request:
        json.dump({"config": str(config), "names": list(names), "runs": runs}, request)
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--htcondor-child", request.name],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    finally:
        os.unlink(request.name)
    if done.returncode != 0 or not done.stdout:
        raise SystemExit(f"htcondor2 failed on {config}:\n{done.stderr or done.stdout}")
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


# -- timing -----------------------------------------------------------------------------------


def median_time(call: Callable[[], object], runs: int) -> float:
    """Median wall time of ``runs`` calls, after one untimed warm-up call."""
    call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def row(label: str, ours: float, theirs: float, target: float | None) -> str:
    ratio = ours / theirs
    verdict = "(informational)"
    if target is not None:
        verdict = f"<= {target:<4} {'met' if ratio <= target else 'not met'}"
    return f"{label:<46}{ours * 1e3:>11.2f}{theirs * 1e3:>14.2f}{ratio:>8.2f}  {verdict}"


def main(argv: Sequence[str] | None = None) -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    options.add_argument("--runs", type=int, default=21, help="timed runs per side (median)")
    options.add_argument("--quick", action="store_true", help="5 runs per side: a smoke test")
    options.add_argument("--keep", metavar="FILE", help="also write the configuration to FILE")
    options.add_argument("--htcondor-child", metavar="REQUEST", help=argparse.SUPPRESS)
    args = options.parse_args(argv)
    if args.htcondor_child:
        htcondor_child(args.htcondor_child)
        return 0
    runs = 5 if args.quick else args.runs

    import epcore
    from epcore.builtin.host import LocalHost
    from epcore.config import Config

    text = generate()
    if args.keep:
        Path(args.keep).write_text(text, encoding="utf-8")
    for key in [k for k in os.environ if k.upper().startswith("_CONDOR_")]:
        del os.environ[key]
    with tempfile.TemporaryDirectory(prefix="ep-config-bench-") as folder:
        path = Path(folder) / "condor_config"
        path.write_text(text, encoding="utf-8")

        host = LocalHost()
        config = Config.load(path, host=host)
        names = sorted(config.names(), key=str.lower)
        theirs = run_htcondor(path, names, runs)

        def get_all() -> None:
            for name in names:
                config.get(name)

        load_shared = median_time(lambda: Config.load(path, host=host), runs)
        load_fresh = median_time(lambda: Config.load(path), runs)
        read = median_time(get_all, runs)
        # PID and PPID belong to each process; knobs built on $RANDOM_INTEGER or
        # $RANDOM_CHOICE are found by loading again with another seed and seeing what moves.
        again = Config.load(path, host=host, rng=random.Random(1))

    ours_values = {name: config.get(name) for name in names}
    moved = {n for n in names if again.get(n) != ours_values[n]}
    skipped = [n for n in names if n.upper() in ("PID", "PPID") or n in moved]
    compared = [n for n in names if n not in skipped]
    differ = [n for n in compared if ours_values[n] != theirs["values"][n]]
    file_names = [d.name for d in config.table if d.origin.source == str(path)]

    print(
        f"epcore {epcore.__version__} vs htcondor2 (htcondor "
        f"{importlib.metadata.version('htcondor')}), Python {platform.python_version()}, "
        f"median of {runs} runs per side"
    )
    print(
        f"configuration: {LINES} lines, {MACROS} macros, {USES} use lines; "
        f"{len(file_names)} knobs set by the file, {len(names)} in all with detected ones"
    )
    print(
        f"values compared with htcondor2: {len(compared) - len(differ)} of {len(compared)} agree "
        f"({len(skipped)} not comparable: per-process or random)"
    )
    for name in differ[:10]:
        print(
            f"  DIFFERS {name}: epcore {ours_values[name]!r}, htcondor2 {theirs['values'][name]!r}"
        )
    print("ratio = epcore time / htcondor2 time; lower is better for epcore\n")
    header = f"{'operation':<46}{'epcore ms':>11}{'htcondor2 ms':>14}{'ratio':>8}  target"
    print(header)
    print("-" * (len(header) + 12))
    print(row("load (shared LocalHost)", load_shared, theirs["load"], TARGET_LOAD_RATIO))
    print(row("load (fresh LocalHost: detection included)", load_fresh, theirs["load"], None))
    print(row(f"expand all {len(names)} knobs (get / param.get)", read, theirs["read"], None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
