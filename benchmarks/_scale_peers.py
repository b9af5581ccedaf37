"""The peers of ``pool_scale_bench.py``: simulated execute hosts and one remote schedd.

Not a benchmark itself (its name starts with an underscore).

- :func:`run_hosts` (a process of its own, one per slice of the hosts): each simulated
  host is the execute host's own collector link (:class:`epcore.links.collector.RemoteCollector`,
  its worker thread, a DAEMON session proven by a token and resumed, one kept connection)
  sending the host's slot ads every interval. The ads are what epcore's startd builds
  (:func:`epcore.slots.ads.build_slot_ads` for a machine of ``slots`` one-core static
  slots), with each host's names, addresses, memory, speed and load.
- :func:`serve_schedd` (a process of its own): a real schedd core whose SQLite queue holds
  the idle jobs, behind a CEDAR listener answering NEGOTIATE (token authentication, as
  the central manager's negotiator brings).
"""

from __future__ import annotations

import logging
import random
import resource
import selectors
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path

from epcore.classad import ClassAd, parse_ad
from epcore.config import Config
from epcore.interfaces import Locator, Match, Significance, SubmitterJobs
from epcore.links.collector import RemoteCollector
from epcore.net.dispatch import CommandTable
from epcore.net.handshake import SecurityServer
from epcore.net.keyexchange import EcdhKeyExchange
from epcore.net.listener import CedarListener
from epcore.net.methods import default_registry
from epcore.schedd.cedar import negotiator_handlers
from epcore.schedd.jobqueue import JobQueue
from epcore.schedd.schedd import Schedd
from epcore.slots.ads import build_slot_ads
from epcore.slots.inventory import build_inventory
from epcore.slots.layout import plan_slots
from epcore.slots.slot_status import SlotStatus
from epcore.testing.host import FakeMachineHost
from epcore.types import DetectedResource, HostReadings

NOW = 1_700_000_000.0
SUBMITTERS = ("alice", "bob", "carol", "dave", "erin")
AUTOCLUSTERS = 100
DOMAIN = "epcore.test"


def template_ads(slots: int) -> list[ClassAd]:
    """The slot ads epcore's startd builds for a machine of ``slots`` one-core static slots,
    all Unclaimed and Idle."""
    memory = 4096 * slots
    host = FakeMachineHost(logical_cpus=slots, physical_cpus=slots, physical_memory_mb=memory)
    config = Config.from_text(
        f"EXECUTE = /execute\nNUM_SLOTS = {slots}\nSTART = True\n"
        f"UID_DOMAIN = {DOMAIN}\nFILESYSTEM_DOMAIN = {DOMAIN}\n",
        host=host,
    )
    detected = [
        DetectedResource("Cpus", slots),
        DetectedResource("Memory", memory),
        DetectedResource("Disk", 50_000_000 * slots),
        DetectedResource("Swap", 0),
    ]
    inventory = build_inventory(config, detected)
    layout = plan_slots(config, inventory)
    idle = SlotStatus("Unclaimed", "Idle", NOW - 600, NOW - 600)
    statuses = {f"slot{slot.slot_id}": idle for slot in layout.slots}
    readings = HostReadings(
        load_avg=0.0, condor_load_avg=0.0, keyboard_idle=5000, console_idle=5000
    )
    return build_slot_ads(
        config,
        inventory,
        layout,
        readings,
        statuses,
        NOW,
        host_name="exec.example.org",
        address="<127.0.0.9:9618>",
        started_at=NOW - 3600,
    )


def host_ads(template: Sequence[ClassAd], number: int, rng: random.Random) -> list[ClassAd]:
    """Host ``number``'s slot ads: its names, address, memory size and speed."""
    name = f"exec{number:05d}.{DOMAIN}"
    # Each host's address is its own; nothing listens there (claims are not measured).
    address = f"<127.0.{1 + number // 250}.{1 + number % 250}:9>"
    memory = (2048, 4096, 8192)[number % 3]
    kflops, mips = rng.randint(1_500_000, 2_500_000), rng.randint(20_000, 40_000)
    ads = []
    for ad in template:
        mine = ad.copy()
        mine["Name"] = str(ad.evaluate("Name")).replace("exec.example.org", name)
        mine["Machine"] = name
        mine["MyAddress"] = mine["StartdIpAddr"] = address
        mine["Memory"] = mine["TotalSlotMemory"] = memory
        mine["TotalMemory"] = memory * len(template)
        mine["KFlops"], mine["Mips"] = kflops, mips
        ads.append(mine)
    return ads


