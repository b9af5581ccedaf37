"""The startd's CEDAR handlers: drain, cancel, vacate and history as HTCondor's tools send
them, carried out on the startd's link."""

from __future__ import annotations

import logging

import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.interfaces import RELEASE_REMOVED
from epcore.net import commands
from epcore.net.codec import Writer
from epcore.runtime.control import ControlError
from epcore.startd.cedar import cedar_handlers, select_history
from epcore.startd.link import LocalStartdLink
from epcore.startd.startd import Startd
from tests.net.drive import drive

NOW = 1_800_000_000.0
CLAIM = "<127.0.0.1:9618>#1800000000#1#secret"
RECORDS = [parse_ad(f'[ ClusterId = {n}; ProcId = 0; Owner = "bob" ]') for n in (1, 2, 3, 4)]


class RecordingLink:
    """A StartdLink that records the administration it is asked for."""

    address = "<unix:/nowhere>"

    def __init__(self, fail: str | None = None) -> None:
        self.calls: list[tuple[object, ...]] = []
        self.fail = fail

    def drain(
        self,
        how: str,
        check: str | None = None,
        start: str | None = None,
        *,
        reason: str | None = None,
        resume: bool = False,
    ) -> None:
        if self.fail:
            raise ControlError(self.fail)
        self.calls.append(("drain", how, check, start))
        self.drain_extras = (reason, resume)

    def cancel_drain(self) -> None:
        self.calls.append(("cancel",))

    def vacate_slots(self, slot: str | None, fast: bool = False) -> list[str]:
        self.calls.append(("vacate", slot, fast))
        return [slot or "slot1_1"]

    def alive(self, claim_id: str) -> None:
        if claim_id != CLAIM:
            raise ControlError(f"no claim {claim_id}")
        self.calls.append(("alive", claim_id))

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        if claim_id != CLAIM:
            raise ControlError(f"no claim {claim_id}")
        self.calls.append(("release, removed" if removed else "release", claim_id))


def _handlers(link: RecordingLink):  # type: ignore[no-untyped-def]
    return cedar_handlers(link, lambda: list(RECORDS), logging.getLogger("test"), lambda: NOW)  # type: ignore[arg-type]


def _ad(text: str) -> bytes:
    return Writer().put_classad(parse_ad(text)).bytes()


def test_drain_request_maps_howfast_and_expressions_and_answers_result() -> None:
    """HowFast 10 is a quick drain with the request's CheckExpr and StartExpr as text; the
    answer has Result true and the request id htcondor2 returns."""
    link = RecordingLink()
    handler = _handlers(link)[commands.DRAIN_JOBS]
    request = "[ HowFast = 10; ResumeOnCompletion = 0; CheckExpr = Cpus > 0; StartExpr = false ]"
    (answer,) = drive(handler, commands.DRAIN_JOBS.number, [_ad(request)])
    reply = answer.get_classad()
    assert (reply.evaluate("Result"), reply.evaluate("RequestID")) == (True, "1")
    assert link.calls == [("drain", "quick", "Cpus > 0", "false")]


def test_drain_request_carries_reason_and_resume_on_completion() -> None:
    """condor_defrag's drain (ResumeOnCompletion 1, a DrainReason) reaches the startd with its
    reason and with resuming service once drained."""
    link = RecordingLink()
    handler = _handlers(link)[commands.DRAIN_JOBS]
    request = '[ HowFast = 0; ResumeOnCompletion = 1; DrainReason = "Defrag cm" ]'
    (answer,) = drive(handler, commands.DRAIN_JOBS.number, [_ad(request)])
    assert answer.get_classad().evaluate("Result") is True
    assert link.calls == [("drain", "graceful", None, None)]
    assert link.drain_extras == ("Defrag cm", True)


