"""The startd's CEDAR handlers: drain, cancel, vacate and history as HTCondor's tools send
them, carried out on the startd's link."""

from __future__ import annotations

import logging

import pytest

from epcore.classad import ClassAd, parse_ad
from epcore.net import commands
from epcore.net.codec import Writer
from epcore.runtime.control import ControlError
from epcore.startd.cedar import cedar_handlers, select_history
from tests.net.drive import drive

NOW = 1_800_000_000.0
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
