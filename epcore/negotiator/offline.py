"""Matches to offline slot ads: the machine sleeps, so no claim is made.

HTCondor's negotiator records such a match in the collector instead (MERGE_STARTD_AD):
``MachineLastMatchTime``, ``MachineMatchCount`` (the cycle's matches, each counted by the
job's ``_condor_RESOURCE_COUNT``, else 1) and ``OfflineMatches`` (one ``[Scheduler;
AutoclusterID; RequestCount]`` per match, for an external scaler) join the offline ad; the
count and the list start afresh every cycle, as HTCondor's negotiator resets them in its
copy of each slot ad before matching. That makes the
rooster's default ROOSTER_UNHIBERNATE (``Offline && Unhibernate``, UNHIBERNATE being
``MY.MachineLastMatchTime =!= UNDEFINED``) true for it, and the job waits for the machine to
wake and advertise its live slots. The machine's primary slot ad (the one its
``OfflinePrimarySlotName`` names, else its slot 1), when offline too, gets
``slot<N>_MachineLastMatchTime`` for the matched slot N.
"""

from __future__ import annotations

from collections.abc import Sequence

from epcore.classad import ClassAd
from epcore.interfaces.queries import attribute_is_true, number_attribute
from epcore.interfaces.records import Match


def split_offline(matches: Sequence[Match]) -> tuple[list[Match], list[Match]]:
    """(matches to live slots, matches to offline slots), each in the cycle's order."""
    live = [m for m in matches if not attribute_is_true(m.slot, "Offline")]
    offline = [m for m in matches if attribute_is_true(m.slot, "Offline")]
    return live, offline


def offline_match_ads(
    matches: Sequence[Match], slots: Sequence[ClassAd], now: float
) -> list[ClassAd]:
    """The offline ads with each match recorded, one per slot, for the collector to keep;
    ``slots`` are the cycle's slot ads, where each machine's primary slot is found."""
    merged: dict[str, ClassAd] = {}

    def record(name: str, ad: ClassAd) -> ClassAd:
        if name not in merged:
            merged[name] = ad.copy()
        return merged[name]

    for match in matches:
        fresh = match.slot_name not in merged
        ad = record(match.slot_name, match.slot)
        if fresh:
            # What an earlier cycle recorded is in the collector's copy: this cycle recounts.
            ad["MachineMatchCount"] = 0
            ad["OfflineMatches"] = []
        count = int(number_attribute(match.job, "_condor_RESOURCE_COUNT") or 1)
        ad["MachineLastMatchTime"] = int(now)
        ad["MachineMatchCount"] = int(number_attribute(ad, "MachineMatchCount") or 0) + count
        previous = ad.evaluate("OfflineMatches")
        ad["OfflineMatches"] = [
            *(previous if isinstance(previous, list) else []),
            ClassAd(
                {
                    "Scheduler": _scheduler(match),
                    "AutoclusterID": int(number_attribute(match.job, "AutoClusterId") or -1),
                    "RequestCount": count,
                }
            ),
        ]
        slot_id = number_attribute(match.slot, "SlotID")
        primary = _primary(match.slot, slots)
        if slot_id is not None and primary is not None:
            name = str(primary.evaluate("Name"))
            record(name, primary)[f"slot{int(slot_id)}_MachineLastMatchTime"] = int(now)
    return list(merged.values())


def _primary(slot: ClassAd, slots: Sequence[ClassAd]) -> ClassAd | None:
    """The offline primary slot ad of ``slot``'s machine, or None."""
    named = slot.evaluate("OfflinePrimarySlotName")
    machine = slot.evaluate("Machine")
    for ad in slots:
        if not attribute_is_true(ad, "Offline"):
            continue
        if isinstance(named, str):
            if ad.evaluate("Name") == named:
                return ad
        elif ad.evaluate("Machine") == machine and number_attribute(ad, "SlotID") == 1:
            return ad
    return None


def _scheduler(match: Match) -> str:
    """The schedd the matched job came from: the first part of its GlobalJobId (the
    schedd's name in HTCondor; epcore's schedds put their UID_DOMAIN there), else the
    submitter."""
    global_id = match.job.evaluate("GlobalJobId")
    if isinstance(global_id, str) and "#" in global_id:
        return global_id.split("#", 1)[0]
    return match.submitter


def ghost_multiplier(slot: ClassAd) -> int:
    """How many slots ``slot`` stands for in the pool's size: its ``GhostMultiplier`` (an
    offline ad representing a kind of resource, so that the negotiator does not stop
    matching as if the pool were full after one match), else 1. It scales only the pie,
    as in HTCondor's sumSlotWeights, not what a match charges."""
    value = slot.evaluate("GhostMultiplier")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 1
    return int(value)