@pytest.mark.parametrize(
    ("request_text", "fail", "error"),
    [
        ("[ HowFast = 5 ]", None, "HowFast 5"),
        ("[ HowFast = 0; ResumeOnCompletion = 2 ]", None, "ResumeOnCompletion 2"),
        ("[ HowFast = 0 ]", "the check failed on slot1", "the check failed on slot1"),
    ],
)
def test_drain_refusal_is_answered_with_the_reason(
    request_text: str, fail: str | None, error: str
) -> None:
    """A speed HTCondor does not define, an on-completion epcore does not carry out, or the
    startd's own refusal come back as Result false with ErrorString."""
    link = RecordingLink(fail)
    (answer,) = drive(_handlers(link)[commands.DRAIN_JOBS], 512, [_ad(request_text)])
    reply = answer.get_classad()
    assert reply.evaluate("Result") is False
    assert error in str(reply.evaluate("ErrorString"))
    assert not link.calls


def test_cancel_and_vacates_reach_the_link() -> None:
    """CANCEL_DRAIN_JOBS cancels and answers; VACATE_CLAIM_FAST vacates the named slot fast,
    VACATE_ALL_CLAIMS every slot gracefully, neither answering (as HTCondor)."""
    link = RecordingLink()
    handlers = _handlers(link)
    (answer,) = drive(handlers[commands.CANCEL_DRAIN_JOBS], 513, [_ad('[ RequestID = "1" ]')])
    assert answer.get_classad().evaluate("Result") is True
    name = Writer().put_string("slot1_1@host").bytes()
    assert drive(handlers[commands.VACATE_CLAIM_FAST], 475, [name]) == []
    assert drive(handlers[commands.VACATE_ALL_CLAIMS], 447, []) == []
    assert link.calls == [("cancel",), ("vacate", "slot1_1@host", True), ("vacate", None, False)]


def test_history_is_newest_first_within_since_and_limit() -> None:
    """Records come newest first, filtered by Requirements, stopping before the one Since
    makes true, at most NumJobMatches."""
    query = parse_ad(
        "[ Requirements = ClusterId != 3; Since = ClusterId == 1; NumJobMatches = -1 ]"
    )
    found, projection = select_history(RECORDS, query, NOW)
    assert [ad.evaluate("ClusterId") for ad in found] == [4, 2]
    assert projection is None
    limited, _ = select_history(
        RECORDS, parse_ad('[ NumJobMatches = 1; Projection = {"ProcId"} ]'), NOW
    )
    assert [ad.evaluate("ClusterId") for ad in limited] == [4]


def test_history_answer_ends_with_owner_zero_and_the_count() -> None:
    """GET_HISTORY sends the records cut to the projection, then Owner = 0 and NumJobMatches,
    all in one message."""
    query = _ad('[ Requirements = ClusterId > 2; Projection = {"ClusterId"}; NumJobMatches = -1 ]')
    (answer,) = drive(_handlers(RecordingLink())[commands.GET_HISTORY], 429, [query])
    ads: list[ClassAd] = []
    while True:
        ad = answer.get_classad()
        if ad.evaluate("Owner") == 0:
            break
        ads.append(ad)
    assert [ad.evaluate("ClusterId") for ad in ads] == [4, 3]
    assert all(list(ad) == ["ClusterId"] for ad in ads)
    assert ad.evaluate("NumJobMatches") == 2
    assert answer.at_end


def _claim_id(text: str) -> bytes:
    return Writer().put_string(text).bytes()


def test_alive_with_the_claim_id_keeps_the_lease_and_is_not_answered() -> None:
    """ALIVE carrying the claim's id reaches the startd's alive for that claim; like
    HTCondor's startd, nothing is sent back."""
    link = RecordingLink()
    handler = _handlers(link)[commands.ALIVE]
    assert drive(handler, commands.ALIVE.number, [_claim_id(CLAIM)], user="condor") == []
    assert link.calls == [("alive", CLAIM)]


def test_release_claim_with_the_claim_id_releases_it_without_an_answer() -> None:
    """RELEASE_CLAIM carrying the claim's id releases that claim and sends nothing back."""
    link = RecordingLink()
    handler = _handlers(link)[commands.RELEASE_CLAIM]
    assert drive(handler, commands.RELEASE_CLAIM.number, [_claim_id(CLAIM)]) == []
    assert link.calls == [("release", CLAIM)]


