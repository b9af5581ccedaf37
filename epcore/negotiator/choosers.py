"""Choosing a job's slot: the best candidate whose cost fits the submitter's remaining limit.

:class:`PlainChooser` is the algorithm as seed 004 states it: every slot for every job. It is
the reference the indexed chooser (:mod:`epcore.negotiator.indexed`) must agree with.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from epcore.classad import ClassAd
from epcore.negotiator.candidates import Bidder, Candidate, Evaluator, SlotTable

#: Slack for comparing sums of real slot weights against a limit.
EPSILON = 1e-9


@attrs.frozen
class Choice:
    """The best fitting candidate (None when there is none) and whether a candidate existed
    that did not fit the limit."""

    candidate: Candidate | None
    limited: bool


class Chooser(Protocol):
    """Picks a job's slot."""

    def choose(
        self,
        job: ClassAd,
        number: int,
        bidder: Bidder,
        remaining: float,
        preempting: float | None = None,
    ) -> Choice:
        """The best candidate for ``job`` (the cycle's job ``number``) costing at most
        ``remaining``, or ``preempting`` (when given) for a candidate that preempts."""
        ...


def pick(candidates: list[Candidate], remaining: float, preempting: float | None = None) -> Choice:
    """The best of ``candidates`` costing at most ``remaining``; one that preempts may cost
    up to ``preempting`` instead when it is given (a group's room caps only the matches to
    unclaimed slots, as HTCondor's submitterLimitUnclaimed does)."""
    fitting = [
        c
        for c in candidates
        if c.weight <= (remaining if preempting is None or not c.preempts else preempting) + EPSILON
    ]
    if not fitting:
        return Choice(None, bool(candidates))
    return Choice(min(fitting, key=lambda c: c.key), False)


@attrs.define
class PlainChooser:
    """Every slot for every job: the reference the indexed chooser must agree with."""

    evaluator: Evaluator
    table: SlotTable

    def choose(
        self,
        job: ClassAd,
        number: int,
        bidder: Bidder,
        remaining: float,
        preempting: float | None = None,
    ) -> Choice:
        """The best candidate for ``job`` costing at most ``remaining`` (``preempting`` for
        one that preempts, when given)."""
        del number
        found = []
        for index in range(len(self.table.ads)):
            candidate = self.evaluator.plain(job, self.table, index, bidder)
            if candidate is not None:
                found.append(candidate)
        return pick(found, remaining, preempting)
