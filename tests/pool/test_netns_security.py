"""Must-show 3 of issue 23 across network namespaces: an execute host with a wrong token or
with none cannot advertise to the central manager's collector nor claim a slot of another
host, and the collector's log names the host by its address and says why."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from epcore.classad import ClassAd
from epcore.config import Config
from epcore.errors import EpError
from epcore.net import commands, tokens
from epcore.net.codec import Writer
from epcore.net.tools import call
from epcore.testing.netns import Host
from epcore.testing.netns_pool import NetnsHosts, inside
from epcore.testing.pool import POOL_DOMAIN

pytestmark = [pytest.mark.netns, pytest.mark.system]


def _forged() -> str:
    """A DAEMON token of the right identity signed by a key the pool does not have."""
    return tokens.create_token(
        b"k" * 64, key_id="POOL", issuer=POOL_DOMAIN, subject=f"condor@{POOL_DOMAIN}",
        now=int(time.time()),
    )  # fmt: skip


def _request_claim(slot: str) -> Callable[[Writer], None]:
    """REQUEST_CLAIM's message (epcore.startd.claim_commands) for ``slot``."""
    job = ClassAd({"ClusterId": 1, "ProcId": 0, "Owner": "mallory", "Cmd": "/bin/true"})

    def write(writer: Writer) -> None:
        writer.put_string(slot).put_classad(job).put_string("<10.77.0.9:1>")
        writer.put_int(300).put_int(0).put_int(0)

    return write


def _claim_from(hosts: NetnsHosts, intruder: Host, target: Host) -> str:
    """What REQUEST_CLAIM on ``target``'s startd, sent from ``intruder``'s namespace with
    the intruder's own configuration and token directory, ends with (the error's text)."""
    (slot,) = hosts.slots_of(target)
    address = str(slot.evaluate("MyAddress")).strip("<>").split("?")[0]
    host, port = address.split(":")
    config = Config.load(intruder.config_path)

    def attempt() -> str:
        try:
            call((host, int(port)), commands.REQUEST_CLAIM, config, _request_claim("slot1"))
        except EpError as error:
            return str(error)
        return "sent"

    return inside(intruder.namespace, attempt)


def test_hosts_with_a_wrong_or_no_token_neither_advertise_nor_claim_and_are_named(
    netns_hosts_factory: Callable[..., NetnsHosts],
) -> None:
    """Beside a good execute host, one holding a token signed by another key and one holding
    none run for several UPDATE_INTERVALs: their slots never reach the collector, the
    CollectorLog names each by its address with the refused UPDATE_STARTD_AD and the failed
    authentication, and a claim request either sends to the good host's startd is refused
    (the good host's slot stays unclaimed) where the submit host's same request gets through."""
    hosts = netns_hosts_factory(executes=1)
    (good,) = hosts.executes
    wrong = hosts.add_execute("wrong", token=_forged())
    tokenless = hosts.add_execute("none", token=None)

    def named() -> bool:
        log = hosts.manager.log("CollectorLog")
        return all(f"<{bad.address}:" in log for bad in (wrong, tokenless))

    hosts.wait(named, 60, "the refusals in the CollectorLog")
    time.sleep(5)  # two more UPDATE_INTERVALs of attempts
    assert hosts.slots_of(wrong) == [] and hosts.slots_of(tokenless) == []
    assert len(hosts.slots_of(good)) == 1
    log = hosts.manager.log("CollectorLog").splitlines()
    for bad in (wrong, tokenless):
        lines = [line for line in log if f"<{bad.address}:" in line]
        assert any("UPDATE_STARTD_AD" in line and "refused" in line for line in lines), lines
        assert any("authentication" in line for line in lines), lines
    for bad in (wrong, tokenless):
        outcome = _claim_from(hosts, bad, good)
        assert outcome.startswith("refused by") and "authentication" in outcome.lower(), outcome
    (slot,) = hosts.slots_of(good)
    assert slot.evaluate("State") == "Unclaimed"
    # The same request from the submit host, which holds the pool's token, gets through.
    assert _claim_from(hosts, hosts.submit, good) == "sent"
