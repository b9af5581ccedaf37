"""A real Linux guest for tests that need a kernel this machine lacks (device-mapper, cgroup v2
with controllers): a small Debian 12 built once and cached by content, booted with qemu TCG.

The build (:func:`build_image`) makes a root filesystem with mmdebstrap from the mirror apt
uses here, with Debian's own kernel (linux-image-amd64) and its initramfs, then installs the
checkout's wheels (:func:`build_wheels`) into a venv at ``/opt/epcore`` by chrooting into the
tree with the guest's own python, and packs the tree into an ext4 image with ``mkfs.ext4 -d``
(no loop device needed). Two cache levels under :func:`cache_dir`: the tree, keyed by the
package list, the suite and the kernel version; the image, keyed by the tree's key and the
wheels' content, so that an edit of the checkout repacks the image but never re-downloads
Debian.

:meth:`Guest.run` boots the image read-only (``snapshot=on``: the cached image is never
changed), shares a fresh results directory (9p, ``/share``) and the checkout (``/checkout``,
read-only), runs one shell command as root there and returns its output and exit status. A
hung guest is killed at the time limit; qemu runs in its own session and nothing is left
running. Builds and runs take a file lock: pytest-xdist workers build once, and only one guest
runs at a time (TCG is CPU-heavy and the machine is shared).

Tests use the session fixture :func:`guest`, which skips outside CI (fails under ``CI=true``)
when qemu or mmdebstrap is missing. ``python3 -m epcore.testing.guest build`` builds (or finds)
the image and prints how long that took, as ``.ci/run`` does before pytest.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs
import pytest

#: The guest's Debian packages: the kernel (its modules come with it: dm-thin, loop, 9p, ext4),
#: an initramfs to mount the root disk, python3 for the venv, and the tools epcore-lvm drives.
DEFAULT_PACKAGES = (
    "linux-image-amd64",
    "initramfs-tools",
    "kmod",
    "util-linux",
    "procps",
    "python3",
    "python3-venv",
    "lvm2",
    "thin-provisioning-tools",
    "e2fsprogs",
)
#: What the guest's venv gets besides the checkout's projects: pytest, and hypothesis for the
#: profiles tests/conftest.py loads.
DEFAULT_REQUIREMENTS = ("pytest", "hypothesis")
SUITE = "bookworm"
VENV = "/opt/epcore"
ROOT_ENV = "EPCORE_GUEST_CACHE"
#: Boots in about 10 s and a command under TCG is slow; a hung guest is killed after this.
DEFAULT_TIMEOUT = 600.0

#: PID 1 of the guest: mounts what a test needs, runs the command, powers off. No init system,
#: so that the boot is short and nothing else runs beside the command.
_INIT = """#!/bin/sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sys /sys
mountpoint -q /dev || mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts && mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run && mount -t tmpfs tmpfs /tmp
# Only cgroup2, so that every controller is on v2 (the host keeps them on v1).
mount -t cgroup2 cgroup2 /sys/fs/cgroup
modprobe 9pnet_virtio && modprobe 9p
mkdir -p /share /checkout
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 share /share
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro checkout /checkout
hostname epguest
# ep run's daemons talk over 127.0.0.1 and look their host's name up: the loopback interface
# up (no iproute2 in the image: SIOCSIFFLAGS, IFF_UP|IFF_LOOPBACK|IFF_RUNNING), a hosts file.
printf '127.0.0.1 localhost\n127.0.1.1 epguest\n' > /etc/hosts
python3 -c 'import fcntl, socket, struct
fcntl.ioctl(socket.socket(), 0x8914, struct.pack("16sH22x", b"lo", 0x49))'
echo 1 > /proc/sys/kernel/sysrq
# Not /checkout: python would import epcore from the sources instead of the venv's wheel.
cd /root
/bin/sh /share/command.sh > /share/output.txt 2>&1
echo $? > /share/status.txt
sync
echo o > /proc/sysrq-trigger
sleep 30
"""


@attrs.frozen
class GuestSpec:
    """What the guest is made of; every field is part of the cache key."""

    packages: tuple[str, ...] = DEFAULT_PACKAGES
    suite: str = SUITE
    requirements: tuple[str, ...] = DEFAULT_REQUIREMENTS


@attrs.frozen
class GuestImage:
    """A built guest: the kernel, its initramfs and the root disk, all in the cache."""

    kernel: Path
    initrd: Path
    disk: Path
    key: str


@attrs.frozen
class GuestResult:
    """One command's run in the guest: its exit status (None when the guest was killed at the
    time limit or died before the command ended), its output, the console, the wall time."""

    status: int | None
    output: str
    console: str
    seconds: float


def cache_dir() -> Path:
    """Where images are kept: $EPCORE_GUEST_CACHE, else ~/.cache/epcore-guest."""
    configured = os.environ.get(ROOT_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "epcore-guest"


def problem() -> str | None:
    """Why no guest can be built or booted here, or None."""
    for tool in ("qemu-system-x86_64", "mmdebstrap", "mkfs.ext4"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install qemu-system-x86 mmdebstrap)"
    if os.geteuid() != 0:
        return "building the guest's root filesystem needs root"
    return None


def mirror() -> str:
    """The Debian mirror apt uses here (deb822 or one-line sources), else deb.debian.org."""
    for source in sorted(Path("/etc/apt").glob("sources.list*")) + sorted(
        Path("/etc/apt/sources.list.d").glob("*")
    ):
        if not source.is_file():
            continue
        for line in source.read_text(errors="replace").splitlines():
            words = line.split()
            if words[:1] == ["URIs:"] and len(words) > 1 and "security" not in words[1]:
                return words[1]
            if words[:1] == ["deb"] and len(words) > 2 and "security" not in line:
                return next(w for w in words[1:] if "://" in w)
    return "http://deb.debian.org/debian"


def kernel_version() -> str:
    """linux-image-amd64's version in apt's lists: a new Debian kernel rebuilds the tree."""
    found = subprocess.run(
        ["apt-cache", "show", "--no-all-versions", "linux-image-amd64"],
        capture_output=True,
        text=True,
        check=False,
    )
    for line in found.stdout.splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def _digest(*parts: str | bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def build_wheels(projects: Sequence[Path], requirements: Sequence[str], into: Path) -> list[Path]:
    """Wheels of ``projects`` (source directories) and ``requirements``, with every dependency,
    in ``into``; built with a fixed SOURCE_DATE_EPOCH so that an unchanged checkout gives
    byte-identical wheels (and so the same cache key)."""
    into.mkdir(parents=True, exist_ok=True)
    for old in into.glob("*.whl"):
        old.unlink()
    environment = {**os.environ, "SOURCE_DATE_EPOCH": "315532800"}
    environment.pop("PYTHONPATH", None)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(into)]
        + [str(p) for p in projects]
        + list(requirements),
        check=True,
        env=environment,
        capture_output=True,
    )
    return sorted(into.glob("*.whl"))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build_tree(spec: GuestSpec, tree: Path) -> None:
    partial = tree.with_name(tree.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    subprocess.run(
        [
            "mmdebstrap",
            "--quiet",
            "--variant=minbase",
            "--include=" + ",".join(spec.packages),
            spec.suite,
            str(partial),
            mirror(),
        ],
        check=True,
        capture_output=True,
    )
    partial.rename(tree)


def _configure(tree: Path) -> None:
    # Written with every image, not with the cached tree, so that a change here takes effect.
    init = tree / "sbin" / "epguest-init"
    init.write_text(_INIT)
    init.chmod(0o755)
    # LVM without udev or dmeventd, neither of which runs in the guest.
    lvm_conf = tree / "etc" / "lvm" / "lvmlocal.conf"
    lvm_conf.write_text(
        "activation {\n udev_sync = 0\n udev_rules = 0\n monitoring = 0\n}\n"
        "devices {\n obtain_device_list_from_udev = 0\n}\n"
    )


def _install_venv(tree: Path, wheels: Sequence[Path]) -> None:
    shutil.rmtree(tree / VENV.lstrip("/"), ignore_errors=True)
    staged = tree / "tmp" / "wheels"
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(parents=True)
    for wheel in wheels:
        shutil.copy2(wheel, staged / wheel.name)
    names = [f"/tmp/wheels/{w.name}" for w in wheels]
    environment = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
    # The guest's own python in a chroot: the venv is made exactly as it would be in the guest.
    subprocess.run(
        ["chroot", str(tree), "python3", "-m", "venv", VENV], check=True, env=environment
    )
    subprocess.run(
        [
            "chroot",
            str(tree),
            f"{VENV}/bin/pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            *names,
        ],
        check=True,
        env={**environment, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        capture_output=True,
    )
    shutil.rmtree(staged)


def build_image(
    wheels: Sequence[Path], spec: GuestSpec = GuestSpec(), root: Path | None = None
) -> GuestImage:
    """The image for ``spec`` with ``wheels`` in its venv: found in the cache, or built (the
    tree once per package list and kernel, the image once per set of wheels)."""
    root = root or cache_dir()
    tree_key = _digest(spec.suite, *spec.packages, kernel_version())
    wheel_digests = [
        _digest(w.name, hashlib.sha256(w.read_bytes()).hexdigest()) for w in sorted(wheels)
    ]
    key = _digest(tree_key, _INIT, *wheel_digests)
    image_dir = root / f"image-{key}"
    with _locked(root / "build.lock"):
        if (image_dir / "ready").exists():
            return _image_in(image_dir, key)
        tree = root / f"tree-{tree_key}"
        if not tree.exists():
            _build_tree(spec, tree)
        _configure(tree)
        _install_venv(tree, wheels)
        for stale in root.glob("image-*"):
            shutil.rmtree(stale, ignore_errors=True)
        partial = root / f"image-{key}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        shutil.copy2(_one(tree / "boot", "vmlinuz-*"), partial / "vmlinuz")
        shutil.copy2(_one(tree / "boot", "initrd.img-*"), partial / "initrd.img")
        subprocess.run(
            [
                "mkfs.ext4",
                "-q",
                "-F",
                "-L",
                "epguest",
                "-d",
                str(tree),
                str(partial / "root.img"),
                "3G",
            ],
            check=True,
            capture_output=True,
        )
        (partial / "ready").write_text(key)
        partial.rename(image_dir)
        return _image_in(image_dir, key)


def _one(directory: Path, pattern: str) -> Path:
    found = sorted(directory.glob(pattern))
    if not found:
        raise FileNotFoundError(f"no {pattern} in {directory}")
    return found[-1]


def _image_in(directory: Path, key: str) -> GuestImage:
    return GuestImage(
        kernel=directory / "vmlinuz",
        initrd=directory / "initrd.img",
        disk=directory / "root.img",
        key=key,
    )


@attrs.frozen
class Guest:
    """Boots ``image`` for each :meth:`run`, sharing ``checkout`` read-only at /checkout."""

    image: GuestImage
    checkout: Path
    memory_mb: int = 1024
    cpus: int = 1

    def qemu_argv(self, share: Path, console: Path) -> list[str]:
        """qemu's command line: TCG (KVM here cannot run a stock kernel), no network, the root
        disk read-only underneath (writes go to a throwaway overlay), the two 9p shares."""
        return [
            "qemu-system-x86_64",
            "-accel", "tcg",
            "-m", str(self.memory_mb),
            "-smp", str(self.cpus),
            "-nographic", "-no-reboot", "-nic", "none",
            "-kernel", str(self.image.kernel),
            "-initrd", str(self.image.initrd),
            "-append", "console=ttyS0 root=/dev/vda rw quiet panic=-1 init=/sbin/epguest-init",
            "-drive", f"file={self.image.disk},if=virtio,format=raw,snapshot=on",
            "-virtfs", f"local,path={share},mount_tag=share,security_model=none",
            "-virtfs",
            f"local,path={self.checkout},mount_tag=checkout,security_model=none,readonly=on",
            "-serial", f"file:{console}",
            "-monitor", "none",
            "-display", "none",
        ]  # fmt: skip

    def run(self, command: str, timeout: float = DEFAULT_TIMEOUT) -> GuestResult:
        """Boot, run ``command`` with /bin/sh in /root as root, power off; the result."""
        lock = _locked(self.image.disk.parent.parent / "run.lock")
        with lock, tempfile.TemporaryDirectory(prefix="epguest-") as scratch:
            share = Path(scratch) / "share"
            share.mkdir()
            console = Path(scratch) / "console.txt"
            (share / "command.sh").write_text(
                f"export PATH={VENV}/bin:$PATH PYTHONDONTWRITEBYTECODE=1\n{command}\n"
            )
            started = time.monotonic()
            qemu = subprocess.Popen(
                self.qemu_argv(share, console),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            try:
                _, errors = qemu.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill(qemu)
                errors = b""
            seconds = time.monotonic() - started
            status_file = share / "status.txt"
            status = int(status_file.read_text()) if status_file.exists() else None
            output_file = share / "output.txt"
            output = output_file.read_text(errors="replace") if output_file.exists() else ""
            log = console.read_text(errors="replace") if console.exists() else ""
            return GuestResult(
                status=status,
                output=output,
                console=log + errors.decode(errors="replace"),
                seconds=seconds,
            )


def _kill(qemu: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(qemu.pid, signal.SIGKILL)
    qemu.wait()


def checkout_root() -> Path:
    """The checkout this module belongs to (epcore/testing/guest.py three levels up)."""
    return Path(__file__).resolve().parents[2]


#: The checkout's plugins the guest gets (the others need services the guest does not run).
DEFAULT_PLUGINS = ("lvm",)


def checkout_projects(checkout: Path, plugins: Sequence[str] = DEFAULT_PLUGINS) -> list[Path]:
    """The checkout's projects to install: epcore and those of ``plugins`` it has."""
    found = [checkout / "plugins" / name for name in plugins]
    return [checkout] + [p for p in found if (p / "pyproject.toml").exists()]


