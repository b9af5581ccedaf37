"""From submission to the first instruction: an apptainer container job against a vanilla job,
through the same ``ep run`` pool, in the same run.

Run from the project root, as root (cgroups need it), with the apptainer plugin installed
(``python3 -m pip install -e ./plugins/apptainer``) or not (then it is put on PYTHONPATH here)::

    python3 benchmarks/apptainer_bench.py            # 21 rounds
    python3 benchmarks/apptainer_bench.py --quick    # 5 rounds: a smoke test
    python3 benchmarks/apptainer_bench.py --jobs 41  # steadier numbers
    python3 benchmarks/apptainer_bench.py --vanilla-in-place  # vanilla job without transfer

The runtime is a real ``apptainer`` when one is on PATH, else the plugin tests' stand-in (a
Python script over bubblewrap, which needs bwrap, mksquashfs, unsquashfs and siftool). The image
is a SIF the runtime builds from a root filesystem of the static /bin/busybox (``sh``, ``cat``)
in a temporary directory. Both jobs are ``cat /proc/uptime`` (``transfer_executable = false``):
the vanilla one runs the host's /bin/cat, the container one (``universe = container``,
``container_image = <the SIF>``) the image's. A job's output holds the system's uptime when its
first instruction ran, on the clock the host reads (also /proc/uptime, in hundredths of a
second) just before it submits; the latency is the difference.

The pool has its own LOCAL_DIR, a unique BASE_CGROUP, RUNBENCHMARKS False, NEGOTIATOR_INTERVAL 2
and NEGOTIATOR_MIN_INTERVAL 0, SINGULARITY naming the runtime, and HTCondor's defaults for the
rest (the pre-job test runs before every container job). The vanilla job's files travel
(should_transfer_files = YES): its starter fetches its (empty) input from the schedd over CEDAR
before it starts it, which the container job does not (epcore copies a container job's files
locally); ``--vanilla-in-place`` runs the vanilla job with should_transfer_files = NO instead,
to compare the two launch paths alone. Each round submits one vanilla job and one container
job, one after the other, each waited for until it has left the queue; a warm-up round comes
first. Printed: median and p90 of each side, the median per-round difference, and
the ratio container / vanilla of the medians with the target (at most 1.3).

It is a measurement, not a test: it exits 0 whether or not the target is met.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from importlib.metadata import entry_points
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _pool import personal_pool, remove_cgroup, wait

from epcore.config import Config
from epcore.pool.requests import PoolClient
from epcore.submit import LocalSubmitHost, SubmitContext, build_jobs, parse_submit

ROOT = Path(__file__).resolve().parents[1]
#: Root submits for nobody (the pool refuses jobs owned by root, as HTCondor does).
JOB_OWNER = "nobody"
RATIO_TARGET = 1.3
BUSYBOX = Path("/bin/busybox")
#: Where the apptainer plugin's tests keep the stand-in and the code that installs it.
STANDIN_TESTS = ROOT / "plugins" / "apptainer" / "tests"
PLUGIN = ROOT / "plugins" / "apptainer"

POOL_EXTRA = """\
BASE_CGROUP = {cgroup}
RUNBENCHMARKS = False
NEGOTIATOR_INTERVAL = 2
NEGOTIATOR_MIN_INTERVAL = 0
SINGULARITY = {runtime}
"""

VANILLA = """\
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

