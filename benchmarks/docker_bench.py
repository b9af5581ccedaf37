"""From submission to the first instruction of a docker job, against ``docker run``.

Run from the project root, as root (cgroups need it), with dockerd running and the docker
plugin installed (``python3 -m pip install -e '.[test]' ./plugins/docker``)::

    python3 benchmarks/docker_bench.py            # 21 rounds of one job per side
    python3 benchmarks/docker_bench.py --quick    # 5 rounds: a smoke test
    python3 benchmarks/docker_bench.py --jobs 41  # steadier numbers

The moment a job runs is when its first instruction executes in the container. Each job is
``cat /proc/uptime``, so its output holds the system's uptime at its start, on the clock the
host reads just before it submits (busybox has no date applet with nanoseconds; /proc/uptime
is kept in hundredths of a second on both sides, so each latency is good to 0.01 s).

The image is built here from the static /bin/busybox (Debian's busybox-static) with ``sh``,
``cat``, ``true`` and ``sleep`` as symlinks, under a unique tag, and removed at the end.

- Baseline: N sequential ``docker run --rm --network none IMAGE cat /proc/uptime`` through the
  docker command, timed from just before the subprocess starts to the uptime the container
  printed; and, for information, the same through the docker SDK (``containers.run`` with
  ``remove=True``).
- epcore: an ``ep run`` personal pool (its own LOCAL_DIR in a temporary directory, a unique
  BASE_CGROUP, RUNBENCHMARKS False, DOCKER_EXTRA_ARGUMENTS ``--label epcore.bench=<tag>``, and
  the intervals of a responsive pool: NEGOTIATOR_INTERVAL 2 and NEGOTIATOR_MIN_INTERVAL 0, so
  a submission is negotiated at the next turn of the pool's loop). N docker-universe jobs are
  submitted one at a time through the pool's socket as ``ep submit`` does, each waited for
  until it has left the queue; its output file (transferred back to the submit directory)
  holds the uptime, and the latency is that minus the host's uptime read just before the
  submission.

The sides take turns: each round runs one ``docker run``, one SDK run and one pool job, so
that the machine's other work weighs on all three alike; a warm-up round comes first (the
image's layers cached, the pool's first claim and the plugin's first connection made). The
pool waits, idle, while the other two run. Printed: median and p90 of each side, the ratio
epcore / docker run of the medians, and the target (at most 1.2). Where epcore's time goes
comes from dockerd's own events (``create`` and ``start``, in nanoseconds, for the containers
carrying the benchmark's label), on the same clock: submission to ``create``, ``create`` to
``start``, and the job's first instruction relative to ``start``; the same split is printed for
``docker run``.

It is a measurement, not a test: it exits 0 whether or not the target is met.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import contextlib

from _pool import personal_pool, remove_cgroup, wait

from epcore.config import Config
from epcore.pool.requests import PoolClient
from epcore.submit import LocalSubmitHost, SubmitContext, build_jobs, parse_submit

try:
    import docker
    import docker.errors
except ImportError as missing_sdk:
    message = "docker_bench needs the docker SDK: python3 -m pip install -e ./plugins/docker"
    raise SystemExit(message) from missing_sdk

#: Who the benchmark's jobs belong to: root submits them for nobody (the pool refuses a job
#: owned by root, as HTCondor does; before that, root's jobs ran as nobody anyway).
JOB_OWNER = "nobody"

RATIO_TARGET = 1.2
BUSYBOX = Path("/bin/busybox")
APPLETS = ("sh", "cat", "true", "sleep")
BENCH_LABEL = "epcore.bench"

POOL_EXTRA = """\
BASE_CGROUP = {cgroup}
RUNBENCHMARKS = False
NEGOTIATOR_INTERVAL = 2
NEGOTIATOR_MIN_INTERVAL = 0
DOCKER_EXTRA_ARGUMENTS = --label {label}={tag}
"""

SUBMIT = """\
universe = docker
docker_image = {image}
docker_network_type = none
executable = /bin/cat
arguments = /proc/uptime
transfer_executable = false
should_transfer_files = YES
output = out.$(Cluster)
request_cpus = 1
request_memory = 64
request_disk = 1024
queue
"""


@attrs.frozen
class Sample:
    """One job: the host's uptime just before it was asked for, the uptime its first
    instruction read, and its container's create and start events (uptime seconds; None when
    dockerd did not report them)."""

    asked: float
    ran: float
    created: float | None = None
    started: float | None = None

    @property
    def latency(self) -> float:
        return self.ran - self.asked


def uptime() -> float:
    """The system's uptime in seconds, as a job's ``cat /proc/uptime`` reads it."""
    with open("/proc/uptime", encoding="ascii") as handle:
        return float(handle.read().split()[0])


def printed_uptime(text: str) -> float:
    """The first number of ``cat /proc/uptime``'s output."""
    try:
        return float(text.split()[0])
    except (IndexError, ValueError) as error:
        raise SystemExit(f"the job printed {text!r}, not /proc/uptime") from error


