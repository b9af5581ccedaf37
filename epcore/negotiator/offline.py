"""Matches to offline slot ads: the machine sleeps, so no claim is made.

HTCondor's negotiator records such a match in the collector instead (MERGE_STARTD_AD):
``MachineLastMatchTime`` and ``MachineMatchCount`` join the offline ad, which makes the
rooster's default ROOSTER_UNHIBERNATE (``Offline && Unhibernate``, UNHIBERNATE being
``MY.MachineLastMatchTime =!= UNDEFINED``) true for it, and the job waits for the machine to
wake and advertise its live slots.
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


def offline_match_ads(matches: Sequence[Match], now: float) -> list[ClassAd]:
    """The offline ads with each match recorded, one per slot, for the collector to keep."""
    merged: dict[str, ClassAd] = {}
    for match in matches:
        ad = merged.get(match.slot_name)
        if ad is None:
            ad = match.slot.copy()
            merged[match.slot_name] = ad
        ad["MachineLastMatchTime"] = int(now)
        ad["MachineMatchCount"] = int(number_attribute(ad, "MachineMatchCount") or 0) + 1
    return list(merged.values())
