"""epcore's ClassAd engine against HTCondor's own (classad2), timed in one process.

Run from the project root after ``python3 -m pip install -e '.[test]'``::

    python3 benchmarks/classad_bench.py            # about a minute
    python3 benchmarks/classad_bench.py --quick    # a few seconds, noisier

For every operation it prints the median time per operation of each library over
several interleaved runs and the ratio epcore / classad2 (lower is better for
epcore), with the project's target for that ratio. Cold parsing parses a batch of
2,000 texts never seen before in every run, so that no cache helps either side. It
is a measurement, not a test: it exits 0 whether or not a target is met, unless the
two libraries disagree on a result.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import statistics
import sys
import tempfile
import time
import timeit
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import attrs
import classad2

import epcore
from epcore.classad import fastparse, parse_ad, parse_expr, scanner

DESKTOP_POLICY_CONFIG = "use POLICY : Desktop\n"

# A slot ad as a Desktop-policy startd publishes it, trimmed to the attributes a
# policy or a job typically reads plus enough others to make lookups realistic.
MACHINE_AD_TEMPLATE = """[
  MyType = "Machine"; TargetType = "Job";
  Name = "slot1@ep01.example.org"; Machine = "ep01.example.org";
  SlotID = 1; SlotType = "Static"; Rank = 0.0; CurrentRank = 0.0;
  Arch = "X86_64"; OpSys = "LINUX"; OpSysAndVer = "Debian12"; OpSysMajorVer = 12;
  OpSysName = "Debian"; OpSysLongName = "Debian GNU/Linux 12 (bookworm)";
  UidDomain = "example.org"; FileSystemDomain = "example.org";
  Cpus = 4; TotalCpus = 4; DetectedCpus = 4; TotalSlotCpus = 4;
  Memory = 15872; TotalMemory = 15872; DetectedMemory = 15872; TotalSlotMemory = 15872;
  Disk = 48318382; TotalDisk = 48318382; TotalSlotDisk = 48318382; VirtualMemory = 16777216;
  Mips = 31024; KFlops = 1894021; HasFileTransfer = true; HasPerFileEncryption = true;
  HasJobDeferral = true; HasVM = false; HasDocker = false; HasSingularity = false;
  HasEncryptExecuteDirectory = false; HasReconnect = true; HasTDP = true;
  HasSelfCheckpointTransfers = true; HasSshd = true; HasIOProxy = true;
  State = "Unclaimed"; Activity = "Idle"; EnteredCurrentState = 1700000000;
  EnteredCurrentActivity = 1700000000; LastHeardFrom = 1700000600;
  KeyboardIdle = 1320; ConsoleIdle = 1320; LoadAvg = 0.08; CondorLoadAvg = 0.0;
  TotalLoadAvg = 0.08; TotalCondorLoadAvg = 0.0; CpuBusyTime = 0; CpuIsBusy = false;
  NumPids = 0; ClockMin = 610; ClockDay = 2;
  CondorVersion = "$CondorVersion: 25.14.1 2025-01-01 BuildID: 0 $";
  CondorPlatform = "$CondorPlatform: X86_64-Debian_12 $";
  StartdIpAddr = "<192.0.2.10:9618?addrs=192.0.2.10-9618&alias=ep01.example.org>";
  IsWakeOnLanEnabled = false; IsWakeOnLanSupported = false; WakeOnLanEnabledFlags = "NONE";
  MachineMaxVacateTime = 10 * 60; MaxJobRetirementTime = 0;
  Requirements = START; START = {start}
]"""

JOB_AD = """[
  MyType = "Job"; TargetType = "Machine"; ClusterId = 4242; ProcId = 7;
  Owner = "coltrane"; User = "coltrane@example.org"; AcctGroup = undefined;
  Cmd = "/home/coltrane/analysis/run.sh"; Iwd = "/home/coltrane/analysis";
  Arguments = "--input data_7.csv"; JobUniverse = 5; JobStatus = 1; JobPrio = 0;
  QDate = 1699990000; EnteredCurrentStatus = 1699990000; NumJobStarts = 0;
  ImageSize = 12500; ExecutableSize = 25; DiskUsage = 43; MemoryUsage = undefined;
  RequestCpus = 1; RequestDisk = DiskUsage; RequestMemory = 2048;
  ShouldTransferFiles = "YES"; WhenToTransferOutput = "ON_EXIT";
  TransferInput = "data_7.csv"; Out = "run.out"; Err = "run.err";
  UserLog = "/home/coltrane/analysis/run.log"; LeaveJobInQueue = false;
  Rank = 0.0; NiceUser = false; WantRemoteIO = true;
  Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") &&
                 (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) &&
                 (TARGET.Cpus >= RequestCpus) && (TARGET.HasFileTransfer)
]"""

TARGETS = {"parse": 2.0, "one-ad": 1.5, "two-ad": 0.5}

#: How many texts one cold-parsing run parses; every run gets texts never seen before.
COLD_BATCH = 2000

# Expressions of the kinds that arrive in ads and configurations, with holes that each cold
# text fills with its own numbers and names, so that no text repeats within a run.
COLD_TEMPLATES = (
    "((KeyboardIdle{n} > {a} * 60) && ( ((LoadAvg - CondorLoadAvg{n}) <= 0.{b}) ||"
    ' (State != "Unclaimed{n}" && State != "Owner")) )',
    '(TARGET.Arch == "X86_{n}") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk{n})'
    " && (TARGET.Memory >= {a}) && (TARGET.Cpus >= RequestCpus) && (TARGET.HasFileTransfer)",
    '(Owner{n} == "user{a}") * 10 + ifThenElse(isUndefined(Memory), 0, Memory / {b}.5) -'
    " (TARGET.LoadAvg{n} ?: 1)",
    "(MY.RemoteUserPrio{n} > TARGET.SubmitterUserPrio * 1.{b}) || (CurrentTime -"
    ' EnteredCurrentState{n} > {a}) || member(Owner, {{"alice{n}", "bob", "carol"}})',
)


class FreshTexts:
    """Endless batches of expressions that differ from every text handed out before."""

    def __init__(self) -> None:
        self.counter = 0

    def batch(self, size: int = COLD_BATCH) -> list[str]:
        texts = []
        for _ in range(size):
            self.counter += 1
            n = self.counter
            template = COLD_TEMPLATES[n % len(COLD_TEMPLATES)]
            texts.append(template.format(n=n, a=n % 997 + 3, b=n % 89 + 1))
        return texts


def desktop_start() -> str:
    """START as ``use POLICY : Desktop`` defines it, macros expanded by HTCondor itself."""
    previous = os.environ.get("CONDOR_CONFIG")
    with tempfile.TemporaryDirectory(prefix="ep-bench-") as folder:
        config = Path(folder) / "condor_config"
        config.write_text(DESKTOP_POLICY_CONFIG, encoding="utf-8")
        os.environ["CONDOR_CONFIG"] = str(config)
        try:
            import htcondor2

            htcondor2.reload_config()
            start = htcondor2.param["START"]
        finally:
            if previous is None:
                del os.environ["CONDOR_CONFIG"]
            else:
                os.environ["CONDOR_CONFIG"] = previous
    return " ".join(str(start).split())


#: The rows held to a target, by label (the others are informational).
ROW_TARGETS: Final = {
    "Expr START against one ad": "one-ad",
    "job Requirements against a slot": "two-ad",
}


#: One run of one side: the seconds one operation took, on average over the run.
Run = Callable[[], float]


@attrs.frozen
class Case:
    """One operation timed on both sides; ``target`` names the ratio it is held to."""

    label: str
    ours: Run
    theirs: Run
    target: str | None


@attrs.frozen
class Timing:
    label: str
    ours_us: float
    theirs_us: float
    target: str | None

    @property
    def ratio(self) -> float:
        return self.ours_us / self.theirs_us


def repeated(call: Callable[[], object], min_time: float) -> Run:
    """Runs of ``call`` looped as often as makes one run last at least ``min_time`` seconds."""
    timer = timeit.Timer(call)
    number = 1
    while timer.timeit(number) < min_time:
        number *= 2
    return lambda: timer.timeit(number) / number


def cold(parse: Callable[[str], object], texts: FreshTexts) -> Run:
    """Runs that each parse a batch of texts never parsed before (no cache can help)."""

    def run() -> float:
        batch = texts.batch()
        began = time.perf_counter()
        for text in batch:
            parse(text)
        return (time.perf_counter() - began) / len(batch)

    return run


def measure(case: Case, repeat: int) -> Timing:
    """Median time per call of each side, their runs interleaved so drift hits both alike."""
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(repeat):
        ours.append(case.ours())
        theirs.append(case.theirs())
    return Timing(
        case.label, statistics.median(ours) * 1e6, statistics.median(theirs) * 1e6, case.target
    )


def check_agreement(start: str, machine_text: str) -> None:
    """Stop unless both libraries give true for every evaluation timed, and parse alike."""
    our_machine, their_machine = parse_ad(machine_text), classad2.ClassAd(machine_text)
    our_job, their_job = parse_ad(JOB_AD), classad2.ClassAd(JOB_AD)
    checks = {
        "START": (our_machine.evaluate("START"), their_machine.eval("START")),
        "START as an Expr": (
            parse_expr(start).evaluate(our_machine),
            classad2.ExprTree(start).eval(their_machine),
        ),
        "Requirements": (
            our_job.evaluate("Requirements", target=our_machine),
            their_job.lookup("Requirements").eval(their_job, their_machine),
        ),
    }
    for name, (ours, theirs) in checks.items():
        if ours is not True or theirs is not True:
            raise SystemExit(f"{name}: epcore gives {ours!r}, classad2 gives {theirs!r}")
    for text in FreshTexts().batch(len(COLD_TEMPLATES)):
        # classad2 prints lists over several lines; blanks aside, the texts must agree.
        ours_text, theirs_text = str(parse_expr(text)), str(classad2.ExprTree(text))
        if "".join(ours_text.split()) != "".join(theirs_text.split()):
            raise SystemExit(f"{text!r} parses as {ours_text!r} and as {theirs_text!r}")


def build_cases(start: str, min_time: float) -> list[Case]:
    """The benchmark operations, after checking that both libraries agree on each result."""
    machine_text = MACHINE_AD_TEMPLATE.format(start=start)
    check_agreement(start, machine_text)
    start_ad_text = f"[START = {start}]"
    our_machine, their_machine = parse_ad(machine_text), classad2.ClassAd(machine_text)
    our_job, their_job = parse_ad(JOB_AD), classad2.ClassAd(JOB_AD)
    our_start, their_start = parse_expr(start), classad2.ExprTree(start)
    fresh = FreshTexts()

    def both(label: str, ours: Callable[[], object], theirs: Callable[[], object]) -> Case:
        target = ROW_TARGETS.get(label)
        return Case(label, repeated(ours, min_time), repeated(theirs, min_time), target)

    return [
        Case(
            "cold parse, expression (fresh texts)",
            cold(parse_expr, fresh),
            cold(classad2.ExprTree, fresh),
            "parse",
        ),
        Case(
            "cold parse, ad text (fresh texts)",
            cold(lambda text: parse_ad(f"[START = {text}]"), fresh),
            cold(lambda text: classad2.ClassAd(f"[START = {text}]"), fresh),
            None,
        ),
        both(
            "parse START, ad text (same text)",
            lambda: parse_ad(start_ad_text),
            lambda: classad2.ClassAd(start_ad_text),
        ),
        both(
            "Expr START against one ad",
            lambda: our_start.evaluate(our_machine),
            lambda: their_start.eval(their_machine),
        ),
        both(
            "parse + Expr START against one ad",
            lambda: parse_expr(start).evaluate(our_machine),
            lambda: classad2.ExprTree(start).eval(their_machine),
        ),
        Case(
            "cold parse + first evaluation (one ad)",
            cold(lambda text: parse_expr(text).evaluate(our_machine), fresh),
            cold(lambda text: classad2.ExprTree(text).eval(their_machine), fresh),
            None,
        ),
        both(
            "evaluate START attribute (one ad)",
            lambda: our_machine.evaluate("START"),
            lambda: their_machine.eval("START"),
        ),
        both(
            "job Requirements against a slot",
            lambda: our_job.evaluate("Requirements", target=our_machine),
            lambda: their_job.lookup("Requirements").eval(their_job, their_machine),
        ),
    ]


def render(timings: Sequence[Timing]) -> list[str]:
    header = f"{'operation':<40}{'epcore µs':>11}{'classad2 µs':>13}{'ratio':>8}  target"
    lines = [header, "-" * (len(header) + 12)]
    for timing in timings:
        verdict = "(informational)"
        if timing.target is not None:
            limit = TARGETS[timing.target]
            met = "met" if timing.ratio <= limit else "not met"
            verdict = f"<= {limit:<4} {met}"
        lines.append(
            f"{timing.label:<40}{timing.ours_us:>11.2f}{timing.theirs_us:>13.2f}"
            f"{timing.ratio:>8.2f}  {verdict}"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    options.add_argument("--repeat", type=int, default=9, help="runs per side (median is kept)")
    options.add_argument("--min-time", type=float, default=0.2, help="seconds per run, at least")
    options.add_argument("--quick", action="store_true", help="3 runs of 0.05 s: a smoke test")
    args = options.parse_args(argv)
    repeat, min_time = (3, 0.05) if args.quick else (args.repeat, args.min_time)

    start = desktop_start()
    compiled = [
        module.__name__
        for module in (fastparse, scanner)
        if not (module.__file__ or "").endswith(".py")
    ]
    print(
        f"epcore {epcore.__version__} vs classad2 (htcondor "
        f"{importlib.metadata.version('htcondor')}), Python {platform.python_version()}, "
        f"median of {repeat} runs (>= {min_time} s each; cold: {COLD_BATCH} fresh texts each)"
    )
    print(f"epcore modules compiled with mypyc: {', '.join(compiled) or 'none (pure Python)'}")
    print(f"START (use POLICY : Desktop, expanded by htcondor2.param): {start}")
    print("ratio = epcore time / classad2 time; lower is better for epcore\n")
    timings = [measure(case, repeat) for case in build_cases(start, min_time)]
    print("\n".join(render(timings)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
