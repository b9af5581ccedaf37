"""Preemption as the rules and the events share it: a claimed slot sent to Preempting (soft or
hard kill, the draining badput counted), and what becomes of the slot once the job is gone
(the preempting claim takes it, or it returns to Owner). The reasons a claimed slot retires
live here too: they decide whether the retirement can be taken back.

Pure: time arrives in the :class:`~epcore.state.work.Work` of the evaluation.
"""

from __future__ import annotations

from epcore.state.policy import SlotPolicy, is_true
from epcore.state.records import ActionKind
from epcore.state.states import CLAIMED_IDLE, KILLING, OWNER, VACATING
from epcore.state.timers import job_of, vacate_time
from epcore.state.work import Work

#: Why a claimed slot retires: for a preempting claim (the only retirement that can be taken
#: back, transition 19; seed 000: "If instead the retirement is due to owner activity (PREEMPT)
#: or the startd is being shut down, no unretirement is possible"), or for anything else.
RETIRE_FOR_CLAIM = "claim"
RETIRE_FOR_PREEMPT = "preempt"
RETIRE_FOR_EVICTION = "eviction"


def preempt(w: Work, name: str, number_: int, cause: str, policy: SlotPolicy) -> None:
    """Move a claimed slot to Preempting: Vacating (soft kill) unless the eviction is fast or
    WANT_VACATE is not TRUE, else Killing (hard kill)."""
    record = w.slots[name]
    job = job_of(record)
    vacate = not record.fast and is_true(policy.knob("WANT_VACATE", job), w.ad(name), job, w.now)
    # The vacating time is fixed when the job is soft-killed, from the retirement left then.
    allowed = vacate_time(record, policy, w.ad(name), w.now)
    running = record.job_start is not None
    if running and w.drain is not None and record.job_start is not None:
        w.draining_badput += w.cpus(name) * (w.now - record.job_start)
    if vacate:
        w.move(
            name,
            VACATING,
            number_,
            cause,
            vacate_started=w.now,
            vacate_allowed=allowed,
            suspended_since=None,
        )
        if running:
            w.act(ActionKind.SOFT_KILL, name, record.claim.claim_id if record.claim else None)
    else:
        w.move(name, KILLING, number_, cause, kill_started=w.now, suspended_since=None)
        if running:
            w.act(ActionKind.HARD_KILL, name, record.claim.claim_id if record.claim else None)


def after_preempting(w: Work, name: str) -> None:
    """The job is gone: to Claimed/Idle for a waiting claim (23, 24), else to Owner (22, 25);
    a dynamic slot whose claim ended is deleted."""
    record = w.slots[name]
    vacating = record.place == VACATING
    clear: dict[str, object] = {
        "job_start": None,
        "job_id": None,
        "vacate_started": None,
        "vacate_allowed": None,
        "kill_started": None,
        "preempt_deadline": None,
        "retire_from": None,
        "fast": False,
        "suspended_total": 0.0,
        "vacate_reason": None,
        "removed": False,
    }
    if record.preempting is not None and not w.shutting_down:
        number_ = 23 if vacating else 24
        w.move(
            name,
            CLAIMED_IDLE,
            number_,
            "the job left; the preempting claim takes the slot",
            claim=record.preempting,
            preempting=None,
            retire_reason=None,
            **clear,
        )
        return
    number_ = 22 if vacating else 25
    w.move(name, OWNER, number_, "the job left; the claim ended", claim=None, **clear)
    w.update(name, preempting=None, retire_reason=None)
    if record.kind == "dynamic":
        w.act(ActionKind.DELETE_SLOT, name)
        w.release_dynamic(name)
