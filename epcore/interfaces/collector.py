"""What the other roles ask of a collector: take ads (advertise, invalidate) and answer
queries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from epcore.classad import ClassAd


class AdSink(Protocol):
    """A receiver of a daemon's ads (the collector's update interface)."""

    def advertise(self, ads: Sequence[ClassAd], now: float) -> None:
        """The current ads of these daemons or slots (by their Name)."""
        ...

    def invalidate(self, names: Sequence[str], now: float) -> None:
        """These slots (by Name) no longer exist."""
        ...


class AdQuery(Protocol):
    """The collector's query interface (condor_status, the negotiator, better-analyze)."""

    def query(
        self,
        my_type: str | None,
        constraint: str | None = None,
        projection: Sequence[str] | None = None,
        *,
        now: float,
        absent: bool = False,
    ) -> list[ClassAd]:
        """Copies of the stored ads of this MyType (None: every type) passing the
        constraint, cut to the projection."""
        ...


class CollectorLink(AdSink, AdQuery, Protocol):
    """A collector as its peers reach it: ads in, queries answered."""

    def update(self, ads: Sequence[ClassAd], now: float) -> None:
        """Store daemon ads of any MyType (schedd, submitter, negotiator ads)."""
        ...

    def invalidate_ads(self, my_type: str, names: Sequence[str], now: float) -> None:
        """Remove the daemon ads of this MyType and these Names (a daemon that shuts down
        withdraws its ad, as INVALIDATE_ADS_GENERIC does)."""
        ...
