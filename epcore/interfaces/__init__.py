"""The calls between roles, as Protocols, and the records that cross them.

A role (collector, negotiator, schedd, startd) never imports another: it reaches a peer
through a link typed by one of these Protocols, which a :class:`Locator` finds by the peer's
address. Today every link is in-process (the peer's own object, registered in the locator by
the pool's assembly); the network implementation (issue 22, CEDAR) adds links that speak to
another process, without touching the roles.
"""

from __future__ import annotations

from epcore.interfaces.collector import AdQuery, AdSink, CollectorLink
from epcore.interfaces.locator import Locator, PeerUnreachable
from epcore.interfaces.negotiator import PriorityQuery
from epcore.interfaces.records import Match, Significance, SubmitterJobs
from epcore.interfaces.requests import Requester, RequestHandler, RequestHandlers
from epcore.interfaces.schedd import JobResults, JobSource
from epcore.interfaces.startd import RELEASE_REMOVED, ClaimPending, StartdLink

__all__ = [
    "RELEASE_REMOVED",
    "AdQuery",
    "AdSink",
    "ClaimPending",
    "CollectorLink",
    "JobResults",
    "JobSource",
    "Locator",
    "Match",
    "PeerUnreachable",
    "PriorityQuery",
    "RequestHandler",
    "RequestHandlers",
    "Requester",
    "Significance",
    "StartdLink",
    "SubmitterJobs",
]
