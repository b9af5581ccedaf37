"""The remote collector link without a collector that answers: the daemon's calls never
wait, updates coalesce, the failure is logged once, and what goes out carries the process's
TCP address."""

from __future__ import annotations

import logging
import socket
import statistics
import threading
import time
from collections.abc import Iterator

import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError
from epcore.links import collector as link_module
from epcore.links import connection
from epcore.links.collector import RemoteCollector
from epcore.links.connection import collector_host
from epcore.links.priority import STARTING_PRIORITY, RemotePriorities


def _slot(name: str, load: float = 0.0) -> ClassAd:
    ad = ClassAd()
    ad["MyType"] = "Machine"
    ad["Name"] = name
    ad["MyAddress"] = "<unix:/var/lock/startd_control>"
    ad["StartdIpAddr"] = "<unix:/var/lock/startd_control>"
    ad["LoadAvg"] = load
    return ad


@pytest.fixture
def silent_collector() -> Iterator[socket.socket]:
    """A listening socket that never accepts: connections open and then hear nothing."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    yield listener
    listener.close()


def _link(port: int, log: logging.Logger) -> RemoteCollector:
    config = Config.from_text(f"COLLECTOR_HOST = 127.0.0.1:{port}\n", subsystem="STARTD")
    return RemoteCollector(
        lambda: config, address=lambda: ("0.0.0.0", 4242), subsystem="STARTD", log=log
    )


def test_advertising_to_a_silent_collector_never_waits_and_updates_coalesce(
    silent_collector: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a collector that accepts nothing, 300 rounds of 10 slot ads each return at once
    (the median call well under a millisecond), and what waits to be sent is one entry per
    slot, the latest."""
    monkeypatch.setattr(connection, "CONNECT_TIMEOUT", 1.0)
    link = _link(silent_collector.getsockname()[1], logging.getLogger("test.link"))
    link.open(None)  # type: ignore[arg-type]  # the link registers nothing in the loop
    try:
        took = []
        for round_ in range(300):
            started = time.perf_counter()
            link.advertise([_slot(f"slot{n}@h", round_) for n in range(10)], time.time())
            took.append(time.perf_counter() - started)
        assert statistics.median(took) < 0.001
        assert max(took) < 0.05
        pending = dict(link._pending)
        assert len(pending) <= 10
        loads = {ad.evaluate("LoadAvg") for _, ad in pending.values()}
        assert loads <= {299.0}
    finally:
        start = time.monotonic()
        link.close()
        assert time.monotonic() - start < link_module.CLOSE_WAIT + 1


def test_a_collector_that_is_down_is_logged_once_and_tried_again_with_a_growing_pause(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Nothing listens at COLLECTOR_HOST: the first failure is logged (naming the
    collector), later attempts are not, and the pause between attempts doubles."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    link = _link(port, logging.getLogger("test.down"))
    caplog.set_level(logging.INFO, "test.down")
    link.open(None)  # type: ignore[arg-type]
    try:
        started = time.monotonic()
        link.advertise([_slot("slot1@h")], time.time())
        deadline = started + 10
        while link.failures < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
            link.advertise([_slot("slot1@h")], time.time())  # wakes, does not hurry it
        # Three attempts: at once, after 1 s, after 2 s more.
        assert link.failures >= 3
        assert time.monotonic() - started >= 3.0
        # This link's records only: an earlier test's link, closed, may still be retrying
        # (close waits CLOSE_WAIT, and a send step may take UPDATE_TIMEOUT).
        warnings = [
            r
            for r in caplog.records
            if r.name == "test.down" and "cannot send ads" in r.getMessage()
        ]
        assert len(warnings) == 1
        assert f"127.0.0.1:{port}" in warnings[0].getMessage()
        assert link.backoff >= 8.0
    finally:
        link.close()


def test_an_ad_going_out_carries_the_tcp_address_instead_of_the_unix_one() -> None:
    """MyAddress and StartdIpAddr holding the in-process ``<unix:...>`` address leave with
    the process's TCP address; other attributes and the stored ad are left as they were."""
    ad = _slot("slot1@h")
    shown = RemoteCollector._reachable(ad, "<192.0.2.5:9618>")
    assert shown.evaluate("MyAddress") == "<192.0.2.5:9618>"
    assert shown.evaluate("StartdIpAddr") == "<192.0.2.5:9618>"
    assert shown.evaluate("Name") == "slot1@h"
    assert ad.evaluate("MyAddress") == "<unix:/var/lock/startd_control>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("COLLECTOR_HOST = cm.example.org:9620\nCONDOR_HOST = other", "cm.example.org:9620"),
        ("CONDOR_HOST = cm.example.org", "cm.example.org"),
        ("COLLECTOR_HOST = a.example.org, b.example.org", "a.example.org"),
        ("", None),
    ],
)
def test_the_collector_is_collector_host_else_condor_host(text: str, expected: str | None) -> None:
    """COLLECTOR_HOST's first collector, else CONDOR_HOST, else none."""
    assert collector_host(Config.from_text(text, subsystem="STARTD")) == expected


def test_a_query_of_a_collector_that_is_down_fails_with_the_address() -> None:
    """A query (a user's request on a role without a collector) that cannot reach the
    collector is an error naming it, not a hang."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    link = _link(port, logging.getLogger("test.query"))
    with pytest.raises(EpError, match=f"the collector at 127.0.0.1:{port} did not answer"):
        link.query("Machine", now=time.time())


class _Negotiatorless:
    """A collector that knows no negotiator, counting the questions."""

    def __init__(self) -> None:
        self.asked = threading.Event()

    def query(self, *args: object, **kwargs: object) -> list[ClassAd]:
        self.asked.set()
        return []


def test_priorities_without_a_negotiator_answer_at_once_with_the_starting_priority() -> None:
    """A schedd whose negotiator is elsewhere gets a submitter's priority without waiting:
    HTCondor's starting priority until a report is read; the read goes on in the background
    and its failure (no Negotiator ad) leaves the answer as it was."""
    collector = _Negotiatorless()
    config = Config.from_text("", subsystem="SCHEDD")
    priorities = RemotePriorities(
        lambda: config, collector, log=logging.getLogger("test.priorities")
    )
    started = time.perf_counter()
    assert priorities.effective_priority("alice@x") == STARTING_PRIORITY
    assert time.perf_counter() - started < 0.05
    assert collector.asked.wait(5)
    assert priorities.waiting_reason("alice@x", "1.0") is None
