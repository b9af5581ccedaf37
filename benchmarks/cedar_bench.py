"""Collector queries over CEDAR: ``htcondor2`` against a real ``ep run``, beside the local socket.

Run from the project root, as root, after ``python3 -m pip install -e '.[test]'``::

    python3 benchmarks/cedar_bench.py            # 1,000 slot ads, median of 21 queries each
    python3 benchmarks/cedar_bench.py --quick    # 100 slot ads, 5 queries: a smoke test

A personal pool (``ep run``, the personal pool's configuration: CEDAR on 127.0.0.1, a free
port in COLLECTOR_ADDRESS_FILE) gets N made-up slot ads, each a copy of its own real slot ad
under another name, advertised with ``htcondor2.Collector().advertise`` (one connection, as
a startd does). Then each way of asking for every slot ad is timed N times, alternating, and
the median is printed:

- ``htcondor2.Collector().query(AdType.Startd)``: HTCondor's client, C++ decoding, over CEDAR
  (the security handshake included: a tool makes a session per process, then resumes it);
- the same with a projection of two attributes (condor_status' default view asks for a few);
- ``epcore.net.client.query_collector``: epcore's own CEDAR client (``ep status -pool``),
  Python decoding, a new session each time;
- the pool's local socket (``ep status``), epcore's own line protocol;
- the collector's side of the htcondor2 query alone, in this process: the QUERY_STARTD_ADS
  handler over the same ads, the first answer (every ad encoded) and the next ones (each
  stored ad's encoding kept until it is replaced), so that the server's share of the
  htcondor2 figure is known on a machine whose load moves the end-to-end figure.

Then submissions (``--no-submit`` leaves them out): one cluster of N held ``/bin/true`` jobs
(N = the number of ads: 1,000), submitted as the user ``nobody``

- with ``htcondor2.Schedd().submit(Submit(...), count=N)`` over CEDAR (a subprocess that
  becomes nobody after importing htcondor2, so that FS proves who submits), timed inside it;
- through the pool's local socket as ``ep submit`` sends them (root submitting for nobody,
  the submit file parsed and the job ads built in the timed span, as ``ep submit`` does);

alternating, each cluster removed after it is timed, the median of ``--submissions`` (3) each.

The target (issue 22) is a 1,000-ad query through htcondor2 in at most 50 ms. It is a
measurement, not a test: it exits 0 whether or not the target is met.
"""

from __future__ import annotations

import argparse
import logging
import os
import pwd
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._pool import RunningPool, personal_pool, wait
from epcore.classad import ClassAd
from epcore.collector.cedar import cedar_handlers
from epcore.collector.collector import Collector
from epcore.collector.service import CollectorService
from epcore.config import Config
from epcore.net import commands
from epcore.net.client import query_collector
from epcore.net.codec import Writer
from epcore.net.conversation import Send, Stream
from epcore.net.dispatch import CommandContext
from epcore.net.frames import Framer
from epcore.net.handshake import Peer
from epcore.submit import LocalSubmitHost, SubmitContext, build_jobs, parse_submit
from epcore.testing.cedar import run_htcondor2

TARGET_MS = 50.0
EXTRA = """
NUM_CPUS = 1
MEMORY = 1024
RUNBENCHMARKS = False
BASE_CGROUP = epcore_cedar_bench
UPDATE_INTERVAL = 300
"""


