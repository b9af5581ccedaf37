"""A private libvirtd for the VM plugin's tests: its own sockets, logs and pid files, one per
test run, stopped when the run ends (capabilities.md, section 4, is the recipe).

It needs root, libvirtd and virtlogd (Debian's libvirt-daemon + libvirt-daemon-driver-qemu),
the ``libvirt-qemu`` user and an /etc/libvirt/qemu.conf that runs qemu as root without a
security driver (.ci/run sets both up); outside CI a missing piece skips the tests.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from vm_guest import Guest, build_guest
from vm_pool import INPUT, VmPool, vm_config, write_disks

from epcore.testing.pool import PoolProcess, user_home
from epcore.testing.system import SlotUser, missing


def _stop(pid_file: Path) -> None:
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="session")
def libvirt_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URI of a libvirtd started for this run (qemu:///system on a private socket)."""
    if os.geteuid() != 0:
        missing("the VM tests start libvirtd, which needs root")
    for program in ("libvirtd", "virtlogd"):
        if shutil.which(program) is None:
            missing(f"{program} is not installed (libvirt-daemon)")
    try:
        import libvirt  # noqa: F401
    except ImportError:
        missing("libvirt-python is not installed")
    # A short path: unix socket names are limited to 108 bytes.
    with private_libvirtd(Path(tmp_path_factory.mktemp("lv"))) as uri:
        yield uri


@contextlib.contextmanager
def private_libvirtd(run: Path) -> Iterator[str]:
    """virtlogd and libvirtd with their sockets, logs and pid files in ``run``; the URI of
    the libvirtd (the benchmark starts one too)."""
    (run / "libvirtd.conf").write_text(
        f'unix_sock_dir = "{run}"\nlog_outputs = "3:file:{run}/libvirtd.log"\n'
    )
    (run / "virtlogd.conf").write_text(f'log_outputs = "3:file:{run}/virtlogd.log"\n')
    Path("/var/log/libvirt").mkdir(parents=True, exist_ok=True)
    daemons = [
        ("virtlogd", run / "virtlogd.pid", run / "virtlogd.conf"),
        ("libvirtd", run / "libvirtd.pid", run / "libvirtd.conf"),
    ]
    for program, pid_file, conf in daemons:
        subprocess.run([program, "-d", "-p", str(pid_file), "-f", str(conf)], check=True)
    socket = run / "libvirt-sock"
    deadline = time.monotonic() + 10
    while not socket.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        if not socket.exists():
            log = (run / "libvirtd.log").read_text(errors="replace")[-2000:]
            missing(f"libvirtd made no socket at {socket}: {log}")
        yield f"qemu:///system?socket={socket}"
    finally:
        for _, pid_file, _ in reversed(daemons):
            _stop(pid_file)


@pytest.fixture
def hanging_libvirtd(tmp_path: Path) -> Iterator[str]:
    """The URI of a "libvirtd" that hangs: its socket takes connections into its backlog
    and never answers, so libvirt's first call waits for ever (until the socket closes)."""
    path = tmp_path / "hang-sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
        listener.listen(16)
        yield f"qemu:///system?socket={path}"
    finally:
        listener.close()


@pytest.fixture(scope="session")
def vm_guest(tmp_path_factory: pytest.TempPathFactory) -> Guest:
    """The tests' guest kernel and initramfs, built once per run (vm_guest.py)."""
    return build_guest(Path(tmp_path_factory.mktemp("guest")))


@pytest.fixture
def vm_pool(
    leftover_domains: None,
    pool_factory: Callable[..., PoolProcess],
    slot_users: tuple[SlotUser, ...],
    shared_dir: Path,
    libvirt_uri: str,
    vm_guest: Guest,
) -> Callable[..., VmPool]:
    """``vm_pool(extra_config, data=INPUT, cpus=2, memory=2048)``: a started pool that runs
    the tests' guest on the private libvirtd, the first slot user's home holding the input
    disk (``data``) and an empty output disk; the test's domains are destroyed after it
    (``leftover_domains``)."""

    def start(extra: str = "", data: bytes = INPUT, *, cpus: int = 2, memory: int = 2048) -> VmPool:
        pool = pool_factory(vm_config(libvirt_uri, vm_guest, extra), cpus=cpus, memory=memory)
        user = slot_users[0]
        home = user_home(shared_dir, user)
        write_disks(home, user, data)
        return VmPool(pool, user, home, libvirt_uri, shared_dir.name)

    return start


@pytest.fixture
def leftover_domains(libvirt_uri: str, shared_dir: Path) -> Iterator[None]:
    """Destroys, after the test, every domain named after its ``shared_dir``: listed before
    ``pool_factory``, it is torn down after the pool, whose SIGKILL leaves a running job's
    guest to libvirtd (a job requeued by a test runs again until then)."""
    yield
    import libvirt

    connection = libvirt.open(libvirt_uri)
    try:
        for domain in connection.listAllDomains(0):
            if domain.name().startswith("epcore-") and shared_dir.name in domain.name():
                with contextlib.suppress(libvirt.libvirtError):
                    domain.destroy()
    finally:
        connection.close()
