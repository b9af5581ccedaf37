"""Where a container job's start goes, phase by phase, in the apptainer plugin's own process.

Run from the project root, as root (the job runs as nobody)::

    python3 benchmarks/apptainer_phases.py            # 31 runs of each phase
    python3 benchmarks/apptainer_phases.py --runs 11

The runtime is a real ``apptainer`` on PATH, else the plugin tests' stand-in (installed as the
tests install it). The image is a SIF of the static /bin/busybox, as in apptainer_bench.py.
Timed, each with ``time.perf_counter`` in this process (medians, milliseconds):

- ``plan``: the plugin's decisions for one job (image, binds, options, environment);
- ``pre-job test``: ``<runtime> -q test ... <image>`` as the job's user, to its exit;
- ``start``: :meth:`ApptainerRuntime.start` with the test turned off, to its return (the job
  started, not yet ended);
- ``job to its end``: the same plus waiting for ``/bin/true`` inside the image to exit;
- for scale: ``python3 -IS -c pass``, ``bwrap`` alone around ``/bin/true`` on the image's
  root, and ``/bin/true``.

It is a measurement, not a test: it exits 0.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "plugins" / "apptainer"))
sys.path.insert(0, str(ROOT / "plugins" / "apptainer" / "tests"))

from apptainer_bench import make_image, runtime_program  # noqa: E402
from apptainer_helpers import (  # noqa: E402
    job_ad,
    make_runtime,
    request_for,
    sandbox_dir,
    wait_for,
)

LOG = logging.getLogger("epcore.apptainer.phases")


def timed(action: Callable[[], object], runs: int) -> float:
    """The median wall time of ``action`` in milliseconds."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        action()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def quiet(argv: list[str]) -> Callable[[], object]:
    return lambda: subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=31)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("apptainer_phases needs root (the job runs as nobody)", file=sys.stderr)
        return 1
    root = Path(tempfile.mkdtemp(prefix="ep_phases_apptainer_"))
    root.chmod(0o1777)
    try:
        program = runtime_program(root)
        image = make_image(program, root)
        off = make_runtime(program, root / "spool", {"SINGULARITY_RUN_TEST_BEFORE_JOB": "false"})
        on = make_runtime(program, root / "spool")
        with sandbox_dir() as sandbox:
            request = request_for(sandbox, job_ad(image), ("/bin/true",))

            def plan() -> None:
                chosen, _ = on.plan(request)
                on.environment(chosen, request)

            def test() -> None:
                chosen, _ = on.plan(request)
                on._test(chosen, request, on.environment(chosen, request), LOG)

            def start() -> None:
                off.start(request, LOG).release()

            def to_end() -> None:
                container = off.start(request, LOG)
                wait_for(container)
                container.release()

            rootfs = root / "rootfs"
            bwrap = ["bwrap", "--unshare-user", "--die-with-parent", "--ro-bind", str(rootfs)]
            bwrap += ["/", "--proc", "/proc", "--dev", "/dev", "/bin/busybox", "true"]
            to_end()  # the first use unpacks the SIF into the stand-in's cache
            print(f"runtime {program}; {args.runs} runs each; load {os.getloadavg()[0]:.1f}")
            for name, action in (
                ("plan", plan),
                ("pre-job test", test),
                ("start", start),
                ("job to its end", to_end),
                ("python3 -IS -c pass", quiet([sys.executable, "-IS", "-c", "pass"])),
                ("bwrap /bin/true", quiet(bwrap)),
                ("/bin/true", quiet(["/bin/true"])),
            ):
                print(f"  {name:<22} {timed(action, args.runs):7.1f} ms")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
