"""The startd's slot ads: the ads the policy sees and the ads it publishes, one build kept."""

from __future__ import annotations

import attrs

from epcore.classad import ClassAd
from epcore.startd.startd import Startd


def _views(ads: dict[str, ClassAd]) -> dict[str, dict[str, str]]:
    return {slot: {name.lower(): str(ad.lookup(name)) for name in ad} for slot, ad in ads.items()}


def test_published_ads_of_an_equal_state_are_the_ads_a_fresh_build_gives(startd: Startd) -> None:
    """Asked for the published ads of a state equal to the one the policy's ads were just
    built for (same time), the startd gives what a build of its own would: Requirements
    folded, everything else the same."""
    at = startd.clock() + 7
    policy = _views(startd.ads(startd.state, at, published=False))
    equal = attrs.evolve(startd.state)
    assert equal == startd.state and equal is not startd.state
    published = _views(startd.ads(equal, at, published=True))
    startd.ads(startd.state, at + 1, published=False)  # another time: the next build is fresh
    fresh = _views(startd.ads(startd.state, at, published=True))
    assert published == fresh
    assert {ad["requirements"] for ad in policy.values()} == {"START"}
    assert {ad["requirements"] for ad in published.values()} == {"true"}
