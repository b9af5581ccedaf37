"""Building every slot ad of a 256-core machine carved into 256 dynamic slots (must-show 5).

Run from the project root after ``python3 -m pip install -e '.[test]'``::

    python3 benchmarks/slots_bench.py            # median of 31 runs per side, a few seconds
    python3 benchmarks/slots_bench.py --quick    # 5 runs per side: a smoke test

The machine is a fake 256-core, 1 TB host (epcore.testing's FakeMachineHost) with the default
configuration: one partitionable slot, carved 256 times by ``epcore.slots.dynamic.carve_in`` for
one-core jobs, every dynamic slot Claimed/Busy with a claim and a running job. The timed call
is :func:`epcore.slots.ads.build_slot_ads` for all 257 slots; the target is a median of at most
20 ms.

The baseline, in the same run, is HTCondor's own ClassAd library building the same 257 ads:
``classad2.ClassAd()`` filled attribute by attribute from plain dicts holding the values epcore
produced (literals as Python values, expressions as ``classad2.ExprTree``, nested ads as
``classad2.ClassAd``), prepared before the timing. The ratio epcore / classad2 is printed (lower
is better for epcore); epcore's side computes the ads (configuration lookups, load and idle
splits, START evaluation) while classad2's only stores them, so the ratio is informational.
It is a measurement, not a test: it exits 0 whether or not the target is met.
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

from epcore.classad import ClassAd, parse_ad
from epcore.config import Config
from epcore.slots.ads import build_slot_ads
from epcore.slots.dynamic import Carved, carve_in
from epcore.slots.inventory import build_inventory
from epcore.slots.layout import plan_slots
from epcore.slots.model import SlotLayout
from epcore.slots.slot_status import ClaimInfo, RunningJob, SlotStatus
from epcore.testing.host import FakeMachineHost
from epcore.types import DetectedResource, HostReadings, MachineInventory

CORES = 256
MEMORY_MB = 1024 * 1024
DISK_KB = 4 * 1024 * 1024 * 1024
TARGET_MS = 20.0
NOW = 1_700_000_000
HOST = "big.example.org"
JOB = parse_ad('[RequestCpus = 1; RequestMemory = 2048; RequestDisk = 1048576; Owner = "u"]')


def machine() -> tuple[Config, MachineInventory, SlotLayout]:
    """The configuration, inventory and 257-slot layout of the benchmark machine."""
    host = FakeMachineHost(
        logical_cpus=CORES, physical_cpus=CORES // 2, physical_memory_mb=MEMORY_MB
    )
    config = Config.from_text("EXECUTE = /execute\n", host=host)
    detected = [
        DetectedResource("Cpus", CORES),
        DetectedResource("Memory", MEMORY_MB),
        DetectedResource("Disk", DISK_KB),
        DetectedResource("Swap", 0),
    ]
    inventory = build_inventory(config, detected)
    layout = plan_slots(config, inventory)
    for _ in range(CORES):
        carved = carve_in(layout, 1, JOB, config, inventory=inventory)
        if not isinstance(carved, Carved):
            raise SystemExit(f"carving failed: {carved}")
        layout = carved.layout
    return config, inventory, layout


def statuses(layout: SlotLayout) -> dict[str, SlotStatus]:
    """Every dynamic slot claimed by a user and running a one-core job."""
    claim = ClaimInfo("u@example.org", "u", "submit.example.org")
    found = {}
    for slot in layout.slots:
        if slot.sub_id is not None:
            job = RunningJob(f"{slot.sub_id}.0", NOW - 600)
            found[f"slot{slot.slot_id}_{slot.sub_id}"] = SlotStatus(
                "Claimed", "Busy", NOW - 600, NOW - 600, 0.0, 1.0, claim, job
            )
    return found


def literal_value(ad: ClassAd, name: str) -> object | None:
    """The value of attribute ``name`` when it is a plain literal (bool, int, real, string)."""
    expr = ad[name]
    value = expr.evaluate()
    if isinstance(value, bool | int | float | str) and str(ClassAd({"v": value})["v"]) == str(expr):
        return value
    return None


def as_classad2_values(ads: Sequence[ClassAd]) -> list[dict[str, Any]]:
    """Each ad as a dict of values classad2 can store, prepared outside the timing."""
    import classad2

    documents = []
    for ad in ads:
        document: dict[str, Any] = {}
        for name in ad:
            value = literal_value(ad, name)
            document[name] = classad2.ExprTree(str(ad[name])) if value is None else value
        documents.append(document)
    return documents


def classad2_builder(documents: Sequence[dict[str, Any]]) -> Callable[[], object]:
    import classad2

    def build() -> object:
        ads = []
        for document in documents:
            ad = classad2.ClassAd()
            for name, value in document.items():
                ad[name] = value
            ads.append(ad)
        return ads

    return build


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
    options.add_argument("--runs", type=int, default=31, help="timed runs per side")
    options.add_argument("--quick", action="store_true", help="5 runs per side: a smoke test")
    args = options.parse_args(argv)
    runs = 5 if args.quick else args.runs

    config, inventory, layout = machine()
    slot_statuses = statuses(layout)
    readings = HostReadings(
        load_avg=250.0, condor_load_avg=249.0, keyboard_idle=10**6, console_idle=10**6
    )

    def epcore_build() -> list[ClassAd]:
        return build_slot_ads(
            config, inventory, layout, readings, slot_statuses, NOW, host_name=HOST
        )

    ads = epcore_build()
    dynamic = sum(1 for slot in layout.slots if slot.kind == "dynamic")
    attributes = statistics.mean(len(ad) for ad in ads)
    ours, ours_best = median_ms(epcore_build, runs)
    print(f"python {platform.python_version()}, {platform.machine()}")
    print(f"{len(ads)} slot ads ({dynamic} dynamic), {attributes:.0f} attributes each on average")
    verdict = "met" if ours <= TARGET_MS else "NOT met"
    print(
        f"epcore build_slot_ads: median {ours:.2f} ms (best {ours_best:.2f} ms), "
        f"target <= {TARGET_MS:.0f} ms: {verdict}"
    )
    try:
        version = importlib.metadata.version("htcondor")
        documents = as_classad2_values(ads)
    except (ImportError, importlib.metadata.PackageNotFoundError):
        print("classad2 baseline: htcondor is not installed (pip install -e '.[test]')")
        return 0
    theirs, theirs_best = median_ms(classad2_builder(documents), runs)
    print(
        f"classad2 {version} building the same ads from dicts: median {theirs:.2f} ms "
        f"(best {theirs_best:.2f} ms)"
    )
    print(f"ratio epcore / classad2: {ours / theirs:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
