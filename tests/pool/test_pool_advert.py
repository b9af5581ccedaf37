"""Roles in separate ``ep run`` processes on loopback addresses: a central manager on
127.0.0.2, an execute host on 127.0.0.3 and a submit host on 127.0.0.4, each with its own
LOCAL_DIR, advertising over CEDAR with a token ``ep token create`` made (issue 23)."""

from __future__ import annotations

import logging
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.links.collector import RemoteCollector
from epcore.net import commands, tokens
from epcore.net.client import query_collector
from epcore.runtime.control import ControlError
from epcore.startd.control import StartdClient
from epcore.testing.cedar import run_htcondor2
from epcore.testing.pool import (
    POOL_DOMAIN,
    POOL_SECURITY,
    PoolProcess,
    install_token,
    pool_token,
    submit_as,
)
from epcore.testing.system import SlotUser

CM_IP, EXECUTE_IP, SUBMIT_IP = "127.0.0.2", "127.0.0.3", "127.0.0.4"
DOMAIN = POOL_DOMAIN
COMMON = POOL_SECURITY
CENTRAL_MANAGER = (
    COMMON
    + """
DAEMON_LIST = MASTER COLLECTOR NEGOTIATOR
NETWORK_INTERFACE = {ip}
COLLECTOR_HOST = {ip}:{port}
CLASSAD_LIFETIME = {lifetime}
"""
)
HOST = (
    COMMON
    + """
DAEMON_LIST = MASTER {daemon}
NETWORK_INTERFACE = {ip}
COLLECTOR_HOST = {collector}
UPDATE_INTERVAL = 2
SCHEDD_INTERVAL = 2
"""
)


def _free_port(ip: str) -> int:
    with socket.socket() as probe:
        probe.bind((ip, 0))
        return int(probe.getsockname()[1])


class Pool:
    """A central manager, and hosts that join it."""

    def __init__(self, factory: Callable[..., PoolProcess], lifetime: int) -> None:
        self.factory = factory
        self.port = _free_port(CM_IP)
        self.collector = f"{CM_IP}:{self.port}"
        text = CENTRAL_MANAGER.format(ip=CM_IP, port=self.port, lifetime=lifetime)
        self.manager = factory(text)

    def token(self, identity: str = f"condor@{DOMAIN}") -> str:
        return pool_token(self.manager.config_path, identity)

    def host(self, daemon: str, ip: str, token: str | None) -> PoolProcess:
        """An ``ep run`` of ``daemon`` alone on ``ip``, holding ``token`` in its token
        directory (none: no token), started."""
        text = HOST.format(daemon=daemon, ip=ip, collector=self.collector)
        process = self.factory(text, start=False)
        if token is not None:
            install_token(process.directory, token)
        process.launch()
        return process

    def ads(self, command: commands.Command = commands.QUERY_STARTD_ADS) -> list[ClassAd]:
        config = Config.load(self.manager.config_path)
        return query_collector(CM_IP, self.port, command.number, config)

    def wait_for_ads(
        self, count: int, timeout: float, command: commands.Command = commands.QUERY_STARTD_ADS
    ) -> list[ClassAd]:
        found: list[ClassAd] = []

        def enough() -> bool:
            nonlocal found
            self.manager.check_alive()
            found = self.ads(command)
            return len(found) == count

        self.manager.wait_for(enough, timeout, f"{count} ads of {command.name}")
        return found


def _startd_answers(host: PoolProcess) -> Callable[[], bool]:
    client = StartdClient(str(host.directory / "lock" / "startd_control"), timeout=10)

    def answers() -> bool:
        host.check_alive()
        try:
            return bool(client.query())
        except ControlError:
            return False

    return answers


def test_slot_ads_reach_the_central_manager_and_leave_when_the_host_shuts_down(
    pool_factory: Callable[..., PoolProcess],
) -> None:
    """An execute host's slot ads appear in the central manager's collector within its
    UPDATE_INTERVAL, proven by its token (AuthenticatedIdentity), with MyAddress and
    StartdIpAddr its TCP address on 127.0.0.3; htcondor2 sees them; a peaceful shutdown
    invalidates them at once (long before CLASSAD_LIFETIME)."""
    pool = Pool(pool_factory, lifetime=600)
    execute = pool.host("STARTD", EXECUTE_IP, pool.token())
    execute.wait_for(_startd_answers(execute), 60, "the startd")
    started = time.monotonic()
    (ad,) = pool.wait_for_ads(1, 10)
    assert time.monotonic() - started < 5
    assert str(ad.evaluate("MyAddress")).startswith(f"<{EXECUTE_IP}:")
    assert ad.evaluate("StartdIpAddr") == ad.evaluate("MyAddress")
    assert ad.evaluate("AuthenticatedIdentity") == f"condor@{DOMAIN}"
    assert ad.evaluate("AuthenticationMethod") == "TOKEN"
    seen = run_htcondor2(
        str(pool.manager.config_path),
        "result = [[a['Name'], a['MyAddress']] for a in "
        "htcondor2.Collector().query(htcondor2.AdType.Startd)]",
    )
    assert seen == [[ad.evaluate("Name"), ad.evaluate("MyAddress")]]
    assert execute.process is not None
    execute.process.send_signal(signal.SIGTERM)
    assert execute.process.wait(30) == 0
    assert pool.ads() == []