CONTAINER = """\
universe = container
container_image = {image}
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


def uptime() -> float:
    """The system's uptime in seconds, as a job's ``cat /proc/uptime`` reads it."""
    with open("/proc/uptime", encoding="ascii") as handle:
        return float(handle.read().split()[0])


def runtime_program(directory: Path) -> str:
    """A real apptainer on PATH, else a copy of the stand-in every user can run."""
    real = shutil.which("apptainer") or shutil.which("singularity")
    if real is not None:
        return real
    for tool in ("bwrap", "mksquashfs", "unsquashfs", "siftool"):
        if shutil.which(tool) is None:
            raise SystemExit(f"no apptainer, and the stand-in needs {tool}")
    sys.path.insert(0, str(STANDIN_TESTS))
    from apptainer_fixtures import install_standin

    return str(install_standin(directory))


def make_image(runtime: str, directory: Path) -> str:
    """A SIF of a busybox root filesystem, built by the runtime; readable by everyone."""
    rootfs = directory / "rootfs"
    for name in ("bin", "tmp", "proc", "dev", "sys", "var/tmp"):
        (rootfs / name).mkdir(parents=True)
    shutil.copy(BUSYBOX, rootfs / "bin" / "busybox")
    for applet in ("sh", "cat"):
        (rootfs / "bin" / applet).symlink_to("busybox")
    image = directory / "bench.sif"
    subprocess.run([runtime, "build", "--force", str(image), str(rootfs)], check=True)
    image.chmod(0o644)
    return str(image)


def make_plugin_visible(directory: Path) -> None:
    """When epcore-apptainer is not installed, its entry point and package on PYTHONPATH."""
    if any(e.name == "apptainer" for e in entry_points(group="epcore")):
        return
    record = directory / "site" / "epcore_apptainer_bench-0.dist-info"
    record.mkdir(parents=True)
    (record / "METADATA").write_text("Metadata-Version: 2.1\nName: epcore-apptainer-bench\n")
    (record / "entry_points.txt").write_text("[epcore]\napptainer = epcore_apptainer.plugin\n")
    parts = [str(PLUGIN), str(directory / "site"), os.environ.get("PYTHONPATH", "")]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in parts if p)


def one_job(client: PoolClient, config: Config, text: str, root: Path) -> float:
    """Submit one job, wait until it left the queue; submission to its first instruction."""
    context = SubmitContext(
        owner=JOB_OWNER, submit_dir=str(root), now=int(time.time()), config=config
    )
    asked = uptime()
    cluster_id = client.new_cluster()
    cluster = build_jobs(parse_submit(text), context, LocalSubmitHost(), cluster_id=cluster_id)
    client.submit(cluster_id, cluster.cluster_ad, cluster.procs)
    constraint = f"ClusterId == {cluster_id}"
    wait(lambda: not client.query_jobs(constraint, ["ClusterId"]), 120, "the job", 0.1)
    output = root / f"out.{cluster_id}"
    try:
        return float(output.read_text().split()[0]) - asked
    except (OSError, IndexError, ValueError) as error:
        history = client.query_jobs(constraint, history=True)
        raise SystemExit(f"job {cluster_id} printed no uptime: {history[:1]}") from error


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(fraction * len(ordered)), len(ordered) - 1)]


def report(name: str, latencies: list[float]) -> float:
    median = statistics.median(latencies)
    p90 = percentile(latencies, 0.9)
    print(f"  {name:<28} median {median * 1000:6.0f} ms   p90 {p90 * 1000:6.0f} ms")
    return median


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    parser.add_argument("--jobs", type=int, default=None, help="rounds (default 21)")
    parser.add_argument(
        "--no-pre-job-test",
        action="store_true",
        help="SINGULARITY_RUN_TEST_BEFORE_JOB = false (what the pre-job test costs)",
    )
    parser.add_argument(
        "--vanilla-in-place",
        action="store_true",
        help=(
            "the vanilla job with should_transfer_files = NO: no file transfer with the "
            "schedd before it starts (the container job's files are copied locally)"
        ),
    )
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("apptainer_bench needs root (cgroups)", file=sys.stderr)
        return 1
    if not BUSYBOX.exists():
        print(f"{BUSYBOX} is missing: apt-get install busybox-static", file=sys.stderr)
        return 1
    count = args.jobs or (5 if args.quick else 21)
    tag = uuid.uuid4().hex[:8]
    cgroup = f"ep_bench_{tag[:6]}"
    root = Path(tempfile.mkdtemp(prefix="ep_bench_apptainer_"))
    # Open to all: the jobs run as nobody, the runtime and the image are read as nobody, and
    # the output comes back into it as nobody.
    root.chmod(0o1777)
    try:
        runtime = runtime_program(root)
        image = make_image(runtime, root)
        make_plugin_visible(root)
        extra = POOL_EXTRA.format(cgroup=cgroup, runtime=runtime)
        if args.no_pre_job_test:
            extra += "SINGULARITY_RUN_TEST_BEFORE_JOB = false\n"
        vanilla_text = VANILLA
        if args.vanilla_in_place:
            vanilla_text = VANILLA.replace(
                "should_transfer_files = YES", "should_transfer_files = NO"
            )
        vanilla: list[float] = []
        container: list[float] = []
        with personal_pool(root / "pool", extra, root / "pool.out") as pool:
            ads = pool.client.query_ads(
                "Machine", projection=["HasSIF", "SingularityOfflineReason"]
            )
            if not ads or ads[0].evaluate("HasSIF") is not True:
                reason = ads[0].evaluate("SingularityOfflineReason") if ads else "no slot ad"
                raise SystemExit(f"the pool's startd cannot run SIF jobs: {reason}")
            config = Config.load(str(pool.config_path), subsystem="TOOL")
            for round_number in range(count + 1):
                plain = one_job(pool.client, config, vanilla_text, root)
                contained = one_job(pool.client, config, CONTAINER.format(image=image), root)
                if round_number == 0:
                    continue  # the warm-up
                vanilla.append(plain)
                container.append(contained)
        print(f"{count} rounds of `cat /proc/uptime`, a vanilla job then a container job")
        test = "off" if args.no_pre_job_test else "on (the default)"
        print(f"runtime: {runtime}; pre-job test {test}")
        if args.vanilla_in_place:
            print("vanilla job: should_transfer_files = NO (no transfer with the schedd)")
        print("submission to the job's first instruction:")
        baseline = report("vanilla job", vanilla)
        contained_median = report("container job (SIF)", container)
        paired = statistics.median([c - v for c, v in zip(container, vanilla, strict=True)])
        ratio = contained_median / baseline
        print(f"  container - vanilla, same round (median): {paired * 1000:+.0f} ms")
        print(f"  ratio container / vanilla (median): {ratio:.2f}   (target <= {RATIO_TARGET})")
        print(f"  target met: {'yes' if ratio <= RATIO_TARGET else 'no'}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        remove_cgroup(cgroup)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