def wall_to_uptime() -> Callable[[int], float]:
    """Converts dockerd's event times (epoch nanoseconds) into uptime seconds."""
    offset = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
    return lambda nanoseconds: nanoseconds / 1e9 - offset


def busybox_rootfs() -> bytes:
    """A tar archive of a root filesystem: /bin/busybox, a few applets as symlinks, /tmp."""
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:

        def add(name: str, kind: bytes, mode: int, data: bytes = b"", target: str = "") -> None:
            member = tarfile.TarInfo(name)
            member.type, member.mode, member.mtime = kind, mode, int(time.time())
            member.size, member.linkname = len(data), target
            tar.addfile(member, io.BytesIO(data) if data else None)

        add("bin", tarfile.DIRTYPE, 0o755)
        add("tmp", tarfile.DIRTYPE, 0o1777)
        add("bin/busybox", tarfile.REGTYPE, 0o755, BUSYBOX.read_bytes())
        for applet in APPLETS:
            add(f"bin/{applet}", tarfile.SYMTYPE, 0o777, target="busybox")
    return archive.getvalue()


def docker_run(image: str, tag: str) -> Sample:
    asked = uptime()
    command = ["docker", "run", "--rm", "--network", "none", "--label", f"{BENCH_LABEL}={tag}"]
    done = subprocess.run(
        [*command, image, "cat", "/proc/uptime"], capture_output=True, text=True, check=True
    )
    return Sample(asked, printed_uptime(done.stdout))


def sdk_run(client: docker.DockerClient, image: str, tag: str) -> Sample:
    asked = uptime()
    output = client.containers.run(
        image,
        ["cat", "/proc/uptime"],
        remove=True,
        network_mode="none",
        labels={BENCH_LABEL: tag},
    )
    return Sample(asked, printed_uptime(bytes(output).decode()))


def pool_job(client: PoolClient, config: Config, image: str, root: Path) -> Sample:
    """One docker job through the pool, waited for until it has left the queue."""
    context = SubmitContext(
        owner=JOB_OWNER, submit_dir=str(root), now=int(time.time()), config=config
    )
    asked = uptime()
    cluster_id = client.new_cluster()
    cluster = build_jobs(
        parse_submit(SUBMIT.format(image=image)), context, LocalSubmitHost(), cluster_id=cluster_id
    )
    client.submit(cluster_id, cluster.cluster_ad, cluster.procs)
    constraint = f"ClusterId == {cluster_id}"
    # The latency comes from the job's own output, so looking at the queue later does not
    # change it; looking less often leaves the CPUs to the pool and dockerd meanwhile.
    wait(lambda: not client.query_jobs(constraint, ["ClusterId"]), 120, "the docker job", 0.1)
    output = root / f"out.{cluster_id}"
    if not output.exists():
        history = client.query_jobs(constraint, history=True)
        status = history[0] if history else "not in the history either"
        raise SystemExit(f"job {cluster_id} left no {output.name}: {status}")
    return Sample(asked, printed_uptime(output.read_text()))


def with_events(
    client: docker.DockerClient, tag: str, samples: Sequence[Sample], since: float
) -> list[Sample]:
    """The samples with their containers' create and start times from dockerd's events
    (the containers were made in the order of the samples)."""
    to_uptime = wall_to_uptime()
    # ``until`` as "seconds.nanoseconds" text, which dockerd reads: a whole second in the
    # future would make it wait for that second, one in the past would lose the last events.
    # The SDK passes the text through; its type stubs only know int and datetime.
    until = f"{time.time():.9f}"
    events = client.events(
        since=int(since),
        until=until,  # type: ignore[call-overload]
        decode=True,
        filters={"label": f"{BENCH_LABEL}={tag}"},
    )
    created: list[float] = []
    started: list[float] = []
    for event in events:
        if event.get("Type") != "container":
            continue
        moment = to_uptime(int(event["timeNano"]))
        if event.get("Action") == "create":
            created.append(moment)
        elif event.get("Action") == "start":
            started.append(moment)
    # /proc/uptime is truncated to hundredths, so a container made after a reading is seen
    # at or after it; each sample takes the first create from then until its job ran, and
    # the first start after that create (dockerd reports it just after the job began).
    timed = []
    for sample in samples:
        create = next((c for c in sorted(created) if sample.asked <= c <= sample.ran), None)
        start = next(
            (s for s in sorted(started) if create is not None and create <= s <= sample.ran + 1),
            None,
        )
        timed.append(attrs.evolve(sample, created=create, started=start))
    return timed


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(fraction * len(ordered)), len(ordered) - 1)]


def report(name: str, samples: Sequence[Sample]) -> float:
    latencies = [s.latency for s in samples]
    median = statistics.median(latencies)
    p90 = percentile(latencies, 0.9)
    print(f"  {name:<22} median {median * 1000:7.0f} ms   p90 {p90 * 1000:7.0f} ms")
    return median


