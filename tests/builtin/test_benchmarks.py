"""epcore's benchmark programs (``python -m epcore.builtin.benchmarks``): they print the
attribute line a benchmark job prints, with real measured rates, and the Linpack-like solver
solves."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from epcore.builtin.benchmarks import _system, dhrystones, flops_per_second, solve
from epcore.slots.cron_output import parse_cron_output


@pytest.mark.parametrize(("name", "attribute"), [("mips", "Mips"), ("kflops", "KFlops")])
def test_program_prints_its_attribute(name: str, attribute: str) -> None:
    """Run as a program, each benchmark prints one ``Attribute = N`` line with N > 0."""
    done = subprocess.run(
        [sys.executable, "-m", "epcore.builtin.benchmarks", name, "--seconds", "0.2"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (ad,) = parse_cron_output(done.stdout).ads
    ((got, expr),) = ad.attributes
    value = expr.evaluate()
    assert got == attribute and isinstance(value, int) and value > 0


def test_unknown_benchmark_is_refused() -> None:
    """An unknown benchmark name is a usage error (exit status 2)."""
    done = subprocess.run(
        [sys.executable, "-m", "epcore.builtin.benchmarks", "gflops"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_rates_grow_with_a_faster_clock() -> None:
    """The rates are work over measured time: a clock running at half speed doubles them."""
    ticks = iter(range(10**9))

    def slow() -> float:
        return next(ticks) * 0.001

    def fast() -> float:
        return next(ticks) * 0.0005

    assert dhrystones(0.05, fast) > dhrystones(0.05, slow) > 0
    assert flops_per_second(0.05, fast) > flops_per_second(0.05, slow) > 0


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 12))
def test_solver_solves_random_systems(seed: int, order: int) -> None:
    """Gaussian elimination gives the all-ones solution the generated systems have."""
    matrix, rhs = _system(order, seed)
    solution = solve(matrix, rhs)
    assert all(abs(value - 1.0) < 1e-9 for value in solution)
