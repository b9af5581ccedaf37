"""The benchmark results a startd advertises: a weighted average over its benchmark runs.

Seed 000: "The startd keeps a weighted average of these benchmarking results to try to get the
most accurate numbers possible. This is why it is desirable for the startd to run them more
than once in its lifetime." The seed does not give the weights; epcore weighs the average so
far by the number of runs it stands for and each new result by one, so after ``n`` runs every
run counts ``1/n`` and one disturbed run moves the figure less the longer the startd has
measured. A run that produced no number (the program failed) leaves the average as it was.
Pure: numbers in, numbers out.
"""

from __future__ import annotations

import attrs

from epcore.slots.slot_status import Benchmarks


def weighted_average(average: float | None, runs: int, sample: float | None) -> float | None:
    """The average after one more run: ``average`` stood for ``runs`` runs, ``sample`` is the
    new result (None: the run gave no number)."""
    if sample is None:
        return average
    if average is None or runs <= 0:
        return float(sample)
    return (average * runs + sample) / (runs + 1)


@attrs.frozen
class BenchmarkRecord:
    """Mips and KFlops averaged over ``mips_runs`` and ``kflops_runs`` runs (None: never
    measured)."""

    mips: float | None = None
    kflops: float | None = None
    mips_runs: int = 0
    kflops_runs: int = 0

    def add(self, mips: float | None, kflops: float | None) -> BenchmarkRecord:
        """The record after one more run that measured ``mips`` and ``kflops``."""
        return BenchmarkRecord(
            weighted_average(self.mips, self.mips_runs, mips),
            weighted_average(self.kflops, self.kflops_runs, kflops),
            self.mips_runs + (mips is not None),
            self.kflops_runs + (kflops is not None),
        )

    def published(self, last_run: int) -> Benchmarks:
        """What the slot ads carry: whole Mips and KFlops, and LastBenchmark."""
        return Benchmarks(
            None if self.mips is None else round(self.mips),
            None if self.kflops is None else round(self.kflops),
            last_run,
        )
