"""The remote startd link against a real startd served over loopback CEDAR: claims made,
activated, asked about and released; refusals with the startd's reason; a startd that does
not answer costs one timeout and is then given up at once for a while."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from epcore.classad import UNDEFINED, ClassAd
from epcore.config import Config
from epcore.errors import EpError
from epcore.interfaces import ClaimPending, PeerUnreachable
from epcore.links import startd as link_module
from epcore.links import worker as worker_module
from epcore.links.startd import RemoteStartd, remote_startd_connector
from epcore.startd.cedar import cedar_handlers
from epcore.startd.link import LocalStartdLink
from epcore.startd.main import build_startd
from epcore.startd.startd import Startd
from tests.links.negotiate_peers import Served, serving

JOB = ClassAd({"ClusterId": 3, "ProcId": 0, "Owner": "alice", "Cmd": "/bin/true"})
#: The startd's side: any daemon on loopback may claim, any administrator drain.
STARTD_CONFIG = """
ALLOW_DAEMON = *
ALLOW_ADMINISTRATOR = *
ALLOW_READ = *
SEC_DEFAULT_AUTHENTICATION_METHODS = CLAIMTOBE
CEDAR_CLIENT_TIMEOUT = 10
"""
SCHEDD_CONFIG = "SEC_DEFAULT_AUTHENTICATION_METHODS = CLAIMTOBE\nSTARTD_CONTACT_TIMEOUT = 1\n"


@pytest.fixture
def startd(tmp_path: Path) -> Iterator[Startd]:
    """A startd of two static slots built in this process, its slots Unclaimed."""
    local = tmp_path / "local"
    local.mkdir()
    config = tmp_path / "condor_config"
    config.write_text(
        f"LOCAL_DIR = {local}\nRUNBENCHMARKS = False\nIS_OWNER = False\nNUM_CPUS = 2\n"
        "MEMORY = 512\nNUM_SLOTS = 2\nSTART = True\n"
    )
    made = build_startd(str(config))
    now = made.clock()
    made.take(made.engine.poll(made.state, now), now)
    try:
        yield made
    finally:
        for claim_id in list(made.starters.handles):
            made.starters.kill(claim_id)
        made.close()


@pytest.fixture
def served(startd: Startd) -> Iterator[Served]:
    """The startd's CEDAR commands on a loopback listener."""
    local = LocalStartdLink(startd)
    handlers = cedar_handlers(local, lambda: [], logging.getLogger("test.startd"))
    with serving(handlers, STARTD_CONFIG) as listener:
        yield listener


def _claim(link: RemoteStartd, slot: str) -> str:
    """The claim of ``slot`` for JOB: asked (ClaimPending), then picked up once answered."""
    with pytest.raises(ClaimPending):
        link.claim(slot, JOB, "submit.host")
    assert link.background.wait_idle(10)
    return link.claim(slot, JOB, "submit.host")


def _link(address: str, log: str = "test.link") -> RemoteStartd:
    config = Config.from_text(SCHEDD_CONFIG, subsystem="SCHEDD")
    return remote_startd_connector(lambda: config, log=logging.getLogger(log))(address)


def test_a_claim_is_made_asked_about_activated_and_released_over_cedar(
    startd: Startd, served: Served
) -> None:
    """The link claims slot1 (the startd holds the claim for the job), finds it ready on
    slot1@host, activates it (then asked, not ready, still on slot1); the release of an
    idle claim on slot2 ends it; the later connections resume the first one's session."""
    link = _link(served.address)
    claim_id = served.call(lambda: _claim(link, f"slot1@{startd.host_name}"))
    assert dict(startd.claims())[claim_id].evaluate("ClusterId") == 3
    assert served.call(lambda: link.claim_ready(claim_id))
    assert served.call(lambda: link.slot_of(claim_id)) == f"slot1@{startd.host_name}"
    served.call(lambda: link.activate(claim_id))
    assert not startd.claim_ready(claim_id)
    # Busy now: the link asks again rather than trusting its last answer.
    assert not served.call(lambda: link.claim_ready(claim_id))
    assert served.call(lambda: link.slot_of(claim_id)) == f"slot1@{startd.host_name}"
    served.call(lambda: (link.alive(claim_id), link.background.wait_idle(5)))
    idle = served.call(lambda: _claim(link, "slot2"))
    assert idle in dict(startd.claims())
    served.call(lambda: (link.release(idle), link.background.wait_idle(5)))
    assert idle not in dict(startd.claims())
    assert claim_id in dict(startd.claims())
    assert link.connections >= 5
    assert link.resumed == link.connections - 1


class _RecordingRelease(LocalStartdLink):
    """The startd's link, noting whether each release was for a removal."""

    def __init__(self, startd: Startd) -> None:
        super().__init__(startd)
        self.releases: list[tuple[str, bool]] = []

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        self.releases.append((claim_id, removed))
        super().release(claim_id, removed=removed)


