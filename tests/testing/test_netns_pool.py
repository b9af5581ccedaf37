"""The whole-pool kit (epcore.testing.netns_pool): a central manager, a submit host and
execute hosts started at once in their namespaces, ready when every slot is in the
collector, and nothing left when it closes."""

from __future__ import annotations

import socket
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from epcore.net import commands
from epcore.testing.netns import COLLECTOR_PORT, NetnsPool, ip, namespace_pids
from epcore.testing.netns_pool import NetnsHosts, inside
from epcore.testing.system import V1_ROOT

pytestmark = [pytest.mark.netns, pytest.mark.system]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not: PID 1 reaps orphans late here)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _mounts() -> str:
    return Path("/proc/self/mounts").read_text()


def test_a_whole_pool_starts_in_parallel_and_every_host_is_in_its_own_namespace(
    as_root: None, base_cgroup: str, run_tag: str
) -> None:
    """Three execute hosts, a submit host and a central manager come up together: each
    execute host's slot is in the collector with its own address, the schedd's ad too, each
    host's processes live in its namespace only, and the pool is ready within 45 s;
    after close no namespace, mount, veth, process, LOCAL_DIR or cgroup of it is left."""
    root = Path(tempfile.mkdtemp(prefix=f"ep_netns_{run_tag}_"))
    root.chmod(0o755)
    links_before = ip("-o", "link")
    pool = NetnsPool(f"{run_tag}w", base_cgroup, root)
    try:
        pool.open()
        started = time.monotonic()
        hosts = NetnsHosts(pool)
        hosts.start()
        for _ in range(3):
            hosts.add_execute()
        hosts.wait_for_slots()
        hosts.wait_for_schedd()
        took = time.monotonic() - started
        assert took < 45, took
        for host in hosts.executes:
            (slot,) = hosts.slots_of(host)
            assert slot.evaluate("PartitionableSlot") is True
        hosts.wait(lambda: len(hosts.query(commands.QUERY_SCHEDD_ADS)) == 1, 30, "the schedd")
        (schedd,) = hosts.query(commands.QUERY_SCHEDD_ADS)
        assert str(schedd.evaluate("MyAddress")).startswith(f"<{hosts.submit.address}:")
        everyone = [hosts.manager, hosts.submit, *hosts.executes]
        pids = {host.name: set(namespace_pids(host.namespace)) for host in everyone}
        assert all(pids.values())
        assert len(set.union(*pids.values())) == sum(len(found) for found in pids.values())
        # The kit's thread reaches the collector from inside a host.
        collector = (hosts.manager.address, COLLECTOR_PORT)
        inside(hosts.submit.namespace, lambda: socket.create_connection(collector, 5).close())
        (V1_ROOT / "memory" / hosts.executes[0].cgroup / "job").mkdir(parents=True)
    finally:
        pool.close()
    listed = ip("netns", "list")
    assert all(namespace not in listed for namespace in pool.namespaces)
    assert all(namespace not in _mounts() for namespace in pool.namespaces)
    assert ip("-o", "link") == links_before
    assert not root.exists()
    assert not any(_alive(pid) for found in pids.values() for pid in found)
    assert not any(
        (V1_ROOT / c / host.cgroup).exists()
        for c in ("memory", "cpu", "pids")
        for host in pool.hosts
    )