def test_a_killed_host_leaves_the_collector_after_classad_lifetime(
    pool_factory: Callable[..., PoolProcess],
) -> None:
    """The slot ads of an execute host killed with SIGKILL (no invalidation) stay until
    CLASSAD_LIFETIME has passed since the last update, then the collector drops them."""
    pool = Pool(pool_factory, lifetime=6)
    execute = pool.host("STARTD", EXECUTE_IP, pool.token())
    pool.wait_for_ads(1, 60)
    execute.stop()  # SIGKILL to the startd and everything of it
    killed = time.monotonic()
    assert len(pool.ads()) == 1
    pool.wait_for_ads(0, 30)
    assert time.monotonic() - killed >= 3


@pytest.mark.parametrize("token", ["forged", "none"])
def test_a_host_without_a_good_token_is_refused_and_named_in_the_collector_log(
    pool_factory: Callable[..., PoolProcess], token: str
) -> None:
    """An execute host whose token another key signed, or that has none, cannot advertise:
    no ad appears, the CollectorLog names the host's address and why, and the StartLog says
    once (not at every attempt) that the collector refuses."""
    pool = Pool(pool_factory, lifetime=600)
    forged = None
    if token == "forged":
        forged = tokens.create_token(
            b"k" * 64, key_id="POOL", issuer=DOMAIN, subject=f"condor@{DOMAIN}",
            now=int(time.time()),
        )  # fmt: skip
    execute = pool.host("STARTD", EXECUTE_IP, forged)
    execute.wait_for(_startd_answers(execute), 60, "the startd")
    pool.manager.wait_for(
        lambda: f"<{EXECUTE_IP}:" in pool.manager.log("CollectorLog"), 20, "the refusal logged"
    )
    time.sleep(5)  # two more UPDATE_INTERVALs: attempts go on, quietly
    assert pool.ads() == []
    refusals = [
        line for line in pool.manager.log("CollectorLog").splitlines() if EXECUTE_IP in line
    ]
    assert any("UPDATE_STARTD_AD" in line and "refused" in line for line in refusals)
    assert any("authentication" in line for line in refusals)
    warnings = [line for line in execute.log("StartLog").splitlines() if "cannot send ads" in line]
    assert len(warnings) == 1 and pool.collector in warnings[0]


@pytest.mark.system
def test_a_submit_host_advertises_its_schedd_and_submitters_and_answers_through_the_pool(
    pool_factory: Callable[..., PoolProcess], slot_users: tuple[SlotUser, ...], shared_dir: Path
) -> None:
    """A submit host's schedd ad and its submitter ad (ScheddIpAddr its TCP address) reach
    the central manager; ``ep q -pool``, ``ep status -pool -submitters`` and
    ``ep userprio -pool`` run from another process against the central manager answer; the
    submit host's better-analyze reads the slots from that collector."""
    pool = Pool(pool_factory, lifetime=600)
    submit = pool.host("SCHEDD", SUBMIT_IP, pool.token())
    user = slot_users[0]
    submit.wait_for(lambda: (submit.directory / "spool" / "pool_control").exists(), 60, "up")
    submit_as(submit, user, shared_dir, "executable = /bin/true\nhold = true\nqueue 2\n")
    (schedd,) = pool.wait_for_ads(1, 30, commands.QUERY_SCHEDD_ADS)
    assert str(schedd.evaluate("MyAddress")).startswith(f"<{SUBMIT_IP}:")

    def submitter_held() -> bool:
        found = pool.ads(commands.QUERY_SUBMITTOR_ADS)
        return bool(found) and found[0].evaluate("HeldJobs") == 2

    pool.manager.wait_for(submitter_held, 30, "the submitter's ad")
    (submitter,) = pool.ads(commands.QUERY_SUBMITTOR_ADS)
    assert submitter.evaluate("ScheddIpAddr") == schedd.evaluate("MyAddress")
    assert str(submitter.evaluate("Name")).startswith(f"{user.name}@")
    listed = pool.manager.ep("q", "-pool", pool.collector, "-allusers")
    assert listed.status == 0, listed.stderr
    assert "2 jobs" in listed.stdout and user.name in listed.stdout
    submitters = pool.manager.ep("status", "-pool", pool.collector, "-submitters")
    assert submitters.status == 0 and user.name in submitters.stdout
    priorities = pool.manager.ep("userprio", "-pool", pool.collector)
    assert priorities.status == 0, priorities.stderr
    execute = pool.host("STARTD", EXECUTE_IP, pool.token())
    execute.wait_for(_startd_answers(execute), 60, "the startd")
    pool.wait_for_ads(1, 30)
    # A job no slot can take: it stays idle whatever a negotiator does.
    submit_as(submit, user, shared_dir, "executable = /bin/true\nrequest_memory = 9000000\nqueue\n")
    analysis = submit.ep("q", "-better-analyze", "2.0", user=user)
    assert analysis.status == 0, analysis.stderr
    assert "Of 1 slot," in analysis.stdout and "1 are rejected" in analysis.stdout


