"""From submission to a VM job's guest printing its first console line, against ``virsh
create`` of the same domain.

Run from the project root, as root, with libvirt-daemon, qemu-system-x86, busybox-static and
the VM plugin installed (``python3 -m pip install ./plugins/vm``; .ci/run sets the machine up)::

    python3 benchmarks/vm_bench.py             # 5 rounds of one guest per side
    python3 benchmarks/vm_bench.py --rounds 1  # a smoke run

It starts a private libvirtd (the plugin tests' recipe, ``plugins/vm/tests/vm_fixtures.py``)
and builds the tests' guest: Debian's kernel and a busybox initramfs whose /init prints
``epcore-vm-guest: up`` on the serial console, copies its input disk to its output disk and
powers off. TCG (``VM_KVM_DOMAIN_TYPE = qemu``, this machine's /dev/kvm does not run guests),
128 MiB, one vCPU.

- Baseline: the domain XML the plugin makes for the job (same disks, kernel, console file),
  written to a file; timed from just before ``virsh -c URI create FILE`` until the console
  file holds the first line, then waited for until the guest powered off.
- epcore: an ``ep run`` personal pool with the VM universe on (NEGOTIATOR_INTERVAL 2,
  NEGOTIATOR_MIN_INTERVAL 0); one VM job submitted through the pool's socket as ``ep submit``
  does, timed from just before the submission until the console file in its sandbox holds
  the first line, then waited for until it left the queue (its output disk checked).

Both sides poll their console file every 20 ms and take turns, a warm-up round first (the
plugin's first connection, the page cache of kernel and initrd). Printed: each side's
median, the ratio epcore / virsh create of the medians and the target (at most 1.3). It is a
measurement, not a test: it exits 0 whether or not the target is met.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "vm"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "vm" / "tests"))

from _pool import personal_pool, remove_cgroup, wait

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.pool.requests import PoolClient
from epcore.submit import LocalSubmitHost, SubmitContext, build_jobs, parse_submit

RATIO_TARGET = 1.3
#: The pool refuses jobs owned by root, as HTCondor does.
JOB_OWNER = "nobody"
POLL = 0.02
INPUT = b"hello from the input disk\n"
SUBMIT = """\
universe = vm
executable = vm_bench
vm_type = kvm
vm_memory = 128
vm_disk = in.img:vda:r,out.img:vdb:w
should_transfer_files = YES
when_to_transfer_output = ON_EXIT
transfer_input_files = in.img, out.img
queue
"""


def _vm_config(uri: str, kernel: Path, initrd: Path, cgroup: str) -> str:
    return (
        f"BASE_CGROUP = {cgroup}\nRUNBENCHMARKS = False\nNEGOTIATOR_INTERVAL = 2\n"
        f"NEGOTIATOR_MIN_INTERVAL = 0\nVM_TYPE = kvm\nVM_MEMORY = 512\nVM_LIBVIRT_URI = {uri}\n"
        f"VM_KVM_KERNEL = {kernel}\nVM_KVM_INITRD = {initrd}\n"
        "VM_KVM_KERNEL_PARAMS = console=ttyS0 quiet panic=-1\nVM_KVM_DOMAIN_TYPE = qemu\n"
    )


def _disks(directory: Path) -> None:
    nobody = int(
        subprocess.run(["id", "-u", JOB_OWNER], capture_output=True, text=True, check=True).stdout
    )
    for name, data in (("in.img", INPUT), ("out.img", b"")):
        (directory / name).write_bytes(data.ljust(1 << 20, b"\0"))
        os.chown(directory / name, nobody, -1)
    os.chown(directory, nobody, -1)
    directory.chmod(0o755)


def _first_line(console: Path, up_line: str) -> bool:
    try:
        return up_line in console.read_text(errors="replace")
    except OSError:
        return False


def virsh_round(uri: str, config: Config, work: Path, up_line: str) -> float:
    """One guest through ``virsh create``: seconds to its first console line."""
    from epcore_vm.domain import domain_xml, plan_domain

    work.mkdir()
    _disks(work)
    job = ClassAd()
    job["JobVMType"] = "kvm"
    job["JobVMMemory"] = 128
    job["VMPARAM_vm_Disk"] = "in.img:vda:r,out.img:vdb:w"
    plan = plan_domain(job, config, f"bench-{uuid.uuid4().hex[:8]}", str(work))
    xml = work.parent / f"{work.name}.xml"
    xml.write_text(domain_xml(plan))
    console = Path(plan.console)
    asked = time.monotonic()
    subprocess.run(["virsh", "-q", "-c", uri, "create", str(xml)], check=True, capture_output=True)
    wait(lambda: _first_line(console, up_line), 240, "the virsh guest's first line", POLL)
    took = time.monotonic() - asked

    def gone() -> bool:
        listed = subprocess.run(
            ["virsh", "-q", "-c", uri, "list", "--name"], capture_output=True, text=True, check=True
        ).stdout
        return plan.name not in listed.split()

    wait(gone, 240, "the virsh guest to power off", 0.2)
    return took


def pool_round(client: PoolClient, config: Config, local: Path, work: Path, up_line: str) -> float:
    """One VM job through the pool: seconds from submission to its guest's first line."""
    work.mkdir()
    _disks(work)
    context = SubmitContext(
        owner=JOB_OWNER, submit_dir=str(work), now=int(time.time()), config=config
    )
    before = set((local / "execute").glob("*/vm_console.log"))
    asked = time.monotonic()
    cluster_id = client.new_cluster()
    cluster = build_jobs(parse_submit(SUBMIT), context, LocalSubmitHost(), cluster_id=cluster_id)
    client.submit(cluster_id, cluster.cluster_ad, cluster.procs)

    def printed() -> bool:
        found = set((local / "execute").glob("*/vm_console.log")) - before
        return any(_first_line(path, up_line) for path in found)

    wait(printed, 240, "the pool guest's first line", POLL)
    took = time.monotonic() - asked
    constraint = f"ClusterId == {cluster_id}"
    wait(lambda: not client.query_jobs(constraint, ["ClusterId"]), 240, "the VM job", 0.2)
    if not (work / "out.img").read_bytes().startswith(INPUT.upper()):
        history = client.query_jobs(constraint, history=True)
        raise SystemExit(f"job {cluster_id} brought back no output disk: {history}")
    return took


