"""Turning a 1000-job submit file into job ads with epcore.submit.

Run from the project root after ``python3 -m pip install -e '.[test]'``::

    python3 benchmarks/submit_bench.py            # median of 15 runs per side
    python3 benchmarks/submit_bench.py --quick    # 3 runs per side: a smoke test

The submit file has ten blocks of commands (executable, arguments with $(Process) and $(Item),
output/error/log, request_memory with a unit, a +Attr) each ending in ``queue 10 Item in (ten
items)``: 1000 jobs in one cluster. The timed call is ``parse_submit`` plus ``build_jobs``
(in-memory host, so no file-system time); the target is a median of at most 1000 ms, i.e.
1 ms per complete job ad.

Two baselines run in the same process, both informational since neither does the whole job:
HTCondor's own submit library on the same text (``htcondor2.Submit(text)`` plus ``itemdata()``
and one ``expand`` per job; htcondor2 25 cannot build job ads without a schedd, so this is
parsing, item rows and macro expansion only), and HTCondor's ClassAd library storing the same
1000 ads (``classad2.ClassAd()`` filled from dicts of the values epcore produced, prepared
before the timing). It is a measurement, not a test: it exits 0 whether or not the target is
met.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from epcore.classad import ClassAd
from epcore.config import Config, MemoryHost
from epcore.submit import SubmitContext, build_jobs, parse_submit

TARGET_MS = 1000.0
ITEMS = "a b c d e f g h i j"
BLOCK = f"""executable = /bin/true
arguments = -n $(Process) $(Item)
output = out.$(Cluster).$(Process)
error = err.$(Cluster).$(Process)
log = job.log
request_memory = 1G
+Project = "bench"
queue 10 Item in ({ITEMS})
"""
TEXT = BLOCK * 10


class _BenchHost:
    """Only /bin/true exists; nothing is read or globbed."""

    def read_text(self, path: str) -> str:
        raise FileNotFoundError(2, "No such file or directory", path)

    def glob(self, pattern: str) -> list[str]:
        return []

    def is_dir(self, path: str) -> bool:
        return False

    def file_size(self, path: str) -> int | None:
        return 43_000 if path == "/bin/true" else None


def as_classad2_values(ads: Sequence[ClassAd]) -> list[dict[str, Any]]:
    """Each ad as a dict classad2 can store (literals as values, the rest as ExprTree)."""
    import classad2

    documents = []
    for ad in ads:
        document: dict[str, Any] = {}
        for name in ad:
            expr = ad[name]
            value = expr.evaluate()
            literal = isinstance(value, bool | int | float | str)
            if literal and str(ClassAd({"v": value})["v"]) == str(expr):
                document[name] = value
            else:
                document[name] = classad2.ExprTree(str(expr))
        documents.append(document)
    return documents


def classad2_builder(documents: Sequence[dict[str, Any]]) -> Callable[[], object]:
    import classad2

    def store() -> object:
        stored = []
        for document in documents:
            ad = classad2.ClassAd()
            for name, value in document.items():
                ad[name] = value
            stored.append(ad)
        return stored

    return store


def median_ms(call: Callable[[], object], runs: int) -> tuple[float, float]:
    """(median, best) milliseconds of ``runs`` calls, after one warm-up call."""
    call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times), min(times)


def main(argv: Sequence[str] | None = None) -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    options.add_argument("--runs", type=int, default=15, help="timed runs per side")
    options.add_argument("--quick", action="store_true", help="3 runs per side: a smoke test")
    args = options.parse_args(argv)
    runs = 3 if args.quick else args.runs

    config = Config.from_text("UID_DOMAIN = example.org\n", host=MemoryHost())
    context = SubmitContext(owner="u", submit_dir="/home/u", now=1_700_000_000, config=config)
    host = _BenchHost()

    def epcore_build() -> tuple[ClassAd, ...]:
        return build_jobs(parse_submit(TEXT), context, host, cluster_id=1).procs

    ads = epcore_build()
    jobs = len(ads)
    ours, ours_best = median_ms(epcore_build, runs)
    print(f"python {platform.python_version()}, {platform.machine()}")
    verdict = "met" if ours <= TARGET_MS else "NOT met"
    print(
        f"epcore parse_submit + build_jobs, {jobs} jobs: median {ours:.1f} ms "
        f"(best {ours_best:.1f} ms, {ours / jobs:.3f} ms per job), "
        f"target <= {TARGET_MS:.0f} ms: {verdict}"
    )
    try:
        import htcondor2

        version = importlib.metadata.version("htcondor")
    except (ImportError, importlib.metadata.PackageNotFoundError):
        print("htcondor2 baseline: htcondor is not installed (pip install -e '.[test]')")
        return 0

    def htcondor2_expand() -> int:
        expanded = 0
        for _ in range(10):
            submit = htcondor2.Submit(BLOCK)
            for _row in submit.itemdata():
                for _step in range(10):
                    submit.expand("arguments")
                    expanded += 1
        return expanded

    theirs, theirs_best = median_ms(htcondor2_expand, runs)
    print(
        f"htcondor2 {version} Submit + itemdata + one expand per job (no ads): "
        f"median {theirs:.1f} ms (best {theirs_best:.1f} ms)"
    )
    print(f"ratio epcore / htcondor2: {ours / theirs:.2f}")
    stored, stored_best = median_ms(classad2_builder(as_classad2_values(ads)), runs)
    print(
        f"classad2 {version} storing the same {jobs} ads from dicts: median {stored:.1f} ms "
        f"(best {stored_best:.1f} ms)"
    )
    print(f"ratio epcore / classad2 storing: {ours / stored:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
