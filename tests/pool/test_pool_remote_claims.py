"""Jobs running on a startd in another ``ep run`` process: a central manager and submit host
(collector, negotiator, schedd) on 127.0.0.2 and an execute host (startd alone) on
127.0.0.3, each with its own LOCAL_DIR and a DAEMON token ``ep token create`` made; the
schedd claims and activates the execute host's slots over CEDAR (epcore.links.startd) and
the startd hands the results back over CEDAR (epcore.links.results), issue 23."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.net import commands
from epcore.net.client import query_collector
from epcore.testing.pool import (
    POOL_SECURITY,
    PoolProcess,
    install_token,
    pool_token,
    submit_as,
    user_home,
)
from epcore.testing.system import SlotUser

pytestmark = pytest.mark.system

MANAGER_IP, EXECUTE_IP = "127.0.0.2", "127.0.0.3"
MANAGER = (
    POOL_SECURITY
    + """
DAEMON_LIST = MASTER COLLECTOR NEGOTIATOR SCHEDD
NETWORK_INTERFACE = {ip}
COLLECTOR_HOST = {ip}:{port}
SCHEDD_INTERVAL = 2
"""
)
EXECUTE = (
    POOL_SECURITY
    + """
DAEMON_LIST = MASTER STARTD
NETWORK_INTERFACE = {ip}
COLLECTOR_HOST = {collector}
UPDATE_INTERVAL = 2
SEC_PASSWORD_DIRECTORY = {keys}
"""
)


def _free_port(ip: str) -> int:
    with socket.socket() as probe:
        probe.bind((ip, 0))
        return int(probe.getsockname()[1])


def _pool(
    factory: Callable[..., PoolProcess], cpus: int, manager_extra: str = ""
) -> tuple[PoolProcess, PoolProcess, str]:
    """The central manager and submit host, then the execute host (``cpus`` slots) holding
    the pool's token and (to check the schedd's) its signing key; the collector's address."""
    port = _free_port(MANAGER_IP)
    collector = f"{MANAGER_IP}:{port}"
    manager = factory(MANAGER.format(ip=MANAGER_IP, port=port) + manager_extra, start=False)
    manager.launch()
    manager.wait_for(lambda: (manager.directory / "passwords.d" / "POOL").exists(), 60, "the key")
    token = pool_token(manager.config_path)
    install_token(manager.directory, token)
    keys = manager.directory / "passwords.d"
    text = EXECUTE.format(ip=EXECUTE_IP, collector=collector, keys=keys)
    execute = factory(text, cpus=cpus, start=False)
    install_token(execute.directory, token)
    execute.launch()
    return manager, execute, collector


def _slots(manager: PoolProcess, collector: str) -> list[ClassAd]:
    """The slot ads in the collector (none while it does not listen yet)."""
    manager.check_alive()
    config = Config.load(manager.config_path)
    host, port = collector.split(":")
    try:
        return query_collector(host, int(port), commands.QUERY_STARTD_ADS.number, config)
    except OSError:
        return []


def test_jobs_run_on_the_remote_execute_host(
    pool_factory: Callable[..., PoolProcess], slot_users: tuple[SlotUser, ...], shared_dir: Path
) -> None:
    """Two jobs submitted on the submit host (whose process runs no startd) are matched to
    the execute host's partitionable slot, claimed and activated there over CEDAR: they run
    (JobStatus 2) on two dynamic slots of the execute host's machine (RemoteHost), and the
    execute host's StartLog records the claims and activations the schedd asked for."""
    manager, execute, collector = _pool(pool_factory, cpus=2)
    manager.wait_for(lambda: len(_slots(manager, collector)) == 1, 60, "the execute host's slot")
    (slot,) = _slots(manager, collector)
    assert str(slot.evaluate("MyAddress")).startswith(f"<{EXECUTE_IP}:")
    user = slot_users[0]
    submit_as(manager, user, shared_dir, "executable = /bin/sleep\narguments = 60\nqueue 2\n")

    def running() -> bool:
        manager.check_alive()
        execute.check_alive()
        return len(manager.jobs("JobStatus == 2")) == 2

    manager.wait_for(running, 90, "both jobs running on the execute host")
    jobs = manager.jobs("JobStatus == 2")
    hosts = {str(job.evaluate("RemoteHost")) for job in jobs}
    assert len(hosts) == 2
    assert all(h.startswith("slot1_") and h.endswith(f"@{slot.evaluate('Machine')}") for h in hosts)
    log = execute.log("StartLog")
    assert log.count("REQUEST_CLAIM of ") >= 2 and log.count("ACTIVATE_CLAIM of claim") >= 2
    assert f"at {MANAGER_IP}:" in log or f"<{MANAGER_IP}:" in log
    # condor_rm of a running job gives its claim back over CEDAR: the startd stops it.
    removed = manager.ep(
        "rm", str(jobs[0].evaluate("ClusterId")) + "." + str(jobs[0].evaluate("ProcId")), user=user
    )
    assert removed.status == 0, removed.stderr
    execute.wait_for(
        lambda: "RELEASE_CLAIM (443) for claim" in execute.log("StartLog"), 30, "the release"
    )
    assert len(manager.jobs("JobStatus == 2")) == 1


