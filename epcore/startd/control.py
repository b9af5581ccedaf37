"""The startd's local control interface: the same requests in-process and over a Unix socket.

A request is a ClassAd with ``Command`` and its arguments; the answer is a ClassAd with
``Ok`` (true or false), ``Error`` when it is false, and the result (``ClaimId``, ``Ads``).
Requests: ``Claim`` (Slot, Job, optional Client and ByPriority), ``Activate`` (ClaimId,
optional Job: the next job of a reused claim), ``Release`` / ``Alive`` (ClaimId),
``Vacate`` (Slot, optional Fast), ``Drain`` (How, optional Check and Start expressions),
``CancelDrain``, ``Query`` (optional Constraint expression), ``Reconfig``, ``Shutdown``
(optional Fast). Over the socket each request and answer is one line, as between
the startd and its starters (:mod:`epcore.runtime.framing`).

The socket (STARTD_CONTROL_SOCKET, default ``$(LOCK)/startd_control``) is made with mode
0600: only its owner (the startd's user, normally root) may connect; that file permission is
the whole of the access control, as for any local Unix socket service. The startd's loop serves
it with :class:`~epcore.runtime.connections.RequestServer`, within the STARTD_CONTROL_* limits.
"""

from __future__ import annotations

from typing import Protocol

from epcore.classad import ClassAd
from epcore.errors import EpError
from epcore.runtime.control import (
    ControlClient,
    ControlError,
    answer,
    argument,
    expression_argument,
    flag,
    optional_text,
    text_argument,
)

COMMANDS = (
    "Claim",
    "Activate",
    "Release",
    "Alive",
    "Vacate",
    "Drain",
    "CancelDrain",
    "Query",
    "Reconfig",
    "Shutdown",
)


class StartdControl(Protocol):
    """What the control interface can ask of a startd (the Startd implements it)."""

    def claim(
        self, slot: str, job: ClassAd, client: str = "", by_priority: bool = False
    ) -> str: ...

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None: ...

    def release(self, claim_id: str, *, removed: bool = False) -> None: ...

    def alive(self, claim_id: str) -> None: ...

    def vacate(self, slot: str, fast: bool = False) -> None: ...

    def drain(self, how: str, check: str | None = None, start: str | None = None) -> None: ...

    def cancel_drain(self) -> None: ...

    def query(self, constraint: str | None = None) -> list[ClassAd]: ...

    def reconfig(self) -> None: ...

    def shutdown(self, fast: bool = False) -> None: ...


def dispatch(startd: StartdControl, request: ClassAd) -> ClassAd:
    """Carry out ``request`` on ``startd`` and answer; every failure becomes ``Ok = false``."""
    command = request.evaluate("Command")
    try:
        if command == "Claim":
            job = argument(request, "Job", ClassAd)
            assert isinstance(job, ClassAd)
            client = optional_text(request, "Client") or ""
            by_priority = flag(request, "ByPriority")
            slot = text_argument(request, "Slot")
            return answer(True, ClaimId=startd.claim(slot, job, client, by_priority))
        if command == "Activate":
            next_job = argument(request, "Job", ClassAd, required=False)
            assert next_job is None or isinstance(next_job, ClassAd)
            startd.activate(text_argument(request, "ClaimId"), next_job)
        elif command == "Release":
            startd.release(text_argument(request, "ClaimId"), removed=flag(request, "Removed"))
        elif command == "Alive":
            startd.alive(text_argument(request, "ClaimId"))
        elif command == "Vacate":
            startd.vacate(text_argument(request, "Slot"), flag(request, "Fast"))
        elif command == "Drain":
            how = text_argument(request, "How")
            startd.drain(
                how, expression_argument(request, "Check"), expression_argument(request, "Start")
            )
        elif command == "CancelDrain":
            startd.cancel_drain()
        elif command == "Query":
            return answer(True, Ads=startd.query(expression_argument(request, "Constraint")))
        elif command == "Reconfig":
            startd.reconfig()
        elif command == "Shutdown":
            startd.shutdown(flag(request, "Fast"))
        else:
            raise ControlError(f"unknown Command {command!r}; known: {', '.join(COMMANDS)}")
    except EpError as error:
        return answer(False, str(error))
    return answer(True)


class StartdClient(ControlClient):
    """A client of a startd's control socket, with a method per request."""

    daemon = "startd"

    def claim(self, slot: str, job: ClassAd, client: str = "", by_priority: bool = False) -> str:
        reply = self.call("Claim", Slot=slot, Job=job, Client=client, ByPriority=by_priority)
        claim_id = reply.evaluate("ClaimId")
        assert isinstance(claim_id, str)
        return claim_id

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        self.call("Activate", ClaimId=claim_id, Job=job)

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        self.call("Release", ClaimId=claim_id, Removed=removed)

    def alive(self, claim_id: str) -> None:
        self.call("Alive", ClaimId=claim_id)

    def vacate(self, slot: str, fast: bool = False) -> None:
        self.call("Vacate", Slot=slot, Fast=fast)

    def drain(self, how: str, check: str | None = None, start: str | None = None) -> None:
        self.call("Drain", How=how, Check=check, Start=start)

    def cancel_drain(self) -> None:
        self.call("CancelDrain")

    def query(self, constraint: str | None = None) -> list[ClassAd]:
        ads = self.call("Query", Constraint=constraint).evaluate("Ads")
        return [ad for ad in ads if isinstance(ad, ClassAd)] if isinstance(ads, list) else []

    def reconfig(self) -> None:
        self.call("Reconfig")

    def shutdown(self, fast: bool = False) -> None:
        self.call("Shutdown", Fast=fast)
