"""REQUEST_CLAIM, ACTIVATE_CLAIM and DEACTIVATE_CLAIM(_FORCIBLY) on a real startd: the
layouts of epcore.startd.claim_commands, the whole claim id as the proof of ownership."""

from __future__ import annotations

import logging

import pytest

from epcore.classad import ClassAd
from epcore.net import commands
from epcore.net.codec import Reader, Writer
from epcore.startd.claim_commands import claim_handlers
from epcore.startd.link import LocalStartdLink
from epcore.startd.startd import Startd
from tests.net.drive import drive

JOB = ClassAd({"ClusterId": 7, "ProcId": 0, "Owner": "alice", "Cmd": "/bin/true"})


def _request(slot: str, preempting: int = 0) -> bytes:
    writer = Writer().put_string(slot).put_classad(JOB).put_string("<127.0.0.1:9618>")
    return writer.put_int(300).put_int(preempting).put_int(0).bytes()


def _claim(link: LocalStartdLink, slot: str = "slot1") -> Reader:
    handler = claim_handlers(link, logging.getLogger("test"))[commands.REQUEST_CLAIM]
    (answer,) = drive(handler, commands.REQUEST_CLAIM.number, [_request(slot)], user="condor")
    return answer


def _wrong(claim_id: str) -> str:
    return claim_id.rsplit("#", 1)[0] + "#guessed"


def test_commands_carry_htcondors_numbers_at_daemon_level() -> None:
    """REQUEST_CLAIM 442, ACTIVATE_CLAIM 444, DEACTIVATE_CLAIM 403 and _FORCIBLY 404, all
    needing DAEMON (condor_commands.h, startd_main.cpp)."""
    found = [
        (c.number, c.level)
        for c in (
            commands.REQUEST_CLAIM,
            commands.ACTIVATE_CLAIM,
            commands.DEACTIVATE_CLAIM,
            commands.DEACTIVATE_CLAIM_FORCIBLY,
        )
    ]
    assert found == [(n, commands.DAEMON) for n in (442, 444, 403, 404)]


def test_request_claim_answers_ok_and_the_new_claim_of_the_slot(startd: Startd) -> None:
    """A claim request for a free slot is answered OK with a claim id that holds that slot,
    made for the schedd's address."""
    link = LocalStartdLink(startd)
    answer = _claim(link)
    assert answer.get_int() == 1
    claim_id = answer.get_string()
    assert link.slot_of(claim_id) == f"slot1@{startd.host_name}"
    assert dict(link.claims())[claim_id].evaluate("ClusterId") == 7


def test_request_claim_of_an_unknown_slot_is_refused_with_the_reason(startd: Startd) -> None:
    """A claim request for a slot the startd does not have is answered NOT_OK with the
    startd's reason, and nothing is claimed."""
    link = LocalStartdLink(startd)
    answer = _claim(link, "slot99")
    assert answer.get_int() == 0
    assert "slot99" in answer.get_string()
    assert link.claims() == []


def test_request_claim_naming_claims_to_preempt_is_refused(startd: Startd) -> None:
    """A request that names claims to preempt (HTCondor's pslot preemption) is refused."""
    link = LocalStartdLink(startd)
    handler = claim_handlers(link, logging.getLogger("test"))[commands.REQUEST_CLAIM]
    (answer,) = drive(handler, 442, [_request("slot1", preempting=1)])
    assert answer.get_int() == 0
    assert link.claims() == []


def test_activate_needs_the_whole_claim_id(startd: Startd) -> None:
    """ACTIVATE_CLAIM with a guessed secret is answered NOT_OK and starts nothing; with the
    whole id it is answered OK and the slot leaves Claimed/Idle."""
    link = LocalStartdLink(startd)
    answer = _claim(link)
    assert answer.get_int() == 1
    claim_id = answer.get_string()
    activate = claim_handlers(link, logging.getLogger("test"))[commands.ACTIVATE_CLAIM]

    def message(claim: str) -> bytes:
        return Writer().put_string(claim).put_int(0).put_classad(ClassAd()).bytes()

    (refused,) = drive(activate, 444, [message(_wrong(claim_id))])
    assert refused.get_int() == 0
    assert link.claim_ready(claim_id)
    (accepted,) = drive(activate, 444, [message(claim_id)])
    assert accepted.get_int() == 1
    assert not link.claim_ready(claim_id)