def problem() -> str | None:
    """Why the benchmark cannot run here, or None."""
    if os.geteuid() != 0:
        return "vm_bench needs root (libvirtd, cgroups)"
    for program in ("libvirtd", "virtlogd", "virsh", "busybox"):
        if shutil.which(program) is None:
            return f"vm_bench needs {program} (libvirt-daemon, libvirt-clients, busybox-static)"
    try:
        import libvirt  # noqa: F401
    except ImportError:
        return "vm_bench needs libvirt-python: python3 -m pip install ./plugins/vm"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds (default 5)")
    parser.add_argument(
        "--libvirt-uri",
        help="a running libvirtd's URI to use instead of starting one (two libvirtds with the"
        " qemu system driver on one machine stop each other)",
    )
    args = parser.parse_args()
    reason = problem()
    if reason is not None:
        print(reason, file=sys.stderr)
        return 2
    from vm_fixtures import private_libvirtd
    from vm_guest import UP_LINE, build_guest

    root = Path(tempfile.mkdtemp(prefix="vm_bench_"))
    root.chmod(0o755)
    cgroup = f"epcore_vm_bench_{uuid.uuid4().hex[:8]}"
    try:
        (root / "guest").mkdir()
        guest = build_guest(root / "guest")
        (root / "lv").mkdir()
        running = contextlib.nullcontext(args.libvirt_uri) if args.libvirt_uri else None
        with running or private_libvirtd(root / "lv") as uri:
            extra = _vm_config(uri, guest.kernel, guest.initrd, cgroup)
            plan_config = Config.from_text(extra)
            virsh: list[float] = []
            pool_times: list[float] = []
            with personal_pool(root / "pool", extra, root / "pool.out") as pool:
                config = Config.load(str(pool.config_path), subsystem="TOOL")
                for number in range(args.rounds + 1):
                    a = virsh_round(uri, plan_config, root / f"virsh{number}", UP_LINE)
                    b = pool_round(
                        pool.client, config, pool.local_dir, root / f"job{number}", UP_LINE
                    )
                    if number > 0:  # the first round warms up
                        virsh.append(a)
                        pool_times.append(b)
        print(f"vm_bench: {args.rounds} rounds, one guest per side each (TCG, 128 MiB)")
        base, ours = statistics.median(virsh), statistics.median(pool_times)
        print(f"  virsh create -> first console line: median {base * 1000:7.0f} ms  {virsh}")
        print(f"  ep run submit -> first console line: median {ours * 1000:7.0f} ms  {pool_times}")
        print(f"  ratio epcore / virsh create: {ours / base:.2f} (target at most {RATIO_TARGET})")
        return 0
    finally:
        remove_cgroup(cgroup)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
