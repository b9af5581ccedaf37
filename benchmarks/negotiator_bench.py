"""One negotiation cycle: 10,000 idle jobs in 100 autoclusters against 10,000 slot ads.

Run from the project root after ``python3 -m pip install -e '.[test]'``::

    python3 benchmarks/negotiator_bench.py           # 3 cycles, a few seconds
    python3 benchmarks/negotiator_bench.py --quick   # 1 cycle
    python3 benchmarks/negotiator_bench.py --pslots  # also partitionable slots (informational)

The pool is 625 machines of 16 one-core static slots, as a startd with the default
configuration advertises them (Name, Machine, SlotID, State, Activity, Cpus, Memory, Disk,
OpSys, Arch, KFlops and Mips measured per machine, SlotWeight = Cpus, START folded into
Requirements; one machine in ten has a START that refuses one owner), all Unclaimed. The jobs
belong to five submitters with different priorities; each of 100 autoclusters (20 per
submitter) holds 100 jobs that differ only in ClusterId, ProcId, QDate and GlobalJobId, and
asks for memory and, for some, a KFlops Rank. The configuration is the default one
(NEGOTIATOR_PRE_JOB_RANK and NEGOTIATOR_POST_JOB_RANK of HTCondor 25). The target is at most
2 s per cycle (the median is printed). A second, informational measurement runs one cycle
on the same pool with every other slot Claimed/Busy and PREEMPTION_REQUIREMENTS = True.

The baseline, measured in the same run, is HTCondor's own ClassAd library doing the least a
negotiator without caching does: one symmetric match of an autocluster's job against every
slot, for 5 autoclusters, scaled to 100 (``classad2.ClassAd.matches`` both ways). The ratio
epcore / baseline is printed (lower is better for epcore). It is a measurement, not a test:
it exits 0 whether or not the target is met.

The groups case (issue 28) runs the same pool and the same 10,000 jobs as the members of 50
accounting groups in three levels (5 groups, 15 subgroups, 30 sub-subgroups; static and
dynamic quotas, some accepting surplus) with 20 concurrency limits (each job asks for one or
two, one of them fractional): the cycle with the group layer and the limits has the same 2 s
target (its median is printed).

The wire case (``benchmarks/negotiate_wire.py``; ``--no-wire`` skips it) runs the
negotiator's whole cycle on the same slots and jobs twice over, interleaved: with the schedd
in-process, and with the schedd in another process reached over CEDAR (NEGOTIATE, issue 23);
informational, the two medians and their ratio are printed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from epcore.classad import ClassAd, parse_ad, parse_expr
from epcore.config import Config
from epcore.interfaces import SubmitterJobs
from epcore.negotiator import Accountant, negotiate

MACHINES = 625
SLOTS_PER_MACHINE = 16
AUTOCLUSTERS = 100
JOBS_PER_AUTOCLUSTER = 100
SUBMITTERS = ("alice", "bob", "carol", "dave", "erin")
TARGET_S = 2.0
NOW = 1_700_000_000.0


def slot_ads(rng: random.Random) -> list[ClassAd]:
    """The 10,000 slot ads."""
    ads = []
    for machine in range(MACHINES):
        host = f"node{machine:04d}.example.org"
        kflops = rng.randint(1_500_000, 2_500_000)
        mips = rng.randint(20_000, 40_000)
        memory = (2048, 4096, 8192)[machine % 3]
        start = 'TARGET.Owner != "mallory"' if machine % 10 == 0 else "true"
        for slot_id in range(1, SLOTS_PER_MACHINE + 1):
            ads.append(
                parse_ad(
                    f"""[
                    MyType = "Machine"; TargetType = "Job";
                    Name = "slot{slot_id}@{host}"; Machine = "{host}"; SlotID = {slot_id};
                    SlotTypeID = 0; SlotType = "Static"; State = "Unclaimed"; Activity = "Idle";
                    Cpus = 1; Memory = {memory}; Disk = 10485760; VirtualMemory = 4194304;
                    TotalCpus = 16; TotalMemory = {memory * 16}; OpSys = "LINUX";
                    Arch = "X86_64"; UidDomain = "example.org";
                    FileSystemDomain = "example.org"; KFlops = {kflops}; Mips = {mips};
                    LoadAvg = 0.0; CondorLoadAvg = 0.0; KeyboardIdle = 86400;
                    EnteredCurrentState = {int(NOW) - 600}; CurrentRank = 0.0;
                    Start = {start}; Rank = 0.0; SlotWeight = Cpus;
                    Requirements = {start}; MaxJobRetirementTime = 0;
                    StartdIpAddr = "<10.0.{machine // 256}.{machine % 256}:9618>"
                    ]"""
                )
            )
    return ads


def submitters() -> list[SubmitterJobs]:
    """The five submitters' idle jobs, 20 autoclusters each."""
    jobs: dict[str, list[ClassAd]] = {name: [] for name in SUBMITTERS}
    for autocluster in range(AUTOCLUSTERS):
        owner = SUBMITTERS[autocluster % len(SUBMITTERS)]
        memory = 512 + 16 * autocluster
        rank = "KFlops" if autocluster % 4 == 0 else "0"
        cluster = autocluster + 1
        for proc in range(JOBS_PER_AUTOCLUSTER):
            jobs[owner].append(
                parse_ad(
                    f"""[
                    MyType = "Job"; TargetType = "Machine"; ClusterId = {cluster};
                    ProcId = {proc}; Owner = "{owner}"; User = "{owner}@example.org";
                    QDate = {int(NOW) - 3600 + autocluster}; JobPrio = 0; JobStatus = 1;
                    JobUniverse = 5; Cmd = "/home/{owner}/run.sh"; Iwd = "/home/{owner}";
                    GlobalJobId = "ap.example.org#{cluster}.{proc}#{int(NOW)}";
                    RequestCpus = 1; RequestMemory = {memory}; RequestDisk = 1048576;
                    Rank = {rank};
                    Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") &&
                        (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
                    ]"""
                )
            )
    return [SubmitterJobs(f"{name}@example.org", tuple(jobs[name])) for name in SUBMITTERS]