def run_hosts(
    first: int,
    count: int,
    total: int,
    slots: int,
    interval: float,
    config_path: str,
    pipe: Connection,
) -> None:
    """Hosts ``first`` to ``first + count - 1`` of ``total``, each sending its ads every
    ``interval`` seconds (host n first at n/total of an interval) until the parent sends
    anything; then what they sent goes back through ``pipe``."""
    config = Config.load(config_path)
    log = logging.getLogger("bench.hosts")
    log.setLevel(logging.ERROR)
    rng = random.Random(first)
    template = template_ads(slots)
    hosts = [host_ads(template, n, rng) for n in range(first, first + count)]
    links = []
    for _ in range(count):
        link = RemoteCollector(
            lambda: config, address=lambda: ("127.0.0.9", 9), subsystem="STARTD", log=log
        )
        link.open(None)  # type: ignore[arg-type]  # the worker thread only
        links.append(link)
    pipe.send("ready")
    pipe.recv()  # the start signal: every slice starts at once
    began = time.monotonic()
    rounds = [0] * count
    queued = 0
    late: list[float] = []
    while not pipe.poll():
        now = time.monotonic()
        soonest = now + 1.0
        for n in range(count):
            due = began + interval * ((first + n) / total + rounds[n])
            if due > now:
                soonest = min(soonest, due)
                continue
            late.append(now - due)
            rounds[n] += 1
            wall = time.time()
            for ad in hosts[n]:
                ad["MyCurrentTime"] = int(wall)
                ad["UpdateSequenceNumber"] = rounds[n]
                ad["LoadAvg"] = round(rng.random() * 0.1, 2)
                ad["KeyboardIdle"] = 5000 + int(now - began)
            links[n].update(hosts[n], wall)
            queued += len(hosts[n])
        time.sleep(max(0.0, min(soonest - time.monotonic(), 0.2)))
    pipe.recv()
    # What is still queued goes out (or is counted as not sent).
    for link in links:
        link.wait_sent(0.5)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    pipe.send(
        {
            "queued": queued,
            "sent": sum(link.sent for link in links),
            "failures": sum(link.failures for link in links),
            "connections": sum(link.connections for link in links),
            "resumed": sum(link.resumed for link in links),
            "down": sum(1 for link in links if link.down),
            "cpu": usage.ru_utime + usage.ru_stime,
            "schedule_late_max": max(late, default=0.0),
        }
    )


def job_ads(count: int) -> list[list[ClassAd]]:
    """``count`` idle jobs as clusters (one per autocluster, five submitters): what
    condor_submit gives a vanilla job, their memory requests in 100 sizes."""
    clusters: list[list[ClassAd]] = []
    per = max(count // AUTOCLUSTERS, 1)
    for autocluster in range(min(AUTOCLUSTERS, count)):
        owner = SUBMITTERS[autocluster % len(SUBMITTERS)]
        memory = 512 + 16 * autocluster
        rank = "KFlops" if autocluster % 4 == 0 else "0"
        jobs = []
        for proc in range(per):
            jobs.append(
                parse_ad(
                    f"""[
                    MyType = "Job"; TargetType = "Machine"; ProcId = {proc};
                    Owner = "{owner}"; User = "{owner}@{DOMAIN}"; JobStatus = 1;
                    QDate = {int(NOW) - 3600 + autocluster}; JobPrio = 0;
                    JobUniverse = 5; Cmd = "/home/{owner}/run.sh"; Iwd = "/home/{owner}";
                    RequestCpus = 1; RequestMemory = {memory}; RequestDisk = 1048576;
                    Rank = {rank};
                    Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") &&
                        (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)
                    ]"""
                )
            )
        clusters.append(jobs)
    return clusters


class _Jobs:
    """The schedd as NEGOTIATE reaches it (what ScheddService gives it in ``ep run``)."""

    def __init__(self, schedd: Schedd) -> None:
        self.schedd = schedd
        self.matches = 0

    def wants_negotiation(self) -> bool:
        return False

    def cycle_started(self) -> None:
        pass

    def reserved_slots(self) -> set[str]:
        return set()

    def negotiable_jobs(
        self, slots: Sequence[ClassAd], significance: Significance, now: float
    ) -> list[SubmitterJobs]:
        return self.schedd.negotiable_jobs(slots, significance, now)

    def take_matches(self, matches: Sequence[Match], now: float) -> None:
        # Counted, not claimed: nothing listens at the simulated hosts' addresses.
        self.matches += len(matches)


def serve_schedd(directory: str, jobs: int, config_text: str, pipe: Connection) -> None:
    """A schedd with ``jobs`` idle jobs behind its CEDAR listener on 127.0.0.4, until the
    parent sends anything (its address goes back first)."""
    config = Config.from_text(config_text, subsystem="SCHEDD")
    log = logging.getLogger("bench.schedd")
    log.setLevel(logging.ERROR)
    queue = JobQueue.open(Path(directory) / "job_queue.db")
    schedd = Schedd(
        config, queue, Locator("startd"), host_name="ap.example.org", log=log, clock=time.time
    )
    with queue.batch():
        for cluster in job_ads(jobs):
            number = queue.next_cluster_id()
            for job_id in queue.submit(number, cluster[0], cluster):
                schedd.now_idle(job_id)
    table = CommandTable()
    service = _Jobs(schedd)
    for command, handler in negotiator_handlers(
        service,  # type: ignore[arg-type]
        lambda: config,
        log=log,
        clock=time.time,
    ).items():
        table.register(command, handler)
    security = SecurityServer(
        lambda: config,
        table.levels,
        methods=default_registry(),
        log=log,
        key_exchange=EcdhKeyExchange(),
    )
    listener = CedarListener("127.0.0.4", 0, table, security, config=lambda: config, log=log)

    class Loop:
        selector = selectors.DefaultSelector()

        def close_in_child(self) -> None:
            pass

    loop = Loop()
    listener.open(loop)  # type: ignore[arg-type]
    pipe.send(str(listener.sinful))
    while not pipe.poll():
        ready = loop.selector.select(min(0.05, max(listener.timeout(), 0.0)))
        listener.ready([(key.fileobj, key.data) for key, _ in ready])
        listener.tick()
        listener.flush()
    pipe.send(service.matches)