def prepare(checkout: Path | None = None, spec: GuestSpec = GuestSpec()) -> Guest:
    """Wheels of the checkout, then the image (built or from the cache), as a :class:`Guest`."""
    checkout = checkout or checkout_root()
    root = cache_dir()
    # One lock over both: another xdist worker would otherwise replace the wheels while this
    # one hashes them.
    with _locked(root / "wheels.lock"):
        wheels = build_wheels(checkout_projects(checkout), spec.requirements, root / "wheels")
        image = build_image(wheels, spec, root)
    return Guest(image=image, checkout=checkout)


@pytest.fixture(scope="session")
def guest() -> Guest:
    """A bootable guest with this checkout's wheels (skipped, or failed under CI=true, where
    qemu or mmdebstrap is missing)."""
    from epcore.testing.system import missing

    reason = problem()
    if reason is not None:
        missing(reason)
    return prepare()


def main(argv: Sequence[str]) -> int:
    """``build``: build or find the image and print the time it took (for .ci/run)."""
    if list(argv) != ["build"]:
        print("usage: python3 -m epcore.testing.guest build", file=sys.stderr)
        return 2
    reason = problem()
    if reason is not None:
        print(f"no guest: {reason}", file=sys.stderr)
        return 1
    started = time.monotonic()
    guest_ = prepare()
    print(f"guest image {guest_.image.key} ready in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
