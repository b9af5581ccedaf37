"""The network-namespace kit (epcore.testing.netns): hosts joined only by their own bridge, a
central manager and an execute host in separate namespaces, and nothing left afterwards."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from epcore.testing.netns import SUBNET, Host, NetnsPool, ip, namespace_pids
from epcore.testing.netns_pool import enter_namespace
from epcore.testing.pool import run_ep, user_home
from epcore.testing.system import V1_ROOT, SlotUser

pytestmark = pytest.mark.netns

#: htcondor2 in a host's namespace: the startd ads of the collector its configuration names.
QUERY = """
import json, htcondor2
ads = htcondor2.Collector().query(htcondor2.AdType.Startd)
print(json.dumps([[a["Name"], a["MyAddress"]] for a in ads]))
"""


def _root_links() -> set[str]:
    return {line.split(":")[1].strip() for line in ip("-o", "link").splitlines()}


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not: PID 1 reaps orphans late here)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _startd_ads(viewer: Host) -> list[list[str]]:
    """The startd ads htcondor2, run inside ``viewer``'s namespace, reads from the collector."""
    done = viewer.exec(
        "env", f"CONDOR_CONFIG={viewer.config_path}", sys.executable, "-c", QUERY, timeout=60
    )
    assert done.returncode == 0, done.stderr
    answer: list[list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.2)


def _start_manager(pool: NetnsPool, lifetime: int) -> Host:
    manager = pool.add_host("cm", "CentralManager", lifetime=lifetime)
    manager.start()
    key = manager.local_dir / "passwords.d"
    _wait(lambda: key.is_dir() and any(key.iterdir()), 60, "the pool's signing key")
    return manager


def test_hosts_reach_each_other_only_through_their_bridge(netns_pool: NetnsPool) -> None:
    """Two hosts' namespaces exist and reach each other's addresses; the root namespace gets
    no link and no address of theirs; with one host's bridge port down they no longer reach
    each other, and up again they do."""
    before = _root_links()
    first = netns_pool.add_host("a", "Execute")
    second = netns_pool.add_host("b", "Execute")
    listed = ip("netns", "list")
    assert first.namespace in listed and second.namespace in listed
    assert netns_pool.bridge_namespace in listed
    assert first.reaches(second.address) and second.reaches(first.address)
    assert _root_links() == before
    assert SUBNET not in ip("-o", "addr")
    second.link_down()
    assert not first.reaches(second.address, timeout=0.5)
    second.link_up()
    _wait(lambda: first.reaches(second.address), 10, "the link back up")


def test_an_execute_host_advertises_to_a_manager_in_another_namespace_until_its_link_is_cut(
    netns_pool: NetnsPool,
) -> None:
    """An execute host's slot ad reaches the central manager in another namespace with the
    execute host's address in MyAddress, htcondor2 in a third namespace sees it, and once the
    execute host's link is cut the ad goes after CLASSAD_LIFETIME (not before)."""
    manager = _start_manager(netns_pool, lifetime=6)
    execute = netns_pool.add_host("exec", "Execute", update_interval=2)
    viewer = netns_pool.add_host("view", "Submit")
    execute.start(netns_pool.token())
    found: list[list[str]] = []

    def advertised() -> bool:
        nonlocal found
        manager.process.check_alive()
        found = _startd_ads(viewer)
        return len(found) == 1

    _wait(advertised, 90, "the execute host's slot ad")
    ((name, address),) = found
    assert address.startswith(f"<{execute.address}:")
    assert name.startswith("slot") and "@" in name
    execute.link_down()
    cut = time.monotonic()
    _wait(lambda: _startd_ads(viewer) == [], 40, "the ad to expire")
    assert time.monotonic() - cut >= 3
    execute.process.check_alive()  # it was the link, not the host, that went


def test_nothing_is_left_after_the_pool_closes(
    as_root: None, base_cgroup: str, run_tag: str
) -> None:
    """Killing a host kills every process in its namespace and no other; after close, a pool
    whose hosts ran ``ep run`` leaves no namespace, no process, no LOCAL_DIR and no cgroup (a
    job's group under a host's BASE_CGROUP) behind."""
    root = Path(tempfile.mkdtemp(prefix=f"ep_netns_{run_tag}_"))
    pool = NetnsPool(f"{run_tag}z", base_cgroup, root)
    try:
        pool.open()
        manager = _start_manager(pool, lifetime=600)
        execute = pool.add_host("exec", "Execute")
        execute.start(pool.token())
        _wait(lambda: bool(namespace_pids(execute.namespace)), 30, "ep run in its namespace")
        # The startd makes its groups with its first job: make one as a job's would be.
        (V1_ROOT / "memory" / execute.cgroup / "job").mkdir(parents=True)
        killed = namespace_pids(execute.namespace)
        execute.kill()
        assert namespace_pids(execute.namespace) == []
        assert not any(_alive(pid) for pid in killed)
        manager.process.check_alive()  # the other host's processes are untouched
        execute.start()
        _wait(lambda: bool(namespace_pids(execute.namespace)), 30, "ep run again")
        pids = namespace_pids(manager.namespace) + namespace_pids(execute.namespace)
    finally:
        pool.close()
    listed = ip("netns", "list")
    assert all(namespace not in listed for namespace in pool.namespaces)
    assert not root.exists()
    assert not any(_alive(pid) for pid in pids)
    assert not any((V1_ROOT / c / execute.cgroup).exists() for c in ("memory", "cpu", "pids"))


def test_a_job_on_a_netns_host_runs_in_the_hosts_cgroup(
    netns_pool: NetnsPool, slot_users: tuple[SlotUser, ...]
) -> None:
    """A host in its namespace finds the machine's cgroup hierarchies (the startd does not
    log the cgroup backend unavailable, and tracks with it), and a job run there is in a
    memory group under the host's BASE_CGROUP."""
    host = netns_pool.add_host("solo", "Personal")
    host.process.start()
    user = slot_users[0]
    home = user_home(netns_pool.root, user)
    (home / "job.sub").write_text(
        "executable = /bin/cat\narguments = /proc/self/cgroup\noutput = groups.txt\nqueue\n"
    )
    os.chown(home / "job.sub", user.uid, user.gid)
    submitted = run_ep(
        ["submit", "job.sub", "--config", str(host.config_path)],
        uid=user.uid,
        gid=user.gid,
        cwd=str(home),
        enter=lambda: enter_namespace(host.namespace),
    )
    assert submitted.status == 0, submitted.stderr
    _wait(lambda: bool(host.process.jobs(history=True)), 90, "the job to finish")
    startd_log = host.log("StartLog") + host.log("MasterLog")
    assert "configured but unavailable" not in startd_log
    assert re.search(r"process tracking: .*\bcgroup\b", startd_log), startd_log[-2000:]
    memory = [line for line in (home / "groups.txt").read_text().splitlines() if ":memory:" in line]
    assert len(memory) == 1 and memory[0].split(":", 2)[2].startswith(f"/{host.cgroup}/"), memory
