"""What the other roles ask of a negotiator."""

from __future__ import annotations

from typing import Protocol


class PriorityQuery(Protocol):
    """The accountant's answer about one submitter (better-analyze shows it)."""

    def effective_priority(self, submitter: str) -> float:
        """``submitter``'s effective user priority (lower is better)."""
        ...

    def waiting_reason(self, submitter: str, job_id: str) -> str | None:
        """Why the last negotiation cycle left ``submitter``'s job ``job_id`` unmatched (its
        group's quota, a concurrency limit, its priority...), None when it does not know."""
        ...