def _median_ms(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


#: The jobs each submission queues: held, so that the pool runs none while it is timed.
SUBMIT = "executable = /bin/true\nhold = true\nrequest_memory = 64\nqueue {count}\n"
HTCONDOR2_SUBMIT = """
import time
schedd = htcondor2.Schedd()
sub = htcondor2.Submit({{"executable": "/bin/true", "hold": "true", "request_memory": "64"}})
started = time.perf_counter()
submitted = schedd.submit(sub, count={count})
result = {{"seconds": time.perf_counter() - started, "cluster": submitted.cluster(),
          "procs": submitted.num_procs()}}
"""


def server_side_ms(ads: list[ClassAd], repeat: int) -> tuple[float, float]:
    """Milliseconds of the collector's QUERY_STARTD_ADS handler over ``ads`` in this process:
    the first answer, and the median of ``repeat`` later ones."""
    config = Config.from_text("", subsystem="COLLECTOR")
    service = CollectorService(
        Collector(config),
        config=lambda: config,
        persistent_log="/nonexistent",
        log=logging.getLogger("cedar_bench"),
        clock=time.time,
    )
    service.update(ads, time.time())
    handler = cedar_handlers(service)[commands.QUERY_STARTD_ADS]
    query = ClassAd()
    query["Requirements"] = True
    message = Writer().put_classad(query).bytes()

    def answer() -> int:
        stream = Stream(Framer(), ("127.0.0.1", 9618), ("127.0.0.1", 40000))
        context = CommandContext(stream, Peer(("127.0.0.1", 40000), None, 5))
        conversation = handler(context)
        next(conversation)  # waits for the query
        step = conversation.send(message)
        assert isinstance(step, Send)
        return len(step.message)

    start = time.perf_counter()
    answer()
    first = (time.perf_counter() - start) * 1000
    return first, _median_ms(answer, repeat)


def _remove(pool: RunningPool, cluster: int) -> None:
    pool.client.act("Remove", constraint=f"ClusterId == {cluster}")
    wait(lambda: not pool.client.query_jobs(f"ClusterId == {cluster}", ["ProcId"]), 120, "removal")


def submit_htcondor2(pool: RunningPool, count: int, home: Path) -> float:
    """Seconds htcondor2's submit of ``count`` jobs takes, as nobody (module docstring)."""
    nobody = pwd.getpwnam("nobody")
    code = f"import os\nos.chdir({str(home)!r})\n" + HTCONDOR2_SUBMIT.format(count=count)
    answer = run_htcondor2(
        str(pool.config_path), code, uid=nobody.pw_uid, gid=nobody.pw_gid, timeout=600
    )
    if answer["procs"] != count:
        raise SystemExit(f"htcondor2 queued {answer['procs']} of {count} jobs")
    _remove(pool, int(answer["cluster"]))
    return float(answer["seconds"])


def submit_local(pool: RunningPool, count: int, home: Path) -> float:
    """Seconds ``ep submit``'s way takes for ``count`` jobs of nobody's (module docstring)."""
    config = Config.load(str(pool.config_path), subsystem="TOOL")
    started = time.perf_counter()
    cluster_id = pool.client.new_cluster()
    context = SubmitContext(
        owner="nobody", submit_dir=str(home), now=int(time.time()), config=config
    )
    cluster = build_jobs(
        parse_submit(SUBMIT.format(count=count)), context, LocalSubmitHost(), cluster_id=cluster_id
    )
    ids = pool.client.submit(cluster_id, cluster.cluster_ad, cluster.procs, submission_size=count)
    elapsed = time.perf_counter() - started
    if len(ids) != count:
        raise SystemExit(f"the local socket queued {len(ids)} of {count} jobs")
    _remove(pool, cluster_id)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 ads, 5 queries")
    parser.add_argument("--ads", type=int, default=None, help="made-up slot ads (1000)")
    parser.add_argument("--repeat", type=int, default=None, help="queries per way (21)")
    parser.add_argument("--submissions", type=int, default=None, help="clusters per way (3)")
    parser.add_argument("--no-submit", action="store_true", help="queries only")
    options = parser.parse_args()
    submissions = options.submissions or (1 if options.quick else 3)
    count = options.ads or (100 if options.quick else 1000)
    repeat = options.repeat or (5 if options.quick else 21)
    with tempfile.TemporaryDirectory(prefix="cedar_bench_") as scratch:
        root = Path(scratch)
        with personal_pool(root / "pool", EXTRA, root / "ep_run.out") as pool:
            os.environ["CONDOR_CONFIG"] = str(pool.config_path)
            import classad2
            import htcondor2

            real = pool.client.query_ads("Machine")[0]
            ours: list[ClassAd] = []
            ads = []
            for n in range(count):
                copy = real.copy()
                copy["Name"] = f"slot{n}@bench{n % 50}.example.org"
                copy["Machine"] = f"bench{n % 50}.example.org"
                ours.append(copy)
                ads.append(classad2.ClassAd(str(copy)))
            collector = htcondor2.Collector()
            collector.advertise(ads, "UPDATE_STARTD_AD")
            # The updates are taken in the pool's loop after advertise() returns.
            total = count + 1
            wait(lambda: len(pool.client.query_ads("Machine")) == total, 60, "the ads")
            address = (pool.local_dir / "log" / ".collector_address").read_text().split()[0]
            host, port = address.strip("<>").split(":")
            config = Config.from_text("", subsystem="TOOL")

            def cedar_all() -> object:
                return collector.query(htcondor2.AdType.Startd)

            def cedar_projected() -> object:
                return collector.query(htcondor2.AdType.Startd, True, ["Name", "State"])

            def epcore_client() -> object:
                return query_collector(host, int(port), 5, config)

            def local_socket() -> object:
                return pool.client.query_ads("Machine")

            seen = (len(cedar_all()), len(epcore_client()))  # type: ignore[arg-type]
            if seen != (total, total):
                raise SystemExit(f"the pool holds {total} slot ads but the queries saw {seen}")
            ways = {
                "htcondor2 query, every attribute": cedar_all,
                "htcondor2 query, projection Name State": cedar_projected,
                "epcore CEDAR client (ep status -pool)": epcore_client,
                "local socket (ep status)": local_socket,
            }
            results = {name: _median_ms(way, repeat) for name, way in ways.items()}
            # CPU time, which the machine's load does not stretch as it stretches the clock:
            # the pool's (psutil) and this client's, per htcondor2 query of every attribute.
            pool_process = psutil.Process(pool.process.pid)
            pool_before = sum(pool_process.cpu_times()[:2])
            client_before = time.process_time()
            for _ in range(repeat):
                cedar_all()
            client_cpu = (time.process_time() - client_before) * 1000 / repeat
            pool_cpu = (sum(pool_process.cpu_times()[:2]) - pool_before) * 1000 / repeat
            first, kept = server_side_ms(ours, repeat)
            results["collector's side alone, first answer"] = first
            results["collector's side alone, kept encodings"] = kept
            submitted: dict[str, list[float]] = {"htcondor2": [], "local socket": []}
            if not options.no_submit:
                home = root / "home"
                home.mkdir()
                home.chmod(0o777)
                root.chmod(0o755)
                for _ in range(submissions):
                    submitted["htcondor2"].append(submit_htcondor2(pool, count, home))
                    submitted["local socket"].append(submit_local(pool, count, home))
    print(f"{total} slot ads ({count} advertised), median of {repeat} queries each")
    for name, milliseconds in results.items():
        print(f"  {name:42s} {milliseconds:8.1f} ms")
    print(
        f"  CPU per htcondor2 query of every attribute: the pool {pool_cpu:.1f} ms, "
        f"htcondor2 {client_cpu:.1f} ms (mean of {repeat})"
    )
    verdict = "met" if results["htcondor2 query, every attribute"] <= TARGET_MS else "missed"
    print(f"target: a 1,000-ad htcondor2 query in <= {TARGET_MS:.0f} ms: {verdict}")
    if submitted["htcondor2"]:
        print(f"submission of {count} held jobs as nobody, median of {submissions}")
        for name, seconds in submitted.items():
            median = statistics.median(seconds)
            print(f"  {name:42s} {median * 1000:8.0f} ms  ({count / median:7.0f} jobs/s)")


if __name__ == "__main__":
    main()
