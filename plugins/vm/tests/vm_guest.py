"""The VM tests' guest: Debian's kernel and a busybox initramfs, made once per test run.

The guest's /init loads the virtio block drivers, copies the first 64 bytes of its input disk
(vda) upper-cased to its output disk (vdb), prints a line on the serial console before and
after, and powers off: a VM job whose output disk comes back changed. qemu runs it under TCG
in about 13 s on this machine (KVM cannot run stock kernels here, capabilities.md section 4).
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import attrs

from epcore.testing.system import missing

#: The modules /init loads, in dependency order (each one's ``depends=`` comes before it).
MODULES = (
    "virtio/virtio_ring",
    "virtio/virtio",
    "virtio/virtio_pci_modern_dev",
    "virtio/virtio_pci_legacy_dev",
    "virtio/virtio_pci",
    "block/virtio_blk",
)
#: What the guest prints first and last on its console.
UP_LINE = "epcore-vm-guest: up"
DONE_LINE = "epcore-vm-guest: done"
TICK_LINE = "epcore-vm-guest: tick"

INIT = f"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
echo "{UP_LINE}"
for m in {" ".join(Path(m).name for m in MODULES)}; do insmod /mod/$m.ko; done
# The disks appear once virtio_blk has probed them.
for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vdb ] && break; sleep 0.2; done
# An input disk that starts with "count" asks for a clock-driven counter instead, until the
# machine is shut down (the suspend and vacate tests).
if [ "$(head -c 5 /dev/vda)" = count ]; then
  i=0; while true; do echo "{TICK_LINE} $i"; i=$((i+1)); sleep 1; done
fi
head -c 64 /dev/vda | tr a-z A-Z > /dev/vdb
sync
echo "{DONE_LINE}"
poweroff -f
"""


@attrs.frozen
class Guest:
    """A bootable guest: its kernel and initramfs."""

    kernel: Path
    initrd: Path


def _kernel_package(work: Path) -> Path:
    # linux-image-amd64 is the metapackage: its dependency names the current kernel.
    depends = subprocess.run(
        ["apt-cache", "depends", "linux-image-amd64"], capture_output=True, text=True
    ).stdout
    names = [w for w in depends.split() if w.startswith("linux-image-") and w[12:13].isdigit()]
    if not names:
        missing("apt-cache names no linux-image package for the guest's kernel")
    done = subprocess.run(
        ["apt-get", "download", names[0]], cwd=work, capture_output=True, text=True
    )
    debs = sorted(work.glob("linux-image-*.deb"))
    if done.returncode != 0 or not debs:
        missing(f"apt-get download {names[0]} failed: {done.stderr.strip()[-500:]}")
    tree = work / "kernel"
    subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(tree)], check=True)
    return tree


def _pack(root: Path, target: Path) -> None:
    # No cpio on this machine: busybox's makes the newc archive the kernel unpacks.
    listing = subprocess.run(
        ["find", "."], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    archive = subprocess.run(
        ["busybox", "cpio", "-o", "-H", "newc"],
        cwd=root,
        input=listing.encode(),
        capture_output=True,
        check=True,
    ).stdout
    target.write_bytes(gzip.compress(archive, compresslevel=1))


def build_guest(work: Path) -> Guest:
    """Download the kernel and build the initramfs in ``work``."""
    busybox = shutil.which("busybox")
    if busybox is None or shutil.which("apt-get") is None:
        missing("the guest needs busybox (busybox-static) and apt-get")
    assert busybox is not None
    tree = _kernel_package(work)
    kernels = sorted((tree / "boot").glob("vmlinuz-*"))
    module_trees = sorted((tree / "lib" / "modules").glob("*/kernel/drivers"))
    if not kernels or not module_trees:
        missing("the kernel package holds no vmlinuz or no modules")
    root = work / "initrd"
    (root / "bin").mkdir(parents=True)
    (root / "mod").mkdir()
    shutil.copy2(busybox, root / "bin" / "busybox")
    for module in MODULES:
        shutil.copy2(module_trees[0] / f"{module}.ko", root / "mod")
    (root / "init").write_text(INIT)
    (root / "init").chmod(0o755)
    _pack(root, work / "initrd.gz")
    shutil.copy2(kernels[0], work / "vmlinuz")
    shutil.rmtree(tree)
    return Guest(work / "vmlinuz", work / "initrd.gz")
