"""A central manager against thousands of execute hosts (issue 23, must-show 4).

From the project root, as root::

    python3 benchmarks/pool_scale_bench.py                 # 200 and 2,000 hosts, 20,000 jobs
    python3 benchmarks/pool_scale_bench.py --hosts 200,1000,2000 --interval 20
    python3 benchmarks/pool_scale_bench.py --quick         # a smoke test: 10 and 20 hosts

The central manager is a real ``ep run --role central-manager`` process (collector and
negotiator) on 127.0.0.2. Each simulated execute host is the execute host's own collector
link (``RemoteCollector``: a worker thread, UPDATE_STARTD_AD over CEDAR with a DAEMON token,
the session resumed, the connection kept) sending the slot ads epcore's startd builds for
a machine of ``--slots`` one-core static slots (names, addresses, memory, speed and load
vary by host) every ``--interval`` seconds, UPDATE_INTERVAL scaled down from 60 s; the
hosts are threads in ``--processes`` processes. The jobs are ``--jobs`` idle jobs of five
submitters in 100 autoclusters in a real schedd's SQLite queue, in a process of its own
behind a CEDAR listener on 127.0.0.4, which the negotiator reaches by NEGOTIATE (its
Submitter ads name it) with the same token.

For each number of hosts, on a new central manager:

- **updates**: once every host's ads are in, the collector's UpdatesTotal summed over its
  ads, twice ``--window`` seconds apart: updates handled per second, against the rate
  offered (hosts x slots / interval) and the target's (2,000 x slots / 60 s); the collector's
  CPU per update over that window.
- **negotiation**: ``--cycles`` cycles, each asked for by RESCHEDULE; the negotiator's own
  LastNegotiationCycleDuration0 (the whole cycle: jobs fetched over NEGOTIATE, matching,
  matches sent) and matches; the updates handled per second while cycles ran.
- **stalls**: a probe (a READ query that matches no ad, a new connection each time) every
  0.25 s, the quiet window's and the cycles' median and worst answer times: a loop that
  negotiates holds every update and query waiting.
- **lost**: at the end the hosts' links say what they sent; the collector's UpdatesTotal
  against that (lost: sent and never counted; coalesced: replaced by the next update before
  it went out, because the link fell behind).
- **memory**: the central manager's RSS once every ad is in, and its peak (VmHWM).

The figures go to the standard output, one block per size and the growth from the
smallest to the largest. The machine's other work weighs on everything: the hosts and the
schedd share the same CPUs as the central manager.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _pool import kill_tree, start_ep, wait
from _scale_peers import SUBMITTERS, run_hosts, serve_schedd

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.links.collector import RemoteCollector
from epcore.net import commands
from epcore.net.client import connect, query_collector, start_command
from epcore.net.conversation import run_blocking
from epcore.net.keyexchange import EcdhClientKeyExchange
from epcore.pool.personal import personal_config_text

CM_IP = "127.0.0.2"
DOMAIN = "epcore.test"
TARGET_INTERVAL = 60.0
TARGET_CYCLE = 5.0
SECURITY = f"""
UID_DOMAIN = {DOMAIN}
TRUST_DOMAIN = {DOMAIN}
SEC_DAEMON_AUTHENTICATION_METHODS = TOKEN
ALLOW_DAEMON = condor@{DOMAIN}
SEC_PASSWORD_DIRECTORY = {{keys}}
"""
CENTRAL_MANAGER = """
DAEMON_LIST = MASTER COLLECTOR NEGOTIATOR
NETWORK_INTERFACE = {ip}
COLLECTOR_HOST = {ip}:{port}
NEGOTIATOR_INTERVAL = 3600
NEGOTIATOR_MIN_INTERVAL = 0
NEGOTIATOR_TIMEOUT = 60
NEGOTIATOR_MAX_TIME_PER_SCHEDD = 600
COLLECTOR_MAX_FILE_DESCRIPTORS = 20000
"""
HOSTS = """
COLLECTOR_HOST = {ip}:{port}
SEC_TOKEN_DIRECTORY = {tokens}
"""
SCHEDD = """
ALLOW_NEGOTIATOR = condor@{domain}
SEC_NEGOTIATOR_AUTHENTICATION = REQUIRED
SEC_NEGOTIATOR_AUTHENTICATION_METHODS = IDTOKENS
CEDAR_CLIENT_TIMEOUT = 120
"""


@attrs.frozen
class Figures:
    """What one size of pool measured."""

    hosts: int
    ads: int
    offered: float
    handled: float
    cpu_per_update_ms: float
    handled_negotiating: float
    cycles: list[float]
    #: Per cycle: the central manager's CPU seconds less the collector's share (the updates
    #: handled meanwhile at the quiet window's CPU per update), and the schedd's.
    cycle_cpu: list[float]
    schedd_cpu: list[float]
    matches: int
    jobs: int
    probe_quiet: list[float]
    probe_negotiating: list[float]
    sent: int
    counted: int
    coalesced: int
    failures: int
    rss_mb: float
    peak_mb: float
    client_cpu: float


def _free_port(ip: str) -> int:
    with socket.socket() as probe:
        probe.bind((ip, 0))
        return int(probe.getsockname()[1])


def _token(config_path: Path, directory: Path) -> None:
    """A DAEMON token for condor@DOMAIN (``ep token create``) in ``directory``."""
    command = ["token", "create", "--config", str(config_path), "--identity", f"condor@{DOMAIN}"]
    made = subprocess.run(
        [sys.executable, "-m", "epcore.cli.main", *command],
        capture_output=True,
        text=True,
        check=True,
    )
    directory.mkdir(mode=0o700, exist_ok=True)
    (directory / "daemon").write_text(made.stdout.strip() + "\n")
    (directory / "daemon").chmod(0o600)


class CentralManager:
    """``ep run --role central-manager`` in ``local`` (its configuration written there)."""

    def __init__(self, local: Path, keys: Path, extra: str) -> None:
        local.mkdir()
        self.local = local
        self.port = _free_port(CM_IP)
        self.config_path = local / "condor_config"
        self.config_path.write_text(
            personal_config_text(str(local))
            + SECURITY.format(keys=keys)
            + CENTRAL_MANAGER.format(ip=CM_IP, port=self.port)
            + extra.replace("\\n", "\n")
            + "\n"
        )
        self.process = start_ep(
            ["run", "--role", "central-manager", "--config", str(self.config_path)],
            local / "ep.out",
        )
        wait(self._answers, 60, "the central manager")
        self.config = Config.load(self.config_path)
        self.psutil = psutil.Process(self.process.pid)

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            raise SystemExit((self.local / "ep.out").read_text()[-3000:])
        return (self.local / "log" / ".collector_address").exists()

    def query(self, command: commands.Command, projection: list[str]) -> list[ClassAd]:
        """The answer to a query, asked again (three times at most) when the central manager
        was too busy to take the connection in time."""
        for attempt in range(3):
            try:
                return query_collector(
                    CM_IP, self.port, command.number, self.config, projection=projection
                )
            except OSError:
                if attempt == 2:
                    raise
        raise AssertionError("not reached")

    def updates(self) -> int:
        """The UpdatesTotal of every slot ad, summed."""
        ads = self.query(commands.QUERY_STARTD_ADS, ["UpdatesTotal"])
        return sum(int(ad.evaluate("UpdatesTotal") or 0) for ad in ads)  # type: ignore[call-overload]

    def negotiator(self) -> ClassAd | None:
        found = self.query(commands.QUERY_NEGOTIATOR_ADS, [])
        return found[0] if found else None

    def reschedule(self) -> None:
        sock, stream = connect(CM_IP, self.port)
        with sock:
            run_blocking(
                sock,
                stream,
                start_command(
                    stream,
                    commands.NEGOTIATOR_RESCHEDULE.number,
                    self.config,
                    key_exchange=EcdhClientKeyExchange(),
                ),
            )

    def cpu(self) -> float:
        times = self.psutil.cpu_times()
        return float(times.user + times.system)

    def memory_mb(self) -> tuple[float, float]:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(30)
        kill_tree(self.process, str(self.config_path))


class Probe:
    """A READ query that matches nothing, every ``period`` seconds, in a thread: how long the
    central manager takes to answer, by phase (set :attr:`phase`)."""

    def __init__(self, manager: CentralManager, period: float = 0.25) -> None:
        self.manager = manager
        self.period = period
        self.phase = ""
        self.times: dict[str, list[float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        config = self.manager.config
        while not self._stop.wait(self.period):
            phase = self.phase
            began = time.perf_counter()
            with contextlib.suppress(OSError, Exception):
                query_collector(
                    CM_IP,
                    self.manager.port,
                    commands.QUERY_COLLECTOR_ADS.number,
                    config,
                    constraint="false",
                )
            if phase:
                self.times.setdefault(phase, []).append(time.perf_counter() - began)

    @contextlib.contextmanager
    def running(self) -> Iterator[Probe]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(30)


def _advertise_submitters(manager: CentralManager, schedd: str, hosts_config: Path) -> None:
    """The Submitter ads that send the negotiator to the schedd, as a schedd sends them."""
    config = Config.load(hosts_config)
    link = RemoteCollector(
        lambda: config,
        address=lambda: ("127.0.0.4", 9),
        subsystem="SCHEDD",
        log=__import__("logging").getLogger("bench.submitters"),
    )
    link.open(None)  # type: ignore[arg-type]
    ads = [
        ClassAd(
            {"MyType": "Submitter", "Name": f"{owner}@{DOMAIN}", "ScheddIpAddr": schedd}
            | {"ScheddName": "ap.example.org", "SubmitterTag": ""}
        )
        for owner in SUBMITTERS
    ]
    link.update(ads, time.time())
    if not link.wait_sent(30):
        raise SystemExit("the submitters' ads did not reach the central manager")
    link.close()
    wait(
        lambda: len(manager.query(commands.QUERY_SUBMITTOR_ADS, ["Name"])) == len(SUBMITTERS),
        30,
        "the submitters' ads",
    )


def _one_cycle(manager: CentralManager) -> ClassAd:
    """Ask for a cycle (RESCHEDULE) and wait for the negotiator's ad that reports it."""
    before = manager.negotiator()
    seen = None if before is None else before.evaluate("LastNegotiationCycleTime0")
    asked = int(time.time())
    manager.reschedule()
    found: list[ClassAd] = []

    def done() -> bool:
        ad = manager.negotiator()
        stamp = None if ad is None else ad.evaluate("LastNegotiationCycleTime0")
        if ad is None or stamp == seen or not isinstance(stamp, int) or stamp < asked - 1:
            return False
        found.append(ad)
        return True

    wait(done, 600, "a negotiation cycle", poll=0.5)
    return found[-1]


