"""Smoke tests for the benchmark scripts: each runs end to end with a tiny count and prints
its figures, so that a benchmark cannot break silently between sessions (no time is asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(script: str, *args: str, timeout: float) -> str:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.system
@pytest.mark.skipif(os.geteuid() != 0, reason="starter_bench needs root (cgroups, slot users)")
def test_starter_bench_completes_and_prints_its_figures() -> None:
    """starter_bench with one job per side claims, activates and releases through a real
    startd twice without hanging, and prints its medians and the fork+exec baseline."""
    out = _run("starter_bench.py", "--rounds", "1", timeout=90)
    assert "jobs per side: 1" in out
    assert "activation -> first instruction, process_group, cgroup: median" in out
    assert "subprocess.run -> first instruction: median" in out
    assert "starter overhead per job:" in out


@pytest.mark.system
def test_pool_scale_bench_completes_and_prints_its_figures() -> None:
    """pool_scale_bench --quick runs a central manager against 10 then 20 simulated hosts
    and a remote schedd, and prints each size's update rate, cycle, losses and memory, with
    every update the hosts sent counted by the collector, and the growth between sizes."""
    out = _run("pool_scale_bench.py", "--quick", timeout=300)
    for hosts, ads in ((10, 100), (20, 200)):
        assert f"--- {hosts} hosts, {ads} slot ads" in out
    assert out.count("negotiation cycle of 200 jobs: median") == 2
    assert out.count("(lost 0)") == 2, out
    assert "central manager RSS" in out
    assert "--- growth from 10 to 20 hosts (x2)" in out
