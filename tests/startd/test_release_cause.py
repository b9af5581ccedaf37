"""A claim released because its job was removed: the startd's kill tells the starter so
(Removed = true), a plain release and a vacate do not, and the mark goes with the job."""

from __future__ import annotations

import pytest

from epcore.classad import ClassAd
from epcore.startd import starter_events
from epcore.startd.startd import Startd
from epcore.starter import protocol


class _Handle:
    """Stands in for the starter running a job: only its claim id is read."""

    def __init__(self, claim_id: str) -> None:
        self.claim_id = claim_id


def _kills(startd: Startd, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[ClassAd]]:
    """A job busy on slot1 and the commands its (stand-in) starter would get."""
    claim_id = startd.claim("slot1", ClassAd({"ClusterId": 1, "ProcId": 0}))
    startd.state = startd.engine.activate(startd.state, claim_id, startd.clock()).state
    sent: list[ClassAd] = []
    monkeypatch.setattr(starter_events, "handle_of", lambda startd, slot: _Handle(claim_id))
    monkeypatch.setattr(startd.starters, "send", lambda cid, command, ad: sent.append(ad) or True)
    return claim_id, sent


@pytest.mark.parametrize("removed", [True, False])
def test_a_release_for_a_removal_says_so_in_the_kill(
    startd: Startd, monkeypatch: pytest.MonkeyPatch, removed: bool
) -> None:
    """release(removed=True) of a busy claim sends the soft kill with Removed = true; a plain
    release sends it without."""
    claim_id, sent = _kills(startd, monkeypatch)
    startd.release(claim_id, removed=removed)
    assert sent, "no kill reached the starter"
    if removed:
        assert sent[0].evaluate(protocol.REMOVED) is True
    else:
        assert sent[0].lookup(protocol.REMOVED) is None
    record = startd.state.slot("slot1")
    assert record is not None and record.removed is removed


def test_the_removal_mark_goes_with_the_job(
    startd: Startd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the removed job is gone the slot forgets the mark: the next job's kill (a vacate)
    carries no Removed."""
    claim_id, sent = _kills(startd, monkeypatch)
    startd.release(claim_id, removed=True)
    now = startd.clock()
    startd.take(startd.engine.job_gone(startd.state, "slot1", now), now)
    startd.take(startd.engine.poll(startd.state, now), now)
    record = startd.state.slot("slot1")
    assert record is not None and record.removed is False
    sent.clear()
    _claim, sent = _kills(startd, monkeypatch)
    startd.vacate("slot1")
    assert sent and sent[0].lookup(protocol.REMOVED) is None