def measure(
    args: argparse.Namespace, hosts: int, root: Path, schedd: str, schedd_pid: int
) -> Figures:
    """One size of pool, on a new central manager (module docstring)."""
    schedd_process = psutil.Process(schedd_pid)
    keys = root / "keys"
    manager = CentralManager(root / f"cm{hosts}", keys, args.cm_config)
    tokens = root / "tokens"
    if not tokens.exists():
        _token(manager.config_path, tokens)
    # The negotiator's own (for NEGOTIATE at the schedd), and the benchmark's RESCHEDULE's.
    (manager.local / "tokens.d").mkdir(mode=0o700, exist_ok=True)
    (manager.local / "tokens.d" / "daemon").write_text((tokens / "daemon").read_text())
    (manager.local / "tokens.d" / "daemon").chmod(0o600)
    hosts_config = root / f"hosts{hosts}.config"
    hosts_config.write_text(
        SECURITY.format(keys=keys) + HOSTS.format(ip=CM_IP, port=manager.port, tokens=tokens)
    )
    context = multiprocessing.get_context("fork")
    pipes, workers = [], []
    try:
        _advertise_submitters(manager, schedd, hosts_config)
        per = -(-hosts // args.processes)
        for first in range(0, hosts, per):
            parent, child = context.Pipe()
            count = min(per, hosts - first)
            worker = context.Process(
                target=run_hosts,
                args=(first, count, hosts, args.slots, args.interval, str(hosts_config), child),
                daemon=True,
            )
            worker.start()
            pipes.append(parent)
            workers.append(worker)
        for pipe in pipes:
            pipe.recv()
        for pipe in pipes:
            pipe.send("start")
        ads = hosts * args.slots
        wait(
            lambda: len(manager.query(commands.QUERY_STARTD_ADS, ["Name"])) >= ads,
            args.interval * 3 + 120,
            f"{ads} slot ads",
            poll=2.0,
        )
        time.sleep(args.interval)  # every host past its first (authenticating) update
        rss, _ = manager.memory_mb()
        with Probe(manager).running() as probe:
            probe.phase = "quiet"
            first_count, first_cpu, began = manager.updates(), manager.cpu(), time.monotonic()
            time.sleep(args.window)
            last_count, last_cpu, ended = manager.updates(), manager.cpu(), time.monotonic()
            handled = (last_count - first_count) / (ended - began)
            cpu_per_update = 1000 * (last_cpu - first_cpu) / max(last_count - first_count, 1)
            probe.phase = "negotiating"
            cycles, matches, jobs = [], 0, 0
            cycle_cpu: list[float] = []
            schedd_cpu: list[float] = []
            neg_began, neg_first = time.monotonic(), manager.updates()
            for _ in range(args.cycles):
                cpu_before, updates_before = manager.cpu(), manager.updates()
                schedd_before = sum(schedd_process.cpu_times()[:2])
                ad = _one_cycle(manager)
                collector_share = (manager.updates() - updates_before) * cpu_per_update / 1000
                cycle_cpu.append(manager.cpu() - cpu_before - collector_share)
                schedd_cpu.append(sum(schedd_process.cpu_times()[:2]) - schedd_before)
                cycles.append(float(ad.evaluate("LastNegotiationCycleDuration0")))  # type: ignore[arg-type]
                matches = int(ad.evaluate("LastNegotiationCycleMatches0"))  # type: ignore[call-overload]
                jobs = int(ad.evaluate("LastNegotiationCycleNumIdleJobs0"))  # type: ignore[call-overload]
                failed = ad.evaluate("LastNegotiationCycleScheddsFailed0")
                if failed:
                    raise SystemExit(f"the negotiation with the schedd failed: {failed}")
            neg_last, neg_ended = manager.updates(), time.monotonic()
            probe.phase = ""
        _, peak = manager.memory_mb()
        for pipe in pipes:
            pipe.send("stop")
        for pipe in pipes:
            pipe.send("report")
        reports = [pipe.recv() for pipe in pipes]
        time.sleep(1.0)
        counted = manager.updates()
    finally:
        for worker in workers:
            worker.join(30)
            if worker.is_alive():
                worker.kill()
        manager.stop()
    sent = sum(r["sent"] for r in reports)
    return Figures(
        hosts=hosts,
        ads=ads,
        offered=ads / args.interval,
        handled=handled,
        cpu_per_update_ms=cpu_per_update,
        handled_negotiating=(neg_last - neg_first) / (neg_ended - neg_began),
        cycles=cycles,
        cycle_cpu=cycle_cpu,
        schedd_cpu=schedd_cpu,
        matches=matches,
        jobs=jobs,
        probe_quiet=probe.times.get("quiet", []),
        probe_negotiating=probe.times.get("negotiating", []),
        sent=sent,
        counted=counted,
        coalesced=sum(r["queued"] for r in reports) - sent,
        failures=sum(r["failures"] for r in reports),
        rss_mb=rss,
        peak_mb=peak,
        client_cpu=sum(r["cpu"] for r in reports),
    )


def _ms(times: list[float]) -> str:
    if not times:
        return "none"
    return f"median {1000 * statistics.median(times):.0f} ms, worst {1000 * max(times):.0f} ms"


def report(figures: Figures, slots: int) -> None:
    target_rate = 2000 * slots / TARGET_INTERVAL
    cycle = statistics.median(figures.cycles)
    print(f"--- {figures.hosts} hosts, {figures.ads} slot ads")
    print(
        f"updates: offered {figures.offered:.0f}/s, handled {figures.handled:.0f}/s "
        f"(target's rate: {target_rate:.0f}/s), {figures.cpu_per_update_ms:.2f} ms CPU per update"
    )
    print(
        f"negotiation cycle of {figures.jobs} jobs: median {cycle:.2f} s "
        f"({', '.join(f'{c:.2f}' for c in figures.cycles)}), {figures.matches} matches "
        f"(target <= {TARGET_CYCLE:.0f} s); updates handled meanwhile "
        f"{figures.handled_negotiating:.0f}/s"
    )
    print(
        f"CPU per cycle (from RESCHEDULE to the negotiator's ad): central manager less its "
        f"collector's share median {statistics.median(figures.cycle_cpu):.2f} s "
        f"({', '.join(f'{c:.2f}' for c in figures.cycle_cpu)}), schedd median "
        f"{statistics.median(figures.schedd_cpu):.2f} s"
    )
    print(
        f"probe answers: quiet {_ms(figures.probe_quiet)}; cycles {_ms(figures.probe_negotiating)}"
    )
    print(
        f"updates sent {figures.sent}, counted by the collector {figures.counted} "
        f"(lost {figures.sent - figures.counted}), coalesced before sending {figures.coalesced}, "
        f"failed sends {figures.failures}; the hosts' CPU {figures.client_cpu:.1f} s"
    )
    print(
        f"central manager RSS {figures.rss_mb:.1f} MB with every ad in, "
        f"peak {figures.peak_mb:.1f} MB"
    )


def growth(first: Figures, last: Figures) -> None:
    scale = last.hosts / first.hosts

    def ratio(a: float, b: float) -> str:
        return f"x{b / a:.2f}" if a else "n/a"

    per_ad = (last.rss_mb - first.rss_mb) / max(last.ads - first.ads, 1) * 1024
    print(f"--- growth from {first.hosts} to {last.hosts} hosts (x{scale:.0f})")
    print(
        f"updates handled {ratio(first.handled, last.handled)}; CPU per update "
        f"{ratio(first.cpu_per_update_ms, last.cpu_per_update_ms)}; cycle "
        f"{ratio(statistics.median(first.cycles), statistics.median(last.cycles))} (its CPU "
        f"{ratio(statistics.median(first.cycle_cpu), statistics.median(last.cycle_cpu))}); RSS "
        f"{ratio(first.rss_mb, last.rss_mb)} ({per_ad:.1f} KB per added ad)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", default="200,2000", help="the sizes, comma-separated")
    parser.add_argument("--slots", type=int, default=10, help="static slots per host")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--interval", type=float, default=15.0, help="UPDATE_INTERVAL, seconds")
    parser.add_argument("--window", type=float, default=30.0, help="seconds of quiet measuring")
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--processes", type=int, default=2, help="processes of simulated hosts")
    parser.add_argument(
        "--cm-config", default="", help="lines added to the central manager's configuration"
    )
    parser.add_argument("--quick", action="store_true", help="10 and 20 hosts, 200 jobs")
    args = parser.parse_args(argv)
    if args.quick:
        args.hosts, args.jobs, args.interval, args.window, args.cycles = "10,20", 200, 2.0, 3.0, 1
    sizes = [int(size) for size in args.hosts.split(",")]
    print(
        f"hosts {sizes}, {args.slots} slots each, every {args.interval:g} s (UPDATE_INTERVAL "
        f"scaled from {TARGET_INTERVAL:g} s), {args.jobs} jobs, {args.processes} host processes"
    )
    with tempfile.TemporaryDirectory(prefix="ep_scale_") as scratch:
        root = Path(scratch)
        keys = root / "keys"
        keys.mkdir(mode=0o700)
        context = multiprocessing.get_context("fork")
        parent, child = context.Pipe()
        (root / "schedd").mkdir()
        schedd_config = SECURITY.format(keys=keys) + SCHEDD.format(domain=DOMAIN)
        server = context.Process(
            target=serve_schedd,
            args=(str(root / "schedd"), args.jobs, schedd_config, child),
            daemon=True,
        )
        server.start()
        if not parent.poll(300):
            raise SystemExit("the schedd did not start")
        schedd = parent.recv()
        results: list[Figures] = []
        try:
            for size in sizes:
                results.append(measure(args, size, root, schedd, server.pid))
                report(results[-1], args.slots)
                sys.stdout.flush()
        finally:
            parent.send("stop")
            server.join(10)
            if server.is_alive():
                server.kill()
        if len(results) > 1:
            growth(results[0], results[-1])


if __name__ == "__main__":
    main()