@pytest.mark.parametrize("command", [commands.DEACTIVATE_CLAIM, commands.DEACTIVATE_CLAIM_FORCIBLY])
def test_deactivate_ends_only_the_claim_it_names_whole(
    startd: Startd, command: commands.Command, caplog: pytest.LogCaptureFixture
) -> None:
    """DEACTIVATE_CLAIM(_FORCIBLY) with a guessed secret leaves the claim (the secret not
    logged); with the whole id the claim ends; both are answered Start = false."""
    link = LocalStartdLink(startd)
    answer = _claim(link)
    assert answer.get_int() == 1
    claim_id = answer.get_string()
    deactivate = claim_handlers(link, logging.getLogger("test"))[command]
    with caplog.at_level(logging.INFO):
        (refused,) = drive(
            deactivate, command.number, [Writer().put_string(_wrong(claim_id)).bytes()]
        )
    assert refused.get_classad().evaluate("Start") is False
    assert link.slot_of(claim_id) is not None
    assert "guessed" not in caplog.text
    (done,) = drive(deactivate, command.number, [Writer().put_string(claim_id).bytes()])
    assert done.get_classad().evaluate("Start") is False
    assert claim_id not in dict(link.claims())


def test_claim_status_answers_the_slot_and_readiness_only_for_the_whole_id(
    startd: Startd,
) -> None:
    """EP_CLAIM_STATUS (epcore's 65001, DAEMON) names the slot of a held claim and that it
    is ready; a guessed secret gets an empty name and 0."""
    assert (commands.EP_CLAIM_STATUS.number, commands.EP_CLAIM_STATUS.level) == (
        65001,
        commands.DAEMON,
    )
    link = LocalStartdLink(startd)
    answer = _claim(link)
    assert answer.get_int() == 1
    claim_id = answer.get_string()
    status = claim_handlers(link, logging.getLogger("test"))[commands.EP_CLAIM_STATUS]
    (held,) = drive(status, 65001, [Writer().put_string(claim_id).bytes()])
    assert (held.get_string(), held.get_int()) == (f"slot1@{startd.host_name}", 1)
    (guessed,) = drive(status, 65001, [Writer().put_string(_wrong(claim_id)).bytes()])
    assert (guessed.get_string(), guessed.get_int()) == ("", 0)


def test_request_claim_tells_each_new_claim_and_its_schedds_address(startd: Startd) -> None:
    """A granted claim request is told to ``claimed`` with the address the schedd sent (where
    the claim's results go); a refused one is not."""
    heard: list[tuple[str, str]] = []
    link = LocalStartdLink(startd)
    handler = claim_handlers(
        link, logging.getLogger("test"), lambda claim, address: heard.append((claim, address))
    )[commands.REQUEST_CLAIM]
    (refused,) = drive(handler, 442, [_request("slot99")])
    assert refused.get_int() == 0
    (answer,) = drive(handler, 442, [_request("slot1")])
    assert answer.get_int() == 1
    assert heard == [(answer.get_string(), "<127.0.0.1:9618>")]


def test_a_claim_made_over_cedar_names_the_address_the_schedd_reached(startd: Startd) -> None:
    """The claim id REQUEST_CLAIM answers begins with the TCP address the request came in
    at (the connection's local end), not the startd's Unix socket, and later claims too."""
    link = LocalStartdLink(startd)
    assert startd.claim_address.startswith("<unix:")
    handler = claim_handlers(link, logging.getLogger("test"), reached=startd.reached_at)[
        commands.REQUEST_CLAIM
    ]
    (answer,) = drive(handler, commands.REQUEST_CLAIM.number, [_request("slot1")], user="condor")
    assert answer.get_int() == 1
    assert answer.get_string().startswith("<127.0.0.1:9618>#")
    assert startd.claim("slot2", JOB).startswith("<127.0.0.1:9618>#")
