"""Hosts of a pool as Linux network namespaces, for multi-host tests on one machine (issue 23).

Public for the authors of other schedulers too: ``pytest_plugins = ["epcore.testing.system",
"epcore.testing.netns"]`` gives the ``netns_pool`` fixture (root and ``ip`` needed; a missing
one skips, or fails under CI=true). Each :class:`Host` is a namespace with a veth pair whose
other end sits on a bridge in a namespace of its own, so nothing is made in the root
namespace's network and the addresses (:data:`SUBNET`) exist only inside the namespaces; the
hosts reach each other only through that bridge. Every name carries the test process's
``run_tag`` so parallel workers and runs do not collide. A host has a LOCAL_DIR and a
configuration (the personal pool's, a ROLE, CONDOR_HOST the central manager,
NETWORK_INTERFACE its address, the pool's token security of epcore.testing.pool) and runs
``ep run`` inside its namespace. Everything (processes, namespaces, bridge, LOCAL_DIRs,
cgroups) is removed when the fixture ends, whatever the test did.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from epcore.pool.personal import personal_config_text
from epcore.testing.pool import (
    POOL_DOMAIN,
    POOL_SECURITY,
    TEST_CONFIG,
    PoolProcess,
    install_token,
    pool_token,
)
from epcore.testing.system import missing, remove_cgroup_tree

IP = "/usr/sbin/ip"
NSENTER = "/usr/bin/nsenter"
UNSHARE = "/usr/bin/unshare"
#: Where ``ip netns`` keeps its namespaces.
NETNS_DIR = Path("/run/netns")
#: The hosts' addresses: .1, .2 ... in the order they are added (only inside the namespaces).
SUBNET = "10.77.0"
#: The collector's port: free in every namespace, which has its own ports.
COLLECTOR_PORT = 9618
ROLES = ("CentralManager", "Submit", "Execute", "Personal")
HOST_CONFIG = """
DAEMON_LIST = MASTER
use ROLE:{role}
CONDOR_HOST = {manager}
COLLECTOR_HOST = $(CONDOR_HOST):{port}
NETWORK_INTERFACE = {ip}
UPDATE_INTERVAL = {update_interval}
SCHEDD_INTERVAL = {update_interval}
CLASSAD_LIFETIME = {lifetime}
"""

#: Connects to port 9 (discard, closed here) of argv[1]: "yes" when the peer answered.
_PROBE = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], 9), timeout=float(sys.argv[2])).close()
    print("yes")
except ConnectionRefusedError:
    print("yes")
except OSError:
    print("no")
"""