def test_keep_alives_over_cedar_hold_a_short_claim_lease(
    pool_factory: Callable[..., PoolProcess], slot_users: tuple[SlotUser, ...], shared_dir: Path
) -> None:
    """A job with a 6 s lease (job_lease_duration) runs on the execute host well past it,
    because the schedd's ALIVE (every min(ALIVE_INTERVAL, JobLeaseDuration / 3) = 2 s, on
    the schedd's own timer) reaches the startd; the startd never says the lease expired."""
    manager, execute, collector = _pool(pool_factory, cpus=1, manager_extra="ALIVE_INTERVAL = 3\n")
    manager.wait_for(lambda: len(_slots(manager, collector)) == 1, 60, "the execute host's slot")
    user = slot_users[0]
    job = "executable = /bin/sleep\narguments = 60\njob_lease_duration = 6\nqueue\n"
    submit_as(manager, user, shared_dir, job)
    manager.wait_for(lambda: len(manager.jobs("JobStatus == 2")) == 1, 90, "the job running")
    execute.wait_for(lambda: "ACTIVATE_CLAIM" in execute.log("StartLog"), 10, "the activation")
    time.sleep(15)  # two and a half leases
    assert len(manager.jobs("JobStatus == 2")) == 1
    assert "the claim lease expired" not in execute.log("StartLog")
    assert "Claimed/Busy" in execute.log("StartLog").rsplit("ACTIVATE_CLAIM", 1)[0]


#: A job that shows where it runs, reads its input, writes an output file and exits 3.
PROGRAM = """#!/bin/sh
pwd
cat data.txt
echo made-$1 > result-$1.txt
exit 3
"""


def _write(path: Path, text: str, user: SlotUser, mode: int = 0o644) -> None:
    path.write_text(text)
    os.chown(path, user.uid, user.gid)
    path.chmod(mode)


def test_remote_jobs_complete_with_their_exit_codes_and_output(
    pool_factory: Callable[..., PoolProcess], slot_users: tuple[SlotUser, ...], shared_dir: Path
) -> None:
    """Jobs submitted on the submit host run on the execute host and complete there: their
    results come back over CEDAR (JobStatus 4, ExitCode 3 in the history, RemoteHost a
    dynamic slot of the execute host). Jobs run in place (same FILESYSTEM_DOMAIN) write
    their stdout into the Iwd directly; should_transfer_files = YES jobs run in a sandbox,
    get data.txt transferred in, and their stdout and result file transferred back."""
    manager, execute, collector = _pool(pool_factory, cpus=2)
    manager.wait_for(lambda: len(_slots(manager, collector)) == 1, 60, "the execute host's slot")
    user = slot_users[0]
    home = user_home(shared_dir, user)
    _write(home / "prog.sh", PROGRAM, user, 0o755)
    _write(home / "data.txt", "data-in\n", user)
    submit_as(
        manager,
        user,
        shared_dir,
        "executable = prog.sh\narguments = p$(Process)\noutput = place.$(Process)\nqueue 3\n"
        "should_transfer_files = YES\ntransfer_input_files = data.txt\n"
        "arguments = t$(Process)\noutput = sent.$(Process)\nqueue 3\n",
    )

    def done() -> bool:
        manager.check_alive()
        execute.check_alive()
        return len(manager.jobs(history=True)) == 6

    manager.wait_for(done, 120, "the six jobs to complete")
    finished = manager.jobs(history=True)
    assert {job.evaluate("JobStatus") for job in finished} == {4}
    assert {job.evaluate("ExitCode") for job in finished} == {3}
    assert all(str(job.evaluate("LastRemoteHost")).startswith("slot1_") for job in finished)
    assert manager.jobs() == []
    for n in range(3):  # $(Process) counts on through the second queue: 3, 4, 5
        in_place = (home / f"place.{n}").read_text().splitlines()
        assert in_place == [str(home), "data-in"]
        assert (home / f"result-p{n}.txt").read_text() == f"made-p{n}\n"
        sent = (home / f"sent.{n + 3}").read_text().splitlines()
        assert sent[0] != str(home) and sent[1:] == ["data-in"]  # ran in its sandbox
        assert (home / f"result-t{n + 3}.txt").read_text() == f"made-t{n + 3}\n"
        assert (home / f"result-t{n + 3}.txt").stat().st_uid == user.uid
    transferred = [job for job in finished if job.evaluate("ShouldTransferFiles") == "YES"]
    assert len(transferred) == 3 and all(job.evaluate("BytesSent") > 0 for job in transferred)
    log = execute.log("StartLog")
    assert log.count("ACTIVATE_CLAIM of claim") >= 6