def test_a_silent_collector_does_not_stall_the_startd(
    pool_factory: Callable[..., PoolProcess],
) -> None:
    """An execute host whose collector accepts connections and never answers keeps its
    loop's pace: over several UPDATE_INTERVALs its control socket answers every query
    promptly (none waits for the collector's timeouts), and the StartLog warns once."""
    with socket.socket() as silent:
        silent.bind((CM_IP, 0))
        silent.listen(64)
        collector = f"{CM_IP}:{silent.getsockname()[1]}"
        text = HOST.format(daemon="STARTD", ip=EXECUTE_IP, collector=collector)
        execute = pool_factory(text, start=False)
        execute.launch()
        execute.wait_for(_startd_answers(execute), 60, "the startd")
        client = StartdClient(str(execute.directory / "lock" / "startd_control"), timeout=10)
        took = []
        deadline = time.monotonic() + 8  # four UPDATE_INTERVALs, one CONNECT_TIMEOUT and more
        while time.monotonic() < deadline:
            started = time.monotonic()
            assert client.query()
            took.append(time.monotonic() - started)
            time.sleep(0.1)
        took.sort()
        assert took[len(took) // 2] < 0.2 and took[-1] < 2.0, took
        # The link waits UPDATE_TIMEOUT (20 s, HTCondor's) for the silent collector's answer.
        execute.wait_for(lambda: "cannot send ads" in execute.log("StartLog"), 30, "the warning")
        assert execute.log("StartLog").count("cannot send ads") == 1


def test_a_killed_host_is_kept_absent_when_absent_requirements_say_so(
    pool_factory: Callable[..., PoolProcess],
) -> None:
    """With ABSENT_REQUIREMENTS true, a killed execute host's slot ad is not dropped after
    CLASSAD_LIFETIME but kept as absent (Absent = true), answered only to a query that asks
    for absent ads."""
    pool = Pool(pool_factory, lifetime=4)
    with open(pool.manager.config_path, "a", encoding="utf-8") as handle:
        handle.write("ABSENT_REQUIREMENTS = True\n")
    assert pool.manager.process is not None
    pool.manager.process.send_signal(signal.SIGHUP)
    execute = pool.host("STARTD", EXECUTE_IP, pool.token())
    (live,) = pool.wait_for_ads(1, 60)
    execute.stop()
    pool.wait_for_ads(0, 30)
    config = Config.load(pool.manager.config_path)
    (absent,) = query_collector(
        CM_IP, pool.port, commands.QUERY_STARTD_ADS.number, config, constraint="Absent"
    )
    assert absent.evaluate("Name") == live.evaluate("Name")
    assert absent.evaluate("Absent") is True


def test_later_connections_resume_the_session_and_a_forgotten_one_is_made_anew(
    pool_factory: Callable[..., PoolProcess], tmp_path: Path
) -> None:
    """The remote collector link authenticates once: its next connection resumes the
    session (UseSession), and when the collector no longer knows the session id the link
    starts a new session and the ad still arrives."""
    pool = Pool(pool_factory, lifetime=600)
    tokens_dir = tmp_path / "tokens.d"
    tokens_dir.mkdir(mode=0o700)
    (tokens_dir / "daemon").write_text(pool.token() + "\n")
    (tokens_dir / "daemon").chmod(0o600)
    config = Config.from_text(
        COMMON + f"COLLECTOR_HOST = {pool.collector}\nSEC_TOKEN_DIRECTORY = {tokens_dir}\n",
        subsystem="STARTD",
    )
    link = RemoteCollector(
        lambda: config,
        address=lambda: (EXECUTE_IP, 9),
        subsystem="STARTD",
        log=logging.getLogger("test.resume"),
    )
    link.open(None)  # type: ignore[arg-type]  # the link registers nothing in the loop

    def send(name: str) -> None:
        ad = ClassAd({"MyType": "Machine", "Name": name, "MyAddress": "<unix:/x>"})
        link.advertise([ad], time.time())
        assert link.wait_sent(10)
        assert link.failures == 0
        with link._lock:
            link._drop()  # as after KEEP_IDLE: the next update needs a new connection

    try:
        send("slot1@first")
        send("slot1@second")
        assert (link.connections, link.resumed) == (2, 1)
        assert link._session is not None
        link._session = attrs.evolve(link._session, sid="forgotten:1:2")
        send("slot1@third")
        assert (link.connections, link.resumed) == (4, 1)
        names = sorted(str(ad.evaluate("Name")) for ad in pool.ads())
        assert names == ["slot1@first", "slot1@second", "slot1@third"]
        assert all(ad.evaluate("MyAddress") == f"<{EXECUTE_IP}:9>" for ad in pool.ads())
    finally:
        link.close()
