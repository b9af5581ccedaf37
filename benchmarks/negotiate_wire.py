"""The negotiation cycle with its schedd in-process and over the wire, for negotiator_bench.

Both cases run the negotiator's whole cycle (``NegotiatorService.negotiate``: the jobs from
the schedd, the match, the matches back) on the same slots against a real schedd whose
queue (SQLite) holds the same 10,000 idle jobs. In-process, the schedd is the negotiator's
own object; over the wire it runs in a child process behind a CEDAR listener, reached by
NEGOTIATE (handshake, AES-GCM, one round per submitter, request lists of
NEGOTIATOR_RESOURCE_REQUEST_LIST_SIZE, one request per autocluster with its
ResourceRequestCount). The slots have no MyAddress, so the schedd takes
each match and logs (below the level written) that it cannot claim it: the cycles stay
the same from one run to the next.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import selectors
import statistics
import tempfile
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.interfaces import JobSource, Locator, Match, Significance, SubmitterJobs
from epcore.links.negotiate import RemoteJobSource
from epcore.negotiator import Accountant
from epcore.negotiator.service import NegotiatorService
from epcore.net.dispatch import CommandTable
from epcore.net.handshake import SecurityServer
from epcore.net.keyexchange import EcdhKeyExchange
from epcore.net.listener import CedarListener
from epcore.net.methods import default_registry
from epcore.schedd.cedar import negotiator_handlers
from epcore.schedd.jobqueue import JobQueue
from epcore.schedd.schedd import Schedd

SCHEDD_CONFIG = """
UID_DOMAIN = example.org
ALLOW_NEGOTIATOR = *
SEC_DEFAULT_AUTHENTICATION_METHODS = CLAIMTOBE
CEDAR_CLIENT_TIMEOUT = 60
"""
NEGOTIATOR_CONFIG = """
UID_DOMAIN = example.org
SEC_DEFAULT_AUTHENTICATION_METHODS = CLAIMTOBE
NEGOTIATOR_TIMEOUT = 60
NEGOTIATOR_MAX_TIME_PER_SCHEDD = 600
"""


class Local:
    """The schedd in the negotiator's process (what ScheddService does for it)."""

    def __init__(self, schedd: Schedd) -> None:
        self.schedd = schedd

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
        self.schedd.take_matches(matches, now)


class _Collector:
    def __init__(self, slots: list[ClassAd]) -> None:
        self.slots = slots

    def query(self, my_type: str | None, *args: object, **kwargs: object) -> list[ClassAd]:
        return list(self.slots) if my_type == "Machine" else []

    def update(self, ads: Sequence[ClassAd], now: float) -> None:
        pass


def _schedd(directory: Path, queues: Sequence[SubmitterJobs], now: float) -> Schedd:
    """A schedd whose queue holds the jobs of ``queues`` (their own cluster and proc ids)."""
    queue = JobQueue.open(directory / "job_queue.db")
    log = logging.getLogger("bench.schedd")
    log.setLevel(logging.WARNING)
    schedd = Schedd(
        Config.from_text(SCHEDD_CONFIG, subsystem="SCHEDD"),
        queue,
        Locator("startd"),
        host_name="ap.example.org",
        log=log,
        clock=lambda: now,
    )
    clusters: dict[int, list[ClassAd]] = {}
    for entry in queues:
        for job in entry.jobs:
            clusters.setdefault(int(job.evaluate("ClusterId")), []).append(job)  # type: ignore[arg-type]
    with queue.batch():
        for cluster in sorted(clusters):
            assert queue.next_cluster_id() == cluster
            jobs = clusters[cluster]
            for job_id in queue.submit(cluster, jobs[0], jobs):
                schedd.now_idle(job_id)
    return schedd


def _serve(directory: str, queues: Sequence[SubmitterJobs], now: float, pipe: Connection) -> None:
    """The child: the schedd behind its CEDAR listener until the parent closes the pipe."""
    schedd = _schedd(Path(directory), queues, now)
    config = Config.from_text(SCHEDD_CONFIG, subsystem="SCHEDD")
    log = logging.getLogger("bench.schedd")
    table = CommandTable()
    for command, handler in negotiator_handlers(
        Local(schedd),  # type: ignore[arg-type]
        lambda: config,
        log=log,
        clock=lambda: now,
    ).items():
        table.register(command, handler)
    security = SecurityServer(
        lambda: config,
        table.levels,
        methods=default_registry(),
        log=log,
        key_exchange=EcdhKeyExchange(),
    )
    listener = CedarListener("127.0.0.1", 0, table, security, config=lambda: config, log=log)

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


def _service(source: JobSource, slots: list[ClassAd], directory: Path) -> NegotiatorService:
    config = Config.from_text(NEGOTIATOR_CONFIG, subsystem="NEGOTIATOR")
    schedds: Locator[JobSource] = Locator("schedd")
    schedds.register("schedd", source)
    log = logging.getLogger("bench.negotiator")
    log.setLevel(logging.WARNING)
    return NegotiatorService(
        Accountant.empty(config),
        config=lambda: config,
        collector=_Collector(slots),  # type: ignore[arg-type]
        schedds=schedds,
        accountant_file=str(directory / "accountant"),
        ad_name="cm.example.org",
        log=log,
        clock=time.time,
    )


def wire_case(
    slots: list[ClassAd], queues: Sequence[SubmitterJobs], now: float, runs: int
) -> tuple[list[float], list[float], int]:
    """Cycle times in-process and over the wire, interleaved (same load for both), and the
    matches of the last cycle."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "local").mkdir()
        (root / "remote").mkdir()
        local = _service(Local(_schedd(root / "local", queues, now)), slots, root)
        parent, child = multiprocessing.get_context("fork").Pipe()
        server = multiprocessing.get_context("fork").Process(
            target=_serve, args=(str(root / "remote"), queues, now, child), daemon=True
        )
        server.start()
        address = parent.recv()
        config = Config.from_text(NEGOTIATOR_CONFIG, subsystem="NEGOTIATOR")
        names = [queue.submitter for queue in queues]
        link = RemoteJobSource(
            address,
            lambda: [ClassAd({"Name": name, "ScheddIpAddr": address}) for name in names],
            lambda: config,
            name="cm.example.org",
            log=logging.getLogger("bench.negotiator"),
        )
        remote = _service(link, slots, root)
        in_process: list[float] = []
        wire: list[float] = []
        try:
            for _ in range(runs):
                for service, times in ((local, in_process), (remote, wire)):
                    began = time.perf_counter()
                    service.negotiate(time.time())
                    times.append(time.perf_counter() - began)
        finally:
            parent.send("stop")
            server.join(10)
            if server.is_alive():
                os.kill(server.pid or 0, 9)
        matches = int(remote.last_cycle_stats.evaluate("LastNegotiationCycleMatches0"))  # type: ignore[arg-type]
        failed = remote.last_cycle_stats.evaluate("LastNegotiationCycleScheddsFailed0")
        assert failed == "", f"the wire case failed: {failed}"
        return in_process, wire, matches


def describe(in_process: list[float], wire: list[float], matches: int) -> str:
    """The row negotiator_bench prints."""
    inside, outside = statistics.median(in_process), statistics.median(wire)
    return (
        f"whole cycle (NegotiatorService) with the schedd in-process: median {inside:.3f} s "
        f"({', '.join(f'{t:.3f}' for t in in_process)}); over CEDAR (NEGOTIATE, another "
        f"process): median {outside:.3f} s ({', '.join(f'{t:.3f}' for t in wire)}); "
        f"{matches} matches; wire / in-process {outside / inside:.2f}"
    )
