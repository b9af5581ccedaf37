"""Benchmarks through a real startd (seed 000, "Unclaimed state"): RUNBENCHMARKS moves the
slot to Benchmarking (transition 3), the built-in Mips and KFlops programs run, and the slot
returns to Idle (transition 4) once they have finished, with Mips, KFlops and LastBenchmark in
its ad; further runs are averaged."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.system


def _slot1(startd):
    return next(ad for ad in startd.client.query() if str(ad.evaluate("Name")).startswith("slot1@"))


def test_builtin_benchmarks_run_through_benchmarking(startd_factory) -> None:
    """With the default programs the slot goes Idle -> Benchmarking -> Idle, and afterwards
    advertises real Mips and KFlops and a LastBenchmark of when they finished."""
    started = time.time()
    startd = startd_factory("RUNBENCHMARKS = LastBenchmark == 0\n")
    seen: set[str] = set()

    def done() -> bool:
        seen.add(startd.places()["slot1"])
        return _slot1(startd).evaluate("LastBenchmark") != 0

    startd.wait_for(done, 60, "the benchmarks to finish")
    ad = _slot1(startd)
    assert "Unclaimed/Benchmarking" in seen
    assert startd.places()["slot1"] == "Unclaimed/Idle"
    mips, kflops = ad.evaluate("Mips"), ad.evaluate("KFlops")
    assert isinstance(mips, int) and mips > 1
    assert isinstance(kflops, int) and kflops > 1
    assert started <= ad.evaluate("LastBenchmark") <= time.time() + 1
    log = startd.log()
    assert "Unclaimed/Idle -> Unclaimed/Benchmarking (RUNBENCHMARKS is TRUE)" in log
    assert "Unclaimed/Benchmarking -> Unclaimed/Idle (the benchmarks finished)" in log


def test_benchmark_results_are_averaged_over_runs(startd_factory, tmp_path: Path) -> None:
    """Configured benchmark programs answering 1000 then 2000 Mips leave the average 1500
    after the second run; the slot stays in Benchmarking while a slow program runs."""
    runs = tmp_path / "runs"
    mips = tmp_path / "mips"
    mips.write_text(
        "#!/bin/sh\n"
        f"echo x >> {runs}\n"
        f'if [ $(wc -l < {runs}) -eq 1 ]; then echo "Mips = 1000"; else echo "Mips = 2000"; fi\n'
    )
    mips.chmod(0o755)
    kflops = tmp_path / "kflops"
    kflops.write_text("#!/bin/sh\nsleep 2\necho 'KFlops = 500'\n")
    kflops.chmod(0o755)
    startd = startd_factory(
        "RUNBENCHMARKS = LastBenchmark == 0 || (time() - LastBenchmark) >= 1\n"
        f"BENCHMARKS_MIPS_EXECUTABLE = {mips}\nBENCHMARKS_MIPS_ARGS =\n"
        f"BENCHMARKS_KFLOPS_EXECUTABLE = {kflops}\nBENCHMARKS_KFLOPS_ARGS =\n"
    )
    startd.wait_for(lambda: startd.places()["slot1"] == "Unclaimed/Benchmarking", 30, "a run")
    startd.wait_for(lambda: _slot1(startd).evaluate("Mips") == 1500, 60, "the second run's average")
    assert _slot1(startd).evaluate("KFlops") == 500