def ip(*args: str) -> str:
    """Run ``ip ARGS``; its output (CalledProcessError with ip's message when it fails)."""
    done = subprocess.run([IP, *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, [IP, *args], done.stdout, done.stderr)
    return done.stdout


def namespace_pids(namespace: str) -> list[int]:
    """The processes whose network namespace is ``namespace``."""
    with contextlib.suppress(subprocess.CalledProcessError):
        return [int(pid) for pid in ip("netns", "pids", namespace).split()]
    return []


#: Sets the host name in a new UTS namespace, then runs the rest of argv.
_NAMED = 'hostname "$0" && exec "$@"'


class HostProcess(PoolProcess):
    """``ep run`` started inside a host's network namespace, with the host's own name (a UTS
    namespace of its own: else every startd is named slot1@<this machine>, and a collector
    keeps one ad per name).

    It enters the network namespace alone (``nsenter --net``), not through ``ip netns exec``:
    that one also makes a mount namespace and mounts a fresh sysfs on /sys for the network
    namespace, which hides the cgroup hierarchies mounted under /sys/fs/cgroup, so the
    startd found no cgroup to track its jobs with ("isolation backend cgroup is configured
    but unavailable"). The host's filesystem is the machine's anyway (its LOCAL_DIR is a
    directory of it), and nothing of epcore reads /sys/class/net.
    """

    def __init__(self, directory: Path, config_text: str, namespace: str, name: str) -> None:
        super().__init__(directory, config_text)
        self.namespace = namespace
        self.host_name = name

    def launch(self) -> None:
        with open(self.output, "ab") as out:
            self.process = subprocess.Popen(
                [NSENTER, f"--net={NETNS_DIR / self.namespace}", UNSHARE, "--uts", "sh",
                 "-c", _NAMED,
                 self.host_name, sys.executable, "-m", "epcore.cli.main",
                 "run", "--config", str(self.config_path)],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip


@attrs.define
class Host:
    """One host: a network namespace, its address, its LOCAL_DIR and its ``ep run``."""

    name: str
    namespace: str
    address: str
    #: The bridge's end of the host's veth pair (in the bridge's namespace).
    port: str
    bridge_namespace: str
    process: HostProcess
    cgroup: str
    #: Killed on purpose (:meth:`kill`) and not started since: its end is no failure.
    killed: bool = False

    @property
    def local_dir(self) -> Path:
        return self.process.directory

    @property
    def config_path(self) -> Path:
        return self.process.config_path

    def start(self, token: str | None = None) -> None:
        """Start ``ep run`` in the namespace, holding ``token`` (none: no token)."""
        if token is not None:
            install_token(self.local_dir, token)
        self.killed = False
        self.process.launch()

    def exec(self, *argv: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside the host's namespace; what it printed and its status."""
        return subprocess.run(
            [IP, "netns", "exec", self.namespace, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def reaches(self, address: str, timeout: float = 1.0) -> bool:
        """Whether a TCP connection from this host to ``address`` gets an answer (a refusal
        on a closed port is one: the peer's kernel answered)."""
        done = self.exec(sys.executable, "-c", _PROBE, address, str(timeout))
        assert done.stdout.strip() in ("yes", "no"), done.stderr
        return done.stdout.strip() == "yes"

    def link_down(self) -> None:
        """Cut the host off the bridge (its own end stays configured, as a cable pulled)."""
        ip("-n", self.bridge_namespace, "link", "set", self.port, "down")

    def link_up(self) -> None:
        """Put the host back on the bridge."""
        ip("-n", self.bridge_namespace, "link", "set", self.port, "up")

    def kill(self) -> None:
        """SIGKILL every process of the host (everything in its namespace), as a crash."""
        self.killed = True
        for pid in namespace_pids(self.namespace):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.stop()

    def log(self, name: str) -> str:
        return self.process.log(name)


class NetnsPool:
    """A bridge in a namespace of its own, and hosts joined to it."""

    def __init__(self, tag: str, base_cgroup: str, root: Path) -> None:
        self.tag = tag
        self.root = root
        self.base_cgroup = base_cgroup
        self.bridge_namespace = f"epbr{tag}"
        self.hosts: list[Host] = []
        self.namespaces: list[str] = []

    def open(self) -> None:
        """Make the bridge's namespace and the bridge."""
        self._add_namespace(self.bridge_namespace)
        ip("-n", self.bridge_namespace, "link", "add", "br0", "type", "bridge")
        ip("-n", self.bridge_namespace, "link", "set", "br0", "up")

    def _add_namespace(self, name: str) -> None:
        ip("netns", "add", name)
        self.namespaces.append(name)
        ip("-n", name, "link", "set", "lo", "up")

    @property
    def manager(self) -> Host:
        """The first host, the central manager every configuration names in CONDOR_HOST."""
        return self.hosts[0]

    def add_host(
        self,
        name: str,
        role: str,
        *,
        update_interval: int = 2,
        lifetime: int = 600,
        cpus: int = 1,
        memory: int = 1024,
        extra: str = "",
    ) -> Host:
        """A new host ``name`` of ``role`` (one of :data:`ROLES`), not started, with ``cpus``
        and ``memory`` MB and ``extra`` at the end of its configuration; the first host added
        is the central manager."""
        assert role in ROLES, role
        number = len(self.hosts) + 1
        namespace = f"ep{self.tag}{name}"
        address = f"{SUBNET}.{number}"
        port = f"v{number}"
        self._add_namespace(namespace)
        # Both ends made straight in their namespaces: nothing passes through the root one.
        ip("-n", namespace, "link", "add", "eth0", "type", "veth",
           "peer", "name", port, "netns", self.bridge_namespace)  # fmt: skip
        ip("-n", namespace, "addr", "add", f"{address}/24", "dev", "eth0")
        ip("-n", namespace, "link", "set", "eth0", "up")
        ip("-n", self.bridge_namespace, "link", "set", port, "master", "br0")
        ip("-n", self.bridge_namespace, "link", "set", port, "up")
        local = self.root / name
        local.mkdir()
        local.chmod(0o755)
        cgroup = f"{self.base_cgroup}/netns_{name}"
        manager = self.manager.address if self.hosts else address
        text = (
            personal_config_text(str(local))
            + TEST_CONFIG.format(cpus=cpus, memory=memory, cgroup=cgroup)
            + POOL_SECURITY
            + HOST_CONFIG.format(
                role=role, manager=manager, port=COLLECTOR_PORT, ip=address,
                update_interval=update_interval, lifetime=lifetime,
            )
            + extra
        )  # fmt: skip
        host = Host(
            name, namespace, address, port, self.bridge_namespace,
            HostProcess(local, text, namespace, f"{name}.{POOL_DOMAIN}"), cgroup,
        )  # fmt: skip
        self.hosts.append(host)
        return host

    def token(self) -> str:
        """A DAEMON token signed by the central manager's pool key (once it has started)."""
        return pool_token(self.manager.config_path)

    def close(self) -> None:
        """Kill every host's processes, delete the namespaces (their veths go with them),
        the LOCAL_DIRs and the hosts' cgroups."""
        for host in self.hosts:
            with contextlib.suppress(Exception):
                host.kill()
        for namespace in reversed(self.namespaces):
            for pid in namespace_pids(namespace):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.CalledProcessError):
                ip("netns", "del", namespace)
        for host in self.hosts:
            remove_cgroup_tree(host.cgroup)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def netns_pool(as_root: None, base_cgroup: str, run_tag: str) -> Iterator[NetnsPool]:
    """An empty :class:`NetnsPool` (add hosts with ``add_host``), removed afterwards."""
    if not os.access(IP, os.X_OK):
        missing(f"{IP} (iproute2) is not installed")
    # Outside pytest's 0700 temporary root: the hosts' slot users must reach their LOCAL_DIRs.
    root = Path(tempfile.mkdtemp(prefix=f"ep_netns_{run_tag}_"))
    root.chmod(0o755)
    pool = NetnsPool(run_tag, base_cgroup, root)
    try:
        pool.open()
        yield pool
    finally:
        pool.close()
