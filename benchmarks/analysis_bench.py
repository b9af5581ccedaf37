"""``ep q -better-analyze`` of one job against a pool of 1000 slot ads.

Run from the project root after ``python3 -m pip install -e '.[test]'``::

    python3 benchmarks/analysis_bench.py            # median of 15 runs per side
    python3 benchmarks/analysis_bench.py --quick    # 3 runs per side: a smoke test

The pool is 1000 static slot ads made by epcore.slots (one 8-core machine's ads, copied with
their own Name and Memory): memories of 1, 2, 4 and 8 GB, half the 8 GB slots claimed by
another user, and a START that takes jobs over 2 GB only on 8 GB slots. The job has the
five-clause Requirements condor_submit writes and asks for 3000 MB, so the 1 and 2 GB slots
are rejected by the job, the 4 GB ones refuse it, and the 8 GB ones are busy or available.

The timed call is :func:`epcore.analysis.analysis.analyze_job` (each clause evaluated against
every slot, each slot's side evaluated, the evidence of the first failure explained); the
target is a median of at most 100 ms (an interactive command). Two baselines are timed in the
same run: epcore's own ``symmetric_match`` over the same slots (what the negotiator pays for
one job), and classad2's ``symmetricMatch`` over the same ads parsed by classad2. The ratios
analysis / baseline are printed; the analysis evaluates about seven expressions per slot where
a match evaluates two, so a ratio near 5 against epcore's match is what the design costs.
It is a measurement, not a test: it exits 0 whether or not the target is met.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import classad2

from epcore.analysis.analysis import analyze_job
from epcore.classad import ClassAd, EvalContext, format_old, parse_ad, symmetric_match
from epcore.config import Config
from epcore.slots.ads import build_slot_ads
from epcore.slots.model import Slot, SlotLayout, SlotResources
from epcore.slots.slot_status import ClaimInfo, SlotStatus
from epcore.testing.host import FakeMachineHost
from epcore.types import HostReadings, MachineInventory

SLOTS = 1000
TARGET_MS = 100.0
NOW = 1_795_317_000
EXECUTE = "/var/lib/condor/execute"
REQUIREMENTS = (
    '(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk)'
    " && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus)"
)


def template_ads() -> list[ClassAd]:
    """Eight static slots of one machine, as its startd would advertise them."""
    host = FakeMachineHost(logical_cpus=8, physical_cpus=8, physical_memory_mb=65536)
    config = Config.from_text(
        "START = TARGET.RequestMemory <= 2048 || MY.Memory >= 8192\n", host=host
    )
    inventory = MachineInventory(
        cpus=8,
        physical_cpus=8,
        memory_mb=65536,
        disk_kb=8_000_000,
        swap_kb=0,
        detected_cpus=8,
        detected_memory_mb=65536,
        custom={},
        disk_by_path={EXECUTE: 8_000_000},
    )
    share = SlotResources(1, 8192, 1_000_000, 0, {}, {})
    layout = SlotLayout(tuple(Slot(n, 1, "static", share, share, EXECUTE) for n in range(1, 9)))
    claimed = SlotStatus(
        "Claimed", "Busy", NOW - 60, NOW - 60, claim=ClaimInfo("bob@x", "bob@x", "x")
    )
    statuses = {
        f"slot{n}": claimed if n == 4 else SlotStatus("Unclaimed", "Idle") for n in range(1, 9)
    }
    readings = HostReadings(load_avg=0.0, condor_load_avg=0.0, keyboard_idle=0, console_idle=0)
    return build_slot_ads(config, inventory, layout, readings, statuses, NOW, host_name="ep")


def pool() -> list[ClassAd]:
    """SLOTS ads: the template's, renamed and given memories of 1 to 8 GB."""
    templates = template_ads()
    ads = []
    for index in range(SLOTS):
        ad = templates[index % len(templates)].copy()
        ad["Name"] = f"slot{index % 8 + 1}@ep{index // 8}.example.org"
        ad["Memory"] = 1024 << (index % 4)
        ads.append(ad)
    return ads


def median_ms(action: Callable[[], object], runs: int) -> float:
    """The median wall time of ``runs`` calls, in milliseconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    """Time the analysis and both baselines, and print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs per side")
    runs = 3 if parser.parse_args().quick else 15
    slots = pool()
    job = parse_ad(
        f"""[ ClusterId = 7; ProcId = 0; Owner = "alice"; RequestCpus = 1;
             RequestMemory = 3000; RequestDisk = 1000; Requirements = {REQUIREMENTS} ]"""
    )
    context = EvalContext(now=NOW)
    their_job = classad2.parseOne(format_old(job))
    their_slots = [classad2.parseOne(format_old(slot)) for slot in slots]

    analysis = analyze_job(job, slots, now=NOW)
    analysis_ms = median_ms(lambda: analyze_job(job, slots, now=NOW), runs)
    match_ms = median_ms(
        lambda: [symmetric_match(job, slot, context=context) for slot in slots], runs
    )
    oracle_ms = median_ms(lambda: [their_job.symmetricMatch(s) for s in their_slots], runs)

    print(f"pool: {SLOTS} slot ads; runs per side: {runs}")
    print(
        f"groups: {analysis.rejected_by_job} rejected by the job, "
        f"{analysis.rejected_by_slots} by the slots, {analysis.serving_others} serving others, "
        f"{analysis.available} available"
    )
    print(f"analyze_job:                  {analysis_ms:8.1f} ms (target <= {TARGET_MS:.0f} ms)")
    print(f"epcore symmetric_match loop:  {match_ms:8.1f} ms   ratio {analysis_ms / match_ms:.1f}")
    print(
        f"classad2 symmetricMatch loop: {oracle_ms:8.1f} ms   ratio {analysis_ms / oracle_ms:.1f}"
    )
    verdict = "met" if analysis_ms <= TARGET_MS else "NOT met"
    print(f"target {verdict}")


if __name__ == "__main__":
    main()
