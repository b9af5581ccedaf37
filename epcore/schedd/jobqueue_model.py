"""Job identities, job statuses and the status changes HTCondor's schedd allows."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Final

import attrs

from epcore.errors import PoolError
from epcore.jobs.codes import HoldCode


class JobStatus(enum.IntEnum):
    """HTCondor's JobStatus codes."""

    IDLE = 1
    RUNNING = 2
    REMOVED = 3
    COMPLETED = 4
    HELD = 5
    TRANSFERRING_OUTPUT = 6
    SUSPENDED = 7


_JOB_ID: Final = re.compile(r"\A([0-9]+)\.([0-9]+)\Z")


@attrs.frozen(order=True)
class JobId:
    """A job's ``ClusterId.ProcId``."""

    cluster: int
    proc: int

    def __str__(self) -> str:
        return f"{self.cluster}.{self.proc}"

    @classmethod
    def parse(cls, text: str) -> JobId:
        """``"12.3"`` read as a JobId; PoolError when the text is not ``cluster.proc``."""
        found = _JOB_ID.match(text.strip())
        if found is None:
            raise PoolError(f"{text!r} is not a job id (cluster.proc, as 12.3)")
        return cls(int(found.group(1)), int(found.group(2)))


_S = JobStatus

#: Every status change the queue accepts: the schedd's own moves (a match starts a job, an
#: eviction puts it back to idle, the starter suspends it...) and the user's commands (hold an
#: active job, release only a held one, remove anything not already finished).
ALLOWED_TRANSITIONS: Final[Mapping[JobStatus, frozenset[JobStatus]]] = {
    _S.IDLE: frozenset({_S.RUNNING, _S.HELD, _S.REMOVED}),
    _S.RUNNING: frozenset(
        {_S.IDLE, _S.COMPLETED, _S.HELD, _S.REMOVED, _S.SUSPENDED, _S.TRANSFERRING_OUTPUT}
    ),
    _S.SUSPENDED: frozenset({_S.RUNNING, _S.IDLE, _S.HELD, _S.REMOVED}),
    _S.TRANSFERRING_OUTPUT: frozenset({_S.COMPLETED, _S.IDLE, _S.HELD, _S.REMOVED}),
    _S.HELD: frozenset({_S.IDLE, _S.REMOVED}),
    _S.REMOVED: frozenset(),
    _S.COMPLETED: frozenset(),
}


FINISHED_STATUSES: Final = frozenset({JobStatus.COMPLETED, JobStatus.REMOVED})


def transition_allowed(old: JobStatus, new: JobStatus) -> bool:
    """Whether a job in ``old`` may move to ``new``."""
    return new in ALLOWED_TRANSITIONS[old]


def status_changes(
    old: JobStatus,
    new: JobStatus,
    now: float,
    *,
    num_holds: int,
    hold_reason: object,
    hold_code: object,
    hold_subcode: object,
    reason: str | None,
    code: int | None,
    subcode: int | None,
) -> tuple[dict[str, object], tuple[str, ...]]:
    """The attributes to set and to delete when a job moves from ``old`` to ``new``.

    ``num_holds`` and the ``hold_*`` values are the job's current NumHolds and hold
    attributes (None when missing), which a release moves to the ``LastHold*`` attributes.
    """
    entered = int(now)
    values: dict[str, object] = {
        "JobStatus": int(new),
        "LastJobStatus": int(old),
        "EnteredCurrentStatus": entered,
    }
    removed: list[str] = []
    if new is JobStatus.HELD:
        values["HoldReason"] = reason if reason is not None else "Unspecified"
        values["HoldReasonCode"] = int(code if code is not None else HoldCode.USER_REQUEST)
        values["HoldReasonSubCode"] = subcode if subcode is not None else 0
        values["NumHolds"] = num_holds + 1
    elif old is JobStatus.HELD and new is JobStatus.IDLE:
        # A release files the hold away; a removal keeps it, to show in the history why the
        # job never ran again.
        for name, value in (
            ("LastHoldReason", hold_reason),
            ("LastHoldReasonCode", hold_code),
            ("LastHoldReasonSubCode", hold_subcode),
        ):
            if value is not None:
                values[name] = value
        values["ReleaseReason"] = reason if reason is not None else "Unspecified"
        removed.extend(("HoldReason", "HoldReasonCode", "HoldReasonSubCode"))
    if new is JobStatus.REMOVED:
        values["RemoveReason"] = reason if reason is not None else "Unspecified"
    if new is JobStatus.COMPLETED:
        values["CompletionDate"] = entered
    return values, tuple(removed)