def test_a_removed_job_s_release_says_so_over_cedar(startd: Startd) -> None:
    """RemoteStartd.release(removed=True) reaches the startd as a release for a removal, a
    plain release as a plain one, and both end their claims."""
    local = _RecordingRelease(startd)
    handlers = cedar_handlers(local, lambda: [], logging.getLogger("test.startd"))
    with serving(handlers, STARTD_CONFIG) as served:
        link = _link(served.address)
        first = served.call(lambda: _claim(link, "slot1"))
        second = served.call(lambda: _claim(link, "slot2"))
        served.call(lambda: (link.release(first, removed=True), link.background.wait_idle(5)))
        served.call(lambda: (link.release(second), link.background.wait_idle(5)))
    assert local.releases == [(first, True), (second, False)]
    assert not dict(startd.claims())


def test_a_refused_claim_is_an_error_with_the_startds_reason(
    startd: Startd, served: Served
) -> None:
    """A claim of a slot the startd does not have raises EpError naming it (not
    PeerUnreachable: the startd answered), and the link stays usable."""
    link = _link(served.address)
    with pytest.raises(EpError, match="slot99") as raised:
        served.call(lambda: _claim(link, "slot99"))
    assert not isinstance(raised.value, PeerUnreachable)
    assert not link.down
    assert served.call(lambda: _claim(link, "slot2"))


def test_a_guessed_claim_id_is_neither_ready_nor_on_a_slot(startd: Startd, served: Served) -> None:
    """The status of a claim id whose secret is wrong is no slot and not ready, and its
    activation is refused."""
    link = _link(served.address)
    claim_id = served.call(lambda: _claim(link, "slot1"))
    guessed = claim_id.rsplit("#", 1)[0] + "#guessed"
    assert served.call(lambda: (link.slot_of(guessed), link.claim_ready(guessed))) == (None, False)
    with pytest.raises(EpError, match="refused to activate"):
        served.call(lambda: link.activate(guessed))
    assert startd.claim_ready(claim_id)


def test_drain_and_its_cancellation_reach_the_startd(startd: Startd, served: Served) -> None:
    """A graceful drain with a reason is carried out by the startd, and cancelled."""
    link = _link(served.address)
    served.call(lambda: link.drain("graceful", reason="maintenance"))
    assert {ad.evaluate("DrainReason") for ad in startd.query()} == {"maintenance"}
    served.call(link.cancel_drain)
    assert {ad.evaluate("Draining") for ad in startd.query()} <= {False, None}


def test_a_silent_startd_costs_one_timeout_then_is_given_up_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A startd that accepts nothing: the claim returns at once (ClaimPending), its answer
    is PeerUnreachable after the contact timeout (1 s) in the worker; the activation, the
    status and a new claim then fail at once without connecting, and the warning is logged
    once."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        link = _link(f"<127.0.0.1:{silent.getsockname()[1]}>", "test.silent")
        caplog.set_level(logging.INFO, "test.silent")
        started = time.monotonic()
        with pytest.raises(ClaimPending):
            link.claim("slot1", JOB, "submit.host")
        assert time.monotonic() - started < 0.1
        assert link.background.wait_idle(5)
        assert 0.9 < time.monotonic() - started < 3
        with pytest.raises(PeerUnreachable):
            link.claim("slot1", JOB, "submit.host")
        connections = link.connections
        started = time.monotonic()
        for _ in range(100):
            with pytest.raises(PeerUnreachable):
                link.claim_ready("whatever")
            with pytest.raises(PeerUnreachable):
                link.activate("whatever")
            with pytest.raises(PeerUnreachable):
                link.claim("slot2", JOB, "submit.host")
        assert time.monotonic() - started < 0.1
        assert link.connections == connections
    warnings = [r for r in caplog.records if "does not answer" in r.getMessage()]
    assert len(warnings) == 1