def breakdown(name: str, samples: Sequence[Sample]) -> None:
    timed = [s for s in samples if s.created is not None and s.started is not None]
    if not timed:
        print(f"  {name}: dockerd reported no create/start events")
        return
    to_create = statistics.median([s.created - s.asked for s in timed if s.created is not None])
    create_to_start = statistics.median(
        [s.started - s.created for s in timed if s.started is not None and s.created is not None]
    )
    start_to_run = statistics.median([s.ran - s.started for s in timed if s.started is not None])
    print(
        f"  {name:<22} to create {to_create * 1000:6.0f} ms, create->start "
        f"{create_to_start * 1000:6.0f} ms, first instruction {start_to_run * 1000:+6.0f} ms "
        "from start (medians)"
    )


@attrs.frozen
class Results:
    """The samples of each side, in the order they were taken."""

    docker_run: list[Sample]
    sdk: list[Sample]
    pool: list[Sample]


def measure(count: int, root: Path, image: str, tag: str, cgroup: str) -> Results:
    """``count`` rounds of one job per side, the sides taking turns within each round so that
    the machine's other work weighs on all of them alike; a warm-up round first."""
    extra = POOL_EXTRA.format(cgroup=cgroup, label=BENCH_LABEL, tag=tag)
    client = docker.from_env()
    try:
        with personal_pool(root / "pool", extra, root / "pool.out") as pool:
            projection = ["HasDocker", "DockerOfflineReason"]
            machine = pool.client.query_ads("Machine", projection=projection)
            if not machine or machine[0].evaluate("HasDocker") is not True:
                reason = machine[0].evaluate("DockerOfflineReason") if machine else "no slot ad"
                raise SystemExit(f"the pool's startd cannot run docker jobs: {reason}")
            config = Config.load(str(pool.config_path), subsystem="TOOL")
            results = Results([], [], [])
            for round_number in range(count + 1):
                since = time.time()
                round_samples = [
                    docker_run(image, tag),
                    sdk_run(client, image, tag),
                    pool_job(pool.client, config, image, root),
                ]
                if round_number == 0:
                    continue  # the warm-up
                # Asked after each round: dockerd keeps only its last 256 events.
                plain, sdk, job = with_events(client, tag, round_samples, since)
                results.docker_run.append(plain)
                results.sdk.append(sdk)
                results.pool.append(job)
        return results
    finally:
        client.close()


def problem() -> str | None:
    """Why the benchmark cannot run here, or None."""
    if os.geteuid() != 0:
        return "docker_bench needs root (cgroups)"
    if shutil.which("docker") is None:
        return "docker_bench needs the docker command on PATH (apt-get install docker.io)"
    if not BUSYBOX.exists():
        return f"{BUSYBOX} is missing: apt-get install busybox-static"
    try:
        client = docker.from_env()
        try:
            client.ping()
        finally:
            client.close()
    except (docker.errors.DockerException, OSError) as error:
        return f"dockerd does not answer (is it running?): {error}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    parser.add_argument("--jobs", type=int, default=None, help="rounds (default 21)")
    args = parser.parse_args()
    reason = problem()
    if reason is not None:
        print(reason, file=sys.stderr)
        return 1
    count = args.jobs or (5 if args.quick else 21)
    tag = uuid.uuid4().hex[:8]
    image = f"epcore-bench/busybox:{tag}"
    cgroup = f"ep_bench_{tag[:6]}"
    root = Path(tempfile.mkdtemp(prefix="ep_bench_docker_"))
    # The submit directory (Iwd) is open to all: the jobs are root's, which the startd runs as
    # nobody, and their output comes back to it as their user.
    root.chmod(0o1777)
    client = docker.from_env()
    try:
        client.api.import_image_from_data(
            busybox_rootfs(),
            repository=image.split(":")[0],
            tag=tag,
            changes=[f"LABEL {BENCH_LABEL}={tag}", 'CMD ["/bin/sh"]'],
        )
        results = measure(count, root, image, tag, cgroup)
        print(f"{count} jobs per side of `cat /proc/uptime` in a busybox container, one at a time")
        print("submission (or command) to the job's first instruction:")
        baseline = report("docker run", results.docker_run)
        report("docker SDK", results.sdk)
        epcore = report("ep run (docker job)", results.pool)
        ratio = epcore / baseline
        paired = statistics.median(
            [j.latency - d.latency for j, d in zip(results.pool, results.docker_run, strict=True)]
        )
        print(f"  ep run - docker run, same round (median): {paired * 1000:+.0f} ms")
        print(f"  ratio ep run / docker run (median): {ratio:.2f}   (target <= {RATIO_TARGET})")
        print(f"  target met: {'yes' if ratio <= RATIO_TARGET else 'no'}")
        print("where the time goes (dockerd's create and start events):")
        breakdown("docker run", results.docker_run)
        breakdown("docker SDK", results.sdk)
        breakdown("ep run (docker job)", results.pool)
    finally:
        for container in client.containers.list(
            all=True, filters={"label": f"{BENCH_LABEL}={tag}"}
        ):
            container.remove(force=True)
        with contextlib.suppress(docker.errors.NotFound):
            client.images.remove(image, force=True)
        client.close()
        shutil.rmtree(root, ignore_errors=True)
        remove_cgroup(cgroup)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
