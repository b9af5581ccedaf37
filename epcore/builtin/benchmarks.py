"""The startd's benchmark programs: ``python -m epcore.builtin.benchmarks mips|kflops``.

They are what BENCHMARKS_MIPS_EXECUTABLE and BENCHMARKS_KFLOPS_EXECUTABLE run by default, and
they print what a benchmark job prints: one attribute line, ``Mips = N`` or ``KFlops = N``.

- ``mips`` runs a Dhrystone-like integer workload (record copies, integer arithmetic, string
  comparison, branches over an enumeration) and reports Dhrystones per second divided by 1757,
  the VAX 11/780's Dhrystones per second that defines one "Dhrystone MIPS".
- ``kflops`` runs a Linpack-like floating-point workload: it solves a dense 60 x 60 system by
  Gaussian elimination with partial pivoting and back substitution, counting
  ``2/3 n^3 + 2 n^2`` floating-point operations per solve, and reports thousands of them per
  second.

Each program repeats its workload for about ``--seconds`` (default 1) of wall time and reports
the rate; the numbers are those of this interpreter, so they compare machines running epcore,
not epcore with compiled code.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence

from epcore.config import KnobDefault

#: Dhrystones per second of the VAX 11/780, the machine of one Dhrystone MIPS.
VAX_DHRYSTONES = 1757.0

#: Order of the Linpack-like system.
LINPACK_ORDER = 60


def _dhrystone_pass(seed: int) -> int:
    """One Dhrystone-like pass: the kinds of statements Dhrystone mixes, with a result that
    depends on every one of them (so no part can be skipped)."""
    numbers = [seed & 7, 3, 17]
    text = "DHRYSTONE PROGRAM, SOME STRING"
    copy = list(numbers)
    int_1, int_2 = 2, 3
    int_3 = 5 * int_1 - int_2
    enum = (seed + int_3) % 5
    for _ in range(2):
        if enum == 0:
            enum = 3
        elif enum == 1:
            enum = 0 if int_3 > 100 else 2
        elif enum == 2:
            enum = 1
        else:
            enum = 4 - enum if enum > 2 else enum
        int_2 = int_2 * int_1
        int_1 = int_2 // int_3 if int_3 else int_2
        int_2 = 7 * (int_2 - int_3) - int_1
    copy[0] = (copy[0] + int_1) & 0xFF
    same = text == "DHRYSTONE PROGRAM, 2'ND STRING"
    less = text > "DHRYSTONE PROGRAM, 1'ST STRING"
    array = [int_1, int_2, int_3, enum]
    array[seed % 4] += 1
    return (sum(array) + copy[0] + same + less) & 0xFFFF


def dhrystones(seconds: float, clock: Callable[[], float] = time.perf_counter) -> float:
    """Dhrystone-like passes per second over about ``seconds``."""
    done = 0
    checksum = 0
    batch = 2000
    start = clock()
    elapsed = 0.0
    while elapsed < seconds:
        for index in range(batch):
            checksum ^= _dhrystone_pass(done + index)
        done += batch
        elapsed = clock() - start
    if checksum < 0:  # never: the passes return 16-bit values; this keeps them all used
        raise ArithmeticError("the Dhrystone-like passes went wrong")
    return done / max(elapsed, 1e-9)


def mips(seconds: float = 1.0) -> int:
    """The Dhrystone MIPS of this interpreter on this machine (at least 1)."""
    return max(1, round(dhrystones(seconds) / VAX_DHRYSTONES))


def _system(order: int, seed: int) -> tuple[list[list[float]], list[float]]:
    """A well-conditioned dense system (diagonally dominant, pseudo-random entries)."""
    state = seed * 1103515245 + 12345
    matrix: list[list[float]] = []
    for row in range(order):
        values = []
        for _ in range(order):
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            values.append(state / 0x7FFFFFFF - 0.5)
        values[row] += order
        matrix.append(values)
    rhs = [sum(row) for row in matrix]
    return matrix, rhs


def solve(matrix: list[list[float]], rhs: list[float]) -> list[float]:
    """Solve ``matrix x = rhs`` in place by Gaussian elimination with partial pivoting."""
    order = len(matrix)
    for column in range(order):
        pivot = max(range(column, order), key=lambda row: abs(matrix[row][column]))
        if pivot != column:
            matrix[column], matrix[pivot] = matrix[pivot], matrix[column]
            rhs[column], rhs[pivot] = rhs[pivot], rhs[column]
        top = matrix[column]
        inverse = 1.0 / top[column]
        for row in range(column + 1, order):
            line = matrix[row]
            factor = line[column] * inverse
            if factor:
                for k in range(column, order):
                    line[k] -= factor * top[k]
                rhs[row] -= factor * rhs[column]
    solution = [0.0] * order
    for row in range(order - 1, -1, -1):
        line = matrix[row]
        total = rhs[row]
        for k in range(row + 1, order):
            total -= line[k] * solution[k]
        solution[row] = total / line[row]
    return solution


def flops_per_second(seconds: float, clock: Callable[[], float] = time.perf_counter) -> float:
    """Floating-point operations per second of repeated solves over about ``seconds``;
    every solution is checked (all ones), so a wrong solver cannot report a rate."""
    order = LINPACK_ORDER
    per_solve = 2.0 / 3.0 * order**3 + 2.0 * order**2
    solves = 0
    solving = 0.0
    start = clock()
    while clock() - start < seconds:
        matrix, rhs = _system(order, solves)
        # Only the solve is measured, not building the system.
        began = clock()
        solution = solve(matrix, rhs)
        solving += clock() - began
        if max(abs(value - 1.0) for value in solution) > 1e-6:
            raise ArithmeticError("the Linpack-like solve gave a wrong solution")
        solves += 1
    return solves * per_solve / max(solving, 1e-9)


def kflops(seconds: float = 1.0) -> int:
    """Thousands of floating-point operations per second (at least 1)."""
    return max(1, round(flops_per_second(seconds) / 1000.0))


def benchmark_defaults(python: str = sys.executable) -> tuple[KnobDefault, ...]:
    """The startd's defaults of the benchmark programs: these programs, run by ``python``, in
    place of HTCondor's ``$(LIBEXEC)/condor_mips`` and ``condor_kflops``, which an epcore
    machine does not have. A configuration that sets BENCHMARKS_<NAME>_EXECUTABLE wins."""
    return tuple(
        knob
        for name in ("MIPS", "KFLOPS")
        for knob in (
            KnobDefault(
                f"BENCHMARKS_{name}_EXECUTABLE",
                python,
                "path",
                f"Program the startd runs for the {name.lower()} benchmark (epcore's own).",
            ),
            KnobDefault(
                f"BENCHMARKS_{name}_ARGS",
                f"-m epcore.builtin.benchmarks {name.lower()}",
                "string",
                f"Arguments of the {name.lower()} benchmark program.",
            ),
        )
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run one benchmark and print its attribute line."""
    parser = argparse.ArgumentParser(
        prog="python -m epcore.builtin.benchmarks", description="epcore's benchmark programs"
    )
    parser.add_argument("benchmark", choices=("mips", "kflops"))
    parser.add_argument("--seconds", type=float, default=1.0, help="how long to measure")
    options = parser.parse_args(argv)
    seconds = max(options.seconds, 0.01)
    if options.benchmark == "mips":
        print(f"Mips = {mips(seconds)}")
    else:
        print(f"KFlops = {kflops(seconds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