def test_a_claim_answered_and_never_picked_up_is_given_back(
    startd: Startd, served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim whose answer the schedd never asks for again (its job went away) is released
    by the quiet worker once ANSWER_KEPT has passed, and only then."""
    monkeypatch.setattr(worker_module, "SWEEP_EVERY", 0.2)
    link = _link(served.address)
    with pytest.raises(ClaimPending):
        served.call(lambda: link.claim("slot1", JOB, "submit.host"))
    served.call(lambda: link.background.wait_idle(10))
    (abandoned,) = [claim_id for claim_id, _ in startd.claims()]
    served.call(lambda: time.sleep(0.5))  # sweeps, too early to give anything back
    assert abandoned in dict(startd.claims())
    later = time.monotonic() + link_module.ANSWER_KEPT + 1
    link.monotonic = lambda: later

    def given_back() -> bool:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not link.background.wait_idle(0.01):
            pass
        time.sleep(0.5)
        return link.background.wait_idle(5)

    assert served.call(given_back)
    assert startd.claims() == []


def test_alive_and_release_never_wait_for_the_startd() -> None:
    """With nothing listening at the startd's address, alive and release return at once
    (the worker thread meets the failure)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    link = _link(f"<127.0.0.1:{port}>")
    started = time.monotonic()
    for _ in range(50):
        link.alive("a#1#2#secret")
        link.release("a#1#2#secret")
    assert time.monotonic() - started < 0.1
    assert link.background.wait_idle(10)
    assert link.failures >= 1


def test_the_connector_leaves_in_process_addresses_alone() -> None:
    """An in-process ``<unix:...>`` address or one that is no address is PeerUnreachable."""
    connect = remote_startd_connector(
        lambda: Config.from_text("", subsystem="SCHEDD"), log=logging.getLogger("test")
    )
    with pytest.raises(PeerUnreachable):
        connect("<unix:/var/lock/ep>")
    with pytest.raises(PeerUnreachable):
        connect("nonsense")


class _Recording(LocalStartdLink):
    """The startd's link, keeping the jobs its activations carried."""

    activated: list[ClassAd | None]

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        self.activated.append(job)
        super().activate(claim_id, job)


@pytest.mark.parametrize("authentication", ["REQUIRED", "OPTIONAL"])
def test_the_activated_jobs_private_attributes_travel_only_encrypted(
    startd: Startd, authentication: str, caplog: pytest.LogCaptureFixture
) -> None:
    """With authentication required by the startd, the session encrypts (AES-GCM) and the
    job an activation carries arrives with its TransferKey (a private attribute); without
    it the key is left out and the schedd's log says why."""
    local = _Recording(startd)
    local.activated = []
    handlers = cedar_handlers(local, lambda: [], logging.getLogger("test.startd"))
    config = STARTD_CONFIG + f"SEC_DEFAULT_AUTHENTICATION = {authentication}\n"
    with serving(handlers, config) as served:
        link = _link(served.address, "test.private")
        claim_id = served.call(lambda: _claim(link, "slot1"))
        job = JOB.copy()
        job["TransferKey"] = "k" * 32
        served.call(lambda: link.activate(claim_id, job))
    (received,) = local.activated
    assert received is not None
    encrypted = authentication == "REQUIRED"
    assert received.evaluate("TransferKey") == ("k" * 32 if encrypted else UNDEFINED)
    assert ("not encrypted" in caplog.text) is not encrypted


@pytest.mark.parametrize(
    ("listening", "named"),
    [
        (("0.0.0.0", 4242), "<127.0.0.1:4242>"),
        (("127.0.0.1", 4343), "<127.0.0.1:4343>"),
        (None, "submit.host"),
    ],
)
def test_a_claim_names_the_schedds_cedar_address_as_its_client(
    startd: Startd, served: Served, listening: tuple[str, int] | None, named: str
) -> None:
    """REQUEST_CLAIM names the schedd by this process's CEDAR address (a listener on every
    interface: the connection's own address), where the startd sends the job's result; the
    caller's name while the process does not listen."""
    config = Config.from_text(SCHEDD_CONFIG, subsystem="SCHEDD")
    connect = remote_startd_connector(
        lambda: config, log=logging.getLogger("test"), our_address=lambda: listening
    )
    link = connect(served.address)
    served.call(lambda: _claim(link, "slot1"))
    (claimed,) = [r.claim for r in startd.state.slots if r.claim is not None]
    assert claimed.client_machine == named


def test_an_alive_for_an_unknown_claim_is_answered_and_reported_at_once(
    startd: Startd, served: Served
) -> None:
    """The startd answers an ALIVE for a claim it does not know with -1: the link keeps the
    claim for the schedd (taken once) and calls on_unknown; an ALIVE for a claim it holds
    is not answered, closes at once (no wait for the timeout) and reports nothing."""
    link = _link(served.address)
    told: list[bool] = []
    link.on_unknown = lambda: told.append(True)
    claim_id = served.call(lambda: _claim(link, "slot1"))
    started = time.monotonic()
    served.call(lambda: (link.alive(claim_id), link.background.wait_idle(5)))
    assert time.monotonic() - started < 0.9  # STARTD_CONTACT_TIMEOUT is 1 s
    assert not link.take_unknown(claim_id)
    assert told == []
    guessed = claim_id.rsplit("#", 1)[0] + "#guessed"
    served.call(lambda: (link.alive(guessed), link.background.wait_idle(5)))
    assert told == [True]
    assert link.take_unknown(guessed)
    assert not link.take_unknown(guessed)  # taken once
    assert not link.down
    assert link.failures == 0
    assert claim_id in dict(startd.claims())