def group_tree() -> tuple[str, list[str]]:
    """The 50 groups in three levels and 20 concurrency limits, as configuration text, and
    the groups' names (parents first)."""
    names: list[str] = []
    lines: list[str] = []
    for top in range(5):
        parent = f"g{top}"
        names.append(parent)
        lines.append(f"GROUP_QUOTA_{parent} = {1000 + 200 * top}")
        for middle in range(3):
            child = f"{parent}.s{middle}"
            names.append(child)
            lines.append(f"GROUP_QUOTA_DYNAMIC_{child} = {0.2 + 0.1 * middle:.1f}")
            lines.append(f"GROUP_ACCEPT_SURPLUS_{child} = {middle != 1}")
            for leaf in range(2):
                grandchild = f"{child}.l{leaf}"
                names.append(grandchild)
                lines.append(f"GROUP_QUOTA_{grandchild} = {60 + 40 * leaf}")
                lines.append(f"GROUP_ACCEPT_SURPLUS_{grandchild} = {leaf == 0}")
    lines += [f"LIC{k}_LIMIT = {150 + 25 * k}" for k in range(20)]
    return f"GROUP_NAMES = {', '.join(names)}\n" + "\n".join(lines) + "\n", names


def grouped(queues: list[SubmitterJobs], names: list[str]) -> list[SubmitterJobs]:
    """The same jobs, each autocluster's owned by one group's user and asking for one or two
    concurrency limits (50 submitters, 2 autoclusters each)."""
    by_submitter: dict[str, list[ClassAd]] = {}
    for queue in queues:
        for job in queue.jobs:
            cluster = job.evaluate("ClusterId")
            assert isinstance(cluster, int)
            group = names[cluster % len(names)]
            user = f"user{cluster % len(names)}"
            ad = job.copy()
            ad["AcctGroup"], ad["AcctGroupUser"] = group, user
            ad["AccountingGroup"] = f"{group}.{user}"
            limits = f"lic{cluster % 20}"
            if cluster % 3 == 0:
                limits += f",lic{(cluster + 7) % 20}:0.5"
            ad["ConcurrencyLimits"] = limits
            by_submitter.setdefault(f"{group}.{user}@example.org", []).append(ad)
    return [SubmitterJobs(name, tuple(jobs)) for name, jobs in by_submitter.items()]


def accountant(config: Config) -> Accountant:
    """Five submitters with different usage histories."""
    found = Accountant.empty(config)
    for position, name in enumerate(SUBMITTERS):
        found = found.set_priority(f"{name}@example.org", 10.0 * (position + 1), NOW)
    return found


def busy_variant(config_text: str, slots: list[ClassAd]) -> tuple[Config, list[ClassAd]]:
    """The same pool with every other slot Claimed/Busy by one of the submitters, and
    PREEMPTION_REQUIREMENTS = True, so that every cycle weighs rank and priority preemption."""
    config = Config.from_text(config_text + "PREEMPTION_REQUIREMENTS = True\n")
    busy = []
    for position, ad in enumerate(slots):
        ad = ad.copy()
        if position % 2:
            user = f"{SUBMITTERS[position % len(SUBMITTERS)]}@example.org"
            ad["State"], ad["Activity"] = "Claimed", "Busy"
            ad["RemoteUser"] = ad["RemoteOwner"] = user
            ad["JobStart"] = int(NOW) - 1000 - position
            ad["TotalJobRunTime"] = 1000 + position
        busy.append(ad)
    return config, busy


def consumption_variant(slots: list[ClassAd]) -> list[ClassAd]:
    """The pool as 625 partitionable slots of 16 cores with a consumption policy (the
    expressions HTCondor's CONSUMPTION_* defaults give)."""
    pslots = []
    for ad in slots[::SLOTS_PER_MACHINE]:
        pslot = ad.copy()
        memory = ad.evaluate("Memory")
        assert isinstance(memory, int)
        pslot["Cpus"], pslot["Memory"], pslot["Disk"] = 16, memory * 16, 100_000_000
        pslot["SlotType"], pslot["PartitionableSlot"] = "Partitionable", True
        pslot["ConsumptionCpus"] = parse_expr("quantize(target.RequestCpus, {1})")
        pslot["ConsumptionMemory"] = parse_expr("quantize(target.RequestMemory, {128})")
        pslot["ConsumptionDisk"] = parse_expr("quantize(target.RequestDisk, {1024})")
        pslots.append(pslot)
    return pslots


