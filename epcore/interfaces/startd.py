"""What the other roles ask of a startd: claims and their jobs, vacate and drain, queries."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Protocol

from epcore.classad import ClassAd
from epcore.errors import EpError

#: What follows the claim id in RELEASE_CLAIM when the claim goes back because its job was
#: removed (epcore's own addition: HTCondor's schedd sends the id alone).
RELEASE_REMOVED: Final = "removed"


class ClaimPending(EpError):
    """A claim was asked of a startd in another process and its answer is not in yet: the
    same claim (slot and job) asked again later gets the claim id or the refusal."""


class StartdLink(Protocol):
    """A startd as a schedd or the pool's administration reaches it. Slots are named as the
    startd's ads name them (``slot1@host``; the startd also takes its short names)."""

    @property
    def address(self) -> str:
        """Where the startd is reached (its ads' MyAddress)."""
        ...

    def claim(self, slot: str, job: ClassAd, client: str = "", by_priority: bool = False) -> str:
        """Claim ``slot`` for ``job`` on behalf of ``client``; the claim id (ClaimPending:
        ask again later)."""
        ...

    def activate(self, claim_id: str, job: ClassAd | None = None) -> None:
        """Start the claim's job (``job``: the next job on a reused claim)."""
        ...

    def release(self, claim_id: str, *, removed: bool = False) -> None:
        """Give the claim back (its job, if any, is stopped); ``removed``: because the job
        was removed, so that its starter keeps nothing of it (no VM checkpoint)."""
        ...

    def alive(self, claim_id: str) -> None:
        """Keep the claim's lease."""
        ...

    def vacate(self, slot: str, fast: bool = False) -> None:
        """Evict the job on ``slot`` (its claim ends)."""
        ...

    def vacate_slots(self, slot: str | None, fast: bool = False) -> list[str]:
        """Vacate ``slot`` (None: every claimed slot); the names of the slots vacated."""
        ...

    def drain(
        self,
        how: str,
        check: str | None = None,
        start: str | None = None,
        *,
        reason: str | None = None,
        resume: bool = False,
    ) -> None:
        """Drain the machine (``how``: graceful, quick, fast); ``check`` must be TRUE on every
        slot, ``start`` admits jobs meanwhile, ``reason`` is the DrainReason the slots
        advertise, ``resume`` returns the machine to service once drained
        (DRAIN_RESUME_ON_COMPLETION)."""
        ...

    def cancel_drain(self) -> None:
        """Stop draining."""
        ...

    def query(self, constraint: str | None = None) -> list[ClassAd]:
        """The slots' current ads passing ``constraint``."""
        ...

    def claim_ready(self, claim_id: str) -> bool:
        """Whether ``claim_id`` holds a slot that is Claimed/Idle (ready for a job)."""
        ...

    def slot_of(self, claim_id: str) -> str | None:
        """The full name of the slot ``claim_id`` holds or waits for; None: no slot has it."""
        ...

    def claims(self) -> list[tuple[str, ClassAd]]:
        """Every current claim with its job (a restarted schedd adopts these)."""
        ...

    def recent_results(self, claim_ids: Iterable[str]) -> list[ClassAd]:
        """The results the startd recorded lately for these public claim ids."""
        ...
