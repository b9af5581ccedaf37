"""The weighted average of benchmark results the startd keeps across runs (seed 000: "The
startd keeps a weighted average of these benchmarking results")."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epcore.slots.benchmark_average import BenchmarkRecord, weighted_average
from epcore.slots.slot_status import Benchmarks


@pytest.mark.parametrize(
    ("average", "runs", "sample", "expected"),
    [
        (None, 0, 1000.0, 1000.0),
        (1000.0, 1, 2000.0, 1500.0),
        (1500.0, 2, 3000.0, 2000.0),
        (2000.0, 3, None, 2000.0),
        (None, 0, None, None),
        (800.0, 0, 100.0, 100.0),
    ],
)
def test_weighted_average(average, runs, sample, expected) -> None:
    """The average so far counts for its runs, the new sample for one; no sample, no change."""
    assert weighted_average(average, runs, sample) == expected


@given(st.lists(st.floats(1.0, 1e7), min_size=1, max_size=30))
def test_record_is_the_mean_of_every_run(samples: list[float]) -> None:
    """After any runs, the record is the mean of the measured samples, within their range."""
    record = BenchmarkRecord()
    for sample in samples:
        record = record.add(sample, sample / 2)
    assert record.mips is not None and record.kflops is not None
    assert math.isclose(record.mips, sum(samples) / len(samples), rel_tol=1e-9)
    assert min(samples) - 1e-6 <= record.mips <= max(samples) + 1e-6
    assert record.mips_runs == record.kflops_runs == len(samples)


def test_failed_run_counts_for_neither_figure() -> None:
    """A run whose KFlops program failed moves Mips only."""
    record = BenchmarkRecord().add(1000.0, 400.0).add(2000.0, None)
    assert (record.mips, record.kflops, record.mips_runs, record.kflops_runs) == (
        1500.0,
        400.0,
        2,
        1,
    )


def test_published_figures() -> None:
    """The ads carry whole numbers and LastBenchmark; nothing before the first run."""
    assert BenchmarkRecord().published(0) == Benchmarks(None, None, 0)
    assert BenchmarkRecord(1500.4, 2.6, 2, 2).published(77) == Benchmarks(1500, 3, 77)
