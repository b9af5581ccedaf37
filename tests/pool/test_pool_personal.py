"""The personal pool's configuration, and which configuration the pool commands read."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from epcore.config import Config, HostFacts, MemoryHost
from epcore.pool import personal
from epcore.pool.personal import config_file_for, personal_config_text, write_personal_config
from epcore.pool.requests import PoolClient
from epcore.pool.setup import PoolPaths
from epcore.slots.inventory import build_inventory
from epcore.slots.layout import plan_slots
from epcore.testing.system import missing


def test_a_given_file_wins() -> None:
    """--config FILE is read whatever the environment says."""
    assert config_file_for("/x/c", {"CONDOR_CONFIG": "/y"}, uid=0, home="/root") == ("/x/c", False)


def test_condor_config_comes_next() -> None:
    """CONDOR_CONFIG names the file when no --config is given, as for HTCondor's tools."""
    assert config_file_for(None, {"CONDOR_CONFIG": "/y/c"}, uid=5, home="/h") == ("/y/c", False)


@pytest.mark.parametrize(
    ("uid", "home", "expected"),
    [
        (0, "/root", "/var/lib/epcore/condor_config"),
        (1000, "/home/alice", "/home/alice/.epcore/condor_config"),
        (1000, None, "/var/lib/epcore/condor_config"),
    ],
)
def test_without_a_configuration_the_personal_pool_is_used(
    monkeypatch: pytest.MonkeyPatch, uid: int, home: str | None, expected: str
) -> None:
    """Without any condor_config, root's pool lives in /var/lib/epcore, a user's in ~/.epcore."""
    monkeypatch.setattr(personal, "htcondor_config_file", lambda environ, condor_home: None)
    monkeypatch.setattr(os.path, "exists", lambda path: False)
    assert config_file_for(None, {}, uid=uid, home=home) == (expected, True)


def test_a_user_without_a_pool_finds_roots(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user with no personal pool of their own reaches root's (the one `ep run` as root
    made), so that everyone on the machine submits to it."""
    monkeypatch.setattr(personal, "htcondor_config_file", lambda environ, condor_home: None)
    system = "/var/lib/epcore/condor_config"
    monkeypatch.setattr(os.path, "exists", lambda path: path == system)
    assert config_file_for(None, {}, uid=1000, home="/home/bob") == (system, True)


def test_the_personal_configuration_is_one_partitionable_slot_with_the_whole_machine() -> None:
    """The written configuration gives one partitionable slot with every core and all the
    memory, under a consumption policy, running every job."""
    detected = {"DETECTED_CORES": "8", "DETECTED_CPUS_LIMIT": "8", "DETECTED_MEMORY": "16384"}
    host = MemoryHost(
        host_facts=HostFacts(
            hostname="ep", full_hostname="ep.example.org", detected=detected, specials={}
        )
    )
    config = Config.from_text(personal_config_text("/srv/ep"), host=host)
    inventory = build_inventory(config, (), execute_disks_kb={"/srv/ep/execute": 10**8})
    (slot,) = plan_slots(config, inventory).slots
    assert slot.kind == "partitionable"
    assert float(slot.resources.cpus) == 8
    assert slot.resources.memory_mb == 16384
    assert config.get("SPOOL") == "/srv/ep/spool"
    assert config.get_bool("SLOT_TYPE_1_CONSUMPTION_POLICY", False)
    assert config.get("START") == "True"
    paths = PoolPaths.from_config(config)
    assert paths.control_socket == "/srv/ep/spool/pool_control"
    assert paths.queue_database == "/srv/ep/spool/job_queue.db"


@pytest.mark.oracle
def test_htcondor_reads_the_personal_configuration_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTCondor's own reader finds the same values in the personal configuration."""
    htcondor2 = pytest.importorskip("htcondor2")
    path = tmp_path / "condor_config"
    write_personal_config(str(path))
    monkeypatch.setenv("CONDOR_CONFIG", str(path))
    htcondor2.reload_config()
    ours = Config.load(str(path))
    for knob in (
        "LOCAL_DIR",
        "SPOOL",
        "EXECUTE",
        "LOG",
        "NUM_SLOTS_TYPE_1",
        "SLOT_TYPE_1_PARTITIONABLE",
        "START",
        "PREEMPT",
        "NEGOTIATOR_INTERVAL",
        "COLLECTOR_PERSISTENT_AD_LOG",
    ):
        assert str(htcondor2.param[knob]) == ours.get(knob), knob


@pytest.mark.system
def test_the_installed_ep_script_runs_the_pool_and_stops_on_sigterm(
    shared_dir: Path, base_cgroup: str
) -> None:
    """README's command: the installed ``ep run`` starts a pool that answers on its socket,
    and SIGTERM shuts it down with status 0."""
    script = shutil.which("ep")
    if script is None:
        missing("the ep console script is not on PATH (pip install -e . not done?)")
    path = shared_dir / "condor_config"
    write_personal_config(str(path))
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"BASE_CGROUP = {base_cgroup}/personal\nRUNBENCHMARKS = False\n")
    process = subprocess.Popen(
        [script, "run", "--config", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        client = PoolClient(str(shared_dir / "spool" / "pool_control"), timeout=10)
        deadline = time.monotonic() + 60
        while True:
            try:
                ads = client.query_ads("Machine")
                break
            except Exception:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.1)
        assert len(ads) == 1 and ads[0].evaluate("PartitionableSlot") is True
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
        assert process.stdout is not None
        assert b"the pool has shut down" in process.stdout.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("OFFLINE_LOG = /srv/old.ads\n", "/srv/old.ads"),
        (
            "OFFLINE_LOG = /srv/old.ads\nCOLLECTOR_PERSISTENT_AD_LOG = /srv/new.ads\n",
            "/srv/new.ads",
        ),
        ("", "/srv/ep/spool/collector_persistent.ads"),
    ],
)
def test_offline_log_is_read_when_collector_persistent_ad_log_is_unset(
    text: str, path: str
) -> None:
    """COLLECTOR_PERSISTENT_AD_LOG wins; its old name OFFLINE_LOG is read in its absence."""
    config = Config.from_text(
        f"LOCAL_DIR = /srv/ep\nSPOOL = /srv/ep/spool\nLOG = /srv/ep/log\n{text}"
    )
    assert PoolPaths.from_config(config).collector_log == path
