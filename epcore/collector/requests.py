"""The collector's answers to the pool's requests (:mod:`epcore.pool.requests` lists them
all): ``QueryAds``, as condor_status asks."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from epcore.classad import ClassAd
from epcore.interfaces import Requester
from epcore.runtime.control import (
    answer,
    expression_argument,
    flag,
    optional_text,
    projection_argument,
)

if TYPE_CHECKING:
    from epcore.collector.service import CollectorService


def _query_ads(service: CollectorService, requester: Requester, request: ClassAd) -> ClassAd:
    my_type = optional_text(request, "MyType")
    constraint = expression_argument(request, "Constraint")
    ads = service.collector.query(
        my_type,
        constraint,
        projection_argument(request),
        now=service.clock(),
        absent=flag(request, "Absent"),
    )
    return answer(True, Ads=ads)


#: The collector's answers, by Command.
HANDLERS: dict[str, Callable[[CollectorService, Requester, ClassAd], ClassAd]] = {
    "QueryAds": _query_ads,
}