def test_release_claim_naming_a_removal_releases_it_for_the_removal() -> None:
    """RELEASE_CLAIM with the claim's id and then ``"removed"`` (epcore's schedd releasing a
    removed job's claim) releases it with the removal; another word is a plain release."""
    link = RecordingLink()
    handler = _handlers(link)[commands.RELEASE_CLAIM]
    removed = Writer().put_string(CLAIM).put_string(RELEASE_REMOVED).bytes()
    assert drive(handler, commands.RELEASE_CLAIM.number, [removed]) == []
    other = Writer().put_string(CLAIM).put_string("vacated").bytes()
    assert drive(handler, commands.RELEASE_CLAIM.number, [other]) == []
    assert link.calls == [("release, removed", CLAIM), ("release", CLAIM)]


def test_release_claim_with_a_wrong_claim_id_is_refused_with_not_ok(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A RELEASE_CLAIM whose id is not the claim's (a guessed secret) releases nothing, is
    answered NOT_OK and logged with only the public part of the id."""
    link = RecordingLink()
    handler = _handlers(link)[commands.RELEASE_CLAIM]
    wrong = CLAIM.rsplit("#", 1)[0] + "#guessed"
    with caplog.at_level(logging.WARNING):
        (answer,) = drive(handler, commands.RELEASE_CLAIM.number, [_claim_id(wrong)])
    assert answer.get_int() == 0
    assert link.calls == []
    assert "guessed" not in caplog.text and "refused" in caplog.text


def test_alive_with_a_wrong_claim_id_keeps_no_lease_and_is_answered_minus_one() -> None:
    """An ALIVE with an unknown claim id reaches no claim and is answered -1, the answer
    HTCondor's schedd gives a startd's ALIVE for a claim it does not know: the schedd gives
    the claim up at once."""
    link = RecordingLink()
    handler = _handlers(link)[commands.ALIVE]
    (answer,) = drive(handler, commands.ALIVE.number, [_claim_id("<1.2.3.4:9618>#1#1#x")])
    assert answer.get_int() == -1
    assert answer.at_end
    assert link.calls == []


def test_alive_for_a_claim_whose_result_is_on_its_way_is_not_answered() -> None:
    """An ALIVE for a claim the startd no longer holds but whose job's result is still queued
    for its schedd gets no answer (no news), not -1: the schedd must not requeue a job whose
    result is coming."""
    link = RecordingLink()
    gone = "<1.2.3.4:9618>#1#1#x"
    handlers = cedar_handlers(
        link,  # type: ignore[arg-type]
        lambda: list(RECORDS),
        logging.getLogger("test"),
        lambda: NOW,
        result_pending=lambda claim_id: claim_id == gone,
    )
    alive = handlers[commands.ALIVE]
    assert drive(alive, commands.ALIVE.number, [_claim_id(gone)]) == []
    (answer,) = drive(alive, commands.ALIVE.number, [_claim_id(gone + "y")])
    assert answer.get_int() == -1


def test_claim_commands_need_daemon_and_carry_htcondors_numbers() -> None:
    """ALIVE is 441 and RELEASE_CLAIM 443 (condor_commands.h), both at DAEMON level as the
    startd registers them."""
    assert (commands.ALIVE.number, commands.RELEASE_CLAIM.number) == (441, 443)
    assert commands.ALIVE.level == commands.RELEASE_CLAIM.level == commands.DAEMON


def test_release_claim_on_a_real_startd_needs_the_whole_secret(startd: Startd) -> None:
    """On a real startd, RELEASE_CLAIM with the claim's public part and a wrong secret leaves
    the claim held (NOT_OK, the secret not logged); with the whole id the slot is freed."""
    link = LocalStartdLink(startd)
    claim_id = link.claim("slot1", ClassAd({"ClusterId": 1, "ProcId": 0, "Owner": "alice"}), "s")
    handlers = cedar_handlers(link, list, logging.getLogger("test"), lambda: NOW)
    release = handlers[commands.RELEASE_CLAIM]
    wrong = claim_id.rsplit("#", 1)[0] + "#guessed"
    (answer,) = drive(release, commands.RELEASE_CLAIM.number, [_claim_id(wrong)])
    assert answer.get_int() == 0
    assert link.slot_of(claim_id) is not None
    assert drive(release, commands.RELEASE_CLAIM.number, [_claim_id(claim_id)]) == []
    assert link.slot_of(claim_id) is None
