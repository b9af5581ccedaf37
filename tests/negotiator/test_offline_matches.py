"""Matches to offline slot ads: recorded for the collector, not handed to a schedd."""

from __future__ import annotations

from epcore.classad import ClassAd
from epcore.interfaces.records import Match
from epcore.negotiator.offline import offline_match_ads, split_offline

T0 = 1_700_000_000


def _going_to_sleep() -> ClassAd:
    return ClassAd({"MyType": "Machine", "Name": "slot1@a", "Offline": True})


def _match(slot: ClassAd, job_id: str) -> Match:
    return Match("u@a", job_id, ClassAd(), str(slot.evaluate("Name")), slot, reason="no_preemption")


def test_matches_to_offline_slots_are_recorded_not_handed_out() -> None:
    """Offline matches become the slot's ad with MachineLastMatchTime and the match count."""
    asleep = _going_to_sleep()
    awake = ClassAd({"MyType": "Machine", "Name": "slot1@b"})
    matches = [_match(asleep, "1.0"), _match(awake, "2.0"), _match(asleep, "3.0")]
    live, offline = split_offline(matches)
    assert [m.job_id for m in live] == ["2.0"]
    assert [m.job_id for m in offline] == ["1.0", "3.0"]
    [record] = offline_match_ads(offline, [], T0)
    assert record.evaluate("MachineLastMatchTime") == T0
    assert record.evaluate("MachineMatchCount") == 2
    assert record.evaluate("Offline") is True


def test_the_primary_slot_records_which_slot_was_matched() -> None:
    """slot<N>_MachineLastMatchTime goes to the machine's offline slot 1 (or the slot its
    OfflinePrimarySlotName names)."""
    first = ClassAd({"MyType": "Machine", "Name": "slot1@a", "Machine": "a", "SlotID": 1})
    second = ClassAd({"MyType": "Machine", "Name": "slot2@a", "Machine": "a", "SlotID": 2})
    for ad in (first, second):
        ad["Offline"] = True
    records = offline_match_ads([_match(second, "1.0")], [first, second], T0)
    by_name = {str(ad.evaluate("Name")): ad for ad in records}
    assert by_name["slot1@a"].evaluate("slot2_MachineLastMatchTime") == T0
    assert by_name["slot2@a"].evaluate("MachineLastMatchTime") == T0
    second["OfflinePrimarySlotName"] = "slot2@a"
    [own] = offline_match_ads([_match(second, "1.0")], [first, second], T0)
    assert own.evaluate("slot2_MachineLastMatchTime") == T0


def test_offline_matches_list_each_request_and_restart_every_cycle() -> None:
    """OfflineMatches gets [Scheduler; AutoclusterID; RequestCount] per match, the count
    adds each job's request count, and a later cycle starts both afresh (as HTCondor's
    negotiator resets them), not from the collector's stored values."""
    asleep = _going_to_sleep()
    job = ClassAd({"GlobalJobId": "sched.a#7.0#1", "AutoClusterId": 3})
    job["_condor_RESOURCE_COUNT"] = 4
    first = Match("u@a", "7.0", job, "slot1@a", asleep, reason="no_preemption")
    [record] = offline_match_ads([first, _match(asleep, "8.0")], [], T0)
    assert record.evaluate("MachineMatchCount") == 5
    entries = record.evaluate("OfflineMatches")
    assert isinstance(entries, list) and len(entries) == 2
    assert isinstance(entries[0], ClassAd) and isinstance(entries[1], ClassAd)
    assert entries[0].evaluate("Scheduler") == "sched.a"
    assert entries[0].evaluate("AutoclusterID") == 3
    assert entries[0].evaluate("RequestCount") == 4
    assert entries[1].evaluate("Scheduler") == "u@a"
    assert entries[1].evaluate("AutoclusterID") == -1
    [again] = offline_match_ads([_match(record, "9.0")], [], T0 + 60)
    assert again.evaluate("MachineMatchCount") == 1
    later = again.evaluate("OfflineMatches")
    assert isinstance(later, list) and len(later) == 1