def baseline(slots: list[ClassAd], queues: list[SubmitterJobs], sample: int) -> float:
    """Seconds classad2 takes to match ``sample`` autoclusters against every slot, scaled to
    all autoclusters."""
    import classad2

    theirs = [classad2.ClassAd(str(ad)) for ad in slots]
    representatives = [
        classad2.ClassAd(str(queue.jobs[k * JOBS_PER_AUTOCLUSTER]))
        for queue in queues
        for k in range(len(queue.jobs) // JOBS_PER_AUTOCLUSTER)
    ][:sample]
    began = time.perf_counter()
    for job in representatives:
        for slot in theirs:
            slot.matches(job) and job.matches(slot)
    return (time.perf_counter() - began) * AUTOCLUSTERS / sample


def main() -> None:
    """Time the cycle and print the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one cycle only")
    parser.add_argument(
        "--no-wire",
        action="store_true",
        help="skip the whole cycle in-process and over CEDAR (a schedd in another process)",
    )
    parser.add_argument(
        "--pslots",
        action="store_true",
        help="also time the pool as partitionable slots with a consumption policy",
    )
    args = parser.parse_args()
    rng = random.Random(7)
    config_text = "UID_DOMAIN = example.org\n"
    config = Config.from_text(config_text)
    slots = slot_ads(rng)
    queues = submitters()
    start = accountant(config)
    times = []
    cycle = None
    for _ in range(1 if args.quick else 3):
        began = time.perf_counter()
        cycle = negotiate(config, start, slots, queues, NOW)
        times.append(time.perf_counter() - began)
    assert cycle is not None
    median = statistics.median(times)
    groups_text, group_names = group_tree()
    groups_config = Config.from_text(config_text + groups_text)
    group_queues = grouped(queues, group_names)
    groups_start = Accountant.empty(groups_config)
    group_times = []
    group_cpu = []
    group_cycle = None
    for _ in range(1 if args.quick else 3):
        began, cpu = time.perf_counter(), time.process_time()
        group_cycle = negotiate(groups_config, groups_start, slots, group_queues, NOW)
        group_times.append(time.perf_counter() - began)
        # The CPU time too: on a shared machine it shows the cycle's own cost.
        group_cpu.append(time.process_time() - cpu)
    assert group_cycle is not None
    group_median = statistics.median(group_times)
    busy_config, busy_slots = busy_variant(config_text, slots)
    busy_start = start.update_usage(busy_slots, NOW)
    began = time.perf_counter()
    busy_cycle = negotiate(busy_config, busy_start, busy_slots, queues, NOW)
    busy_time = time.perf_counter() - began
    oracle = baseline(slots, queues, 2 if args.quick else 5)
    print(
        f"slots {len(slots)}, idle jobs {sum(len(q.jobs) for q in queues)}, "
        f"autoclusters {cycle.stats.autoclusters}, matches {len(cycle.matches)}"
    )
    print(
        f"epcore cycle: median {median:.3f} s over {len(times)} runs "
        f"({', '.join(f'{t:.3f}' for t in times)})"
    )
    print(f"target: at most {TARGET_S:.1f} s -> {'met' if median <= TARGET_S else 'NOT met'}")
    print(
        f"groups case, {len(group_names)} groups in 3 levels and 20 concurrency limits: "
        f"median {group_median:.3f} s over {len(group_times)} runs "
        f"({', '.join(f'{t:.3f}' for t in group_times)}; CPU median "
        f"{statistics.median(group_cpu):.3f} s), {len(group_cycle.matches)} matches, "
        f"{len(group_queues)} submitters -> "
        f"{'met' if group_median <= TARGET_S else 'NOT met'}"
    )
    print(
        f"informational, half the slots Claimed/Busy with preemption considered: {busy_time:.3f} s"
        f" ({len(busy_cycle.matches)} matches, {busy_cycle.stats.preemptions} preemptions)"
    )
    if args.pslots:
        pslots = consumption_variant(slots)
        began = time.perf_counter()
        cp_cycle = negotiate(config, start, pslots, queues, NOW)
        print(
            f"informational, {len(pslots)} partitionable slots with a consumption policy: "
            f"{time.perf_counter() - began:.3f} s ({len(cp_cycle.matches)} matches)"
        )
    if not args.no_wire:
        # Imported here: the wire case needs the schedd and the network, the rest does not.
        from benchmarks.negotiate_wire import describe, wire_case

        print(describe(*wire_case(slots, queues, NOW, 1 if args.quick else 3)))
    print(f"classad2 baseline (one match per autocluster and slot): {oracle:.3f} s")
    print(f"ratio epcore / classad2: {median / oracle:.2f}")


if __name__ == "__main__":
    main()
