"""The events notification hooks receive (``ep_slot_state_changed``, ``ep_job_started``,
``ep_job_finished``).
"""

from __future__ import annotations

import attrs


@attrs.frozen
class SlotStateChange:
    """A slot moved from one State/Activity to another at ``at`` because of ``reason``."""

    slot: str
    old_state: str
    old_activity: str
    new_state: str
    new_activity: str
    at: float
    reason: str = ""


@attrs.frozen
class JobStarted:
    """A job started on ``slot``."""

    slot: str
    job_id: str
    at: float


@attrs.frozen
class JobFinished:
    """A job left ``slot``: its exit code (None when it did not exit by itself) and why."""

    slot: str
    job_id: str
    at: float
    exit_code: int | None = None
    reason: str = ""
